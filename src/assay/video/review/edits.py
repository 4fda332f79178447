"""Turn a review PUT into a new case file: validate the submitted samples, rebuild blocks, check the result.

The rewrite keeps every byte outside the changed `samples` lists (comments, layout); the candidate
is loaded as a normal case before it may replace the file (spec/video.md §22.3, §22.4).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.core.jsonvalue import check_json_like
from assay.errors import AssayError, JsonValueError
from assay.video.casefile import expand_sample_aliases, rewrite_target_samples
from assay.video.decode import VideoInfo
from assay.video.loading import load_case
from assay.video.model import COMPARE_MODES, Case, EvalConfig
from assay.video.reconstruct import (
    EditableSample,
    SampleOrigin,
    SampleTimingError,
    canonical_timestamp,
    reconstruct_blocks,
    strictly_equal,
)
from assay.video.run import late_samples
from assay.video.review.documents import expect_type_of
from assay.video.sampling import timestamp_tick
from assay.web.app import ApiError

__all__ = ["SamplesUpdate", "apply_samples_update", "parse_samples_update"]

_STRICT = ConfigDict(strict=True, extra="forbid")
ExpectType = Literal["null", "boolean", "number", "string", "array", "object"]


class _CompareBody(BaseModel):
    model_config = _STRICT
    mode: Optional[str] = None
    tolerance: Optional[float] = None


class _OriginBody(BaseModel):
    model_config = _STRICT
    block_index: int = Field(ge=1)
    kind: Literal["at", "range"]
    every_s: Optional[float] = None


class _SampleBody(BaseModel):
    model_config = _STRICT
    id: str = Field(min_length=1, max_length=256)
    timestamp_s: float
    has_expectation: bool
    expect_type: Optional[ExpectType] = None
    expect_json: str
    field: Optional[str] = None
    compare: Optional[_CompareBody] = None
    comment: Optional[str] = None
    ignore: Optional[str] = None
    origin: Optional[_OriginBody] = None


class _TargetBody(BaseModel):
    model_config = _STRICT
    samples: list[_SampleBody]


class _UpdateBody(BaseModel):
    model_config = _STRICT
    targets: dict[str, _TargetBody] = Field(min_length=1)


@dataclass(frozen=True)
class SamplesUpdate:
    """A validated PUT body: for each target, its complete new list of samples."""

    targets: Mapping[str, Sequence[_SampleBody]]


def parse_samples_update(payload: Any) -> SamplesUpdate:
    """Strict shape check (422 `invalid_request`); per-sample meaning is checked later."""
    try:
        body = _UpdateBody.model_validate(payload)
    except ValidationError as error:
        details = [
            {"path": ".".join(str(part) for part in item["loc"]) or None, "message": item["msg"]}
            for item in error.errors(include_url=False)
        ]
        raise ApiError(422, "invalid_request", "The request body does not match the expected shape.", details) from None
    return SamplesUpdate({target_id: target.samples for target_id, target in body.targets.items()})


# ---------------------------------------------------------------------------------------------
# Per-sample meaning


def _strict_json(text: str) -> Any:
    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                raise ValueError(f"duplicate key {key!r}")
            result[key] = value
        return result

    def no_constants(name: str) -> Any:
        raise ValueError(f"{name} is not allowed")

    return json.loads(text, object_pairs_hook=no_duplicates, parse_constant=no_constants)


def _optional_text(value: str | None, path: str, problems: list[dict[str, Any]]) -> str | None:
    if value is None:
        return None
    stripped = value.strip()
    if not stripped:
        problems.append({"path": path, "message": "must not be empty; use null to remove it"})
        return None
    # Like the case loader: surrounding blanks go, inner newlines of a multi-line text stay.
    return stripped


def _editable_sample(body: _SampleBody, path: str, problems: list[dict[str, Any]]) -> EditableSample | None:
    before = len(problems)
    if not math.isfinite(body.timestamp_s) or body.timestamp_s < 0:
        problems.append({"path": f"{path}.timestamp_s", "message": "must be a finite, nonnegative number"})
    expected: Any = None
    if body.has_expectation:
        try:
            expected = _strict_json(body.expect_json)
            check_json_like(expected, "expect")
        except RecursionError:
            problems.append({"path": f"{path}.expect_json", "message": "is nested too deeply"})
        except (ValueError, JsonValueError) as error:
            problems.append({"path": f"{path}.expect_json", "message": f"is not a valid JSON value: {error}"})
        else:
            if body.expect_type is not None and expect_type_of(expected) != body.expect_type:
                problems.append(
                    {
                        "path": f"{path}.expect_type",
                        "message": f"is {body.expect_type!r} but the value is of type {expect_type_of(expected)!r}",
                    }
                )
    mode = tolerance = None
    if body.compare is not None:
        if body.compare.mode is not None:
            mode = body.compare.mode.strip()
            if mode not in COMPARE_MODES:
                problems.append(
                    {
                        "path": f"{path}.compare.mode",
                        "message": f"unsupported compare mode {mode!r}; expected one of: {', '.join(COMPARE_MODES)}",
                    }
                )
        tolerance = body.compare.tolerance
        if tolerance is not None and (not math.isfinite(tolerance) or tolerance < 0):
            problems.append({"path": f"{path}.compare.tolerance", "message": "must be a finite number >= 0"})
    field = _optional_text(body.field, f"{path}.field", problems)
    comment = _optional_text(body.comment, f"{path}.comment", problems)
    ignore = _optional_text(body.ignore, f"{path}.ignore", problems)
    origin = None
    if body.origin is not None:
        origin = SampleOrigin(block_index=body.origin.block_index, kind=body.origin.kind, every_s=body.origin.every_s)
    if len(problems) > before:
        return None
    return EditableSample(
        id=body.id,
        timestamp_s=canonical_timestamp(body.timestamp_s),
        has_expectation=body.has_expectation,
        expected=expected,
        field=field,
        compare_mode=mode,
        tolerance=tolerance,
        comment=comment,
        ignore=ignore,
        origin=origin,
    )


def _editable_targets(update: SamplesUpdate) -> dict[str, list[EditableSample]]:
    problems: list[dict[str, Any]] = []
    targets: dict[str, list[EditableSample]] = {}
    for target_id, bodies in update.targets.items():
        seen: set[str] = set()
        samples = []
        for position, body in enumerate(bodies):
            path = f"targets.{target_id}.samples.{position}"
            if body.id in seen:
                problems.append({"path": f"{path}.id", "message": f"duplicate sample id {body.id!r}"})
            seen.add(body.id)
            sample = _editable_sample(body, path, problems)
            if sample is not None:
                samples.append(sample)
        targets[target_id] = samples
    if problems:
        raise ApiError(422, "invalid_samples", "Some samples are invalid.", problems)
    return targets


# ---------------------------------------------------------------------------------------------
# Applying


@dataclass(frozen=True)
class AppliedUpdate:
    candidate: bytes
    case: Case
    ids_by_target: dict[str, dict[int, str]]  # target -> tick -> submitted id


def _structure_changed(message: str) -> ApiError:
    return ApiError(409, "case_file_structure_changed", message)


def _invalid(message: str, path: str = "targets") -> ApiError:
    return ApiError(422, "invalid_samples", message, [{"path": path, "message": message}])


def _check_says_what_was_submitted(case: Case, submitted: Mapping[str, list[EditableSample]]) -> None:
    """A last guard: the rewritten file must expand to exactly the submitted samples."""
    by_id = {target.id: target for target in case.targets}
    for target_id, samples in submitted.items():
        wanted = {timestamp_tick(sample.timestamp_s): sample for sample in samples}
        loaded = {sample.tick: sample for sample in by_id[target_id].samples}
        if set(wanted) != set(loaded):
            raise _invalid(f"the rewritten case file would not keep the submitted times of target {target_id!r}")
        for tick, sample in wanted.items():
            after = loaded[tick]
            same = (
                sample.has_expectation == after.has_expectation
                and (not sample.has_expectation or strictly_equal(sample.expected, after.expected))
                and sample.field == after.field
                and sample.compare_mode == after.compare.mode
                and strictly_equal(sample.tolerance, after.compare.tolerance)
                and sample.comment == after.comment
                and sample.ignore == after.ignore
            )
            if not same:
                raise _invalid(
                    f"the rewritten case file would change target {target_id!r} at {after.timestamp_s:g}s; "
                    "this is a bug, please report it"
                )


def apply_samples_update(
    path: Path,
    data: bytes,
    config: EvalConfig,
    update: SamplesUpdate,
    video_info: VideoInfo | None,
) -> AppliedUpdate:
    """The new bytes of the case file at `path` (currently `data`) with the update applied and checked."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _structure_changed("The case file is no longer valid UTF-8; reload it from disk.") from None
    try:
        current = load_case(path, config, allow_empty=True, materialize_videos=False, check_local_videos=False, source=data)
    except AssayError as error:
        raise _structure_changed(f"The case file no longer loads; reload it from disk: {error}") from None
    targets_by_id = {target.id: target for target in current.targets}
    unknown = [target_id for target_id in update.targets if target_id not in targets_by_id]
    if unknown:
        raise ApiError(
            409,
            "unknown_target",
            f"The case file has no target {unknown[0]!r}.",
            [{"path": f"targets.{target_id}", "message": f"unknown target {target_id!r}"} for target_id in unknown],
        )
    submitted = _editable_targets(update)
    new_blocks: dict[str, list[dict[str, Any]]] = {}
    problems = []
    for target_id, samples in submitted.items():
        target = targets_by_id[target_id]
        try:
            new_blocks[target_id] = reconstruct_blocks(
                samples,
                case_every_s=current.every_s,
                default_field=target.sample_defaults_field,
                default_compare=target.sample_defaults_compare,
            )
        except SampleTimingError as error:
            problems.append({"path": f"targets.{target_id}.samples", "message": str(error)})
    if problems:
        raise ApiError(422, "invalid_samples", "Some samples are too close together.", problems)
    try:
        # Samples two targets share through an anchor are written out first, as `seed` does: a save of one target
        # must not reach the other's, and a rewritten `samples: &x` list cannot keep its anchor.
        candidate_text = rewrite_target_samples(expand_sample_aliases(text), new_blocks)
    except ValueError as error:
        raise _structure_changed(f"The case file cannot be rewritten safely: {error}") from None
    candidate = candidate_text.encode("utf-8")
    try:
        rewritten = load_case(path, config, materialize_videos=False, check_local_videos=False, source=candidate)
    except AssayError as error:
        raise _invalid(str(error)) from None
    if video_info is None:
        raise _invalid("the case's video is unavailable, so sample times cannot be checked")
    late = late_samples(rewritten, video_info.duration_s)
    if late:
        raise _invalid("; ".join(late))
    _check_says_what_was_submitted(rewritten, submitted)
    ids = {
        target_id: {timestamp_tick(sample.timestamp_s): sample.id for sample in samples}
        for target_id, samples in submitted.items()
    }
    return AppliedUpdate(candidate, rewritten, ids)
