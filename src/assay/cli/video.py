"""`assay video …`: GlassKit Eval's commands with its options, messages and exit codes.

Read `glasskit eval X` in spec/video.md as `assay video X`. The options are declared in
`assay.video.request` (the run's and seed's requests, `VideoOptions`). Heavy modules (PyAV, pydantic
models, the runner) are imported inside commands so startup stays fast.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import typer

from assay.cli import common
from assay.cli.options import (
    EXECUTOR, JSON, JUNIT_PATH, NO_OPEN, OUTPUT_JSON, PORT, QUIET, RAY_ADDRESS, RESUME, VERBOSE, Given, Param, command, group,
    params,
)
from assay.core.run.request import Execution, Outputs
from assay.errors import AssayError
from assay.video.request import (
    SeedRequest, VideoOptions, VideoRunRequest, adapters_not_both, check_time_filters, check_times, one_adapter, planned,
)
from assay.video.model import expand_home
from assay.video.store_commands import materialize

video_app = group("Video evals (GlassKit Eval compatible).")
store_app = group("Download, upload and cache videos kept in cloud video stores (config.yaml video_stores).")
ONLY = [param.but(help=text) for param, text in zip(params(VideoRunRequest, "case targets"), (
    "Only this case (file name or stem).", "Only this target id (repeatable)."))]
STORE_EVAL_DIR = params(VideoOptions, "eval_dir")[0].but(help="Eval directory holding cases/ and config.yaml.")


def _command(group: typer.Typer, name: str, *items: type | str | Param, only_reads: bool = False) -> Any:
    return command(group, name, *params(VideoOptions, *items), only_reads=only_reads)


def _restored(kind: Any, given: Given, request: Any, outputs: Outputs, also_given: list[str]) -> tuple[Any, Outputs, Any]:
    """`--resume REF`: the checkpoint's request and outputs (GlassKit: every problem is a bad `--resume`)."""
    from assay.core.run.resume import restore

    restored = common.checked(restore, kind, given.resume, request, outputs, also_given, quoted=False)
    return restored.request, restored.outputs, restored.resume


@_command(video_app, "run",
          VideoRunRequest, "adapter adapter_command eval_dir case targets at from_s until_s adapter_config_file concurrency repeat "
          "min_pass_rate min_target_pass_rate max_failures max_flaky_samples keep_going", RESUME,
          VERBOSE.but(help="Print PASSED lines too; passed to the adapter."), QUIET,
          JSON.but(help="Stream NDJSON events on stdout (run_started, unit, run_finished) instead of the console."),
          "adapter_timeout", OUTPUT_JSON, "artifacts_dir save_failures allow_empty", JUNIT_PATH, "shard", EXECUTOR, RAY_ADDRESS)
def run_command(given: Given) -> None:
    """Evaluate every selected sample with the adapter and apply the quality gates."""
    from assay.video.run_kind import VIDEO

    request, outputs, resumed = given.request(VideoRunRequest), given.outputs(), None
    if given.resume is not None:
        also_given = ["--adapter-config"] if given.adapter_config_file else []
        request, outputs, resumed = _restored(VIDEO, given, request, outputs, also_given)
    else:
        # GlassKit's own checks of these options name them unquoted (`Invalid value for --at: requires --case`).
        common.checked(check_time_filters, given.case, given.at, given.from_s, given.until_s, quoted=False)
        common.checked(adapters_not_both, given.adapter, given.adapter_command, quoted=False)
        if given.shard is not None:
            from assay.core.shard import parse_shard

            common.checked(parse_shard, given.shard, quoted=False)
        request = common.checked(planned, request, given.adapter_config_file)
        request = dataclasses.replace(request, eval_dir=expand_home(given.eval_dir).resolve())
    execution = common.checked(Execution, given.executor, given.ray_address)
    common.run_and_exit(VIDEO, request, outputs, resume=resumed, execution=execution)


@_command(video_app, "validate", "eval_dir", *[param.but(help=text) for param, text in zip(params(VideoRunRequest, "adapter adapter_command"), (
    "Also construct and close this Python adapter.", "Also start and close this command adapter."))],
    *ONLY, "adapter_config_file", VideoRunRequest, "allow_empty", only_reads=True)
def validate_command(given: Given) -> None:
    """Check case files, videos and sample times (and the adapter, when given) without evaluating."""
    from assay.video.loading import load_adapter_config
    from assay.video.validate import validate_eval, validation_lines

    common.checked(adapters_not_both, given.adapter, given.adapter_command, quoted=False)  # GlassKit's words
    common.checked(one_adapter, given.adapter, given.adapter_command)
    config = common.checked(load_adapter_config, expand_home(given.eval_dir), given.adapter_config_file)
    issues, directory = validate_eval(
        given.eval_dir, case=given.case, targets=tuple(given.targets or ()), allow_empty=given.allow_empty,
        adapter=given.adapter, adapter_command=given.adapter_command, adapter_config=config, materialize=materialize,
    )
    lines, exit_code = validation_lines(issues, directory)
    common.say(*lines)
    raise typer.Exit(exit_code)


@_command(video_app, "list-samples", "eval_dir", *ONLY, VideoRunRequest, "at from_s until_s allow_empty", only_reads=True)
def list_samples_command(given: Given) -> None:
    """List the expanded samples without decoding video or loading an adapter."""
    from assay.video.listing import print_sample_table
    from assay.video.loading import load_eval_directory

    common.checked(check_time_filters, given.case, given.at, given.from_s, given.until_s, quoted=False)
    with common.failing("Could not list samples", on_stdout=True):
        directory = load_eval_directory(
            given.eval_dir, case=given.case, targets=tuple(given.targets or ()), at=tuple(given.at or ()),
            from_s=given.from_s, until_s=given.until_s, allow_empty=given.allow_empty, materialize_videos=False,
        )
    print_sample_table(directory)


@_command(video_app, "export-frames", "frame_case frame_times eval_dir output_dir", only_reads=True)
def export_frames_command(given: Given) -> None:
    """Save the exact frames assay would send for the given times, as lossless PNG."""
    from assay.video.export import distinct_export_times, export_frames
    from assay.video.loading import load_eval_directory

    # A negative or NaN time is refused with the option (GlassKit's `min=0`); +inf passes it and is an export error.
    with common.failing("Could not export frames", on_stdout=True):
        distinct_export_times(given.frame_times)  # checked before the case is loaded, as GlassKit does
        directory = load_eval_directory(
            given.eval_dir, case=given.frame_case, allow_empty=True, allow_draft=True, materialize=materialize
        )
        written = export_frames(directory.cases[0], list(given.frame_times), given.output_dir, directory.path)
    common.say(*(str(path) for path in written))


@_command(video_app, "seed", SeedRequest, "adapter adapter_command eval_dir case targets adapter_config_file concurrency "
          "replace keep_going", RESUME, VERBOSE.but(help="Print each seeded value; passed to the adapter."), "adapter_timeout")
def seed_command(given: Given) -> None:
    """Fill omitted expectations from adapter output and rewrite the case files (comments kept)."""
    from assay.video.run_kind import VIDEO

    common.checked(adapters_not_both, given.adapter, given.adapter_command, quoted=False)  # GlassKit's words
    common.checked(one_adapter, given.adapter, given.adapter_command)
    seed = VIDEO.commands["seed"]
    request, outputs, resumed = given.request(SeedRequest), given.outputs(quiet=True), None  # GlassKit's seed shows no progress
    if given.resume is not None:
        # A config file given is a stored option given: the seed lists it where the checkpoint keeps it.
        if given.adapter_config_file:
            request = dataclasses.replace(request, adapter_config={"file": str(given.adapter_config_file)})
        request, outputs, resumed = _restored(seed, given, request, outputs, [])
    else:
        request = common.checked(planned, request, given.adapter_config_file)
    common.run_and_exit(seed, request, outputs, resume=resumed)


@_command(video_app, "review", "eval_dir review_case target time", PORT, NO_OPEN, "results")
def review_command(given: Given) -> None:
    """Open the local browser editor for cases, samples and expectations."""
    from assay.video.review.launch import prepare_review, review_url

    for name in ("target", "time"):
        if getattr(given, name) is not None and given.review_case is None:
            raise typer.BadParameter(f"--{name} requires --case", param_hint=f"--{name}")  # GlassKit's words
    common.checked(check_times, "--time", given.time, quoted=False)
    with common.failing("Could not start review UI", on_stdout=True):
        root, case_file = prepare_review(given.eval_dir, given.review_case, given.target)
        if given.results is not None:  # a path that is none of them showed no results, and said nothing
            from assay.errors import UsageError
            from assay.video.review.results import load_prior_run

            chosen = expand_home(given.results)
            if not chosen.exists():
                raise UsageError(f"--results {given.results} does not exist; give a run's checkpoint folder or its "
                                 "JSON report (--output-json)", "--results")
            if load_prior_run(chosen.resolve()) is None:
                raise UsageError(f"--results {given.results} is neither a run's checkpoint folder (with events.jsonl) "
                                 "nor a JSON report of a run", "--results")

    def make_app(binding: Any) -> Any:
        from assay.video.review.server import ReviewServer, create_review_app

        results = expand_home(given.results).resolve() if given.results is not None else None
        return create_review_app(ReviewServer(eval_dir=root, binding=binding, results_path=results, materialize=materialize))

    common.serve_locally(given.port, make_app, lambda port: review_url(port, case_file, given.target, given.time),
                         title="Review UI", failure="Could not start review UI", no_open=given.no_open)


@_command(video_app, "init", "directory language force")
def init_command(given: Given) -> None:
    """Write a starter eval directory that passes as is: a case, a short clip and an adapter."""
    from assay.video.starter import write_starter

    try:  # not a GlassKit command: assay's own rule, errors on stderr
        starter = write_starter(given.directory, given.language, force=given.force)
    except AssayError as error:
        common.fail("Error", error, stderr=True)
    except OSError as error:
        common.fail("Error", f"could not write {given.directory}: {error}", stderr=True, exit_code=2)
    from assay.core.stdout_guard import results_made

    results_made()  # written: a reader leaving now (`| head -1`) only loses the lines naming the files
    common.say(*starter.lines(given.directory))


@_command(store_app, "pull", STORE_EVAL_DIR, "pull_case")
def pull_command(given: Given) -> None:
    """Download and verify the selected cases' cloud videos into the local cache."""
    from assay.video.store_commands import pull_lines

    with common.failing("Could not pull cloud videos", on_stdout=True):
        typer.echo("\n".join(pull_lines(given.eval_dir, given.pull_case)))


@_command(store_app, "upload", "file store", STORE_EVAL_DIR, "key")
def upload_command(given: Given) -> None:
    """Upload a local video (unless the same object is there) and print its case-file `video:` block."""
    from assay.video.store_commands import upload_lines

    with common.failing("Could not upload cloud video", on_stdout=True):
        typer.echo("\n".join(upload_lines(given.file, given.store, given.eval_dir, given.key)))


@_command(store_app, "prune-cache", "all_files")
def prune_cache_command(given: Given) -> None:
    """Remove abandoned partial downloads and locks, or with --all the whole downloaded-video cache."""
    from assay.video.store_commands import prune_lines

    with common.failing("Could not prune downloaded-video cache", on_stdout=True):
        typer.echo("\n".join(prune_lines(given.all_files)))


video_app.add_typer(store_app, name="store", help="Cloud video stores: pull, upload, prune-cache.")
video_app.add_typer(store_app, name="video-store", help="Alias of `store` (GlassKit's name).", hidden=True)
