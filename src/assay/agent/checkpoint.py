"""An agent run's checkpoint on the core journal: its plan identity, what a resume reuses, how it ends.

Every slot is journaled once settled; errored, interrupted and undispatched ones are rerun on resume,
the rest reused (a carried slot stays carried, one an early exit left undispatched stays so).
Checkpoints live in `<project>/.assay/runs/checkpoints/agent-*`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.agent.identity import Reason
from assay.agent.project import checkpoints_base
from assay.agent.record import ATTEMPT_RECORD, EXECUTED, REUSED, AttemptResult
from assay.agent.slot_result import CARRIED, SlotResult, is_early_exit
from assay.core import journal as journal_module
from assay.core.journal import Checkpoint, plan_hash, read_manifest
from assay.errors import CheckpointError

KIND = "agent"
RESUMABLE_LOOKBACK = 20  # checkpoints a new run looks through for an interrupted run of its plan


def plan_identity(invocation: Mapping[str, Any], plan: Sequence[Any]) -> str:
    """What must not change for a resume: the selection, each experiment's identity, each eval's file."""
    experiments: dict[str, Any] = {}
    evals: dict[str, str] = {}
    for planned in plan:
        experiments.setdefault(planned.experiment.id, planned.experiment.experiment.identity())
        evals.setdefault(planned.eval.id, planned.eval.digest)
    selection = {key: invocation.get(key) for key in ("experiment", "evals", "tags", "attempts", "timeout", "budget")}
    return plan_hash({"selection": selection, "experiments": experiments, "evals": evals, "slots": len(plan)})


_NAMED_EVALS = 2_000  # a checkpoint lists its evals' ids (to say which were added or removed) up to this many


def plan_inputs(project: Path, plan: Sequence[Any]) -> dict[str, Any]:
    """What `plan_identity` hashes, kept beside the hash so that a refused resume can say what changed:
    each experiment's identity, each eval file's digest (by its path in the project), the eval ids."""
    experiments: dict[str, Any] = {}
    files: dict[str, str] = {}
    evals: dict[str, None] = {}
    seen_paths: set[Any] = set()  # (a file defines many evals: its path is made relative once)
    for planned in plan:
        experiments.setdefault(planned.experiment.id, planned.experiment.experiment.identity())
        entry = planned.eval
        if entry.id not in evals:
            evals[entry.id] = None
            if entry.path is not None and entry.path not in seen_paths:
                seen_paths.add(entry.path)
                files[_in_project(project, entry.path)] = entry.digest
    inputs: dict[str, Any] = {"root": str(project), "experiments": experiments, "files": files, "slots": len(plan)}
    if len(evals) <= _NAMED_EVALS:
        inputs["evals"] = list(evals)
    return inputs


def _in_project(project: Path, path: Path) -> str:
    try:
        return Path(path).relative_to(project).as_posix()
    except ValueError:
        return str(path)


def _listed(names: Sequence[str], shown: int = 3) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _changes(before: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """What differs between the plan inputs a checkpoint recorded and the current ones, in a few words."""
    changes = []
    for label, old, new in (("eval file", before.get("files") or {}, now["files"]),
                            ("experiment", before.get("experiments") or {}, now["experiments"])):
        edited = [name for name in new if name in old and old[name] != new[name]]
        if label == "experiment":
            edited = [f"{name} ({', '.join(key for key in sorted({*old[name], *new[name]}) if old[name].get(key) != new[name].get(key))})"
                      for name in edited]
        for what, names in (("changed", edited), ("added", [name for name in new if name not in old]),
                            ("removed", [name for name in old if name not in new])):
            if names:
                changes.append(f"{label}{'s' if len(names) > 1 else ''} {what}: {_listed(names)}")
    if isinstance(before.get("evals"), list) and "evals" in now:
        old_ids, new_ids = set(before["evals"]), set(now["evals"])
        for what, names in (("added", [name for name in now["evals"] if name not in old_ids]),
                            ("removed", [name for name in before["evals"] if name not in new_ids])):
            if names:
                changes.append(f"eval{'s' if len(names) > 1 else ''} {what}: {_listed(names)}")
    if not changes and before.get("slots") != now["slots"]:
        changes.append(f"{before.get('slots')} attempts planned then, {now['slots']} now")
    return changes


def _ensure_not_complete(path: Path, manifest: Mapping[str, Any]) -> None:
    """The core check, saying what to do instead: a finished run's results are read back, not resumed."""
    if manifest.get("status") == journal_module.STATUS_COMPLETE:
        raise CheckpointError(
            f"--resume {path.name}: that run is complete (every attempt finished), so there is nothing to resume; "
            f"`assay agent show --run {path.name}` shows its results, and `assay agent run` without --resume starts "
            "a new run"
        )


def _ensure_plan_unchanged(path: Path, manifest: Mapping[str, Any], plan: Sequence[Any]) -> None:
    """The core check (GlassKit's words), saying what changed when the checkpoint recorded its inputs."""
    if manifest.get("plan_hash") == plan_identity(manifest["invocation"], plan):
        return
    before = manifest.get("plan_inputs")
    changes = _changes(before, plan_inputs(Path(str(before.get("root"))), plan)) if isinstance(before, Mapping) else []
    detail = f" ({'; '.join(changes)})" if changes else ""
    raise CheckpointError(f"checkpoint inputs changed{detail}; start a new operation instead of resuming {path}")


def is_reusable(result: AttemptResult) -> bool:
    """Settled for good: a resume keeps it and a run made only of these is complete."""
    if is_early_exit(result):
        return True
    return result.outcome in (EXECUTED, REUSED, CARRIED) and result.verdict not in (None, "errored")


class AgentCheckpoint:
    def __init__(self, checkpoint: Checkpoint, reused: dict[str, AttemptResult], resumed: bool) -> None:
        self.checkpoint = checkpoint
        self.reused = reused
        self.resumed = resumed

    @property
    def path(self) -> Path:
        return self.checkpoint.path

    @property
    def id(self) -> str:
        return self.checkpoint.id

    @classmethod
    def start(cls, project: Path, invocation: Mapping[str, Any], plan: Sequence[Any]) -> AgentCheckpoint:
        checkpoint = Checkpoint.create(
            checkpoints_base(project), KIND, plan_hash=plan_identity(invocation, plan), total=len(plan),
            invocation=invocation, extra={"plan_inputs": plan_inputs(project, plan)},
        )
        return cls(checkpoint, {}, False)

    @classmethod
    def resume(cls, path: Path, manifest: Mapping[str, Any], plan: Sequence[Any]) -> AgentCheckpoint:
        _ensure_not_complete(path, manifest)
        _ensure_plan_unchanged(path, manifest, plan)
        checkpoint = Checkpoint.resume(path, manifest)
        try:
            records = checkpoint.journal.records()
            journal_module.ensure_results_within_plan(path, records, (planned.key for planned in plan))
            reused = {}
            for key, record in records.items():
                if record.type != ATTEMPT_RECORD:
                    continue
                result = SlotResult.from_json(record.payload)
                if is_reusable(result):
                    if result.outcome == EXECUTED:
                        result.outcome = REUSED
                    reused[key] = result
        except BaseException:
            checkpoint.release()
            raise
        return cls(checkpoint, reused, True)

    @staticmethod
    def would_remain(outcome: Any) -> bool:
        """Whether `finish(outcome)` keeps the checkpoint open for `--resume` (something to rerun)."""
        return outcome.interrupted or any(not is_reusable(result) for result in outcome.summaries)

    def finish(self, outcome: Any) -> bool:
        """Mark complete when nothing is left to rerun; otherwise keep it for `--resume`. True if kept open."""
        rerun = self.would_remain(outcome)
        if not rerun:
            self.checkpoint.mark_complete()
        self.checkpoint.release()
        return rerun

    def release(self) -> None:
        self.checkpoint.release()

    def let_go_after_failure(self) -> bool:
        """A run that failed: a checkpoint it made and journaled nothing in (it failed before its
        first attempt settled, e.g. on a bad `--ray-address`) is deleted, as there is nothing to
        resume; any other is kept for `--resume`. True if kept."""
        journal = self.path / journal_module.JOURNAL_FILE_NAME
        try:
            empty = not self.resumed and journal.stat().st_size == 0
        except OSError:
            empty = False
        if empty:
            try:
                self.checkpoint.discard()
                return False
            except CheckpointError:
                pass
        self.checkpoint.release()
        return True


def resumable_warning(project: Path, invocation: Mapping[str, Any], plan: Sequence[Any], carry: Any) -> Reason | None:
    """A new run of a plan an interrupted run already began does its finished attempts again; say
    so, with the `--resume` that reuses them. Only unfinished checkpoints of this very plan (same
    selection, experiments and eval files) that no live process holds count, and only attempts
    this run would execute (not carry); none: None. Looks at the newest checkpoints only (their
    names sort by time) and reads nothing but their manifests unless one is unfinished."""
    unfinished = [(path, manifest) for path, manifest in list_checkpoints(project, newest=RESUMABLE_LOOKBACK)
                  if manifest.get("status") == journal_module.STATUS_IN_PROGRESS]
    if not unfinished:
        return None
    identity = plan_identity(invocation, plan)
    for path, manifest in reversed(unfinished):  # the newest first
        if manifest.get("plan_hash") != identity:
            continue
        try:
            if journal_module.in_use(path):
                continue
            settled = {key for key, result in _latest_results(path).items() if is_reusable(result)}
        except (CheckpointError, OSError):
            continue
        finished = sum(1 for planned in plan
                       if planned.key in settled and carry.at(planned.index).action == "execute")
        if finished:
            command = journal_module.format_resume_command(
                ["assay", "agent", "run", "--project", str(project), "--resume", path.name]
            )
            return Reason("resumable-checkpoint", (
                f"the interrupted run {path.name} of this plan finished {finished} of the {carry.count('execute')} "
                f"attempts this run would send again; `{command}` reuses them"
            ))
    return None


def resume_lines(path: Path, project: Path) -> list[str]:
    command = journal_module.format_resume_command(
        ["assay", "agent", "run", "--project", str(project), "--resume", str(path)]
    )
    return [f"Checkpoint: {path}", f"Resume with `{command}`."]


def list_checkpoints(project: Path, *, newest: int | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """Agent checkpoints of the project, oldest first; with `newest`, only that many of the latest."""
    root = journal_module.checkpoints_root(checkpoints_base(project))
    found = []
    if root.is_dir():
        paths = sorted(path for path in root.iterdir() if path.name.startswith(f"{KIND}-"))
        for path in paths[-newest:] if newest else paths:
            if not path.is_dir():
                continue
            try:
                found.append((path, read_manifest(path, KIND)))
            except CheckpointError:
                continue
    return sorted(found, key=lambda item: (item[1].get("created_at", ""), item[0].name))


def read_results(path: Path) -> list[AttemptResult]:
    """The latest result per slot in discovery order, read-only; a torn last line (a run still
    writing) is skipped. Slots journaled without a position (older runs) follow in journal order."""
    latest = _latest_results(path)
    # The journal is in the order attempts finished, which varies from run to run.
    return sorted(latest.values(), key=lambda result: (result.position is None, result.position or 0))


def _latest_results(path: Path) -> dict[str, AttemptResult]:
    """Slot key -> its latest journaled result."""
    latest: dict[str, AttemptResult] = {}
    try:
        data = (path / journal_module.JOURNAL_FILE_NAME).read_bytes()
    except FileNotFoundError:
        return latest
    for line in data.split(b"\n")[:-1]:
        try:
            document = json.loads(line)
        except ValueError:
            raise CheckpointError(f"checkpoint event log in {path} is corrupt") from None
        if isinstance(document, dict) and document.get("type") == ATTEMPT_RECORD:
            latest[document["key"]] = SlotResult.from_json(document["payload"])
    return latest


__all__ = ["AgentCheckpoint", "KIND", "is_reusable", "list_checkpoints", "plan_identity", "read_results", "resume_lines"]
