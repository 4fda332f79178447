"""The viewer's label mode (`assay view --label`): the queue, one unit at a time as a person needs to
see it, and the label written for it — plus the agreement page, which needs no label mode.

Writes need the per-start token (the `X-Assay-Write-Token` header), as the review editor's do: the
page reads it from `/api/label/session`, which only this server's own origin can read.
"""

from __future__ import annotations

import getpass
import secrets
import subprocess
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.core.labels.agreement import AgreementFilter, checked_agreement_report
from assay.core.labels.extract import blind, subject_of
from assay.core.labels.model import MAX_NOTE_CHARACTERS, LabelError, latest_labels
from assay.core.labels.queue import LabelQueue, QueueRequest, build_queue
from assay.core.labels.store import LabelBook
from assay.core.labels.units import StoredUnit, make_label, stored_unit
from assay.core.record import jsonable
from assay.errors import UsageError
from assay.view.data import ViewData
from assay.web.app import ApiError, new_write_token

__all__ = ["WRITE_TOKEN_HEADER", "LabelSession", "agreement", "default_labeller"]

WRITE_TOKEN_HEADER = "X-Assay-Write-Token"
MAX_LABEL_BYTES = 64 * 1024
_QUEUES_KEPT = 8


def default_labeller() -> str:
    """`git config user.name`, else the OS user name."""
    try:
        found = subprocess.run(["git", "config", "user.name"], capture_output=True, text=True, timeout=5, check=False)
        name = found.stdout.strip()
        if found.returncode == 0 and name:
            return name
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "labeller"


def agreement(data: ViewData, params: Mapping[str, Any]) -> dict[str, Any]:
    """The agreement page: what `assay judge agreement --json` prints. A labeller, judge or rubric that
    matches nothing in a store with labels is refused as the command refuses it (a typo, not "no labels")."""
    selection = AgreementFilter(
        judge=params.get("judge") or None, rubric=params.get("rubric") or None,
        labeller=params.get("labeller") or None, by_rubric=params.get("by_rubric") in ("1", "true"),
    )
    return checked_agreement_report(data.store, LabelBook(data.store), selection, "the {} filter".format)


def _optional_int(params: Mapping[str, Any], name: str) -> int | None:
    value = params.get(name)
    if value in (None, ""):
        return None
    text = str(value)
    if not text.isdigit():
        raise UsageError(f"{name} must be a nonnegative integer, got {text!r}")
    return int(text)


@dataclass
class LabelSession:
    """One start of `assay view --label`: who labels, the write token, the queues built so far."""

    data: ViewData
    labeller: str
    write_token: str = field(default_factory=new_write_token)
    _queues: OrderedDict[str, tuple[QueueRequest, LabelQueue]] = field(default_factory=OrderedDict)
    _runs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.book = LabelBook(self.data.store)
        self.book.sync()  # labels another process appended (an import), or one a crash left unindexed

    def follow_store(self) -> None:
        """Before each label route: the store file as it is now. A file replaced while labelling (`assay runs reindex`,
        a deleted store made anew by an eval) is opened anew and given the labels of `labels.jsonl` it lacks (one
        written just before the replacement included), where labels went on into the replaced file, unseen."""
        self.data.follow_store()
        if self.book.store is not self.data.store:
            self.book = LabelBook(self.data.store)
            self.book.sync()
            self._runs.clear()

    def _unit(self, run_id: str, unit_id: str) -> StoredUnit:
        """A stored unit; its run's manifest is read once per run (a run's kind and identity never change)."""
        run = self._runs.get(run_id)
        if run is None:
            run = self._runs[run_id] = self.data.store.get_run(run_id)
        unit = self.data.store.get_unit(run.run_id, unit_id)
        if unit is None:
            raise LookupError(f"run {run.run_id} has no unit {unit_id!r}")
        return stored_unit(run, unit)

    def session(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {"labeller": self.labeller, "write_token": self.write_token, "write_token_header": WRITE_TOKEN_HEADER,
                "max_note_characters": MAX_NOTE_CHARACTERS}

    def queue(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Build the queue a page asks for; it starts at `at_run`/`at_unit` when given (a reload), else at
        the first unit this labeller has not labelled. A reload on a unit labelled already (answered, then
        reloaded before moving on) shows that unit first, then the units still to label."""
        request = QueueRequest(
            labeller=self.labeller, scope=str(params.get("scope") or "all"), filter=str(params.get("filter") or "all"),
            seed=_optional_int(params, "seed"), sample=_optional_int(params, "sample"),
            unlabeled_first=params.get("unlabeled_first", "1") not in ("0", "false"),
        )
        queue = build_queue(self.data.store, self.book.labels(labeller=self.labeller), request)
        start = None
        if params.get("at_run") and params.get("at_unit"):
            at = (str(params["at_run"]), str(params["at_unit"]))
            start = queue.index_of(*at)
            unlabelled = len(queue.entries) - queue.labelled
            if start is not None and request.unlabeled_first and 0 < unlabelled <= start:
                # The unit on screen was labelled before the reload, so the new queue put it behind the
                # units still to label, near its end: it comes first instead, and `j` goes on to them.
                queue = LabelQueue([at, *(entry for entry in queue.entries if entry != at)], queue.labelled)
                start = 0
        key = secrets.token_hex(8)
        self._queues[key] = (request, queue)
        while len(self._queues) > _QUEUES_KEPT:
            self._queues.popitem(last=False)
        answer = {"queue": key, "total": len(queue.entries), "labelled": queue.labelled, "start": start or 0}
        if params.get("at_run") and params.get("at_unit") and start is None:
            # An address naming a unit this queue does not hold (a typo, another filter): said, not silently skipped.
            answer["not_found"] = {"run": str(params["at_run"]), "unit": str(params["at_unit"])}
        return answer

    def item(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The queue's unit at `index`: its unit page (verdicts hidden unless `reveal`), what its judges
        said, its rubrics and the labels it has."""
        found = self._queues.get(str(params.get("queue") or ""))
        if found is None:
            raise ApiError(410, "queue_expired", "This label queue is no longer kept; the page builds it again.")
        _, queue = found
        index = _optional_int(params, "index") or 0
        if not queue.entries:
            raise LookupError("the queue is empty")
        index = min(index, len(queue.entries) - 1)
        run_id, unit_id = queue.entries[index]
        stored = self._unit(run_id, unit_id)
        document = self.data.unit({"run": run_id, "unit": unit_id})
        labels = self.book.labels_of_unit(run_id, unit_id)
        mine = latest_labels(label for label in labels if label.labeller == self.labeller)
        others = latest_labels(label for label in labels if label.labeller != self.labeller)
        through = None
        if not mine:  # labelled as the same content of the same subject in another run: the queue counts it labelled
            same = [label for label in self.book.labels(labeller=self.labeller)
                    if (label.kind, label.subject, label.content) == (stored.kind, subject_of(unit_id), stored.content)]
            mine = latest_labels(same)
            through = next(iter(mine.values()), None)
        # Verdicts stay hidden until this labeller has answered (unless the page asks to see them first).
        reveal = params.get("reveal") in ("1", "true") or bool(mine)
        return jsonable({
            "index": index, "total": len(queue.entries), "run_id": run_id, "unit_id": unit_id, "kind": stored.kind,
            "title": stored.unit.title, "question": stored.judgements.question,
            "rubrics": list(dict.fromkeys(judgement.rubric for judgement in stored.judgements.judgements if judgement.rubric)),
            "unit": document if reveal else blind(document, stored.kind),
            "revealed": reveal, "mine": next(iter(mine.values())).to_json() if mine else None,
            # where `mine` was given, when it was to the same content in another unit
            "mine_through": {"run_id": through.run_id, "unit_id": through.unit_id} if through is not None else None,
            **({
                "verdict": stored.unit.verdict, "reason": stored.unit.reason,
                "judgements": [judgement.to_json() for judgement in stored.judgements.judgements],
                "checks": stored.judgements.checks, "disagree": stored.judgements.disagree,
                "others": [label.to_json() for label in others.values()],
            } if reveal else {"judgements": [], "others": []}),
        })

    def put_label(self, payload: Any) -> dict[str, Any]:
        """Append this labeller's label of one unit: `{run_id, unit_id, verdict, score, note}`."""
        if not isinstance(payload, Mapping):
            raise LabelError("the label must be a JSON object")
        unknown = sorted(set(payload) - {"run_id", "unit_id", "verdict", "score", "note"})
        if unknown:
            raise LabelError(f"unknown field(s) {', '.join(unknown)}; send run_id, unit_id, verdict, score and note")
        run_id, unit_id, note = payload.get("run_id"), payload.get("unit_id"), payload.get("note") or ""
        if not isinstance(run_id, str) or not isinstance(unit_id, str):
            raise LabelError("run_id and unit_id must be strings")
        if not isinstance(note, str):
            raise LabelError("note must be a string")
        score = payload.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, int)):
            raise LabelError(f"score must be an integer from 1 to 5, got {score!r}")
        stored = self._unit(run_id, unit_id)
        label = make_label(stored, self.labeller, verdict=payload.get("verdict"), score=score, note=note)
        self.book.add([label])
        return label.to_json()
