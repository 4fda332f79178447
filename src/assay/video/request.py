"""What `assay video run` and `assay video seed` are asked, and the invocation GlassKit's checkpoints store;
the options of the other video commands (`VideoOptions`) and GlassKit's command-line checks.

Each request is frozen and declared once with `option(...)` in GlassKit's key names. A GlassKit
checkpoint's `invocation` also holds some of the run's outputs (`verbose`, and for a run
`output_json` and `junit`): they are written from, and restored into, the shared `Outputs`, at the
place GlassKit's key order gives them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from assay.core.run.request import (
    MAX_CONCURRENCY, MAX_REPEAT, Outputs, above, at_least, between, from_invocation, option, option_of, to_invocation,
)
from assay.errors import UsageError
from assay.video.model import expand_home

__all__ = [
    "PROGRAM", "SeedRequest", "VideoOptions", "VideoRunRequest", "check_run_options", "check_seed_options",
    "check_time_filters", "check_times", "invocation_with_outputs", "one_adapter", "outputs_from_invocation", "planned",
]

PROGRAM = "assay video"


def _not_negative(value: Any) -> None:
    """The option check of a time (`--at`, `--from`, `--until`): GlassKit's `min=0`, which refuses NaN too (no
    comparison holds for it) with the same words; +inf gets past it, to the command's own finite check."""
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if item is not None and not item >= 0:
            raise ValueError("Input should be greater than or equal to 0")


Planned = TypeVar("Planned", "VideoRunRequest", "SeedRequest")


@dataclass(frozen=True)
class VideoRunRequest:
    """Everything `assay video run` was asked to do but where its output goes. With its outputs it
    is the checkpoint's invocation (in GlassKit's key names), what `--resume` restores and the
    source of the record's options."""

    kind: ClassVar[str] = "video"

    eval_dir: Path = option(flag="--eval-dir")  # resolved
    adapter: str | None = option(
        None, flag="--adapter", help="Python adapter '<module-or-file>:<callable>' (default: <eval-dir>/adapter.py:create_evaluator)."
    )
    adapter_command: str | None = option(None, flag="--adapter-command", help="Command that serves the NDJSON adapter protocol.")
    case: str | None = option(None, key="case_filter", flag="--case", help="Case file name or stem.")
    targets: tuple[str, ...] = option((), key="target_filter", empty_as_null=True, flag="--target", help="Target id (repeatable).")
    at: tuple[float, ...] = option(
        (), key="at_times_s", empty_as_null=True, flag="--at", check=_not_negative,
        help="Only the sample at this time (repeatable; needs --case).",
    )
    from_s: float | None = option(
        None, key="from_time_s", flag="--from", check=_not_negative, help="Only samples at or after this time (needs --case)."
    )
    until_s: float | None = option(
        None, key="until_time_s", flag="--until", check=_not_negative, help="Only samples before this time (needs --case)."
    )
    adapter_config: Mapping[str, Any] = option(default_factory=dict, flag="--adapter-config")  # the CLI reads the file
    concurrency: int = option(
        1, flag="--concurrency", check=at_least(1, maximum=MAX_CONCURRENCY),
        help=f"Adapter calls in flight (at most {MAX_CONCURRENCY:,}).",
    )
    repeat: int = option(1, flag="--repeat", check=at_least(1, maximum=MAX_REPEAT), help=f"Trials to run (at most {MAX_REPEAT:,}).")
    min_pass_rate: float | None = option(
        None, flag="--min-pass-rate", check=between(0, 1),
        help="Gate: fail a trial whose pass rate over all samples is below this (0-1; default: config.yaml's, else none).",
    )
    min_target_pass_rate: float | None = option(
        None, flag="--min-target-pass-rate", check=between(0, 1),
        help="Gate: fail a trial in which any target's pass rate is below this (0-1; default: none).",
    )
    max_failures: int | None = option(
        None, flag="--max-failures", check=at_least(0), help="Gate: fail a trial with more failed samples than this (default: none)."
    )
    max_flaky_samples: int | None = option(
        None, flag="--max-flaky-samples", check=at_least(0),
        help="Gate: fail the run when more samples than this disagree across trials (needs --repeat 2+; default: none).",
    )
    keep_going: bool = option(False, flag="--keep-going", help="Record adapter errors and continue.")
    artifacts_dir: str | None = option(None, flag="--artifacts-dir", metavar="<path>", help="Directory for adapter and failure artifacts.")
    save_failures: bool = option(False, flag="--save-failures", help="Save the frame and result of each failure.")
    allow_empty: bool = option(False, flag="--allow-empty", help="Allow targets and evals without samples.")
    # Only stored when given, so unsharded checkpoints keep the plan hash they always had.
    shard: str | None = option(
        None, omit_when_none=True, flag="--shard", help="Run only shard i of n (e.g. 2/4); combine with `assay runs merge`."
    )
    # Seconds per call of a command adapter; stored only when given (older plan hashes stay).
    adapter_timeout: float | None = option(
        None, omit_when_none=True, flag="--adapter-timeout", check=above(0),
        help="Seconds a command adapter may take per call before the call fails (default: no limit; "
        "initialize has its own 30 s limit, ASSAY_ADAPTER_START_TIMEOUT).",
    )


@dataclass(frozen=True)
class SeedRequest:
    """Everything `assay video seed` was asked to do; with `--verbose` it is the checkpoint's
    invocation (GlassKit's §14.2 seed keys), so `--resume` restores it. The options it shares with
    a run are declared as the run declares them."""

    eval_dir: Path = option_of(VideoRunRequest, "eval_dir")
    adapter: str | None = option_of(VideoRunRequest, "adapter")
    adapter_command: str | None = option_of(VideoRunRequest, "adapter_command")
    case: str | None = option_of(VideoRunRequest, "case")
    targets: tuple[str, ...] = option_of(VideoRunRequest, "targets")
    adapter_config: Mapping[str, Any] = option_of(VideoRunRequest, "adapter_config")
    concurrency: int = option_of(VideoRunRequest, "concurrency")
    replace: bool = option(False, flag="--replace", help="Propose new values for samples that already have an expectation.")
    keep_going: bool = option(
        False, flag="--keep-going", help="Record adapter errors and continue; the YAML is written only when all succeed."
    )
    # Only stored when given, so earlier checkpoints keep their plan hash.
    adapter_timeout: float | None = option_of(VideoRunRequest, "adapter_timeout")


# GlassKit's invocation keys that hold outputs, each after the request key it follows in the file.
_RUN_OUTPUTS_AFTER = {"keep_going": ("verbose", "output_json"), "allow_empty": ("junit",)}
_SEED_OUTPUTS_AFTER = {"keep_going": ("verbose",)}


def invocation_with_outputs(request: VideoRunRequest | SeedRequest, outputs: Outputs) -> dict[str, Any]:
    """The checkpoint's invocation: the request's stored fields with the outputs GlassKit keeps among them."""
    placed = _RUN_OUTPUTS_AFTER if isinstance(request, VideoRunRequest) else _SEED_OUTPUTS_AFTER
    kept = to_invocation(outputs)
    invocation: dict[str, Any] = {}
    for key, value in to_invocation(request).items():
        invocation[key] = value
        for output in placed.get(key, ()):
            if output in kept:  # an output left unset that its option omits (`junit`) is not stored
                invocation[output] = kept[output]
    return invocation


def outputs_from_invocation(invocation: Any, manifest_path: Path, outputs: Outputs) -> Outputs:
    """The outputs a checkpoint stored (missing keys: their defaults), with this invocation's others."""
    return from_invocation(Outputs, invocation, manifest_path, json=outputs.json, quiet=outputs.quiet)


def check_run_options(options: VideoRunRequest) -> None:
    from assay.video.observe import EvalRunError  # the run's machinery: not imported to declare the options

    if options.adapter and options.adapter_command:
        raise EvalRunError("adapter and adapter command are mutually exclusive")
    if not options.adapter and not options.adapter_command:
        raise EvalRunError(f"{PROGRAM} run requires --adapter or --adapter-command")
    _check_adapter_timeout(options)
    if options.concurrency < 1:
        raise EvalRunError("concurrency must be greater than 0")
    if options.repeat < 1:
        raise EvalRunError("repeat must be greater than 0")
    if options.max_flaky_samples is not None:
        if options.max_flaky_samples < 0:
            raise EvalRunError("max flaky samples must be nonnegative")
        if options.repeat < 2:
            raise EvalRunError("--max-flaky-samples requires --repeat to be at least 2")


def _check_adapter_timeout(options: VideoRunRequest | SeedRequest) -> None:
    """`--adapter-timeout` bounds process-adapter calls only: with a Python adapter it would do nothing."""
    from assay.video.observe import EvalRunError

    if options.adapter_timeout and not options.adapter_command:
        raise EvalRunError(
            "--adapter-timeout limits the calls of a process adapter (--adapter-command); a Python adapter's "
            "calls cannot be stopped from outside: bound the slow call in the adapter and drop --adapter-timeout"
        )


def check_seed_options(options: SeedRequest) -> None:
    """§18 step 1, before anything is loaded."""
    from assay.video.observe import EvalRunError

    if options.adapter and options.adapter_command:
        raise EvalRunError("adapter and adapter command are mutually exclusive")
    if not options.adapter and not options.adapter_command:
        raise EvalRunError(f"{PROGRAM} seed requires --adapter or --adapter-command")
    _check_adapter_timeout(options)
    if options.concurrency < 1:
        raise EvalRunError("concurrency must be greater than 0")


def check_times(option: str, values: Any) -> None:
    for item in values if isinstance(values, (list, tuple)) else [values]:
        if item is not None and (not math.isfinite(item) or item < 0):
            raise UsageError(f"{option} must be a finite, nonnegative number", option)


def check_time_filters(case: str | None, at: Sequence[float], from_s: float | None, until_s: float | None) -> None:
    """GlassKit's command-line pre-checks of --at/--from/--until, in its order (each names its option)."""
    given = [name for name, value in (("--at", at), ("--from", from_s), ("--until", until_s)) if value not in (None, [], ())]
    if given and case is None:
        raise UsageError(f"{given[0]} requires --case", given[0])
    if at and (from_s is not None or until_s is not None):
        raise UsageError("--at cannot be combined with --from or --until", "--at")
    for option, values in (("--at", at or []), ("--from", from_s), ("--until", until_s)):
        check_times(option, values)
    if from_s is not None and until_s is not None and from_s >= until_s:
        raise UsageError("--until must be greater than --from", "--until")


def adapters_not_both(adapter: str | None, adapter_command: str | None) -> None:
    """`--adapter` and `--adapter-command` together: a UsageError on `--adapter-command` (which GlassKit's
    command line names unquoted: `Invalid value for --adapter-command: cannot be used with --adapter`)."""
    if adapter and adapter_command:
        raise UsageError("--adapter-command cannot be used with --adapter", "--adapter-command")


def one_adapter(adapter: str | None, adapter_command: str | None) -> None:
    """One adapter option at most, and a given one is not blank: `--adapter ''` (an unset variable in a
    script) would otherwise read as no option at all, so `run` asked for one and `validate` passed
    without checking any adapter."""
    adapters_not_both(adapter, adapter_command)
    if adapter is not None and not adapter.strip():
        raise UsageError(f"adapter must be '<module-or-file>:<callable>', got {adapter!r}", "--adapter")
    if adapter is not None and ":" not in adapter:  # `--adapter eval/adapter.py`: the factory's name left out
        raise UsageError(
            f"adapter must be '<module-or-file>:<callable>', got {adapter!r}; name the factory after a colon, "
            f"e.g. {adapter.strip()}:create_evaluator", "--adapter",
        )
    if adapter_command is not None and not adapter_command.strip():
        raise UsageError("adapter command must not be empty", "--adapter-command")


def planned(request: Planned, adapter_config_file: Path | None) -> Planned:
    """A new run's or seed's request as GlassKit plans it: one adapter (`<eval-dir>/adapter.py:create_evaluator`
    when none is given) and the adapter config (discovered, or `--adapter-config`); UsageError naming the option."""
    from assay.video.loading import load_adapter_config

    one_adapter(request.adapter, request.adapter_command)
    adapter = request.adapter
    if adapter is None and request.adapter_command is None:
        adapter = request.eval_dir.as_posix() + "/adapter.py:create_evaluator"
    config = load_adapter_config(expand_home(request.eval_dir), adapter_config_file)
    return dataclasses.replace(request, adapter=adapter, adapter_config=config)


@dataclass(frozen=True, kw_only=True)
class VideoOptions:
    """The options of the other `assay video` commands, declared once (a run's and a seed's are their
    requests' fields; a command that shares one of those takes it from there)."""

    eval_dir: Path = option(Path("eval"), flag="--eval-dir", help="Eval directory holding cases/, config.yaml and adapter files.")
    adapter_config_file: Path | None = option(None, flag="--adapter-config", help="Adapter config file (YAML, or JSON by suffix).")
    frame_case: str = option(flag="--case", help="Case file name or stem.")
    frame_times: tuple[float, ...] = option(flag="--at", check=_not_negative, help="Time to export (repeatable).")
    output_dir: Path | None = option(None, flag="--output-dir", help="Default: <eval-dir>/runs/frames/<case>/.")
    review_case: str | None = option(None, flag="--case", help="Open this case (file name or stem).")
    target: str | None = option(None, flag="--target", help="Select this target (needs --case).")
    time: float | None = option(None, flag="--time", help="Start at this time in seconds (needs --case).")
    results: Path | None = option(None, flag="--results", help="JSON report or run checkpoint whose pass/fail marks to "
                                  "show (default: the newest under <eval-dir>/runs).")
    directory: Path = option(Path("eval"), argument=True, help="Eval directory to write (default: eval, where `run` looks).")
    language: str = option("python", flag="--adapter", help="The starter adapter's language: python (default) or js (node).")
    force: bool = option(False, flag="--force", help="Overwrite starter files that already exist.")
    pull_case: str | None = option(None, flag="--case", help="Only download one case by file name or stem.")
    file: Path = option(argument=True, metavar="FILE", help="Local video file to upload.")
    store: str = option(flag="--store", help="Named video store from <eval-dir>/config.yaml.")
    key: str | None = option(None, flag="--key", help="Object key. Defaults to an immutable key derived from the SHA-256.")
    all_files: bool = option(False, flag="--all", help="Remove verified videos too; they will be downloaded again when used.")


def refusal(options: str, flags: Sequence[str]) -> str:
    """GlassKit's words for `--resume` given with options the checkpoint restores."""
    return f"restores the original adapter and {options} options and cannot be combined with overrides (given: {', '.join(flags)})"
