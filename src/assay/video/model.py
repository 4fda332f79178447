"""The loaded, validated shape of a video eval (eval directory, cases, targets and expanded samples)
and of what a run of it comes to (sample results, trials, the run's outcome).

`assay.video.loading` builds the eval from files; run, seed, export and review only read it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from assay.core.gates import Gate

SUPPORTED_VIDEO_SUFFIXES = (".m4v", ".mkv", ".mov", ".mp4", ".webm")
COMPARE_MODES = ("exact", "json_subset", "numeric", "set_contains_all", "set_contains_any", "set_equals")
MAX_EXPANDED_SAMPLES_PER_CASE = 10_000
DEFAULT_EVERY_S = 0.5


def expand_home(path: str | os.PathLike[str]) -> Path:
    """`path` with a leading `~` or `~user` expanded, as a shell does: a `~name` naming no user stays
    as written (a relative path), where `Path.expanduser` raises RuntimeError (a traceback, in GlassKit)."""
    return Path(os.path.expanduser(path))


@dataclass(frozen=True, slots=True)
class CompareSpec:
    """A resolved `compare` setting: `mode` None means "infer from the expectation"."""

    mode: str | None = None
    tolerance: float | None = None


@dataclass(frozen=True, slots=True)
class LocalVideo:
    path: Path  # resolved, absolute
    display: str  # as written in the case file

    @property
    def display_name(self) -> str:
        return self.path.name


@dataclass(frozen=True, slots=True)
class RemoteVideo:
    store: str
    key: str
    sha256: str
    path: Path | None = None  # the verified cache file once materialised

    @property
    def display_name(self) -> str:
        return f"{self.store}:{self.key}"


VideoRef = LocalVideo | RemoteVideo


@dataclass(frozen=True, slots=True)
class Sample:
    """One expanded sample of one target. `sample_index` is case-wide, in declaration order."""

    case_name: str
    target_id: str
    target_index: int
    timestamp_s: float  # rounded to 9 decimals
    tick: int  # int(Decimal(str(timestamp_s)) * 1e9): the identity of a time
    sample_index: int
    block_index: int  # 1-based block number inside the target
    has_expectation: bool
    expected: Any
    field: str | None
    compare: CompareSpec
    source: str  # "range [a, b)" or "at"
    comment: str | None = None
    ignore: str | None = None

    @property
    def is_ignored(self) -> bool:
        return self.ignore is not None


@dataclass(frozen=True, slots=True)
class Target:
    id: str
    index: int  # 0-based declaration index in the case; never renumbered by filters
    label: str | None
    config: Mapping[str, Any]
    samples: tuple[Sample, ...]
    sample_defaults_field: str | None = None  # resolved default field for new/rewritten samples
    sample_defaults_compare: CompareSpec = CompareSpec()

    @property
    def display_name(self) -> str:
        if self.label and self.label != self.id:
            return f"{self.label} ({self.id})"
        return self.id


@dataclass(frozen=True, slots=True)
class Thresholds:
    min_pass_rate: float | None = None
    max_failures: int | None = None
    per_target: Mapping[str, float | None] = field(default_factory=dict)  # id -> min_pass_rate


@dataclass(frozen=True, slots=True)
class Case:
    name: str  # file stem
    path: Path  # absolute case file path
    source_sha256: str  # sha256 of the case file bytes
    description: str | None
    every_s: float
    video: VideoRef
    targets: tuple[Target, ...]
    thresholds: Thresholds
    declared_target_ids: tuple[str, ...]  # every target id in the file, before --target filtering
    raw: Mapping[str, Any]  # the parsed YAML mapping

    def all_samples(self) -> list[Sample]:
        return [sample for target in self.targets for sample in target.samples]


@dataclass(frozen=True, slots=True)
class VideoStoreConfig:
    name: str
    type: str = "s3"
    bucket: str = ""
    endpoint_url: str | None = None
    region: str = "us-east-1"
    public_base_url: str | None = None
    access_key_id_env: str | None = None
    secret_access_key_env: str | None = None
    session_token_env: str | None = None


@dataclass(frozen=True, slots=True)
class EvalConfig:
    path: Path | None
    thresholds: Thresholds = Thresholds()
    video_stores: Mapping[str, VideoStoreConfig] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Selection:
    """The filters a command was given; gates need them to decide what to skip."""

    case: str | None = None
    targets: tuple[str, ...] = ()
    at_times_s: tuple[float, ...] = ()
    from_time_s: float | None = None
    until_time_s: float | None = None

    @property
    def time_filtered(self) -> bool:
        return bool(self.at_times_s) or self.from_time_s is not None or self.until_time_s is not None


@dataclass(frozen=True, slots=True)
class EvalDirectory:
    path: Path  # resolved
    config: EvalConfig
    cases: tuple[Case, ...]
    selection: Selection

    @property
    def sample_count(self) -> int:
        return sum(len(t.samples) for case in self.cases for t in case.targets)


RESULT_STATUSES = ("passed", "failed", "error", "ignored")


@dataclass(slots=True)
class SampleResult:
    """One (trial, target, sample) outcome; `to_report()` gives the JSON report's result object."""

    case: str
    target: str
    target_label: str | None
    sample_index: int
    timestamp_s: float
    status: str  # passed | failed | error | ignored
    expected: Any
    observed: Any
    observed_value: Any
    compare_mode: str | None  # the declared mode (None when inferred), as the report carries it
    effective_mode: str | None  # the mode actually used (console lines and artifact JSON show it)
    field: str | None
    reason: str
    source: str
    evaluation_duration_seconds: float | None = None
    evaluation_timing_mode: str | None = None  # individual | batch_amortized | None
    artifact_image: str | None = None
    artifact_json: str | None = None

    def to_report(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "target": self.target,
            "target_label": self.target_label,
            "sample_index": self.sample_index,
            "timestamp_s": self.timestamp_s,
            "status": self.status,
            "expected": self.expected,
            "observed": self.observed,
            "observed_value": self.observed_value,
            "compare_mode": self.compare_mode,
            "field": self.field,
            "reason": self.reason,
            "source": self.source,
            "evaluation_duration_seconds": self.evaluation_duration_seconds,
            "evaluation_timing_mode": self.evaluation_timing_mode,
            "artifact_image": self.artifact_image,
            "artifact_json": self.artifact_json,
        }


VERDICT_OF_STATUS = {  # a sample status as the shared verdict of a unit
    "passed": "passed", "failed": "failed", "error": "errored", "ignored": "ignored"}


@dataclass
class TrialOutcome:
    trial: int
    results: list[SampleResult]
    gates: list[Gate]
    success: bool
    duration_seconds: float


@dataclass
class RunOutcome:
    eval_directory: EvalDirectory
    repeat: int
    trials: list[TrialOutcome]
    gates: list[Gate]  # report-level (stability)
    success: bool
    duration_seconds: float
    reused_attempts: int = 0  # evaluated attempts a resume took from its checkpoint (not evaluated in this run)
