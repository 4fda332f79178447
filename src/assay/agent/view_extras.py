"""What the results viewer shows of an agent attempt beyond what every unit has (the agent kind's
`KindView`): its assertions as the row's expected / observed, its sandbox's File Changes and commands, its
waterfall and timing, and its row on the Traces page. Everything here was redacted and bounded when the
attempt was sealed; this only reshapes it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assay.core.record import UnitResult
from assay.core.run.kinds import KindView
from assay.view.waterfall import timing_view, waterfall_view

__all__ = ["VIEW", "sandbox_view", "trace_summary"]


def previews(unit: UnitResult) -> tuple[str, str]:
    """An agent unit records neither expected (null) nor observed (only a score): what it was held to is
    its assertions, so the row shows their descriptions and how they came out."""
    assertions = [item for item in (unit.detail or {}).get("assertions") or () if isinstance(item, Mapping)]
    expected = "; ".join(str(item.get("description") or item.get("kind") or "") for item in assertions)
    statuses: dict[str, int] = {}
    for item in assertions:
        status = str(item.get("status") or "unknown")
        statuses[status] = statuses.get(status, 0) + 1
    outcome = [f"{count} {status}" for status, count in statuses.items()]
    if isinstance(unit.observed, Mapping) and unit.observed.get("score") is not None:
        outcome.insert(0, f"score {unit.observed['score']}")
    return expected, ", ".join(outcome)


def unit_extras(unit: UnitResult) -> dict[str, Any]:
    """The unit page's File Changes (a sandbox attempt), waterfall (one with spans) and timing."""
    extras: dict[str, Any] = {}
    detail = unit.detail if isinstance(unit.detail, Mapping) else {}
    sandbox = detail.get("sandbox")
    if isinstance(sandbox, Mapping) and sandbox.get("file_changes") is not None:
        extras["file_changes"] = sandbox_view(sandbox)
    waterfall = waterfall_view(detail) if detail else None
    if waterfall is not None:
        extras["waterfall"] = waterfall
    timing = timing_view(detail.get("timing"))
    if timing is not None:
        extras["timing"] = timing
    return extras


def trace_row(unit: UnitResult) -> dict[str, Any] | None:
    """The attempt's row on the Traces page, or None when it received no spans."""
    waterfall = waterfall_view(unit.detail) if isinstance(unit.detail, Mapping) else None
    return trace_summary(unit, waterfall) if waterfall is not None else None


def _diff_lines(diff: str) -> list[dict[str, str]]:
    """A unified diff as classified lines (hunk header, added, removed, context) for the page to colour."""
    lines = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            continue
        kind = "hunk" if line.startswith("@@") else "add" if line.startswith("+") else "del" if line.startswith("-") else "ctx"
        lines.append({"kind": kind, "text": line})
    return lines


def sandbox_view(sandbox: Mapping[str, Any]) -> dict[str, Any]:
    """A sandbox attempt's File Changes (per send window) and the commands it ran, as the unit page shows them.

    Everything here was redacted and bounded when the attempt was sealed; this only reshapes it."""
    changes = sandbox.get("file_changes") if isinstance(sandbox.get("file_changes"), Mapping) else {}
    windows = []
    for window in changes.get("windows") or ():
        if not isinstance(window, Mapping):
            continue
        rows = []
        for change in window.get("changes") or ():
            if not isinstance(change, Mapping):
                continue
            row: dict[str, Any] = {"path": str(change.get("path", "")), "status": str(change.get("status", ""))}
            if change.get("elided"):
                row["note"] = f"content elided ({change['elided']})"
            elif isinstance(change.get("diff"), str):
                row["lines"] = _diff_lines(change["diff"])
                if change.get("diff_cut"):
                    row["note"] = "diff cut at 64 KiB"
            elif change.get("diff_omitted"):
                row["note"] = str(change["diff_omitted"])
            rows.append(row)
        windows.append({"window": str(window.get("window", "")), "changes": rows})
    commands = [
        {name: command.get(name) for name in ("phase", "window", "command", "exit_code", "duration_seconds", "timed_out",
                                               "stdout_tail", "stderr_tail") if command.get(name) is not None}
        for command in sandbox.get("commands") or () if isinstance(command, Mapping)
    ]
    return {
        "provider": sandbox.get("provider"), "isolation": sandbox.get("isolation"), "kept": bool(sandbox.get("kept")),
        "sandbox_id": sandbox.get("sandbox_id"), "complete": changes.get("complete", True),
        "reason": changes.get("reason"), "windows": windows, "commands": commands,
        "files_changed": len({change["path"] for window in windows for change in window["changes"]}),
    }


def trace_summary(unit: UnitResult, waterfall: Mapping[str, Any]) -> dict[str, Any]:
    """One row of the Traces page: an attempt's spans over all its turns."""
    turns = waterfall["turns"]
    counts = {name: sum(turn["counts"][name] for turn in turns) for name in ("model", "tool", "subagent", "other")}
    windowed = sum(turn["attributed_by_window"] for turn in turns)
    spans = sum(turn["span_count"] for turn in turns)
    return {
        "unit_id": unit.unit_id, "verdict": unit.verdict, "turns": len(turns),
        "turns_with_spans": sum(1 for turn in turns if turn["span_count"]), "span_count": spans,
        "counts": counts, "errors": sum(turn["errors"] for turn in turns),
        "duration_ms": round(sum(turn["duration_ms"] for turn in turns), 3), "dropped": waterfall["dropped"],
        "attributed_by": "time window" if windowed and windowed == spans else "mixed" if windowed else "traceparent",
    }


VIEW = KindView(previews=previews, unit_extras=unit_extras, trace_row=trace_row)
