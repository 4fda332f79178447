"""`assay video seed`: ask the adapter for the missing expectations and write them into the case files.

Follows spec/video.md §18: checkpointed and resumable, all-or-nothing, and a rewrite that keeps every
byte of a case file except the sample blocks whose expectations were seeded. The seed is a command of
the video kind run by the pipeline (`seed_kind.py`): its Ctrl-C, errors and exit codes are a run's.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from assay.core.compare import extract_field
from assay.core.format import format_duration
from assay.core.journal import (
    Checkpoint,
    JournalWriter,
    ensure_not_complete,
    ensure_plan_unchanged,
    ensure_results_within_plan,
    format_resume_command,
    remove_checkpoint_leftovers,
)
from assay.core.record import UnitResult
from assay.core.run.kinds import Resumed
from assay.core.run.request import Outputs
from assay.core.run_events import RunEvents, RunFinished, SectionStarted, UnitDurable
from assay.errors import (
    EXIT_ERROR,
    EXIT_GATE_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    AssayError,
    CaseError,
    CheckpointError,
)
from assay.video.adapters import AdapterConfig
from assay.video.model import Case, EvalDirectory, Sample, Target
from assay.video.observe import (
    Observation,
    SampleAbort,
    TrialEvaluator,
    invalid_observation,
    observe_case,
)
from assay.video.request import SeedRequest, invocation_with_outputs

__all__ = [
    "SEED_KIND",
    "CaseWriteError",
    "OpenedSeed",
    "SeededSample",
    "SeedConclusion",
    "SeedSection",
    "seed_invocation",
    "seed_key",
    "seed_plan_hash",
]

SEED_KIND = "seed"
RECORD_TYPE = "seed_result"


class CaseWriteError(CaseError):
    """A seeded case file could not be written (exit 2)."""


def seed_invocation(options: SeedRequest, outputs: Outputs, resolved_eval_dir: Path) -> dict[str, Any]:
    """The manifest's `invocation` (§14.2 seed keys)."""
    return invocation_with_outputs(replace(options, eval_dir=resolved_eval_dir), outputs)


def seed_key(sample: Sample) -> str:
    return f"{sample.case_name}\0{sample.target_id}\0{sample.sample_index}\0{float.hex(sample.timestamp_s)}"


def seed_plan_hash(invocation: Mapping[str, Any], directory: EvalDirectory) -> str:
    """§14.3: any change to an option, a case file's bytes or a video's identity changes it."""
    from assay.video.checkpoint import plan_hash as video_plan_hash

    return video_plan_hash(invocation, directory)


# ---------------------------------------------------------------------------------------------
# Loading and selecting


@dataclass(frozen=True)
class _Loaded:
    directory: EvalDirectory
    snapshots: dict[Path, bytes]  # each case file's bytes as the seed read them


def _load_with_snapshot(options: SeedRequest, materialize: Any) -> _Loaded:
    """§18 step 2: the files' text is taken before loading and must still match what was loaded."""
    from assay.video.loading import (
        discover_case_paths,
        load_eval_directory,
        resolve_eval_dir,
    )

    root = resolve_eval_dir(options.eval_dir)
    snapshots: dict[Path, bytes] = {}
    for path in discover_case_paths(root, options.case, options.targets):
        try:
            snapshots[path] = path.read_bytes()
        except OSError as error:
            raise CaseError(f"{path}: could not read file: {error}") from None
    directory = load_eval_directory(
        options.eval_dir, case=options.case, targets=options.targets, allow_draft=True, materialize=materialize
    )
    loaded = {case.path for case in directory.cases}
    if loaded != set(snapshots):
        changed = sorted(loaded ^ set(snapshots))
        raise CaseError(
            "case selection changed while its draft was being loaded; retry seeding: "
            + ", ".join(str(path) for path in changed)
        )
    for case in directory.cases:
        if hashlib.sha256(snapshots[case.path]).hexdigest() != case.source_sha256:
            raise CaseError(f"case changed while its draft was being loaded; retry seeding: {case.path}")
    return _Loaded(directory, snapshots)


def _is_selected(sample: Sample, replace_existing: bool) -> bool:
    return not sample.is_ignored and (replace_existing or not sample.has_expectation)


def _preserved_count(directory: EvalDirectory, replace_existing: bool) -> int:
    return sum(
        1
        for case in directory.cases
        for sample in case.all_samples()
        if sample.has_expectation and (not replace_existing or sample.is_ignored)
    )


@dataclass(frozen=True)
class _Selected:
    case: Case
    target: Target
    sample: Sample
    key: str


def _select(directory: EvalDirectory, replace_existing: bool) -> list[_Selected]:
    return [
        _Selected(case, target, sample, seed_key(sample))
        for case in directory.cases
        for target in case.targets
        for sample in target.samples
        if _is_selected(sample, replace_existing)
    ]


def _check_remaining_sample_times(directory: EvalDirectory, remaining: Sequence[_Selected]) -> None:
    """§18 step 4: probe the videos still needed and apply the `duration + 0.05` rule to their samples."""
    from assay.video.run import check_sample_times

    keys = {item.key for item in remaining}
    cases = []
    for case in directory.cases:
        targets = tuple(
            replace(target, samples=tuple(s for s in target.samples if seed_key(s) in keys)) for target in case.targets
        )
        if any(target.samples for target in targets):
            cases.append(replace(case, targets=targets))
    if cases:
        check_sample_times(replace(directory, cases=tuple(cases)))


# ---------------------------------------------------------------------------------------------
# Rewriting a case file


def _rewrite_case_text(case: Case, text: str, seeded: Mapping[str, Any]) -> str:
    """The case file with every block holding a seeded sample updated (§18 step 7); other bytes kept.

    A block whose samples all received one value keeps its text and gains (or changes) only its
    `expect` entry, so every comment in it stays on its line. A block whose values differ, or that
    cannot be edited in place, is split by the §22.4 rebuild; the fresh parts carry the comments
    above and on the first line of the block, and its other comments are moved above it rather than lost.
    """
    import yaml

    from assay.video.casefile import expand_sample_aliases, rewrite_target_samples, set_block_expectations
    from assay.video.casefile_schema import parse_case_file
    from assay.video.reconstruct import EditableSample, SampleOrigin, reconstruct_blocks, strictly_equal

    text = expand_sample_aliases(text)  # each target its own samples: an edit must not reach another's
    raw_case = parse_case_file(case.raw, label=str(case.path))
    touched_blocks: dict[tuple[str, int], tuple[Target, SampleOrigin, list[EditableSample]]] = {}
    for target in case.targets:
        touched = {sample.block_index for sample in target.samples if seed_key(sample) in seeded}
        parsed_blocks = raw_case.targets[target.id].samples
        for block_number in sorted(touched):
            parsed = parsed_blocks[block_number - 1]
            is_range = parsed.range_ is not None
            origin = SampleOrigin(
                block_index=block_number,
                kind="range" if is_range else "at",
                every_s=(parsed.every_s if parsed.every_s is not None else case.every_s) if is_range else None,
                range_end=parsed.range_[1] if is_range and parsed.range_ is not None else None,
            )
            members = []
            for sample in target.samples:
                if sample.block_index != block_number:
                    continue
                key = seed_key(sample)
                members.append(
                    EditableSample(
                        id=f"{sample.sample_index:08d}",
                        timestamp_s=sample.timestamp_s,
                        has_expectation=key in seeded or sample.has_expectation,
                        expected=seeded.get(key, sample.expected),
                        field=sample.field,
                        compare_mode=sample.compare.mode,
                        tolerance=sample.compare.tolerance,
                        comment=sample.comment,
                        ignore=sample.ignore,
                        origin=origin,
                    )
                )
            touched_blocks[(target.id, block_number)] = (target, origin, members)
    # `expect` is a block key, so one value for all samples means the block as written
    # still says exactly the right thing once its `expect` says that value.
    one_value = {
        key: members[0].expected
        for key, (_, _, members) in touched_blocks.items()
        if all(strictly_equal(member.expected, members[0].expected) for member in members)
    }
    edited, refused = set_block_expectations(text, one_value, rebuilding=touched_blocks.keys() - one_value.keys())
    edited_in_place = one_value.keys() - refused
    rebuilt: dict[str, dict[int, list[dict[str, Any]]]] = {}  # target -> block number -> its new parts
    for (target_id, block_number), (target, origin, members) in touched_blocks.items():
        if (target_id, block_number) in edited_in_place:
            continue
        rebuilt.setdefault(target_id, {})[block_number] = reconstruct_blocks(
            members,
            case_every_s=case.every_s,
            default_field=target.sample_defaults_field,
            default_compare=target.sample_defaults_compare,
            allow_ranges=origin.kind == "range",
            range_end=origin.range_end,
            target_timestamps_s=[sample.timestamp_s for sample in target.samples],
        )
    if not rebuilt:
        return edited
    # Blocks edited in place are handed back as they now read, so the rewrite keeps their text.
    targets_now = (yaml.safe_load(edited) or {}).get("targets") or {}
    new_blocks = {
        target_id: [
            part
            for number, raw_block in enumerate(targets_now[target_id]["samples"], start=1)
            for part in parts_by_block.get(number, [raw_block])
        ]
        for target_id, parts_by_block in rebuilt.items()
    }
    try:
        return rewrite_target_samples(edited, new_blocks)
    except ValueError as error:
        raise CaseError(f"could not rewrite seeded case file {case.path}: {error}") from None


def _check_candidate(
    case: Case, directory: EvalDirectory, original_bytes: bytes, candidate_bytes: bytes, seeded: Mapping[str, Any]
) -> None:
    """Load the candidate exactly as a later run would, and make sure it says what was seeded, and that the
    targets `--target` left out say what they said before."""
    from assay.video.loading import load_case
    from assay.video.reconstruct import strictly_equal
    from assay.video.run import check_sample_times

    try:
        candidate = load_case(case.path, directory.config, materialize_videos=False, source=candidate_bytes)
    except AssayError as error:
        raise CaseError(f"seeded case file would not load: {error}") from None
    by_id = {target.id: target for target in candidate.targets}
    selected = {target.id for target in case.targets}
    try:
        original = load_case(case.path, directory.config, materialize_videos=False, source=original_bytes)
    except AssayError:
        original = case
    left_out = [target for target in original.targets if target.id not in selected]
    for target in [*case.targets, *left_out]:
        rewritten = by_id.get(target.id)
        if rewritten is None or len(rewritten.samples) != len(target.samples):
            raise CaseError(f"seeded case file would change the samples of {case.name}/{target.id}: {case.path}")
        for before, after in zip(target.samples, rewritten.samples):
            key = seed_key(before)
            expected = seeded.get(key, before.expected)
            has_expectation = key in seeded or before.has_expectation
            same = (
                before.tick == after.tick
                and before.sample_index == after.sample_index
                and has_expectation == after.has_expectation
                and (not has_expectation or strictly_equal(expected, after.expected))
                and before.field == after.field
                and before.compare == after.compare
                and before.comment == after.comment
                and before.ignore == after.ignore
            )
            if not same:
                raise CaseError(
                    f"seeded case file would change {case.name}/{target.id} sample {before.sample_index} "
                    f"at {before.timestamp_s:g}s: {case.path}"
                )
    check_sample_times(replace(directory, cases=(replace(candidate, video=case.video),)))


def _refuse_if_changed(path: Path, snapshot: bytes) -> None:
    try:
        current = path.read_bytes()
    except OSError:
        current = None
    if current != snapshot:
        raise CaseError(f"case changed while expectations were being seeded; refusing to overwrite: {path}")


def _check_write_stays_inside(eval_dir: Path, case_path: Path) -> None:
    """A symlinked case file is rewritten through its link, so its target must be in the eval dir."""
    from assay.core.fsutil import contained_target

    try:
        contained_target(eval_dir, case_path)
    except OSError as error:
        raise CaseWriteError(f"could not write seeded case file {case_path}: {error}") from None


def _remove_stale_case_temporaries(directory: EvalDirectory) -> None:
    """Temporary files a killed rewrite (this seed's or a review save's) left beside the case files."""
    from assay.core.fsutil import remove_stale_temporary_files_beside

    remove_stale_temporary_files_beside(directory.path, (case.path for case in directory.cases))


# ---------------------------------------------------------------------------------------------
# The operation, as a run the pipeline opens, executes, concludes and lets go of


# Beside the journal (whose records stay GlassKit's two types): the case files a seed is about to
# replace, each with the digest of the text it replaces and the text it writes.
PENDING_WRITES_FILE = "case-writes.json"


def _keep_pending_writes(
    checkpoint: Path, eval_dir: Path, writes: Sequence[tuple[Case, bytes, bytes]], *, proposed: int, preserved: int
) -> None:
    from assay.core.fsutil import write_atomically

    document = {
        "eval_dir": str(eval_dir), "proposed": proposed, "preserved": preserved,
        "names": [case.name for case, _, _ in writes],
        "cases": [
            {"path": str(case.path), "before_sha256": hashlib.sha256(before).hexdigest(), "text": after.decode("utf-8")}
            for case, before, after in writes
        ],
    }
    try:
        write_atomically(checkpoint / PENDING_WRITES_FILE, json.dumps(document, ensure_ascii=False))
    except OSError as error:
        raise CheckpointError(f"could not update checkpoint {checkpoint}: {error}") from None


def _read_pending_writes(checkpoint: Path) -> dict[str, Any] | None:
    try:
        text = (checkpoint / PENDING_WRITES_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as error:
        raise CheckpointError(f"could not read {checkpoint / PENDING_WRITES_FILE}: {error}") from None
    try:
        document = json.loads(text)
        well_formed = (
            isinstance(document.get("eval_dir"), str)
            and all(isinstance(document.get(count), int) for count in ("proposed", "preserved"))
            and all(isinstance(name, str) for name in document["names"])
            and all(isinstance(entry.get(field), str) for entry in document["cases"]
                    for field in ("path", "before_sha256", "text"))
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        well_formed = False
    if not well_formed:
        raise CheckpointError(f"checkpoint file is damaged: {checkpoint / PENDING_WRITES_FILE}; "
                              "start a new seed instead of resuming")
    return document


@dataclass(frozen=True, slots=True)
class SeededSample:
    """One sample's seeded value (or, with --keep-going, its error), durable in the checkpoint."""

    target: Target
    sample: Sample
    value: Any = None
    error: str | None = None

    @property
    def verdict(self) -> str:
        return "errored" if self.error is not None else "passed"

    def unit(self) -> UnitResult:
        sample = self.sample
        return UnitResult(
            unit_id=f"{sample.case_name}/{self.target.id}/{sample.sample_index}@{sample.timestamp_s:g}s",
            verdict=self.verdict, group=f"{sample.case_name}/{self.target.id}", observed=self.value,
            reason=self.error or "",
        )


@dataclass(frozen=True, slots=True)
class SeedSection:
    """A heading of the seed's display: a case (no target) or one of its targets."""

    case: Case
    target: Target | None = None


@dataclass(frozen=True)
class SeedConclusion:
    """What a finished seed says (GlassKit's lines, a blank one before its `Seed:` summary) and its exit code."""

    lines: tuple[str, ...]
    exit_code: int = EXIT_OK


class OpenedSeed:
    """One `assay video seed`: everything happens in `execute`, so every failure, from loading the
    cases to writing them, ends the way the pipeline ends a run (checkpoint kept when it holds work)."""

    def __init__(self, options: SeedRequest, outputs: Outputs, resume: Resumed | None) -> None:
        self.options = options
        self.outputs = outputs
        self.resume = resume
        self.run_id = resume.path.name if resume is not None else ""
        self.checkpoint: Checkpoint | None = None
        self.created_checkpoint = False
        self.seeded: dict[str, Any] = {}  # key -> expectation, reused or new (only once durable)
        self._writer: JournalWriter | None = None
        self._events: RunEvents | None = None
        # The case being evaluated shows its lines target by target, as GlassKit asks them (see _evaluate).
        self._display: Any = None
        self.errors: dict[str, str] = {}  # key -> message (keep-going only)

    def worker(self) -> None:
        return None  # one evaluator for the whole seed, here

    # -- checkpoint -------------------------------------------------------------------------
    @property
    def has_reusable_work(self) -> bool:
        return bool(self.seeded)

    def _resume_lines(self) -> list[str]:
        if self.checkpoint is None or not self.has_reusable_work:
            return []
        path = os.path.abspath(self.checkpoint.path)
        command = format_resume_command(["assay", "video", "seed", "--resume", path])
        return [f"Checkpoint: {path}", f"Resume with `{command}`."]

    def _let_go_of_checkpoint(self) -> None:
        """Release the lock; a checkpoint this run made that holds nothing reusable is deleted."""
        if self.checkpoint is None:
            return
        checkpoint, self.checkpoint = self.checkpoint, None
        if self.created_checkpoint and not self.seeded:
            try:
                checkpoint.discard()
            except CheckpointError:
                checkpoint.release()
            return
        checkpoint.release()

    def _finished(self, exit_code: int, *, resumable: bool = True, **fields: Any) -> RunFinished:
        """The run's end, the checkpoint let go of after saying how to resume it (when it holds work)."""
        lines = self._resume_lines() if resumable else []
        path = self.checkpoint.path if self.checkpoint is not None else None
        self._let_go_of_checkpoint()
        return RunFinished(
            "video", self.run_id, exit_code, checkpoint=path, checkpoint_kept=bool(lines), resume_lines=lines, **fields
        )

    def conclude(self, outcome: SeedConclusion) -> RunFinished:
        return self._finished(outcome.exit_code, resumable=outcome.exit_code != EXIT_OK, outcome=outcome)

    def interrupted(self) -> RunFinished:
        return self._finished(EXIT_INTERRUPTED, interrupted=True)

    def failed(self, error: AssayError) -> RunFinished:
        return self._finished(EXIT_ERROR, error=error)

    def seal(self, finished: RunFinished) -> None:
        self._let_go_of_checkpoint()  # (already let go of: a seed's files are written before it reports)

    def _record(self, key: str, payload: Mapping[str, Any], on_durable: Any) -> Any:
        """Group-commit one record; `on_durable` (the state change and the line) runs once it is on
        disk. Returns the future the worker waits on, so a crash repeats at most one call per worker."""
        assert self._writer is not None
        return self._writer.submit(RECORD_TYPE, key, payload, on_durable)

    def _section(self, case: Case, target: Target | None, count: int) -> None:
        """A heading, as GlassKit prints them: the case and each target with their samples still to seed."""
        assert self._events is not None
        self._events.section_started(SectionStarted(2 if target is not None else 1, count, SeedSection(case, target)))

    def _durable(self, seeded: SeededSample) -> None:
        assert self._events is not None
        self._events.unit_durable(UnitDurable(seeded, seeded.unit))

    # -- evaluation --------------------------------------------------------------------------
    def _handle(self, observation: Observation) -> Any:
        """Turn one observation into a durable seeded value (or a recorded error) before reporting it."""
        sample, target = observation.sample, observation.target
        key = seed_key(sample)
        show = self._display.add if self._display is not None else (lambda _index, seeded: self._durable(seeded))
        message = observation.error
        value: Any = None
        if message is None:
            message = invalid_observation(sample, target, observation.value)
        if message is None:
            found, value = extract_field(observation.value, sample.field)
            if not found:
                message = (
                    f"cannot seed {sample.case_name}/{target.id} sample {sample.sample_index} at "
                    f"{sample.timestamp_s:g}s: adapter observation is missing configured field: {sample.field}"
                )
        if message is not None:
            if not self.options.keep_going:
                raise SampleAbort(sample, message)
            failure = message

            def recorded_error() -> None:
                self.errors[key] = failure
                show(target.index, SeededSample(target, sample, error=failure))

            return self._record(key, {"status": "error", "message": message}, recorded_error)

        def recorded_value() -> None:
            self.seeded[key] = value
            self.errors.pop(key, None)
            show(target.index, SeededSample(target, sample, value))

        payload = {
            "status": "success",
            "expected": value,
            "evaluation_duration_seconds": observation.duration_seconds,
            "evaluation_timing_mode": observation.timing_mode,
        }
        return self._record(key, payload, recorded_value)

    async def _evaluate(self, directory: EvalDirectory, pending: Sequence[_Selected]) -> None:
        """§18 step 5: one evaluator for the whole seed, cases in order, exactly like `run` drives it."""
        by_case: dict[Path, dict[int, list[Sample]]] = {}
        for item in pending:
            by_case.setdefault(item.case.path, {}).setdefault(item.target.index, []).append(item.sample)
        config = AdapterConfig(
            eval_dir=directory.path, config=dict(self.options.adapter_config), artifacts_dir=None,
            verbose=self.outputs.verbose,
        )
        from assay.video.checkpoint import journal_writer
        from assay.video.run import DisplayOrder, usable_concurrency

        concurrency = usable_concurrency(self.options.concurrency, len(pending))
        executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="assay-adapter")
        assert self.checkpoint is not None
        self._writer = journal_writer(self.checkpoint, concurrency)
        try:
            async with TrialEvaluator(
                adapter=self.options.adapter, adapter_command=self.options.adapter_command, config=config,
                executor=executor, adapter_timeout=self.options.adapter_timeout,
            ) as evaluators:
                # Built before the first heading is printed, as GlassKit's seed does: an adapter that fails to load
                # is the seed's only output (a run builds one per trial, once its case is announced).
                evaluator = await evaluators.get()
                for case in directory.cases:
                    targets = by_case.get(case.path)
                    if not targets:
                        continue
                    work = [(target, targets[target.index]) for target in case.targets if target.index in targets]
                    # The adapter is asked in time order across targets; the SEEDED and ERROR lines come
                    # target by target (declaration order), each target's in completion order, as GlassKit's do.
                    self._section(case, None, sum(len(samples) for _, samples in work))
                    self._display = DisplayOrder(
                        lambda target, count, case=case: self._section(case, target, count), self._durable,
                        [(target, len(samples)) for target, samples in work],
                    )
                    try:
                        await observe_case(
                            case, work, evaluator,
                            concurrency=usable_concurrency(concurrency, sum(len(samples) for _, samples in work)),
                            keep_going=self.options.keep_going, handle=self._handle,
                        )
                    finally:
                        await self._writer.drain()
                        self._display = None
        finally:
            writer, self._writer = self._writer, None
            await writer.close()
            # Already-started sync calls finish; queued ones are dropped.
            executor.shutdown(wait=True, cancel_futures=True)

    # -- the steps ---------------------------------------------------------------------------
    def _open_checkpoint(self, directory: EvalDirectory, selected: Sequence[_Selected]) -> None:
        invocation = seed_invocation(self.options, self.outputs, directory.path)
        current_hash = seed_plan_hash(invocation, directory)
        if self.resume is None:
            self.checkpoint = Checkpoint.create(
                directory.path, SEED_KIND, plan_hash=current_hash, total=len(selected), invocation=invocation
            )
            self.run_id = self.checkpoint.path.name
            self.created_checkpoint = True
            return
        path, manifest = self.resume
        ensure_not_complete(path, manifest)
        ensure_plan_unchanged(path, manifest, current_hash)
        self.checkpoint = Checkpoint.resume(path, manifest)
        records = self.checkpoint.journal.records()
        ensure_results_within_plan(path, records, (item.key for item in selected))
        for key, record in records.items():
            payload = record.payload
            if payload.get("status") == "success" and "expected" in payload:
                self.seeded[key] = payload["expected"]

    def _write_cases(self, loaded: _Loaded, selected: Sequence[_Selected], preserved: int) -> list[Case]:
        """§18 step 7: build and check every candidate first, then replace the files one by one.

        A symlinked case file stays a link: its target is rewritten, and only when that target is
        inside the eval dir (checked for every file before any is written). What is about to be
        written is kept in the checkpoint first (`case-writes.json`), so a seed killed between two
        files is finished by `--resume` instead of being refused for the files it already wrote.
        """
        from assay.core.fsutil import write_atomically

        eval_dir = loaded.directory.path
        affected: list[Case] = []
        for case in loaded.directory.cases:
            if any(item.case.path == case.path for item in selected):
                affected.append(case)
        candidates: list[tuple[Case, bytes]] = []
        for case in affected:
            _check_write_stays_inside(eval_dir, case.path)
            snapshot = loaded.snapshots[case.path]
            _refuse_if_changed(case.path, snapshot)
            text = _rewrite_case_text(case, snapshot.decode("utf-8"), self.seeded)
            candidate = text.encode("utf-8")
            _check_candidate(case, loaded.directory, snapshot, candidate, self.seeded)
            candidates.append((case, candidate))
        assert self.checkpoint is not None
        _keep_pending_writes(self.checkpoint.path, eval_dir, [
            (case, loaded.snapshots[case.path], candidate) for case, candidate in candidates
        ], proposed=len(selected), preserved=preserved)
        for case, candidate in candidates:
            _refuse_if_changed(case.path, loaded.snapshots[case.path])
            try:
                write_atomically(case.path, candidate, root=eval_dir)
            except OSError as error:
                raise CaseWriteError(f"could not write seeded case file {case.path}: {error}") from None
        return affected

    def _finish_pending_writes(self, path: Path, manifest: Mapping[str, Any], started: float) -> SeedConclusion | None:
        """A seed killed while it rewrote its case files: write those it had not written yet, from
        what it kept, then seal it. None when it was not killed there (resume as usual)."""
        from assay.core.fsutil import write_atomically

        pending = _read_pending_writes(path)
        if pending is None:
            return None
        ensure_not_complete(path, manifest)
        self.checkpoint = Checkpoint.resume(path, manifest)
        eval_dir = Path(pending["eval_dir"])
        for entry in pending["cases"]:
            case_path, candidate = Path(entry["path"]), entry["text"].encode("utf-8")
            try:
                current = hashlib.sha256(case_path.read_bytes()).hexdigest()
            except OSError:
                current = None
            if current == hashlib.sha256(candidate).hexdigest():
                continue  # written before the kill
            if current != entry["before_sha256"]:
                raise CaseWriteError(f"case changed while expectations were being seeded; refusing to overwrite: {case_path}")
            _check_write_stays_inside(eval_dir, case_path)
            try:
                write_atomically(case_path, candidate, root=eval_dir)
            except OSError as error:
                raise CaseWriteError(f"could not write seeded case file {case_path}: {error}") from None
        self.checkpoint.mark_complete()
        (path / PENDING_WRITES_FILE).unlink(missing_ok=True)
        return _seeded(eval_dir, pending["names"], pending["proposed"], pending["preserved"], started)

    async def execute(self, events: RunEvents, executor: Any) -> SeedConclusion:
        """§18: load, select, evaluate what is left, then write the case files and mark the checkpoint
        complete (a seed's files are its result: they are written before the seed reports)."""
        from assay.video.cloud_store import materialize

        self._events = events
        started = time.perf_counter()
        if self.resume is not None:
            finished = self._finish_pending_writes(*self.resume, started)
            if finished is not None:
                return finished
        loaded = _load_with_snapshot(self.options, materialize)
        directory = loaded.directory
        _remove_stale_case_temporaries(directory)
        selected = _select(directory, self.options.replace)
        preserved = _preserved_count(directory, self.options.replace)
        if not selected and self.resume is None:
            remove_checkpoint_leftovers(directory.path, SEED_KIND)
            return SeedConclusion(("", f"Seed: {directory.path}", f"Nothing to seed; {preserved} existing expectations were preserved."))
        # Refused before any adapter call: a file that cannot be rewritten would waste them all.
        for case_path in dict.fromkeys(item.case.path for item in selected):
            _check_write_stays_inside(directory.path, case_path)
        self._open_checkpoint(directory, selected)
        remaining = [item for item in selected if item.key not in self.seeded]
        _check_remaining_sample_times(directory, remaining)
        if remaining:
            await self._evaluate(directory, remaining)
        missing = sum(1 for item in selected if item.key not in self.seeded)
        if missing:
            noun = "expectation" if missing == 1 else "expectations"
            line = f"Seed incomplete: {missing} {noun} could not be seeded; the case YAML was not changed"
            return SeedConclusion((line,), EXIT_GATE_FAILED)
        updated = self._write_cases(loaded, selected, preserved)
        assert self.checkpoint is not None
        self.checkpoint.mark_complete()
        (self.checkpoint.path / PENDING_WRITES_FILE).unlink(missing_ok=True)
        return _seeded(directory.path, [case.name for case in updated], len(selected), preserved, started)


def _seeded(eval_dir: Path, updated: Sequence[str], proposed: int, preserved: int, started: float) -> SeedConclusion:
    review = ["assay", "video", "review", "--eval-dir", str(eval_dir)]
    if len(updated) == 1:
        review += ["--case", updated[0]]
    return SeedConclusion((
        "",  # GlassKit leaves a blank line before the summary
        f"Seed: {eval_dir}",
        f"Cases updated: {len(updated)}",
        f"Expectations: {proposed} proposed, {preserved} preserved",
        f"Duration: {format_duration(time.perf_counter() - started)}",
        f"Review the proposed expectations with `{format_resume_command(review)}`.",
    ))


