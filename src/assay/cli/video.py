"""`assay video …`: GlassKit Eval's commands with its options, messages and exit codes.

Read `glasskit eval X` in spec/video.md as `assay video X`. Heavy modules (PyAV, pydantic models,
the runner) are imported inside commands so startup stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer

from assay.cli import common
from assay.cli.video_options import adapter_config_option, cloud_materializer
from assay.errors import AssayError

video_app = typer.Typer(no_args_is_help=True, add_completion=False, help="Video evals (GlassKit Eval compatible).")

EVAL_DIR_HELP = "Eval directory holding cases/, config.yaml and adapter files."


@video_app.command("run")
def run_command(
    adapter: Optional[str] = typer.Option(None, "--adapter", help="Python adapter '<module-or-file>:<callable>' (default: <eval-dir>/adapter.py:create_evaluator)."),
    adapter_command: Optional[str] = typer.Option(None, "--adapter-command", help="Command that serves the NDJSON adapter protocol."),
    eval_dir: Path = typer.Option(Path("eval"), "--eval-dir", help=EVAL_DIR_HELP),
    case: Optional[str] = typer.Option(None, "--case", help="Case file name or stem."),
    target: Optional[List[str]] = typer.Option(None, "--target", help="Target id (repeatable)."),
    at: Optional[List[float]] = typer.Option(None, "--at", help="Only the sample at this time (repeatable; needs --case)."),
    from_s: Optional[float] = typer.Option(None, "--from", help="Only samples at or after this time (needs --case)."),
    until_s: Optional[float] = typer.Option(None, "--until", help="Only samples before this time (needs --case)."),
    adapter_config: Optional[Path] = typer.Option(None, "--adapter-config", help="Adapter config file (YAML, or JSON by suffix)."),
    concurrency: int = typer.Option(1, "--concurrency", callback=common.at_least(1), help="Adapter calls in flight."),
    repeat: int = typer.Option(1, "--repeat", callback=common.at_least(1), help="Trials to run."),
    min_pass_rate: Optional[float] = typer.Option(None, "--min-pass-rate", callback=common.between(0, 1)),
    min_target_pass_rate: Optional[float] = typer.Option(None, "--min-target-pass-rate", callback=common.between(0, 1)),
    max_failures: Optional[int] = typer.Option(None, "--max-failures", callback=common.at_least(0)),
    max_flaky_samples: Optional[int] = typer.Option(None, "--max-flaky-samples", callback=common.at_least(0)),
    keep_going: bool = typer.Option(False, "--keep-going", help="Record adapter errors and continue."),
    resume: Optional[str] = typer.Option(None, "--resume", help="Checkpoint directory or id to resume."),
    verbose: bool = typer.Option(False, "--verbose", help="Print PASSED lines too; passed to the adapter."),
    output_json: Optional[str] = typer.Option(None, "--output-json", help="Write the JSON report here."),
    artifacts_dir: Optional[str] = typer.Option(None, "--artifacts-dir", help="Directory for adapter and failure artifacts."),
    save_failures: bool = typer.Option(False, "--save-failures", help="Save the frame and result of each failure."),
    allow_empty: bool = typer.Option(False, "--allow-empty", help="Allow targets and evals without samples."),
    junit: Optional[Path] = typer.Option(None, "--junit", help="Also write a JUnit XML report here."),
    shard: Optional[str] = typer.Option(None, "--shard", help="Run only shard i of n (e.g. 2/4); combine with `assay runs merge`."),
    executor: str = typer.Option("local", "--executor", help="Where cases run: local (default) or ray."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="Ray cluster to join (default: start a local one)."),
) -> None:
    """Evaluate every selected sample with the adapter and apply the quality gates."""
    from assay.core.journal import read_manifest, resolve_checkpoint_ref

    console = common.stdout_console()
    manifest = None
    if resume is not None:
        overrides = [
            adapter, adapter_command, case, target, at, from_s, until_s, adapter_config, min_pass_rate,
            min_target_pass_rate, max_failures, max_flaky_samples, output_json, artifacts_dir, junit, shard,
        ]
        flags = [keep_going, save_failures, allow_empty, verbose, concurrency != 1, repeat != 1]
        if any(value for value in overrides if value is not None) or any(flags):
            raise typer.BadParameter(
                "restores the original adapter and run options and cannot be combined with overrides",
                param_hint="--resume",
            )
        try:
            checkpoint_path = resolve_checkpoint_ref(resume, eval_dir.expanduser(), Path.cwd())
            manifest = read_manifest(checkpoint_path, "run")
        except AssayError as error:
            raise typer.BadParameter(str(error), param_hint="--resume") from None
        invocation = dict(manifest["invocation"])
    else:
        common.check_time_filters(case, at, from_s, until_s)
        if shard is not None:
            _parse_shard_option(shard)
        if adapter and adapter_command:
            common.bad_parameter("--adapter-command", "cannot be used with --adapter")
        config = adapter_config_option(eval_dir, adapter_config)
        if adapter is None and adapter_command is None:
            adapter = eval_dir.as_posix() + "/adapter.py:create_evaluator"
        invocation = {
            "eval_dir": str(eval_dir.expanduser().resolve()),
            "adapter": adapter,
            "adapter_command": adapter_command,
            "case_filter": case,
            "target_filter": list(target) if target else None,
            "at_times_s": list(at) if at else None,
            "from_time_s": from_s,
            "until_time_s": until_s,
            "adapter_config": config,
            "concurrency": concurrency,
            "repeat": repeat,
            "min_pass_rate": min_pass_rate,
            "min_target_pass_rate": min_target_pass_rate,
            "max_failures": max_failures,
            "max_flaky_samples": max_flaky_samples,
            "keep_going": keep_going,
            "verbose": verbose,
            "output_json": output_json,
            "artifacts_dir": artifacts_dir,
            "save_failures": save_failures,
            "allow_empty": allow_empty,
            "junit": str(junit) if junit is not None else None,
        }
        if shard is not None:
            # Only when given, so unsharded checkpoints keep the plan hash they always had.
            invocation["shard"] = shard
    execution = _execution_option(executor, ray_address)
    _execute_run(console, invocation, checkpoint_path if manifest is not None else None, manifest, execution)


def _parse_shard_option(text: str) -> Any:
    from assay.core.shard import parse_shard

    try:
        return parse_shard(text)
    except AssayError as error:
        raise typer.BadParameter(str(error).removeprefix("--shard "), param_hint="--shard") from None


def _execution_option(executor: str, ray_address: Optional[str]) -> dict[str, Any]:
    """Where work runs is not part of the plan: a run started locally may resume on Ray."""
    if executor not in ("local", "ray"):
        common.bad_parameter("--executor", "must be local or ray")
    if ray_address is not None and executor != "ray":
        common.bad_parameter("--ray-address", "needs --executor ray")
    return {"executor": executor, "ray_address": ray_address}


def shard_directory(directory: Any, shard_text: Optional[str]) -> Any:
    """The eval directory narrowed to one shard's cases (a case's video is decoded by one shard)."""
    if shard_text is None:
        return directory
    import dataclasses

    from assay.core.shard import parse_shard, shard_members

    shard = parse_shard(shard_text)
    names = [case.name for case in directory.cases]
    weights = [sum(len(target.samples) for target in case.targets) for case in directory.cases]
    members = shard_members(names, weights, shard)
    return dataclasses.replace(directory, cases=tuple(case for case in directory.cases if case.name in members))


def _execute_run(
    console: Any, invocation: dict[str, Any], checkpoint_path: Optional[Path], manifest: Any,
    execution: Optional[dict[str, Any]] = None,
) -> None:
    import asyncio

    from assay.video.checkpoint import RunCheckpoint, resume_lines
    from assay.video.run import RunOptions, check_run_options

    options = RunOptions(
        eval_dir=Path(invocation["eval_dir"]),
        adapter=invocation["adapter"],
        adapter_command=invocation["adapter_command"],
        adapter_config=invocation["adapter_config"] or {},
        concurrency=invocation["concurrency"],
        repeat=invocation["repeat"],
        min_pass_rate=invocation["min_pass_rate"],
        min_target_pass_rate=invocation["min_target_pass_rate"],
        max_failures=invocation["max_failures"],
        max_flaky_samples=invocation["max_flaky_samples"],
        keep_going=invocation["keep_going"],
        verbose=invocation["verbose"],
        artifacts_dir=invocation["artifacts_dir"],
        save_failures=invocation["save_failures"],
    )
    reporter = None
    run_checkpoint: Any = None

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False)

    try:
        check_run_options(options)
        from assay.core.memory import tune_allocator_for_frames
        from assay.video.loading import load_eval_directory

        tune_allocator_for_frames()

        directory = load_eval_directory(
            options.eval_dir,
            case=invocation["case_filter"],
            targets=tuple(invocation["target_filter"] or ()),
            at=tuple(invocation["at_times_s"] or ()),
            from_s=invocation["from_time_s"],
            until_s=invocation["until_time_s"],
            allow_empty=invocation["allow_empty"],
            materialize=cloud_materializer(),
        )
        directory = shard_directory(directory, invocation.get("shard"))
        from assay.video.gates import summarize_run
        from assay.video.report import ConsoleReporter, build_report, print_summary, write_json_report
        from assay.video.run import VideoRun, check_sample_times

        check_sample_times(directory)
        if manifest is not None:
            run_checkpoint = RunCheckpoint.resume(checkpoint_path, manifest, directory, options.repeat)
        else:
            run_checkpoint = RunCheckpoint.start(directory, invocation, directory.sample_count * options.repeat)
        reporter = ConsoleReporter(console, verbose=options.verbose)

        async def execute() -> Any:
            unit_executor = _unit_executor(execution, options, directory.path)
            try:
                async with run_checkpoint.writing():
                    return await VideoRun(
                        directory, options, reporter, checkpoint=run_checkpoint, executor=unit_executor
                    ).run()
            finally:
                if unit_executor is not None:
                    await unit_executor.close()

        outcome = asyncio.run(execute())
        reporter.close()
    except KeyboardInterrupt:
        if reporter is not None:
            reporter.close()
        kept = run_checkpoint.abandon() if run_checkpoint is not None else False
        say("Eval interrupted: progress was saved" if kept else "Eval interrupted: no reusable progress was saved")
        if kept:
            for line in resume_lines(run_checkpoint.path):
                say(line)
        raise typer.Exit(130)
    except AssayError as error:
        if reporter is not None:
            reporter.close()
        kept = run_checkpoint.abandon() if run_checkpoint is not None else False
        extra = resume_lines(run_checkpoint.path) if kept else []
        common.fail("Eval failed", error, console=console, after=extra)
    resumable = sum(
        1
        for trial in outcome.trials
        for result in trial.results
        if result.status == "error" and result.reason.startswith("adapter_error:")
    )
    kept = run_checkpoint.finish(resumable)
    summary = summarize_run(
        [trial.results for trial in outcome.trials],
        [trial.success for trial in outcome.trials],
        outcome.duration_seconds,
    )
    if invocation["output_json"] is not None:
        entry = run_checkpoint.report_entry(resumable) if kept else None
        write_json_report(invocation["output_json"], build_report(outcome, summary, entry))
    print_summary(console, outcome, summary)
    if resumable and kept:
        say(f"{resumable} adapter error(s) can be retried without rerunning completed samples.")
        for line in resume_lines(run_checkpoint.path):
            say(line)
    exit_code = 0 if outcome.success else 1
    exit_code = _write_run_record_and_junit(invocation, outcome, summary, exit_code)
    raise typer.Exit(exit_code)


def _unit_executor(execution: Optional[dict[str, Any]], options: Any, eval_path: Path) -> Any:
    """None runs cases in this process (today's path); a Ray executor ships them to warm actors."""
    if not execution or execution.get("executor", "local") == "local":
        return None
    from assay.core.ray_executor import RayExecutor
    from assay.video.run import VideoWorker, remaining_case_work

    return RayExecutor.connect(
        VideoWorker, (options, eval_path), address=execution.get("ray_address"), remainder=remaining_case_work
    )


def _write_run_record_and_junit(invocation: dict[str, Any], outcome: Any, summary: Any, exit_code: int) -> int:
    """The store record never changes the exit code; a requested JUnit file that cannot be written does."""
    import sys

    from assay.core.results_store import publish_run_quietly
    from assay.video.record import video_junit_suites, video_run_record

    if invocation.get("junit"):
        from assay.core.report.junit import write_junit

        try:
            write_junit(Path(invocation["junit"]), video_junit_suites(outcome))
        except OSError as error:
            print(f"Error: could not write JUnit report {invocation['junit']}: {error}", file=sys.stderr)
            exit_code = exit_code or 1
    def build() -> Any:
        manifest, units = video_run_record(outcome, summary, invocation, exit_code)
        if invocation.get("shard"):
            import dataclasses

            manifest = dataclasses.replace(manifest, options={**manifest.options, "shard": invocation["shard"]})
        return manifest, units

    publish_run_quietly(build)
    return exit_code


@video_app.command("validate")
def validate_command(
    eval_dir: Path = typer.Option(Path("eval"), "--eval-dir", help=EVAL_DIR_HELP),
    adapter: Optional[str] = typer.Option(None, "--adapter", help="Also construct and close this Python adapter."),
    adapter_command: Optional[str] = typer.Option(None, "--adapter-command", help="Also start and close this command adapter."),
    case: Optional[str] = typer.Option(None, "--case"),
    target: Optional[List[str]] = typer.Option(None, "--target"),
    adapter_config: Optional[Path] = typer.Option(None, "--adapter-config"),
    allow_empty: bool = typer.Option(False, "--allow-empty"),
) -> None:
    """Check case files, videos and sample times (and the adapter, when given) without evaluating."""
    if adapter and adapter_command:
        common.bad_parameter("--adapter-command", "cannot be used with --adapter")
    config = adapter_config_option(eval_dir, adapter_config)
    console = common.stdout_console()
    from assay.video.validate import validate_eval

    issues, directory = validate_eval(
        eval_dir,
        case=case,
        targets=tuple(target or ()),
        allow_empty=allow_empty,
        adapter=adapter,
        adapter_command=adapter_command,
        adapter_config=config,
        materialize=cloud_materializer(),
    )
    if not issues and directory is not None:
        console.print(
            f"Validation passed: {directory.path} ({directory.sample_count} samples)", markup=False, highlight=False
        )
        raise typer.Exit(0)
    console.print("Validation failed", markup=False, highlight=False)
    for path, message in issues:
        console.print(f"- {path}: {message}" if path else f"- {message}", markup=False, highlight=False)
    raise typer.Exit(1)


@video_app.command("list-samples")
def list_samples_command(
    eval_dir: Path = typer.Option(Path("eval"), "--eval-dir", help=EVAL_DIR_HELP),
    case: Optional[str] = typer.Option(None, "--case"),
    target: Optional[List[str]] = typer.Option(None, "--target"),
    at: Optional[List[float]] = typer.Option(None, "--at"),
    from_s: Optional[float] = typer.Option(None, "--from"),
    until_s: Optional[float] = typer.Option(None, "--until"),
    allow_empty: bool = typer.Option(False, "--allow-empty"),
) -> None:
    """List the expanded samples without decoding video or loading an adapter."""
    common.check_time_filters(case, at, from_s, until_s)
    console = common.stdout_console()
    try:
        from assay.video.loading import load_eval_directory

        directory = load_eval_directory(
            eval_dir,
            case=case,
            targets=tuple(target or ()),
            at=tuple(at or ()),
            from_s=from_s,
            until_s=until_s,
            allow_empty=allow_empty,
            materialize_videos=False,
        )
    except AssayError as error:
        common.fail("Could not list samples", error, console=console)
    from assay.video.listing import print_sample_table

    print_sample_table(directory)


@video_app.command("export-frames")
def export_frames_command(
    case: str = typer.Option(..., "--case", help="Case file name or stem."),
    at: List[float] = typer.Option(..., "--at", help="Time to export (repeatable)."),
    eval_dir: Path = typer.Option(Path("eval"), "--eval-dir", help=EVAL_DIR_HELP),
    output_dir: Optional[Path] = typer.Option(None, "--output-dir", help="Default: <eval-dir>/runs/frames/<case>/."),
) -> None:
    """Save the exact frames assay would send for the given times, as lossless PNG."""
    common.check_time_values("--at", at)
    console = common.stdout_console()
    try:
        from assay.video.export import export_frames
        from assay.video.loading import load_eval_directory

        directory = load_eval_directory(
            eval_dir, case=case, allow_empty=True, allow_draft=True, materialize=cloud_materializer()
        )
        written = export_frames(directory.cases[0], list(at), output_dir, directory.path)
    except AssayError as error:
        common.fail("Could not export frames", error, console=console)
    for path in written:
        console.print(str(path), markup=False, highlight=False)


def _register_seed_and_review() -> None:
    from assay.cli.video_review import review_command
    from assay.cli.video_seed import seed_command

    video_app.command("seed")(seed_command)
    video_app.command("review")(review_command)


_register_seed_and_review()


def _register_store() -> None:
    try:
        from assay.cli.video_cloud_store import store_app
    except ImportError:  # pragma: no cover - present in every release
        return
    video_app.add_typer(store_app, name="store", help="Cloud video stores: pull, upload, prune-cache.")
    video_app.add_typer(store_app, name="video-store", help="Alias of `store` (GlassKit's name).", hidden=True)


_register_store()


# ---------------------------------------------------------------------------------------------
# `assay runs merge` for video shard records

_STATUS_OF_VERDICT = {"passed": "passed", "failed": "failed", "errored": "error", "ignored": "ignored"}


def _sample_result(unit: Any, sample: Any) -> Any:
    """A shard's unit back as the SampleResult the unsharded run would hold (timing mode is not recorded)."""
    from assay.video.model import SampleResult

    detail = dict(unit.detail or {})
    artifacts = dict(unit.artifacts or {})
    return SampleResult(
        case=detail["case"], target=detail["target"], target_label=detail.get("target_label"),
        sample_index=detail["sample_index"], timestamp_s=detail["timestamp_s"],
        status=_STATUS_OF_VERDICT[unit.verdict], expected=unit.expected, observed=detail.get("observed_raw"),
        observed_value=unit.observed, compare_mode=sample.compare.mode, effective_mode=detail.get("compare_mode"),
        field=detail.get("field"), reason=unit.reason, source=detail.get("source", sample.source),
        evaluation_duration_seconds=unit.duration_seconds,
        artifact_image=artifacts.get("image"), artifact_json=artifacts.get("json"),
    )


def merge_video_records(records: list[Any], output_json: Optional[str] = None) -> int:
    """Combine shard records into the run the unsharded invocation would have recorded: units in plan
    order, gates recomputed over all of them from the recorded options; prints GlassKit's summary.

    Returns the exit code (0 gates passed, 1 a gate failed); raises UsageError for records that are
    not the complete shard set of one run."""
    from assay.core.shard import check_shard_set
    from assay.video.gates import flaky_gate, stability_rows, summarize_run, trial_gates
    from assay.video.loading import load_eval_directory
    from assay.video.record import video_unit_id
    from assay.video.report import build_report, print_summary, write_json_report
    from assay.video.run import RunOutcome, TrialOutcome

    manifests = [manifest for manifest, _ in records]
    check_shard_set(manifests, identity_keys=("eval_dir", "adapter", "adapter_command"))
    options = dict(manifests[0].options)
    eval_dir = Path(manifests[0].identity["eval_dir"])
    directory = load_eval_directory(
        eval_dir,
        case=options.get("case_filter"),
        targets=tuple(options.get("target_filter") or ()),
        at=tuple(options.get("at_times_s") or ()),
        from_s=options.get("from_time_s"),
        until_s=options.get("until_time_s"),
        allow_empty=bool(options.get("allow_empty")),
        materialize_videos=False,
    )
    units = {unit.unit_id: unit for _, shard_units in records for unit in shard_units}
    repeat = int(options.get("repeat") or 1)
    trials = []
    used = 0
    for trial in range(1, repeat + 1):
        results = []
        for case in directory.cases:
            for target in case.targets:
                for sample in target.samples:
                    key = f"{case.name}/{target.id}/{sample.sample_index}@{sample.timestamp_s:g}s#{trial}"
                    unit = units.get(key)
                    if unit is None:
                        from assay.errors import UsageError

                        raise UsageError(f"the shard records have no result for unit {key}; was a shard incomplete?")
                    results.append(_sample_result(unit, sample))
                    used += 1
        gates = trial_gates(
            results, directory, min_pass_rate=options.get("min_pass_rate"), max_failures=options.get("max_failures"),
            min_target_pass_rate=options.get("min_target_pass_rate"),
        )
        trials.append(TrialOutcome(trial, results, gates, all(gate.passed for gate in gates), 0.0))
    if used != len(units):
        from assay.errors import UsageError

        extra = sorted(set(units) - {video_unit_id(r, t.trial) for t in trials for r in t.results})
        raise UsageError(f"the shard records hold units outside the run's plan: {', '.join(extra[:5])}")
    run_gates = []
    if options.get("max_flaky_samples") is not None:
        rows = stability_rows([trial.results for trial in trials])
        run_gates.append(flaky_gate(sum(1 for row in rows if row["flaky"]), options["max_flaky_samples"]))
    # Shards run side by side: the merged run took as long as its slowest shard.
    duration = max((manifest.duration_seconds or 0.0 for manifest in manifests), default=0.0)
    for trial in trials:
        trial.duration_seconds = duration / max(1, repeat)
    success = all(trial.success for trial in trials) and all(gate.passed for gate in run_gates)
    outcome = RunOutcome(directory, repeat, trials, run_gates, success, duration)
    summary = summarize_run([trial.results for trial in trials], [trial.success for trial in trials], duration)
    console = common.stdout_console()
    if output_json is not None:
        write_json_report(output_json, build_report(outcome, summary, None))
    print_summary(console, outcome, summary)
    exit_code = 0 if success else 1
    invocation = {
        "eval_dir": str(eval_dir), "adapter": manifests[0].identity.get("adapter"),
        "adapter_command": manifests[0].identity.get("adapter_command"),
        "adapter_config": dict.fromkeys(manifests[0].identity.get("adapter_config_keys") or ()),
        **{name: value for name, value in options.items() if name != "shard"},
    }
    from assay.core.results_store import publish_run_quietly
    from assay.video.record import video_run_record

    def build() -> Any:
        import dataclasses

        manifest, merged_units = video_run_record(outcome, summary, invocation, exit_code)
        merged_options = {**manifest.options, "merged_from": [m.run_id for m in manifests]}
        return dataclasses.replace(manifest, options=merged_options), merged_units

    publish_run_quietly(build)
    return exit_code
