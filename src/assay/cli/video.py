"""`assay video …`: GlassKit Eval's commands with its options, messages and exit codes.

Read `glasskit eval X` in spec/video.md as `assay video X`. Heavy modules (PyAV, pydantic models,
the runner) are imported inside commands so startup stays fast.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import typer

from assay.cli import common
from assay.cli.options import (
    EVAL_DIR, EXECUTOR, JSON, JUNIT_PATH, NO_OPEN, OUTPUT_JSON, PORT, QUIET, RAY_ADDRESS, RESUME, VERBOSE, Given, argument,
    command, option, params,
)
from assay.core.run.request import Execution, Outputs
from assay.errors import AssayError
from assay.video.request import SeedRequest, VideoRunRequest, check_time_filters, check_times
from assay.video.store_commands import materialize

video_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True, add_completion=False, help="Video evals (GlassKit Eval compatible).")
store_app = typer.Typer(
    rich_markup_mode=None, no_args_is_help=True,
    help="Download, upload and cache videos kept in cloud video stores (config.yaml video_stores).",
)
ADAPTER_CONFIG = option("adapter_config_file", Path | None, None, "--adapter-config", help="Adapter config file (YAML, or JSON by suffix).")
ONLY = [param.but(help=text) for param, text in zip(params(VideoRunRequest, "case targets"), (
    "Only this case (file name or stem).", "Only this target id (repeatable)."))]
SAMPLES = params(VideoRunRequest, "at from_s until_s")


def _one_adapter(given: Given) -> None:
    if given.adapter and given.adapter_command:
        common.refuse("--adapter-command", "cannot be used with --adapter")


def _adapter_config(given: Given) -> Any:
    """The adapter config (discovered or `--adapter-config`); a problem is a bad option value."""
    from assay.video.loading import load_adapter_config

    return common.checked(load_adapter_config, given.eval_dir.expanduser(), given.adapter_config_file)


def _new(request: Any, given: Given) -> Any:
    """A new (not resumed) request: GlassKit's default adapter, `<eval-dir>/adapter.py:create_evaluator`; the config read."""
    default = given.eval_dir.as_posix() + "/adapter.py:create_evaluator"
    adapter = default if given.adapter is None and given.adapter_command is None else given.adapter
    return dataclasses.replace(request, adapter=adapter, adapter_config=_adapter_config(given))


def _restored(kind: Any, given: Given, request: Any, outputs: Outputs, also_given: list[str]) -> tuple[Any, Outputs, Any]:
    """`--resume REF`: the checkpoint's request and outputs (GlassKit: every problem is a bad `--resume`)."""
    from assay.core.run.resume import restore

    restored = common.checked(restore, kind, given.resume, request, outputs, also_given, quoted=False)
    return restored.request, restored.outputs, restored.resume


@command(video_app, "run", *params(
    VideoRunRequest, "adapter adapter_command", EVAL_DIR, "case targets at from_s until_s", ADAPTER_CONFIG,
    "concurrency repeat min_pass_rate min_target_pass_rate max_failures max_flaky_samples keep_going", RESUME,
    VERBOSE.but(help="Print PASSED lines too; passed to the adapter."), QUIET,
    JSON.but(help="Stream NDJSON events on stdout (run_started, unit, run_finished) instead of the console."),
    "adapter_timeout", OUTPUT_JSON, "artifacts_dir save_failures allow_empty", JUNIT_PATH, "shard", EXECUTOR, RAY_ADDRESS,
))
def run_command(given: Given) -> None:
    """Evaluate every selected sample with the adapter and apply the quality gates."""
    from assay.video.run_kind import VIDEO

    request, outputs, resumed = given.request(VideoRunRequest), given.outputs(), None
    if given.resume is not None:
        also_given = ["--adapter-config"] if given.adapter_config_file else []
        request, outputs, resumed = _restored(VIDEO, given, request, outputs, also_given)
    else:
        common.checked(check_time_filters, given.case, given.at, given.from_s, given.until_s)
        if given.shard is not None:
            from assay.core.shard import parse_shard

            common.checked(parse_shard, given.shard, quoted=False)
        _one_adapter(given)
        request = dataclasses.replace(_new(request, given), eval_dir=given.eval_dir.expanduser().resolve())
    execution = common.checked(Execution, given.executor, given.ray_address)
    common.run_and_exit(VIDEO, request, outputs, resume=resumed, execution=execution)


@command(video_app, "validate", EVAL_DIR,
         option("adapter", str | None, None, "--adapter", help="Also construct and close this Python adapter."),
         option("adapter_command", str | None, None, "--adapter-command", help="Also start and close this command adapter."),
         *ONLY, ADAPTER_CONFIG, *params(VideoRunRequest, "allow_empty"))
def validate_command(given: Given) -> None:
    """Check case files, videos and sample times (and the adapter, when given) without evaluating."""
    from assay.video.validate import validate_eval, validation_lines

    common.only_reads()
    _one_adapter(given)
    issues, directory = validate_eval(
        given.eval_dir, case=given.case, targets=tuple(given.targets or ()), allow_empty=given.allow_empty,
        adapter=given.adapter, adapter_command=given.adapter_command, adapter_config=_adapter_config(given),
        materialize=materialize,
    )
    lines, exit_code = validation_lines(issues, directory)
    common.say(*lines)
    raise typer.Exit(exit_code)


@command(video_app, "list-samples", EVAL_DIR, *ONLY, *SAMPLES, *params(VideoRunRequest, "allow_empty"))
def list_samples_command(given: Given) -> None:
    """List the expanded samples without decoding video or loading an adapter."""
    from assay.video.listing import print_sample_table
    from assay.video.loading import load_eval_directory

    common.only_reads()
    common.checked(check_time_filters, given.case, given.at, given.from_s, given.until_s)
    with common.failing("Could not list samples", on_stdout=True):
        directory = load_eval_directory(
            given.eval_dir, case=given.case, targets=tuple(given.targets or ()), at=tuple(given.at or ()),
            from_s=given.from_s, until_s=given.until_s, allow_empty=given.allow_empty, materialize_videos=False,
        )
    print_sample_table(directory)


@command(video_app, "export-frames", option("case", str, ..., "--case", help="Case file name or stem."),
         option("at", list[float], ..., "--at", help="Time to export (repeatable)."), EVAL_DIR,
         option("output_dir", Path | None, None, "--output-dir", help="Default: <eval-dir>/runs/frames/<case>/."))
def export_frames_command(given: Given) -> None:
    """Save the exact frames assay would send for the given times, as lossless PNG."""
    from assay.video.export import export_frames
    from assay.video.loading import load_eval_directory

    common.only_reads()
    common.checked(check_times, "--at", given.at)
    with common.failing("Could not export frames", on_stdout=True):
        directory = load_eval_directory(
            given.eval_dir, case=given.case, allow_empty=True, allow_draft=True, materialize=materialize
        )
        written = export_frames(directory.cases[0], list(given.at), given.output_dir, directory.path)
    common.say(*(str(path) for path in written))


@command(video_app, "seed", *params(
    SeedRequest, "adapter adapter_command", EVAL_DIR, "case targets", ADAPTER_CONFIG, "concurrency replace keep_going",
    RESUME, VERBOSE.but(help="Print each seeded value; passed to the adapter."), "adapter_timeout",
))
def seed_command(given: Given) -> None:
    """Fill omitted expectations from adapter output and rewrite the case files (comments kept)."""
    from assay.video.run_kind import VIDEO

    _one_adapter(given)
    seed = VIDEO.commands["seed"]
    request, outputs, resumed = given.request(SeedRequest), given.outputs(quiet=True), None  # GlassKit's seed shows no progress
    if given.resume is not None:
        # A config file given is a stored option given: the seed lists it where the checkpoint keeps it.
        if given.adapter_config_file:
            request = dataclasses.replace(request, adapter_config={"file": str(given.adapter_config_file)})
        request, outputs, resumed = _restored(seed, given, request, outputs, [])
    else:
        request = _new(request, given)
    common.run_and_exit(seed, request, outputs, resume=resumed)


@command(video_app, "review", EVAL_DIR,
         option("case", str | None, None, "--case", help="Open this case (file name or stem)."),
         option("target", str | None, None, "--target", help="Select this target (needs --case)."),
         option("time", float | None, None, "--time", help="Start at this time in seconds (needs --case)."), PORT, NO_OPEN,
         option("results", Path | None, None, "--results", help="JSON report or run checkpoint whose pass/fail marks "
                "to show (default: the newest under <eval-dir>/runs)."))
def review_command(given: Given) -> None:
    """Open the local browser editor for cases, samples and expectations."""
    from assay.video.review.launch import prepare_review, review_url

    for name in ("target", "time"):
        if getattr(given, name) is not None and given.case is None:
            common.refuse(None, f"--{name} requires --case")
    common.checked(check_times, "--time", given.time)
    with common.failing("Could not start review UI", on_stdout=True):
        root, case_file = prepare_review(given.eval_dir, given.case, given.target)

    def make_app(binding: Any) -> Any:
        from assay.video.review.server import ReviewServer, create_review_app

        results = given.results.expanduser().resolve() if given.results is not None else None
        return create_review_app(ReviewServer(eval_dir=root, binding=binding, results_path=results, materialize=materialize))

    common.serve_locally(given.port, make_app, lambda port: review_url(port, case_file, given.target, given.time),
                         title="Review UI", failure="Could not start review UI", no_open=given.no_open)


@command(video_app, "init",
         argument("directory", Path, Path("eval"), help="Eval directory to write (default: eval, where `run` looks)."),
         option("adapter", str, "python", "--adapter", help="The starter adapter's language: python (default) or js (node)."),
         option("force", bool, False, "--force", help="Overwrite starter files that already exist."))
def init_command(given: Given) -> None:
    """Write a starter eval directory that passes as is: a case, a short clip and an adapter.

    Example: assay video init eval --adapter js
    """
    from assay.video.starter import write_starter

    try:  # not a GlassKit command: assay's own rule, errors on stderr
        starter = write_starter(given.directory, given.adapter, force=given.force)
    except AssayError as error:
        common.fail("Error", error, stderr=True)
    except OSError as error:
        common.fail("Error", f"could not write {given.directory}: {error}", stderr=True, exit_code=2)
    common.say(*starter.lines(given.directory))


@command(store_app, "pull", EVAL_DIR.but(help="Eval directory holding cases/ and config.yaml."),
         option("case", str | None, None, "--case", help="Only download one case by file name or stem."))
def pull_command(given: Given) -> None:
    """Download and verify the selected cases' cloud videos into the local cache."""
    from assay.video.store_commands import pull_lines

    with common.failing("Could not pull cloud videos", on_stdout=True):
        lines = pull_lines(given.eval_dir, given.case)
    typer.echo("\n".join(lines))


@command(store_app, "upload", argument("file", Path, ..., metavar="FILE", help="Local video file to upload."),
         option("store", str, ..., "--store", help="Named video store from <eval-dir>/config.yaml."),
         EVAL_DIR.but(help="Eval directory holding cases/ and config.yaml."),
         option("key", str | None, None, "--key", help="Object key. Defaults to an immutable key derived from the SHA-256."))
def upload_command(given: Given) -> None:
    """Upload a local video (unless the same object is there) and print its case-file `video:` block."""
    from assay.video.store_commands import upload_lines

    with common.failing("Could not upload cloud video", on_stdout=True):
        lines = upload_lines(given.file, given.store, given.eval_dir, given.key)
    typer.echo("\n".join(lines))


@command(store_app, "prune-cache", option(
    "all_files", bool, False, "--all", help="Remove verified videos too; they will be downloaded again when used."))
def prune_cache_command(given: Given) -> None:
    """Remove abandoned partial downloads and locks, or with --all the whole downloaded-video cache."""
    from assay.video.store_commands import prune_lines

    with common.failing("Could not prune downloaded-video cache", on_stdout=True):
        lines = prune_lines(given.all_files)
    typer.echo("\n".join(lines))


video_app.add_typer(store_app, name="store", help="Cloud video stores: pull, upload, prune-cache.")
video_app.add_typer(store_app, name="video-store", help="Alias of `store` (GlassKit's name).", hidden=True)
