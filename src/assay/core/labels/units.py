"""The stored units labelling reads: a unit with its run's kind and identity and what its judges said,
and the label a person's answer about it makes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from datetime import UTC, datetime
from typing import Any

from assay.core.labels.extract import UnitJudgements, content_of, judgements_of, kind_labels, subject_of
from assay.core.labels.model import Label
from assay.core.record import UnitResult

__all__ = ["StoredUnit", "judged_candidates", "make_label", "read_unit"]


@dataclass(frozen=True)
class StoredUnit:
    run_id: str
    run_created_at: str
    kind: str
    identity: Mapping[str, Any]
    unit: UnitResult
    judgements: UnitJudgements

    @cached_property
    def content(self) -> str:
        """The digest of what a person judges in this unit (computed only when asked: it hashes a transcript)."""
        return content_of(self.unit, self.kind)

    @property
    def item(self) -> tuple[str, str, str]:
        return self.kind, subject_of(self.unit.unit_id), self.content


def read_unit(store: Any, run_id: str, unit_id: str) -> StoredUnit:
    """One stored unit (a carried one read through its reference); LookupError when it is not there."""
    run = store.get_run(run_id)
    unit = store.get_unit(run.run_id, unit_id)
    if unit is None:
        raise LookupError(f"run {run.run_id} has no unit {unit_id!r}")
    return stored_unit(run, unit)


def stored_unit(run: Any, unit: UnitResult) -> StoredUnit:
    kind, identity = run.manifest.kind, dict(run.manifest.identity or {})
    return StoredUnit(run.run_id, run.manifest.created_at, kind, identity, unit, judgements_of(unit, kind, identity))


def judged_candidates(store: Any, run: Any, unit_ids: Sequence[str] | None = None) -> list[StoredUnit]:
    """The units of `run` (only those of `unit_ids`, when given: a few hundred at most) a judge may have graded, in run
    order: their body holds the kind's judge marker, or a carried unit's reference (read through it). No other body is
    decoded, so the units of a run without judges cost a text search each."""
    marker = kind_labels(run.manifest.kind).judged_marker
    if marker is None or (unit_ids is not None and not unit_ids):
        return []
    among = "" if unit_ids is None else f" AND unit_id IN ({','.join('?' * len(unit_ids))})"
    # A few units by id: through the index of unit ids (SQLite chose to read every row of the run, for its order: 0.1 s
    # of a 100,000-unit compare's judges lookup, against 2 ms).
    rows = store.read(
        f"SELECT unit_id, body FROM {'units' if unit_ids is None else store.verdict_rows('units')} WHERE run_id = ?{among} "
        "AND (instr(body, ?) > 0 OR instr(body, '\"carried_from\":{') > 0) ORDER BY seq",
        (run.run_id, *(unit_ids or ()), marker),
    )
    found = []
    for unit_id, body in rows:
        unit = UnitResult.from_json(json.loads(body))
        if unit.carried_from:
            unit = store.get_unit(run.run_id, unit_id) or unit
        found.append(stored_unit(run, unit))
    return found


def make_label(
    unit: StoredUnit, labeller: str, *, verdict: str | None = None, score: int | None = None, note: str = "",
    now: datetime | None = None,
) -> Label:
    """The label `labeller` gives `unit`, with what its judges and checks said at this moment."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return Label(
        labeller=labeller, created_at=moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        run_id=unit.run_id, unit_id=unit.unit.unit_id, kind=unit.kind, subject=subject_of(unit.unit.unit_id),
        content=unit.content, verdict=verdict, score=score, note=note,
        judgements=unit.judgements.judgements, checks=unit.judgements.checks,
    )
