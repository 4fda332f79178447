"""`assay video …`: GlassKit Eval's commands with its options, messages and exit codes.

Read `glasskit eval X` in spec/video.md as `assay video X`. Heavy modules (PyAV, pydantic models,
the runner) are imported inside commands so startup stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from assay.cli import common
from assay.cli.video_options import (
    AdapterCommandOption, AdapterConfigOption, AdapterOption, AdapterTimeoutOption, AllowEmptyOption, AtOption,
    CaseOption, ConcurrencyOption, EvalDirOption, FromOption, OnlyCaseOption, OnlyTargetOption, ResumeOption,
    TargetOption, UntilOption, adapter_config_option, cloud_materializer, default_adapter,
)
from assay.errors import AssayError

video_app = typer.Typer(
    rich_markup_mode=None,  # plain help: flags shown as flags, options as `--name <type>`
    no_args_is_help=True,
    add_completion=False,
    help="Video evals (GlassKit Eval compatible).",
)


@video_app.command("run")
def run_command(
    adapter: Optional[str] = AdapterOption,
    adapter_command: Optional[str] = AdapterCommandOption,
    eval_dir: Path = EvalDirOption,
    case: Optional[str] = CaseOption,
    target: Optional[List[str]] = TargetOption,
    at: Optional[List[float]] = AtOption,
    from_s: Optional[float] = FromOption,
    until_s: Optional[float] = UntilOption,
    adapter_config: Optional[Path] = AdapterConfigOption,
    concurrency: int = ConcurrencyOption,
    repeat: int = typer.Option(
        1, "--repeat", callback=common.at_least(1, maximum=common.MAX_REPEAT),
        help=f"Trials to run (at most {common.MAX_REPEAT:,}).",
    ),
    min_pass_rate: Optional[float] = typer.Option(
        None, "--min-pass-rate", callback=common.between(0, 1),
        help="Gate: fail a trial whose pass rate over all samples is below this (0-1; default: config.yaml's, else none).",
    ),
    min_target_pass_rate: Optional[float] = typer.Option(
        None, "--min-target-pass-rate", callback=common.between(0, 1),
        help="Gate: fail a trial in which any target's pass rate is below this (0-1; default: none).",
    ),
    max_failures: Optional[int] = typer.Option(
        None, "--max-failures", callback=common.at_least(0),
        help="Gate: fail a trial with more failed samples than this (default: none).",
    ),
    max_flaky_samples: Optional[int] = typer.Option(
        None, "--max-flaky-samples", callback=common.at_least(0),
        help="Gate: fail the run when more samples than this disagree across trials (needs --repeat 2+; default: none).",
    ),
    keep_going: bool = typer.Option(False, "--keep-going", help="Record adapter errors and continue."),
    resume: Optional[str] = ResumeOption,
    verbose: bool = typer.Option(False, "--verbose", help="Print PASSED lines too; passed to the adapter."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress on stderr (results and errors still print)."),
    output_ndjson: bool = typer.Option(
        False, "--json", help="Stream NDJSON events on stdout (run_started, unit, run_finished) instead of the console."
    ),
    adapter_timeout: Optional[float] = AdapterTimeoutOption,
    output_json: Optional[str] = typer.Option(None, "--output-json", help="Write the JSON report here."),
    artifacts_dir: Optional[str] = typer.Option(None, "--artifacts-dir", help="Directory for adapter and failure artifacts."),
    save_failures: bool = typer.Option(False, "--save-failures", help="Save the frame and result of each failure."),
    allow_empty: bool = AllowEmptyOption,
    junit: Optional[Path] = typer.Option(None, "--junit", help="Also write a JUnit XML report here."),
    shard: Optional[str] = typer.Option(None, "--shard", help="Run only shard i of n (e.g. 2/4); combine with `assay runs merge`."),
    executor: str = typer.Option("local", "--executor", help="Where cases run: local (default) or ray."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="Ray cluster to join (default: start a local one)."),
) -> None:
    """Evaluate every selected sample with the adapter and apply the quality gates."""
    import dataclasses

    from assay.cli.video_options import execution_option, restore_option
    from assay.core.run.request import Outputs
    from assay.video.request import VideoRunRequest
    from assay.video.run_kind import VIDEO

    junit_path = str(junit) if junit is not None else None
    outputs = Outputs(json=output_ndjson, junit=junit_path, quiet=quiet, verbose=verbose, output_json=output_json)
    request = VideoRunRequest(
        eval_dir=eval_dir, adapter=adapter, adapter_command=adapter_command, case=case, targets=tuple(target or ()),
        at=tuple(at or ()), from_s=from_s, until_s=until_s, concurrency=concurrency, repeat=repeat,
        min_pass_rate=min_pass_rate, min_target_pass_rate=min_target_pass_rate, max_failures=max_failures,
        max_flaky_samples=max_flaky_samples, keep_going=keep_going, artifacts_dir=artifacts_dir,
        save_failures=save_failures, allow_empty=allow_empty, shard=shard, adapter_timeout=adapter_timeout,
    )
    resumed = None
    if resume is not None:
        request, outputs, resumed = restore_option(VIDEO, resume, request, outputs, adapter_config)
    else:
        common.check_time_filters(case, at, from_s, until_s)
        if shard is not None:
            from assay.core.shard import parse_shard

            common.checked(parse_shard, shard, quoted=False)
        if adapter and adapter_command:
            common.bad_parameter("--adapter-command", "cannot be used with --adapter")
        request = dataclasses.replace(
            request, eval_dir=eval_dir.expanduser().resolve(), adapter=default_adapter(eval_dir, adapter, adapter_command),
            adapter_config=adapter_config_option(eval_dir, adapter_config),
        )
    common.run_and_exit(VIDEO, request, outputs, resume=resumed, execution=execution_option(executor, ray_address))


def _only_reads() -> None:
    from assay.cli.stdout_guard import nothing_to_keep

    nothing_to_keep()  # a closed reader leaves no finished results to speak of


@video_app.command("validate")
def validate_command(
    eval_dir: Path = EvalDirOption,
    adapter: Optional[str] = typer.Option(None, "--adapter", help="Also construct and close this Python adapter."),
    adapter_command: Optional[str] = typer.Option(None, "--adapter-command", help="Also start and close this command adapter."),
    case: Optional[str] = OnlyCaseOption,
    target: Optional[List[str]] = OnlyTargetOption,
    adapter_config: Optional[Path] = AdapterConfigOption,
    allow_empty: bool = AllowEmptyOption,
) -> None:
    """Check case files, videos and sample times (and the adapter, when given) without evaluating."""
    from assay.video.validate import validate_eval, validation_lines

    _only_reads()
    if adapter and adapter_command:
        common.bad_parameter("--adapter-command", "cannot be used with --adapter")
    config = adapter_config_option(eval_dir, adapter_config)
    issues, directory = validate_eval(
        eval_dir, case=case, targets=tuple(target or ()), allow_empty=allow_empty, adapter=adapter,
        adapter_command=adapter_command, adapter_config=config, materialize=cloud_materializer(),
    )
    lines, exit_code = validation_lines(issues, directory)
    common.say(*lines)
    raise typer.Exit(exit_code)


@video_app.command("list-samples")
def list_samples_command(
    eval_dir: Path = EvalDirOption,
    case: Optional[str] = OnlyCaseOption,
    target: Optional[List[str]] = OnlyTargetOption,
    at: Optional[List[float]] = AtOption,
    from_s: Optional[float] = FromOption,
    until_s: Optional[float] = UntilOption,
    allow_empty: bool = AllowEmptyOption,
) -> None:
    """List the expanded samples without decoding video or loading an adapter."""
    _only_reads()
    common.check_time_filters(case, at, from_s, until_s)
    try:
        from assay.video.loading import load_eval_directory

        directory = load_eval_directory(
            eval_dir, case=case, targets=tuple(target or ()), at=tuple(at or ()), from_s=from_s, until_s=until_s,
            allow_empty=allow_empty, materialize_videos=False,
        )
    except AssayError as error:
        common.fail("Could not list samples", error)
    from assay.video.listing import print_sample_table

    print_sample_table(directory)


@video_app.command("export-frames")
def export_frames_command(
    case: str = typer.Option(..., "--case", help="Case file name or stem."),
    at: List[float] = typer.Option(..., "--at", help="Time to export (repeatable)."),
    eval_dir: Path = EvalDirOption,
    output_dir: Optional[Path] = typer.Option(None, "--output-dir", help="Default: <eval-dir>/runs/frames/<case>/."),
) -> None:
    """Save the exact frames assay would send for the given times, as lossless PNG."""
    _only_reads()
    common.check_time_values("--at", at)
    try:
        from assay.video.export import export_frames
        from assay.video.loading import load_eval_directory

        directory = load_eval_directory(
            eval_dir, case=case, allow_empty=True, allow_draft=True, materialize=cloud_materializer()
        )
        written = export_frames(directory.cases[0], list(at), output_dir, directory.path)
    except AssayError as error:
        common.fail("Could not export frames", error)
    common.say(*(str(path) for path in written))


def init_command(
    directory: Path = typer.Argument(Path("eval"), help="Eval directory to write (default: eval, where `run` looks)."),
    adapter: str = typer.Option("python", "--adapter", help="The starter adapter's language: python (default) or js (node)."),
    force: bool = typer.Option(False, "--force", help="Overwrite starter files that already exist."),
) -> None:
    """Write a starter eval directory that passes as is: a case, a short clip and an adapter.

    Example: assay video init eval --adapter js
    """
    from assay.video.starter import write_starter

    try:
        starter = write_starter(directory, adapter, force=force)
    except AssayError as error:
        common.fail("Error", error, stderr=True)  # not a GlassKit command: assay's own rule, errors on stderr
    except OSError as error:
        common.fail("Error", f"could not write {directory}: {error}", stderr=True, exit_code=2)
    common.say(*starter.lines(directory))


def _register() -> None:
    from assay.cli.video_cloud_store import store_app
    from assay.cli.video_review import review_command
    from assay.cli.video_seed import seed_command

    video_app.command("seed")(seed_command)
    video_app.command("review")(review_command)
    video_app.add_typer(store_app, name="store", help="Cloud video stores: pull, upload, prune-cache.")
    video_app.add_typer(store_app, name="video-store", help="Alias of `store` (GlassKit's name).", hidden=True)
    video_app.command("init")(init_command)


_register()
