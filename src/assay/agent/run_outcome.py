"""What an agent run comes to (`RunOutcome`): every slot's result in plan order, with what the console,
the receipt, the manifest and the checkpoint read of each — a small `AttemptSummary` once a journaled
attempt's unit is spooled, its transcript read back from the spool only when asked for.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, overload

from assay.agent.evidence import sum_counts
from assay.agent.plan import PlannedAttempt
from assay.agent.record import NOT_DISPATCHED, AttemptResult, attempt_locator
from assay.agent.report import shown_in_failure_lines
from assay.agent.slot_result import SlotResult, is_early_exit
from assay.core.record import UnitSpool


_NONE_SHOWN: tuple[dict[str, Any], ...] = ()


class _Rare(NamedTuple):
    """What most attempts leave empty, kept together (an `AttemptSummary` holds None when it all is)."""

    score: float | None
    score_state: str | None
    error: dict[str, Any] | None
    usage: dict[str, Any] | None
    estimated_cost_usd: float | None
    retries: dict[str, int] | None
    # The adopted attempt of a carried slot: its run id alone when it is the same slot's attempt in that
    # run (the usual carry: `_adopted`), else its reference whole
    carried_from: str | dict[str, str] | None
    attempt_id: str | None  # when it is not the run's own (a carried slot's; `_ADOPTED`: the adopted one's)


_NO_RARE = _Rare(None, None, None, None, None, None, None, None)
_ADOPTED = "\0adopted"  # (no attempt id begins with a NUL)
_ADOPTED_RARE: dict[str, _Rare] = {}  # run id -> the `_Rare` of a slot carried from it with nothing else rare


def _adopted(carried: Any, own: str, slot: PlannedAttempt) -> str | None:
    """The run id of a carried slot's adopted attempt when that is this slot's own attempt in the run,
    all of it said by the slot and the run id (held once: a 20,000-slot carry held a reference dict
    and an attempt id per summary, ~0.6 KB each); None when the reference says more."""
    if not isinstance(carried, dict) or len(carried) != 3:
        return None
    run_id = carried.get("run_id")
    if not isinstance(run_id, str) or own != slot.attempt_id(run_id) or carried.get("attempt_id") != own:
        return None
    if carried.get("unit_id") != f"{slot.experiment.id}/{slot.eval.id}#{slot.ordinal + 1}":
        return None
    return sys.intern(run_id)


class AttemptSummary:
    """What a run keeps of an attempt once it is journaled and its unit spooled: what the console
    summary, the receipt, the manifest and the checkpoint read (verdict, title, usage, the
    assertions a failure shows), never its transcript. Read by attribute, like an `AttemptResult`.

    A 50,000-eval run keeps 50,000 of these, so they are small: what most attempts leave empty is
    one `_Rare` (None when it is all empty), the slot's ids are read from its planned attempt, and
    the run's own attempt ids are made again when asked for (~5 MiB at 50,000)."""

    __slots__ = ("_slot", "run_id", "outcome", "verdict", "agent", "model", "duration_seconds", "assertions",
                 "position", "decision", "_rare")

    def __init__(self, result: AttemptResult, slot: PlannedAttempt, run_id: str) -> None:
        self._slot = slot
        self.run_id = run_id  # shared by every summary of the run
        self.outcome = result.outcome
        self.verdict = result.verdict
        self.agent = result.agent
        self.model = result.model
        self.duration_seconds = result.duration_seconds
        shown = [assertion for assertion in result.assertions if shown_in_failure_lines(assertion)]
        self.assertions: Sequence[dict[str, Any]] = shown or _NONE_SHOWN  # only the ones `failure_lines` shows
        self.position = result.position
        self.decision: dict[str, str] | None = getattr(result, "decision", None)  # why the slot is what it is
        own = result.attempt_id
        carried = getattr(result, "carried_from", None)
        adopted = _adopted(carried, own, slot)
        rare = _Rare(result.score, result.score_state, result.error, result.usage or None, result.estimated_cost_usd,
                     result.retries, carried if adopted is None else adopted,
                     _ADOPTED if adopted is not None else None if own == slot.attempt_id(run_id) else own)
        if adopted is not None and rare[:6] == _NO_RARE[:6]:  # a carried slot with nothing else rare: shared
            rare = _ADOPTED_RARE.setdefault(adopted, rare)
        self._rare = None if rare == _NO_RARE else rare

    score = property(lambda self: (self._rare or _NO_RARE).score)
    score_state = property(lambda self: (self._rare or _NO_RARE).score_state)
    error = property(lambda self: (self._rare or _NO_RARE).error)
    usage = property(lambda self: (self._rare or _NO_RARE).usage)
    estimated_cost_usd = property(lambda self: (self._rare or _NO_RARE).estimated_cost_usd)
    retries = property(lambda self: (self._rare or _NO_RARE).retries)

    @property
    def carried_from(self) -> dict[str, str] | None:
        carried = (self._rare or _NO_RARE).carried_from
        if isinstance(carried, str):
            return {"run_id": carried, "unit_id": f"{self._slot.experiment.id}/{self._slot.eval.id}#{self._slot.ordinal + 1}",
                    "attempt_id": self._slot.attempt_id(carried)}
        return carried

    experiment_id = property(lambda self: self._slot.experiment.id)
    eval_id = property(lambda self: self._slot.eval.id)
    ordinal = property(lambda self: self._slot.ordinal)

    @property
    def attempt_id(self) -> str:
        rare = self._rare or _NO_RARE
        if rare.attempt_id is _ADOPTED:
            return self._slot.attempt_id(rare.carried_from)  # type: ignore[arg-type]
        return rare.attempt_id if rare.attempt_id is not None else self._slot.attempt_id(self.run_id)

    @property
    def locator(self) -> str:
        return attempt_locator(self.attempt_id)

    @property
    def key(self) -> str:
        return self._slot.key


class SpooledAttempts(Sequence[AttemptResult]):
    """A journaled run's attempts in plan order, each read back whole from the run's unit spool
    when it is asked for, so the run never holds every transcript at once."""

    def __init__(self, spool: UnitSpool, summaries: Sequence[AttemptSummary]) -> None:
        self._spool = spool
        self._summaries = summaries

    def __len__(self) -> int:
        return len(self._summaries)

    @overload
    def __getitem__(self, index: int) -> AttemptResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[AttemptResult]: ...

    def __getitem__(self, index: int | slice) -> AttemptResult | list[AttemptResult]:
        if isinstance(index, slice):
            return [self[position] for position in range(len(self))[index]]
        import operator

        # Refused as a tuple refuses it: the spool's own words named a `range`, which the caller never made.
        try:
            index = operator.index(index)
        except TypeError:
            raise TypeError(f"attempts indices must be integers or slices, not {type(index).__name__}; "
                            "results.attempt(eval_id, attempt=n) finds an eval's attempt") from None
        if not -len(self) <= index < len(self):
            raise IndexError(f"attempts index {index} out of range: the run has {len(self)} attempt(s)")
        return _read_back(self._spool[index], self._summaries[index])

    def __iter__(self) -> Iterator[AttemptResult]:
        for unit, summary in zip(self._spool, self._summaries):
            yield _read_back(unit, summary)

    def replace(self, position: int, result: AttemptResult) -> None:
        """Write an updated attempt (late spans) back to its slot: reads return fresh copies."""
        from assay.agent.units import agent_unit

        self._spool.add(position, agent_unit(result))


def _read_back(unit: Any, summary: AttemptSummary) -> AttemptResult:
    result = SlotResult.from_json(unit.detail or {})
    result.duration_seconds = summary.duration_seconds  # the spooled copy is rounded to the microsecond
    return result


@dataclass(repr=False)  # its repr is formatted by asyncio.run (see core.run.pipeline._Held): never the results
class RunOutcome:
    results: Sequence[AttemptResult]  # plan order; a journaled run's are read back from its spool
    interrupted: bool
    budget_exhausted: list[str]
    duration_seconds: float
    judge_retries: dict[str, int] = field(default_factory=dict)
    # model -> what the run's judge calls cost (`assay.agent.judging.judge_spend`), for the summary and receipt
    judge_usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    # What the console, the receipt, the manifest and the checkpoint read, in plan order: the
    # run's `AttemptSummary`s when its results are spooled, else the results themselves.
    summaries: Sequence[Any] = None  # type: ignore[assignment]
    spool: UnitSpool | None = None  # the units of the run record, when they were spooled as they became durable

    def __post_init__(self) -> None:
        if self.summaries is None:
            self.summaries = self.results

    def __repr__(self) -> str:
        return f"<RunOutcome: {len(self.summaries)} attempts{', interrupted' if self.interrupted else ''}>"

    @property
    def usage(self) -> dict[str, Any]:
        """Token and provider-cost fields summed over every attempt that reported usage."""
        return sum_counts(result.usage for result in self.summaries)

    @property
    def estimated_cost_usd(self) -> float | None:
        """The price-table estimate summed over attempts that have one (never the provider's cost)."""
        costs = [result.estimated_cost_usd for result in self.summaries if result.estimated_cost_usd is not None]
        return sum(costs) if costs else None

    @property
    def retries(self) -> dict[str, int]:
        return sum_counts(result.retries for result in self.summaries)

    def count(self, verdict: str) -> int:
        return sum(1 for result in self.summaries if result.verdict == verdict)

    @property
    def not_dispatched(self) -> int:
        """Slots never dispatched for want of budget or a failure of the run (an early exit is neither)."""
        return sum(1 for result in self.summaries if result.outcome == NOT_DISPATCHED and not is_early_exit(result))

    @property
    def carried(self) -> int:
        return sum(1 for result in self.summaries if getattr(result, "carried_from", None) is not None)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        if self.budget_exhausted or self.not_dispatched:
            return 1
        if any(result.verdict in ("failed", "errored") for result in self.summaries):
            return 1
        return 0


__all__ = ["AttemptSummary", "RunOutcome", "SpooledAttempts"]
