"""What the review UI reads about a case file: its summary, and its full document with samples and issues.

Each case is loaded on its own, so one broken case file only blocks itself (spec/video.md §22.3).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from assay.core.fsutil import is_contained
from assay.errors import AssayError, CaseError
from assay.video.casefile_schema import RawCaseFile, parse_case_file
from assay.video.decode import VideoInfo, probe_video
from assay.video.loading import discover_case_paths, load_case, load_eval_config, parse_yaml_text
from assay.video.model import SUPPORTED_VIDEO_SUFFIXES, Case, EvalConfig, LocalVideo, RemoteVideo, Sample, Target
from assay.video.reconstruct import EditableSample, SampleOrigin, reconstruct_blocks
from assay.video.run import DURATION_SLACK_S
from assay.video.sampling import expand_case_targets, expand_range, timestamp_tick

__all__ = [
    "VIDEO_CONTENT_TYPES",
    "IdOverrides",
    "ReviewCase",
    "build_case_document",
    "case_file_summary",
    "expect_json_text",
    "expect_type_of",
    "is_confined",
    "list_case_files",
    "load_review_case",
    "sample_id",
]

VIDEO_CONTENT_TYPES = {
    ".mp4": "video/mp4",
    ".m4v": "video/x-m4v",
    ".mov": "video/quicktime",
    ".mkv": "video/x-matroska",
    ".webm": "video/webm",
}

# target id -> timestamp tick -> the sample id a client chose (kept across a PUT, §22.3)
IdOverrides = Mapping[str, Mapping[int, str]]
Materialize = Callable[[RemoteVideo, Any], Path]


def is_confined(path: Path, root: Path) -> bool:
    """Whether `path`, symlinks resolved, lies inside `root` (itself resolved)."""
    return is_contained(root, path)


def list_case_files(eval_dir: Path) -> list[Path]:
    """The eval's case files as discovery finds them, minus any whose real path leaves the eval directory."""
    return [path for path in discover_case_paths(eval_dir) if is_confined(path, eval_dir)]


def sample_id(sample: Sample, position_in_block: int) -> str:
    return f"block-{sample.block_index}-sample-{position_in_block}"


def expect_type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    return "object"


def expect_json_text(value: Any) -> str:
    """Compact JSON keeping key order, non-ASCII text, big integers and -0.0 exactly."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _error(code: str, message: str, path: str | None = None) -> dict[str, Any]:
    return {"code": code, "message": message, "details": [{"path": path, "message": message}]}


# ---------------------------------------------------------------------------------------------
# Loading one case for review


@dataclass(frozen=True)
class ReviewCase:
    """One case file as the review server sees it right now."""

    path: Path
    data: bytes
    revision: str
    text: str | None
    case: Case | None  # None when the file does not load
    load_error: dict[str, Any] | None
    video_path: Path | None = None  # local file or verified cache copy, when available
    video_info: VideoInfo | None = None

    @property
    def name(self) -> str:
        return self.path.stem


def _classify_case_error(text: str, path: Path) -> str:
    """`invalid_samples` when the file is a valid case whose samples do not expand, else `invalid_case`."""
    try:
        raw = parse_yaml_text(text)
        if raw is not None and not isinstance(raw, dict):
            return "invalid_case"
        raw_case = parse_case_file(raw or {}, label=str(path))
    except Exception:  # noqa: BLE001 - YAML or schema errors: the file itself is invalid
        return "invalid_case"
    try:
        expand_case_targets(raw_case, case_name=path.stem, label=str(path), allow_empty=True)
    except CaseError:
        return "invalid_samples"
    return "invalid_case"


def load_case_text(path: Path, data: bytes, config: EvalConfig) -> tuple[str | None, Case | None, dict[str, Any] | None]:
    """Decode, parse, validate and expand a case (no video touched), classifying any failure."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return None, None, _error("invalid_encoding", f"{path}: case file is not valid UTF-8: {error}")
    try:
        case = load_case(
            path, config, allow_empty=True, materialize_videos=False, check_local_videos=False, source=data
        )
    except AssayError as error:
        return text, None, _error(_classify_case_error(text, path), str(error))
    return text, case, None


def _local_video_problem(video: LocalVideo) -> str | None:
    # The video may live anywhere the case's `video:` points (GlassKit's own docs keep recordings
    # beside the repository), exactly as for `run`; only case files are confined to the eval dir.
    # The suffix check, on the path with symlinks resolved, keeps this to video files.
    if not video.path.exists():
        return f"video file does not exist: {video.path}"
    if not video.path.is_file():
        return f"video path is not a file: {video.path}"
    if video.path.suffix.lower() not in SUPPORTED_VIDEO_SUFFIXES:
        return f"unsupported video file type for {video.path}; supported suffixes: {', '.join(SUPPORTED_VIDEO_SUFFIXES)}"
    return None


def load_review_case(
    path: Path,
    config: EvalConfig,
    *,
    materialize: Materialize | None = None,
    touch_video: bool = True,
    data: bytes | None = None,
) -> ReviewCase:
    """Load a case for review; with `touch_video`, also find (downloading if needed) and probe its video."""
    if data is None:
        data = path.read_bytes()
    revision = hashlib.sha256(data).hexdigest()
    text, case, load_error = load_case_text(path, data, config)
    if case is None or not touch_video:
        return ReviewCase(path, data, revision, text, case, load_error)
    video_path: Path | None = None
    problem: str | None = None
    if isinstance(case.video, LocalVideo):
        problem = _local_video_problem(case.video)
        video_path = None if problem else case.video.path
    elif materialize is None:
        problem = f"cloud video {case.video.display_name} cannot be downloaded: no video store support"
    else:
        try:
            video_path = materialize(case.video, config.video_stores[case.video.store])
        except AssayError as error:
            problem = str(error)
        except Exception as error:  # noqa: BLE001 - a download failure must not break the page
            problem = f"could not download {case.video.display_name}: {error}"
    info = None
    if video_path is not None:
        try:
            info = probe_video(video_path)
        except AssayError as error:
            problem, video_path = str(error), None
    if problem is not None:
        return ReviewCase(path, data, revision, text, case, _error("video_unavailable", problem, "video"))
    return ReviewCase(path, data, revision, text, case, None, video_path, info)


# ---------------------------------------------------------------------------------------------
# Summaries


def case_file_summary(path: Path, config: EvalConfig | None, config_error: str | None = None) -> dict[str, Any]:
    """CaseFileSummary: loads the case without touching its video."""
    error: dict[str, Any] | None
    case: Case | None = None
    if config is None:
        error = _error("invalid_case", config_error or "the eval config is invalid")
    else:
        try:
            data = path.read_bytes()
        except OSError as read_error:
            error = _error("invalid_case", f"{path}: could not read file: {read_error}")
        else:
            _, case, error = load_case_text(path, data, config)
            if error is not None and error["code"] == "invalid_samples":
                error = {**error, "code": "invalid_case"}  # summaries know only these two codes
    return {
        "id": path.name,
        "name": path.stem,
        "file_name": path.name,
        "description": case.description if case else None,
        "target_count": len(case.targets) if case else 0,
        "sample_count": sum(len(target.samples) for target in case.targets) if case else 0,
        "status": "ready" if error is None else "blocked",
        "error": error,
    }


def eval_config_for(eval_dir: Path) -> tuple[EvalConfig | None, str | None]:
    try:
        return load_eval_config(eval_dir), None
    except AssayError as error:
        return None, str(error)


# ---------------------------------------------------------------------------------------------
# Full documents


def _block_origin(raw_case: RawCaseFile, target_id: str, block_index: int, case_every_s: float) -> SampleOrigin:
    block = raw_case.targets[target_id].samples[block_index - 1]
    if block.range_ is None:
        return SampleOrigin(block_index=block_index, kind="at")
    every_s = block.every_s if block.every_s is not None else case_every_s
    return SampleOrigin(block_index=block_index, kind="range", every_s=every_s)


def _origin_json(origin: SampleOrigin) -> dict[str, Any]:
    if origin.kind == "range":
        return {"block_index": origin.block_index, "kind": "range", "every_s": origin.every_s}
    return {"block_index": origin.block_index, "kind": "at"}


def _editable(sample: Sample, identifier: str, origin: SampleOrigin) -> EditableSample:
    return EditableSample(
        id=identifier,
        timestamp_s=sample.timestamp_s,
        has_expectation=sample.has_expectation,
        expected=sample.expected,
        field=sample.field,
        compare_mode=sample.compare.mode,
        tolerance=sample.compare.tolerance,
        comment=sample.comment,
        ignore=sample.ignore,
        origin=origin,
    )


def _display_groups(
    case: Case, target: Target, ids_by_tick: Mapping[int, str], origins: Mapping[int, SampleOrigin]
) -> list[dict[str, Any]]:
    """Runs of samples with equal settings, as a PUT of the unchanged samples would group them.

    The samples carry the same origins the document hands the client (and the client sends back),
    so two samples of one range block show as the range a save would keep (§22.4 step 3).
    """
    if not target.samples:
        return []
    blocks = reconstruct_blocks(
        (_editable(sample, ids_by_tick[sample.tick], origins[sample.block_index]) for sample in target.samples),
        case_every_s=case.every_s,
        default_field=target.sample_defaults_field,
        default_compare=target.sample_defaults_compare,
    )
    groups = []
    for block in blocks:
        if "range" in block:
            start, end = block["range"]
            every_s = block.get("every_s", case.every_s)
            timestamps = expand_range(start, end, every_s)
            kind = "range"
        else:
            timestamps = block["at"] if isinstance(block["at"], list) else [block["at"]]
            start, end, every_s, kind = min(timestamps), max(timestamps), None, "at"
        ids = [ids_by_tick[tick] for tick in (timestamp_tick(t) for t in timestamps) if tick in ids_by_tick]
        groups.append(
            {"kind": kind, "sample_ids": ids, "start_s": start, "end_s": end, "every_s": every_s, "timestamps_s": timestamps}
        )
    groups.sort(key=lambda group: (group["start_s"], group["end_s"]))
    return [{"id": f"group-{number}", **group} for number, group in enumerate(groups, start=1)]


def _details_yaml(raw_target: Any) -> str:
    if not isinstance(raw_target, Mapping):
        return ""
    details = {key: value for key, value in raw_target.items() if key != "samples"}
    if not details:
        return ""
    return yaml.safe_dump(details, sort_keys=False, allow_unicode=True, default_flow_style=False)


def _target_document(
    case: Case, raw_case: RawCaseFile, target: Target, overrides: Mapping[int, str]
) -> dict[str, Any]:
    positions: dict[int, int] = {}
    samples = []
    ids_by_tick: dict[int, str] = {}
    per_block: dict[int, tuple[dict[str, Any], str, str]] = {}  # samples of a block share all of this
    origins: dict[int, SampleOrigin] = {}
    for sample in target.samples:
        position = positions.get(sample.block_index, 0)
        positions[sample.block_index] = position + 1
        identifier = overrides.get(sample.tick) or sample_id(sample, position)
        ids_by_tick[sample.tick] = identifier
        if sample.block_index not in per_block:
            origins[sample.block_index] = _block_origin(raw_case, target.id, sample.block_index, case.every_s)
            per_block[sample.block_index] = (
                _origin_json(origins[sample.block_index]),
                expect_type_of(sample.expected) if sample.has_expectation else "null",
                expect_json_text(sample.expected) if sample.has_expectation else "null",
            )
        origin, expect_type, expect_json = per_block[sample.block_index]
        samples.append(
            {
                "id": identifier,
                "timestamp_s": sample.timestamp_s,
                "has_expectation": sample.has_expectation,
                "expect_type": expect_type,
                "expect_json": expect_json,
                "field": sample.field,
                "compare": {"mode": sample.compare.mode, "tolerance": sample.compare.tolerance},
                "comment": sample.comment,
                "ignore": sample.ignore,
                "origin": dict(origin),
                "_tick": sample.tick,
            }
        )
    samples.sort(key=lambda item: (item["_tick"], item["id"]))
    for item in samples:
        del item["_tick"]
    raw_targets = case.raw.get("targets") if isinstance(case.raw, Mapping) else None
    return {
        "id": target.id,
        "label": target.label,
        "details_yaml": _details_yaml((raw_targets or {}).get(target.id)),
        "sample_defaults": {
            "field": target.sample_defaults_field,
            "compare": {"mode": target.sample_defaults_compare.mode, "tolerance": target.sample_defaults_compare.tolerance},
        },
        "samples": samples,
        "display_groups": _display_groups(case, target, ids_by_tick, origins),
    }


def _validation_issues(case: Case, info: VideoInfo | None, ids: Mapping[str, Mapping[int, str]]) -> list[dict[str, Any]]:
    issues: list[dict[str, Any]] = []
    for target in case.targets:
        if not target.samples:
            issues.append(
                {
                    "code": "empty_target",
                    "message": f"Target {target.id!r} has no samples; add at least one.",
                    "path": f"targets.{target.id}.samples",
                    "severity": "error",
                    "repairable": True,
                }
            )
        drafts = sum(1 for sample in target.samples if not sample.has_expectation and not sample.is_ignored)
        if drafts:
            issues.append(
                {
                    "code": "draft_expectations",
                    "message": f"Target {target.id!r} has {drafts} draft samples with no expectation.",
                    "path": f"targets.{target.id}.samples",
                    "severity": "warning",
                    "repairable": False,
                }
            )
        if info is not None:
            for sample in target.samples:
                if sample.timestamp_s > info.duration_s + DURATION_SLACK_S:
                    issues.append(
                        {
                            "code": "timestamp_after_video",
                            "message": (
                                f"{case.name}/{target.id} sample {sample.sample_index} at {sample.timestamp_s:g}s "
                                f"exceeds video duration {info.duration_s:g}s"
                            ),
                            "path": f"targets.{target.id}.samples.{ids[target.id][sample.tick]}.timestamp_s",
                            "severity": "error",
                            "repairable": True,
                        }
                    )
    return issues


def build_case_document(
    review: ReviewCase, overrides: IdOverrides | None = None, *, extra_issues: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """CaseFileDocument (spec/video.md §22.3), plus `every_s`, the case's default cadence."""
    case = review.case
    document: dict[str, Any] = {
        "id": review.path.name,
        "name": review.path.stem,
        "revision": review.revision,
        "status": "blocked",
        "editing_enabled": False,
        "load_error": review.load_error,
        "description": case.description if case else None,
        "case_file_source": review.text,
        "every_s": case.every_s if case else None,
        "video": None,
        "targets": [],
        "validation_issues": [],
    }
    if case is None:
        return document
    display_path = case.video.display if isinstance(case.video, LocalVideo) else case.video.display_name
    base_url = f"/api/case-files/{review.path.name}"
    if review.video_info is not None and review.video_path is not None:
        info = review.video_info
        document["video"] = {
            "url": f"{base_url}/video",
            "frame_url": f"{base_url}/frame",
            "display_path": display_path,
            "content_type": VIDEO_CONTENT_TYPES.get(review.video_path.suffix.lower(), "application/octet-stream"),
            "duration_s": info.duration_s,
            "width": info.width,
            "height": info.height,
            "frame_count": info.frame_count,
        }
    else:
        document["video"] = {"display_path": display_path}
    raw_case = parse_case_file(case.raw, label=str(case.path))
    targets = [_target_document(case, raw_case, target, (overrides or {}).get(target.id, {})) for target in case.targets]
    document["targets"] = targets
    ids = {
        target_doc["id"]: {timestamp_tick(sample["timestamp_s"]): sample["id"] for sample in target_doc["samples"]}
        for target_doc in targets
    }
    issues = _validation_issues(case, review.video_info, ids) + list(extra_issues or [])
    document["validation_issues"] = issues
    if review.load_error is not None:
        return document
    repairable = any(issue["severity"] == "error" and issue["repairable"] for issue in issues)
    document["status"] = "repairable" if repairable else "ready"
    document["editing_enabled"] = True
    return document
