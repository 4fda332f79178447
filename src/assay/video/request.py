"""What `assay video run` and `assay video seed` are asked, and the invocation GlassKit's checkpoints store.

Each request is frozen and declared once with `option(...)` in GlassKit's key names. A GlassKit
checkpoint's `invocation` also holds some of the run's outputs (`verbose`, and for a run
`output_json` and `junit`): they are written from, and restored into, the shared `Outputs`, at the
place GlassKit's key order gives them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from assay.core.run.request import Outputs, from_invocation, option, to_invocation
from assay.video.observe import EvalRunError

__all__ = [
    "PROGRAM", "SeedRequest", "VideoRunRequest", "check_run_options", "check_seed_options", "invocation_with_outputs",
    "outputs_from_invocation",
]

PROGRAM = "assay video"


@dataclass(frozen=True)
class VideoRunRequest:
    """Everything `assay video run` was asked to do but where its output goes. With its outputs it
    is the checkpoint's invocation (in GlassKit's key names), what `--resume` restores and the
    source of the record's options."""

    kind: ClassVar[str] = "video"

    eval_dir: Path = option(flag="--eval-dir")  # resolved
    adapter: str | None = option(None, flag="--adapter")
    adapter_command: str | None = option(None, flag="--adapter-command")
    case: str | None = option(None, key="case_filter", flag="--case")
    targets: tuple[str, ...] = option((), key="target_filter", empty_as_null=True, flag="--target")
    at: tuple[float, ...] = option((), key="at_times_s", empty_as_null=True, flag="--at")
    from_s: float | None = option(None, key="from_time_s", flag="--from")
    until_s: float | None = option(None, key="until_time_s", flag="--until")
    adapter_config: Mapping[str, Any] = option(default_factory=dict, flag="--adapter-config")
    concurrency: int = option(1, flag="--concurrency")
    repeat: int = option(1, flag="--repeat")
    min_pass_rate: float | None = option(None, flag="--min-pass-rate")
    min_target_pass_rate: float | None = option(None, flag="--min-target-pass-rate")
    max_failures: int | None = option(None, flag="--max-failures")
    max_flaky_samples: int | None = option(None, flag="--max-flaky-samples")
    keep_going: bool = option(False, flag="--keep-going")
    artifacts_dir: str | None = option(None, flag="--artifacts-dir")
    save_failures: bool = option(False, flag="--save-failures")
    allow_empty: bool = option(False, flag="--allow-empty")
    # Only stored when given, so unsharded checkpoints keep the plan hash they always had.
    shard: str | None = option(None, omit_when_none=True, flag="--shard")
    # Seconds per call of a command adapter; stored only when given (older plan hashes stay).
    adapter_timeout: float | None = option(None, omit_when_none=True, flag="--adapter-timeout")


@dataclass(frozen=True)
class SeedRequest:
    """Everything `assay video seed` was asked to do; with `--verbose` it is the checkpoint's
    invocation (GlassKit's §14.2 seed keys), so `--resume` restores it."""

    eval_dir: Path = option(flag="--eval-dir")
    adapter: str | None = option(None, flag="--adapter")
    adapter_command: str | None = option(None, flag="--adapter-command")
    case: str | None = option(None, key="case_filter", flag="--case")
    targets: tuple[str, ...] = option((), key="target_filter", empty_as_null=True, flag="--target")
    adapter_config: Mapping[str, Any] = option(default_factory=dict, flag="--adapter-config")
    concurrency: int = option(1, flag="--concurrency")
    replace: bool = option(False, flag="--replace")
    keep_going: bool = option(False, flag="--keep-going")
    # Only stored when given, so earlier checkpoints keep their plan hash.
    adapter_timeout: float | None = option(None, omit_when_none=True, flag="--adapter-timeout")


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
            invocation[output] = kept[output]
    return invocation


def outputs_from_invocation(invocation: Any, manifest_path: Path, outputs: Outputs) -> Outputs:
    """The outputs a checkpoint stored (missing keys: their defaults), with this invocation's others."""
    return from_invocation(Outputs, invocation, manifest_path, json=outputs.json, quiet=outputs.quiet)


def check_run_options(options: VideoRunRequest) -> None:
    if options.adapter and options.adapter_command:
        raise EvalRunError("adapter and adapter command are mutually exclusive")
    if not options.adapter and not options.adapter_command:
        raise EvalRunError(f"{PROGRAM} run requires --adapter or --adapter-command")
    if options.concurrency < 1:
        raise EvalRunError("concurrency must be greater than 0")
    if options.repeat < 1:
        raise EvalRunError("repeat must be greater than 0")
    if options.max_flaky_samples is not None:
        if options.max_flaky_samples < 0:
            raise EvalRunError("max flaky samples must be nonnegative")
        if options.repeat < 2:
            raise EvalRunError("--max-flaky-samples requires --repeat to be at least 2")


def check_seed_options(options: SeedRequest) -> None:
    """§18 step 1, before anything is loaded."""
    if options.adapter and options.adapter_command:
        raise EvalRunError("adapter and adapter command are mutually exclusive")
    if not options.adapter and not options.adapter_command:
        raise EvalRunError(f"{PROGRAM} seed requires --adapter or --adapter-command")
    if options.concurrency < 1:
        raise EvalRunError("concurrency must be greater than 0")


def refusal(options: str, flags: Sequence[str]) -> str:
    """GlassKit's words for `--resume` given with options the checkpoint restores."""
    return f"restores the original adapter and {options} options and cannot be combined with overrides (given: {', '.join(flags)})"
