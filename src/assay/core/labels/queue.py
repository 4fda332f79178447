"""The label queue: which units a person is shown, in which order.

Filters: every unit, judge-graded units, units whose judges disagree (with each other or with the
deterministic checks); a seeded random sample; the units this labeller has not labelled first (a
label applies to the same content of the same unit in another run too). Built once per page load,
so the order stays put while the person works through it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from assay.core.labels.extract import subject_of
from assay.core.labels.model import Label
from assay.core.labels.units import judged_candidates, stored_unit
from assay.errors import UsageError

__all__ = ["FILTERS", "LabelQueue", "QueueRequest", "build_queue"]

FILTERS = ("all", "judged", "disagree")
MAX_RUNS = 500  # runs a queue over "all" runs takes, newest first


@dataclass(frozen=True)
class QueueRequest:
    labeller: str
    scope: str = "all"  # "all", or a run reference (id, prefix, latest, latest~N)
    filter: str = "all"
    seed: int | None = None  # a random order with this seed (None: run order)
    sample: int | None = None  # at most this many units (after the order is drawn)
    unlabeled_first: bool = True

    def __post_init__(self) -> None:
        if self.filter not in FILTERS:
            raise UsageError(f"filter must be one of {', '.join(FILTERS)}, got {self.filter!r}")
        if self.sample is not None and self.sample < 1:
            raise UsageError("sample must be a positive number of units")


@dataclass(frozen=True)
class LabelQueue:
    entries: list[tuple[str, str]]  # (run id, unit id) in the order shown
    labelled: int  # how many of them the labeller has labelled already (they come last with unlabeled_first)

    def index_of(self, run_id: str, unit_id: str) -> int | None:
        try:
            return self.entries.index((run_id, unit_id))
        except ValueError:
            return None


def _runs(store: Any, scope: str) -> list[Any]:
    if scope in ("", "all"):
        return store.list_runs(limit=MAX_RUNS)
    return [store.get_run(scope)]


def _judged_units(store: Any, run: Any, wanted: str) -> list[str]:
    """The unit ids of `run` a judge graded (`wanted` judged) or whose judges disagree, in run order."""
    return [stored.unit.unit_id for stored in judged_candidates(store, run)
            if (stored.judgements.disagree if wanted == "disagree" else stored.judgements.judged)]


def _labelled(store: Any, entries: list[tuple[str, str]], kinds: dict[str, str], labels: list[Label]) -> set[tuple[str, str]]:
    """The entries this labeller has labelled: the unit itself, or the same content of the same
    subject in another run (only the units whose subject was labelled are read to know)."""
    done = {(label.run_id, label.unit_id) for label in labels}
    contents: dict[tuple[str, str], set[str]] = {}
    for label in labels:
        contents.setdefault((label.kind, label.subject), set()).add(label.content)
    candidates: dict[str, list[str]] = {}
    for run_id, unit_id in entries:
        if (run_id, unit_id) not in done and (kinds[run_id], subject_of(unit_id)) in contents:
            candidates.setdefault(run_id, []).append(unit_id)
    for run_id, unit_ids in candidates.items():
        run = store.get_run(run_id)
        for unit_id, unit in store.units_by_id(run_id, unit_ids).items():
            stored = stored_unit(run, unit)
            if stored.content in contents.get((stored.kind, subject_of(unit_id)), ()):
                done.add((run_id, unit_id))
    return done


def build_queue(store: Any, labels: list[Label], request: QueueRequest) -> LabelQueue:
    """The queue for `request`; `labels` are the labeller's own."""
    entries: list[tuple[str, str]] = []
    kinds: dict[str, str] = {}
    for run in _runs(store, request.scope):
        kinds[run.run_id] = run.manifest.kind
        if request.filter == "all":
            ids = [row[0] for row in store.read("SELECT unit_id FROM units WHERE run_id = ? ORDER BY seq", (run.run_id,))]
        else:
            ids = _judged_units(store, run, request.filter)
        entries += [(run.run_id, unit_id) for unit_id in ids]
    if request.seed is not None:
        random.Random(request.seed).shuffle(entries)
    if request.sample is not None:
        entries = entries[: request.sample]
    done = _labelled(store, entries, kinds, labels)
    if request.unlabeled_first:
        entries = [entry for entry in entries if entry not in done] + [entry for entry in entries if entry in done]
    return LabelQueue(entries, sum(1 for entry in entries if entry in done))
