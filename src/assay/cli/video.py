"""`assay video …`: GlassKit Eval's commands with its options, messages and exit codes.

Read `glasskit eval X` in spec/video.md as `assay video X`. Heavy modules (PyAV, pydantic models,
the runner) are imported inside commands so startup stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from assay.cli import common
from assay.cli.video_options import adapter_config_option, cloud_materializer
from assay.errors import AssayError

video_app = typer.Typer(
    rich_markup_mode=None,  # plain help: flags shown as flags, options as `--name <type>`
    no_args_is_help=True,
    add_completion=False,
    help="Video evals (GlassKit Eval compatible).",
)

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
    concurrency: int = typer.Option(
        1, "--concurrency", callback=common.at_least(1, maximum=common.MAX_CONCURRENCY),
        help=f"Adapter calls in flight (at most {common.MAX_CONCURRENCY:,}).",
    ),
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
    resume: Optional[str] = typer.Option(None, "--resume", help="Checkpoint directory or id to resume."),
    verbose: bool = typer.Option(False, "--verbose", help="Print PASSED lines too; passed to the adapter."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress on stderr (results and errors still print)."),
    output_ndjson: bool = typer.Option(
        False, "--json", help="Stream NDJSON events on stdout (run_started, unit, run_finished) instead of the console."
    ),
    adapter_timeout: Optional[float] = typer.Option(
        None, "--adapter-timeout", callback=common.above(0),
        help="Seconds a command adapter may take per call before the call fails (default: no limit; "
        "initialize has its own 30 s limit, ASSAY_ADAPTER_START_TIMEOUT).",
    ),
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
    import dataclasses

    from assay.cli.video_options import execution_option, restore_option
    from assay.core.run.request import Outputs
    from assay.video.request import VideoRunRequest
    from assay.video.run_kind import VIDEO

    outputs = Outputs(
        json=output_ndjson, junit=str(junit) if junit is not None else None, quiet=quiet, verbose=verbose,
        output_json=output_json,
    )
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
        config = adapter_config_option(eval_dir, adapter_config)
        if adapter is None and adapter_command is None:
            adapter = eval_dir.as_posix() + "/adapter.py:create_evaluator"
        request = dataclasses.replace(
            request, eval_dir=eval_dir.expanduser().resolve(), adapter=adapter, adapter_config=config
        )
    common.run_and_exit(VIDEO, request, outputs, resume=resumed, execution=execution_option(executor, ray_address))


@video_app.command("validate")
def validate_command(
    eval_dir: Path = typer.Option(Path("eval"), "--eval-dir", help=EVAL_DIR_HELP),
    adapter: Optional[str] = typer.Option(None, "--adapter", help="Also construct and close this Python adapter."),
    adapter_command: Optional[str] = typer.Option(None, "--adapter-command", help="Also start and close this command adapter."),
    case: Optional[str] = typer.Option(None, "--case", help="Only this case (file name or stem)."),
    target: Optional[List[str]] = typer.Option(None, "--target", help="Only this target id (repeatable)."),
    adapter_config: Optional[Path] = typer.Option(None, "--adapter-config", help="Adapter config file (YAML, or JSON by suffix)."),
    allow_empty: bool = typer.Option(False, "--allow-empty", help="Allow targets and evals without samples."),
) -> None:
    """Check case files, videos and sample times (and the adapter, when given) without evaluating."""
    from assay.cli.stdout_guard import nothing_to_keep

    nothing_to_keep()  # a closed reader leaves no finished results to speak of
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
    case: Optional[str] = typer.Option(None, "--case", help="Only this case (file name or stem)."),
    target: Optional[List[str]] = typer.Option(None, "--target", help="Only this target id (repeatable)."),
    at: Optional[List[float]] = typer.Option(None, "--at", help="Only the sample at this time (repeatable; needs --case)."),
    from_s: Optional[float] = typer.Option(None, "--from", help="Only samples at or after this time (needs --case)."),
    until_s: Optional[float] = typer.Option(None, "--until", help="Only samples before this time (needs --case)."),
    allow_empty: bool = typer.Option(False, "--allow-empty", help="Allow targets and evals without samples."),
) -> None:
    """List the expanded samples without decoding video or loading an adapter."""
    from assay.cli.stdout_guard import nothing_to_keep

    nothing_to_keep()  # a closed reader leaves no finished results to speak of
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
    from assay.cli.stdout_guard import nothing_to_keep

    nothing_to_keep()  # a closed reader leaves no finished results to speak of
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
    console = common.stdout_console()
    console.print(f"Wrote a starter eval in {directory}:", markup=False, highlight=False)
    for path in starter.written:
        console.print(f"  {path.as_posix()}", markup=False, highlight=False)
    console.print(f"Next: {starter.next_command}", markup=False, highlight=False)


video_app.command("init")(init_command)
