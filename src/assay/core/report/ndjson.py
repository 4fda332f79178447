"""`--json`: the run as NDJSON events on stdout, one JSON object per line, for every kind.

`run_started`, one `unit` per unit as it becomes durable (the shared unit result), `warning`, and a
last `run_finished` line with the exit code and the verdict counts. Field names are snake_case. Each
line is one encoder call and one write; nothing else goes to stdout in this mode (errors also go
to stderr, for a person reading the log). The stream is the one `sys.stdout` was when the reporter was
made: during a command-line run `sys.stdout` points at stderr, so what adapters or evals print cannot
land between these lines.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from assay.core.record import VERDICTS

__all__ = ["NdjsonEvents"]

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


class NdjsonEvents:
    name = "NDJSON"

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self._counts = dict.fromkeys(VERDICTS, 0)

    def _line(self, document: dict[str, Any]) -> None:
        self.stream.write(_encode(document) + "\n")

    def run_started(self, event: Any) -> None:
        self._line({"type": "run_started", "kind": event.kind, "run_id": event.run_id, "total": event.total,
                    "reused": event.reused})

    def unit_durable(self, event: Any) -> None:
        unit = event.unit
        self._counts[unit.verdict] += 1
        self._line({"type": "unit", "unit": unit.to_json()})

    def warning(self, event: Any) -> None:
        self._line({"type": "warning", "code": event.code, "message": event.message, **dict(event.fields)})

    def run_finished(self, event: Any) -> None:
        document: dict[str, Any] = {
            "type": "run_finished", "kind": event.kind, "run_id": event.run_id, "exit_code": event.exit_code,
            "completion": "interrupted" if event.interrupted else ("failed" if event.error is not None else "completed"),
        }
        if event.build_units is not None:
            counts = dict.fromkeys(VERDICTS, 0)
            for unit in event.units():
                counts[unit.verdict] += 1
            document["counts"] = counts
        else:
            document["counts"] = self._counts
        if event.error is not None:
            # Its notes (an adapter that also failed to close, say) are part of what the console shows.
            said = "\n".join([str(event.error), *(getattr(event.error, "__notes__", None) or [])])
            document["error"] = said
            print(f"Error: {said}", file=sys.stderr)
        if event.checkpoint is not None:
            document["checkpoint"] = str(event.checkpoint)
            document["checkpoint_kept"] = event.checkpoint_kept
        self._line(document)
        self.stream.flush()
