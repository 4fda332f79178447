"""Carry: which slots of a new invocation adopt a published attempt instead of running, and why every
other slot runs.

The source is the results store: the latest published attempt of each slot of this project. It is
carried when its execution identity is unchanged (a new timeout only matters if the attempt took
longer) and its verdict is adoptable — passed and failed by default, only passed with `--rerun`,
nothing with `--rerun all`; errored, skipped, interrupted and undispatched attempts never carry.
A carried slot is recorded as a reference to the adopted attempt (its run and unit), not a copy.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, cast

from assay.agent.identity import (
    IDENTITY_VERSION, ExecutionIdentity, IdentityBuilder, Reason, identity_changes, same_file_hashed_whole,
)
from assay.agent.record import INTERRUPTED, NOT_DISPATCHED, attempt_locator
from assay.agent.slot_result import CARRIED, EARLY_EXIT, SlotResult
from assay.errors import UsageError

__all__ = [
    "CARRY", "Carried", "CarryPlan", "EXECUTE", "NOT_DISPATCHED_ACTION", "RERUN_CHOICES", "SlotDecision", "adopted_attempt", "check_rerun",
    "plan_carry",
]

RERUN_CHOICES = ("failed", "all")
CARRY, EXECUTE, NOT_DISPATCHED_ACTION = "carry", "execute", "not-dispatched"


def check_rerun(value: str | None) -> str | None:
    if value is not None and value not in RERUN_CHOICES:
        from assay.core.format import did_you_mean

        hint = did_you_mean(value, RERUN_CHOICES)
        raise UsageError(f"--rerun takes failed (the default when bare) or all, got {value!r}{hint}", "--rerun")
    return value


class Carried(NamedTuple):
    """What a carried slot's record is made of, held from planning until the run publishes it: the
    adopted attempt's verdict, what its failure lines show and the reference. A `SlotResult` held that
    long cost ~1.4 KB a slot (a 20,000-slot carry held 27 MiB more than the run that executed them);
    this holds what slots share (the run id, agent, model, verdict, identity) once, and leaves out what
    the slot itself says: the usual adopted attempt is the same slot's in an earlier run, whose unit id
    and attempt id follow from the slot and the run id."""

    verdict: str | None
    agent: str
    model: str | None
    duration_seconds: float
    failing: tuple[str, ...]
    unavailable: tuple[str, ...]
    score: float | None
    score_state: str | None
    assertions: tuple[dict[str, Any], ...]
    identity: dict[str, Any]  # shared by the slots carried under one identity (read-only)
    reason: Reason
    # The adopted attempt: the run id when it is this slot's own attempt in that run, else its reference
    # whole ({run_id, unit_id, attempt_id}, or whatever shape it was recorded with).
    origin: str | dict[str, str]

    def carried_from(self, planned: Any) -> dict[str, str]:
        if isinstance(self.origin, str):
            return {"run_id": self.origin, "unit_id": unit_id_of(planned.experiment.id, planned.eval.id, planned.ordinal),
                    "attempt_id": planned.attempt_id(self.origin)}
        return dict(self.origin)

    def attempt_id(self, planned: Any) -> str:
        return planned.attempt_id(self.origin) if isinstance(self.origin, str) else str(self.origin.get("attempt_id"))

    def locator(self, planned: Any) -> str:
        return attempt_locator(self.attempt_id(planned))

    def record(self, planned: Any) -> SlotResult:
        """The slot's record in the new run: the reference, never the adopted attempt's transcript."""
        return SlotResult(
            experiment_id=planned.experiment.id, eval_id=planned.eval.id, ordinal=planned.ordinal,
            attempt_id=self.attempt_id(planned), outcome=CARRIED, verdict=self.verdict, agent=self.agent,
            model=self.model, duration_seconds=self.duration_seconds, failing=list(self.failing),
            unavailable=list(self.unavailable), score=self.score, score_state=self.score_state,
            assertions=list(self.assertions), tags=list(planned.eval.eval.tags), position=planned.index,
            identity=self.identity, decision=_decision_document(CARRY, self.reason), carried_from=self.carried_from(planned),
            # A member carried into a group's run is still the group's: JUnit's `eval_group` property and the
            # record say so (the group is part of the identity the slot was carried under, so it is the same one).
            eval_group=planned.eval.group.to_json() if getattr(planned.eval, "group", None) is not None else None,
        )


@dataclass(frozen=True, slots=True)
class SlotDecision:
    """One slot of the plan (its position in `CarryPlan.decisions` is the slot's): carry its published
    attempt, execute it, or leave it undispatched. Slots decided alike under one identity share one."""

    action: str  # carry | execute | not-dispatched
    reason: Reason  # the one shown
    identity: ExecutionIdentity
    reasons: tuple[Reason, ...] = ()  # every reason found (the shown one first)
    carried: Carried | None = None  # what the slot's record is made of, when it is carried

    def document(self) -> dict[str, str]:
        """`{action, code, message}`; slots decided alike share one (read-only) document, as a
        50,000-eval run decides "new eval" 50,000 times."""
        return _decision_document(self.action, self.reason)


@dataclass
class CarryPlan:
    decisions: list[SlotDecision]  # plan order
    warnings: list[Reason] = field(default_factory=list)

    def at(self, index: int) -> SlotDecision:
        return self.decisions[index]

    def count(self, action: str) -> int:
        return sum(1 for decision in self.decisions if decision.action == action)


# What deciding and recording a carry never reads of the published attempt: its transcript and the
# other per-attempt evidence (most of a unit's body). The store leaves them out before decoding, so
# planning a carried run holds no previous transcript (`adopted_attempt` reads the whole unit).
_NOT_READ_BY_CARRY = tuple(f"$.detail.{name}" for name in (
    "turns", "spans", "timing", "sandbox", "coverage", "usage", "diagnostics", "error", "retries", "tags",
))
# Nor, while its identity's digest is the slot's, the identity's parts (a third of what is left):
# only a slot whose identity changed reads them, to say what changed.
_IDENTITY_PARTS = ("$.detail.identity.components", "$.detail.identity.files", "$.detail.identity.values")
# Slots looked up at a time: their units are decoded, made a `Published` (what carry keeps of one) and
# decided before the next are read, so a big suite's previous units are never all held at once.
_LOOKUP_CHUNK = 100
# The page cache of the connection planning reads through: each previous unit is read once, so a big
# cache (SQLite's default is 2 MB) only adds to the carried run's peak memory.
_LOOKUP_CACHE_KIB = 256
# (run id, unit id, the published attempt as carry keeps it; None when it cannot be read)
Published = tuple[str, str, SlotResult | None]


def unit_id_of(experiment_id: str, eval_id: str, ordinal: int) -> str:
    return f"{experiment_id}/{eval_id}#{ordinal + 1}"


def _published_chunks(root: Path, digests: Mapping[str, str]) -> Iterator[tuple[dict[str, Published], set[str]]]:
    """The store's latest unit of each slot of this project (unit id -> the slot's identity digest now)
    as carry keeps it, with the runs they adopt that still exist, a chunk of slots at a time: the
    caller decides a chunk's slots before the next is read, so it never holds every previous unit.
    Raises StoreError or OSError when the store cannot be read."""
    from assay.core.record import store_path
    from assay.core.results_store import SqliteRunStore

    database = store_path(root)
    if not database.is_file():
        return
    with SqliteRunStore(database, read_only=True) as store:
        store.read(f"PRAGMA cache_size = -{_LOOKUP_CACHE_KIB}")
        wanted = list(digests)
        for start in range(0, len(wanted), _LOOKUP_CHUNK):
            chunk = {unit_id: digests[unit_id] for unit_id in wanted[start : start + _LOOKUP_CHUNK]}
            found = store.latest_units(chunk, kind="agent", identity={"project": str(root)},
                                       leaving_out=(*_NOT_READ_BY_CARRY, *_IDENTITY_PARTS))
            _read_changed_identities(store, found, chunk)
            latest = {unit_id: (run_id, unit_id, _as_published(unit)) for unit_id, (run_id, unit) in found.items()}
            origins = {
                str(previous.carried_from["run_id"]) for _, _, previous in latest.values()
                if previous is not None and previous.carried_from and previous.carried_from.get("run_id")
            }
            yield latest, store.existing_runs(origins) | {run_id for run_id, _, _ in latest.values()}


def _read_changed_identities(store: Any, latest: dict[str, tuple[str, Any]], digests: Mapping[str, str]) -> None:
    """The units whose identity is not the slot's now are read again with their identity whole."""
    changed: dict[str, list[str]] = {}
    for unit_id, (run_id, unit) in latest.items():
        identity = (unit.detail or {}).get("identity")
        if not isinstance(identity, Mapping) or identity.get("digest") != digests[unit_id]:
            changed.setdefault(run_id, []).append(unit_id)
    for run_id, unit_ids in changed.items():
        for unit_id, unit in store.units_by_id(run_id, unit_ids, adopted=False, leaving_out=_NOT_READ_BY_CARRY).items():
            latest[unit_id] = (run_id, unit)


def _as_published(unit: Any) -> SlotResult | None:
    """What deciding and recording a carry reads of a published unit: its attempt with only the
    assertions a carried record keeps (those its failure lines show), without the plan's old decision."""
    from assay.agent.report import shown_in_failure_lines

    try:
        previous = SlotResult.from_json(unit.detail or {})
        previous.assertions = [assertion for assertion in previous.assertions if shown_in_failure_lines(assertion)]
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    previous.decision = None
    return previous


def _has_sandbox(planned: Any) -> bool:
    return planned.sandbox is not None


def _outcome_reason(previous: SlotResult, rerun: str | None) -> Reason | None:
    """Why the published attempt's outcome cannot be adopted, or None when it can."""
    verdict = previous.verdict
    if verdict == "passed":
        return None
    if verdict == "scored":
        if previous.score_state == "complete":
            return None
        return Reason("previously-unrankable", "previously unrankable (a score was unavailable)")
    if verdict == "failed":
        return Reason("previously-failed", "previously failed (--rerun)") if rerun == "failed" else None
    if verdict == "errored":
        return Reason("previously-errored", "previously errored")
    if verdict == "skipped":
        return Reason("previously-skipped", "previously skipped")
    if previous.outcome == INTERRUPTED:
        return Reason("previously-interrupted", "previously interrupted")
    if previous.outcome == NOT_DISPATCHED:
        return Reason("previously-not-dispatched", "previously not dispatched")
    return Reason("previously-unfinished", "the published attempt has no verdict")


def _timeout_reason(old: ExecutionIdentity, new: ExecutionIdentity, duration: float) -> Reason | None:
    """A new timeout only reruns an attempt that would not have finished within it."""
    if old.components.get("timeout") == new.components.get("timeout"):
        return None
    timeout = new.values.get("timeout")
    if timeout is None or duration <= timeout:
        return None
    return Reason("timeout-changed", f"timeout changed (the attempt took {duration:.1f}s; the timeout is now {timeout:g}s)")


def _carried(planned: Any, previous: SlotResult, origin: Mapping[str, str], identity: dict[str, Any], reason: Reason,
             shared: dict[tuple[Any, ...], Any]) -> Carried:
    """What the slot's record will be made of (`Carried.record`): the adopted attempt's verdict and what
    its failure shows (`previous` holds only the assertions its failure lines show), and the reference."""
    def once(text: Any) -> Any:  # a string many slots hold (a run id, an agent's name) is held once
        return shared.setdefault(("text", text), text) if isinstance(text, str) else text

    run_id = origin.get("run_id")
    own = (tuple(origin) == ("run_id", "unit_id", "attempt_id") and isinstance(run_id, str)
           and origin["unit_id"] == unit_id_of(planned.experiment.id, planned.eval.id, planned.ordinal)
           and origin["attempt_id"] == previous.attempt_id == planned.attempt_id(run_id))
    return Carried(
        once(previous.verdict), once(previous.agent), once(previous.model), previous.duration_seconds,
        tuple(previous.failing), tuple(previous.unavailable), previous.score, once(previous.score_state),
        tuple(previous.assertions), identity, reason, once(run_id) if own else dict(origin),
    )





_NEW_EVAL = Reason("new-eval", "new eval")
_NEW_EXPERIMENT = Reason("new-experiment", "new experiment (no earlier run of the project ran it)")
_RERUN_ALL = Reason("rerun-all", "--rerun all")


def _shared_decision(action: str, reason: Reason, identity: ExecutionIdentity,
                     shared: dict[tuple[Any, ...], Any]) -> SlotDecision:
    """The one decision (in this plan's `shared`) of every slot executed for `reason` under `identity`
    (identities are shared by a file's evals): a 50,000-eval first run holds a handful, not 50,000."""
    key = (action, reason, id(identity))
    decision = shared.get(key)
    if decision is None:
        decision = shared[key] = SlotDecision(action, reason, identity)
    return decision


@functools.lru_cache(maxsize=256)
def _new_attempt(number: int) -> Reason:
    return Reason("new-attempt", f"new attempt #{number}")


@functools.lru_cache(maxsize=256)
def _carried_reason(run_id: str, verdict: str | None) -> Reason:
    """Slots carried from one run with one verdict share their reason (and so their decision document)."""
    return Reason("carried", f"carried from run {run_id} ({verdict})")


@functools.lru_cache(maxsize=4096)
def _decision_document(action: str, reason: Reason) -> dict[str, str]:
    return {"action": action, **reason.to_json()}


def _decide(planned: Any, identity: ExecutionIdentity, found: Published | None, present: set[str],
            rerun: str | None, keep_sandbox: str | None, pair_published: bool,
            shared: dict[tuple[Any, ...], Any], new_experiment: bool = False) -> SlotDecision:
    if rerun == "all":
        return _shared_decision(EXECUTE, _RERUN_ALL, identity, shared)
    if found is None:
        reason = _new_attempt(planned.ordinal + 1) if pair_published else _NEW_EXPERIMENT if new_experiment else _NEW_EVAL
        return _shared_decision(EXECUTE, reason, identity, shared)
    run_id, unit_id, previous = found
    if previous is None:
        return SlotDecision(EXECUTE, Reason("unreadable", f"the published attempt in run {run_id} is unreadable"),
                            identity)
    reasons: list[Reason] = [] if _same_identity(previous.identity, identity) else _identity_reasons(previous, identity)
    outcome = _outcome_reason(previous, rerun)
    if outcome is not None:
        reasons.append(outcome)
    origin = dict(previous.carried_from) if previous.carried_from else {
        "run_id": run_id, "unit_id": unit_id, "attempt_id": previous.attempt_id,
    }
    if not reasons and origin.get("run_id") not in present:
        reasons.append(Reason("carried-run-missing", f"the adopted attempt's run {origin.get('run_id')} is no longer in the store"))
    if not reasons and keep_sandbox is not None and _has_sandbox(planned):
        reasons.append(Reason("keep-sandbox", "--keep-sandbox: a kept sandbox needs a fresh attempt"))
    if reasons:
        return SlotDecision(EXECUTE, reasons[0], identity, tuple(reasons))
    reason = _carried_reason(str(origin["run_id"]), previous.verdict)
    return SlotDecision(CARRY, reason, identity, shared.setdefault(("reasons", reason), (reason,)),
                        _carried(planned, previous, origin, _identity_document(identity, shared), reason, shared))


def _same_identity(document: Any, identity: ExecutionIdentity) -> bool:
    """The published attempt ran under exactly `identity` (the common case): told by its digest, so its
    parts are never read (`_latest_published` leaves them out)."""
    return isinstance(document, Mapping) and document.get("version") == IDENTITY_VERSION \
        and document.get("digest") == identity.digest


def _identity_reasons(previous: SlotResult, identity: ExecutionIdentity) -> list[Reason]:
    old = ExecutionIdentity.from_json(previous.identity)
    if old is None:
        return [Reason("no-identity", "the published attempt has no execution identity (recorded before carry)")]
    if old.digest == identity.digest:
        return []
    reasons = [] if same_file_hashed_whole(old, identity) else identity_changes(old, identity)
    late = _timeout_reason(old, identity, previous.duration_seconds)
    return [*reasons, late] if late is not None else list(reasons)


def _identity_document(identity: ExecutionIdentity, shared: dict[tuple[Any, ...], Any]) -> dict[str, Any]:
    """One (read-only) document per identity for every slot carried under it: a file's evals share one."""
    key = ("identity", id(identity))
    document = shared.get(key)
    if document is None:
        document = shared[key] = identity.to_json()
    return document


def plan_carry(
    plan: Sequence[Any], identities: IdentityBuilder, root: Path, *, rerun: str | None = None,
    keep_sandbox: str | None = None, settled: Mapping[str, Any] | None = None,
    early_exit: Callable[[Any], bool] | None = None,
) -> CarryPlan:
    """A decision for every slot of `plan`. `settled` are slots a resumed checkpoint already holds
    (they are not looked up: resume wins within its checkpoint); `early_exit(planned)` says whether
    the slot's eval stops once an attempt passes."""
    settled = settled or {}
    slot_identities = [identities.of(planned) for planned in plan]  # built once: the lookup needs their digests
    unit_ids = [unit_id_of(planned.experiment.id, planned.eval.id, planned.ordinal) for planned in plan]
    pending = [position for position, planned in enumerate(plan) if planned.key not in settled]
    # Decisions and identity documents slots share, keyed by id(identity): identities live as long as the plan.
    shared: dict[tuple[Any, ...], Any] = {}
    decisions: list[SlotDecision | None] = [None] * len(plan)
    warnings: list[Reason] = []

    def decide(position: int, found: Published | None, present: set[str], pair_published: bool,
               new_experiment: bool = False) -> None:
        decisions[position] = _decide(plan[position], slot_identities[position], found, present, rerun, keep_sandbox,
                                      pair_published, shared, new_experiment)

    published_pairs: set[str] = set()
    published_experiments: set[str] = set()  # experiments with a slot of this plan published
    if rerun != "all" and pending:
        from assay.core.results_store import StoreError

        at = {unit_ids[position]: position for position in pending}
        try:
            for latest, present in _published_chunks(root.resolve(), {
                unit_ids[position]: slot_identities[position].digest for position in pending
            }):
                for unit_id, found in latest.items():
                    published_pairs.add(unit_id.rpartition("#")[0])
                    published_experiments.add(plan[at[unit_id]].experiment.id)
                    decide(at[unit_id], found, present, True)
        except (StoreError, OSError) as error:
            warnings.append(Reason("carry-store-unreadable", f"nothing is carried: {error}"))
            published_pairs.clear()
            published_experiments.add("")  # (the store is not asked again below)
            for position in pending:
                decisions[position] = None
    unseen = {plan[position].experiment.id for position in pending if decisions[position] is None} - published_experiments
    # An experiment none of whose slots is published: new to the project (its file added or renamed) when the
    # project's earlier runs never ran it, rather than each of its evals being new.
    new_experiments = _experiments_new_to(root.resolve(), unseen) if unseen and rerun != "all" and \
        "" not in published_experiments else set()
    for position in pending:  # not published (as a new eval, or a new attempt of one): decided alike
        if decisions[position] is None:
            decide(position, None, set(), unit_ids[position].rpartition("#")[0] in published_pairs,
                   plan[position].experiment.id in new_experiments)
    for position, planned in enumerate(plan):
        if planned.key in settled:
            reason = Reason("resumed", "kept from the checkpoint being resumed")
            decisions[position] = SlotDecision("resumed", reason, slot_identities[position], (reason,))
    decided = cast("list[SlotDecision]", decisions)
    if early_exit is not None:
        _mark_early_exits(plan, decided, settled, early_exit)
    return CarryPlan(decided, warnings)


def _experiments_new_to(root: Path, experiment_ids: set[str]) -> set[str]:
    """Those of `experiment_ids` no recorded agent run of the project at `root` ran (its manifest names the
    experiments it ran); none when the project has no recorded run (a first run's evals are all new) or the
    store cannot be read."""
    import json

    from assay.core.record import store_path
    from assay.core.results_store import SqliteRunStore, StoreError

    try:
        database = store_path(root)
        if not database.is_file():
            return set()
        with SqliteRunStore(database, read_only=True) as store:
            ran: set[str] = set()
            runs = 0
            rows = store.read("SELECT json_extract(manifest, '$.identity.experiments') FROM runs WHERE kind = 'agent' "
                              "AND json_extract(manifest, '$.identity.project') = ?", (str(root),))
            for (experiments,) in rows:
                runs += 1
                named = json.loads(experiments) if isinstance(experiments, str) else None
                if isinstance(named, dict):
                    ran.update(named)
    except (StoreError, OSError, ValueError):
        return set()
    return experiment_ids - ran if runs else set()


def _mark_early_exits(plan: Sequence[Any], decisions: list[SlotDecision], settled: Mapping[str, Any],
                      early_exit: Callable[[Any], bool]) -> None:
    """Slots to execute of an eval that already passed here (carried or resumed) stay undispatched."""
    passed: dict[tuple[str, str], int] = {}
    for planned, decision in zip(plan, decisions):
        result = decision.carried if decision.carried is not None else settled.get(planned.key)
        if result is not None and result.verdict == "passed":
            passed.setdefault((planned.experiment.id, planned.eval.id), planned.ordinal + 1)
    if not passed:
        return
    for position, (planned, decision) in enumerate(zip(plan, decisions)):
        ordinal = passed.get((planned.experiment.id, planned.eval.id))
        if decision.action != EXECUTE or ordinal is None or not early_exit(planned):
            continue
        reason = Reason(EARLY_EXIT, f"early exit: attempt #{ordinal} passed")
        decisions[position] = SlotDecision(NOT_DISPATCHED_ACTION, reason, decision.identity,
                                           (reason, *decision.reasons))


def adopted_attempt(root: Path, result: Any) -> Any:
    """A carried slot read through its reference: the published attempt it adopts, whole, from the
    results store (the run keeps only the reference); as recorded when that run is gone."""
    origin = getattr(result, "carried_from", None)
    if not origin:
        return result
    from assay.agent.slot_result import SlotResult
    from assay.core.record import store_path
    from assay.core.results_store import SqliteRunStore

    database = store_path(root)
    if not database.is_file():
        return result
    with SqliteRunStore(database, read_only=True) as store:
        unit = store.get_unit(origin["run_id"], origin["unit_id"])
    if unit is None or not isinstance(unit.detail, dict):
        return result
    adopted = SlotResult.from_json(unit.detail)
    adopted.outcome, adopted.carried_from, adopted.decision = result.outcome, dict(origin), result.decision
    adopted.identity = result.identity
    return adopted
