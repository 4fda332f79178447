"""Loads a video eval directory: discovery, config, case files, videos, selection filters and checks.

`load_eval_directory` follows GlassKit's pipeline order exactly, because which error wins is part of
the compatibility contract; `load_adapter_config` reads the adapter's config file.
"""

from __future__ import annotations


import hashlib
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from assay.core.bounded_input import (
    MAX_JSON_BYTES,
    MAX_YAML_BYTES,
    ErrorFactory,
    check_size,
    check_values,
    decode_text,
    describe_value,
    load_json,
    load_yaml,
    read_bounded,
)
from assay.core.format import did_you_mean
from assay.core.fsutil import shown_path
from assay.errors import AssayError, CaseError, ConfigError, UsageError, VideoError
from assay.video.casefile_schema import RawThresholds, parse_case_file, parse_eval_config_file
from assay.video.model import (
    expand_home,
    SUPPORTED_VIDEO_SUFFIXES,
    Case,
    EvalConfig,
    EvalDirectory,
    LocalVideo,
    RemoteVideo,
    Selection,
    Target,
    Thresholds,
    VideoRef,
    VideoStoreConfig,
)
from assay.video.sampling import canonical_timestamp, expand_case_targets, timestamp_tick

__all__ = [
    "ADAPTER_CONFIG_FILE_NAMES",
    "CASE_FILE_SUFFIXES",
    "EVAL_CONFIG_FILE_NAMES",
    "Materialize",
    "discover_case_paths",
    "load_adapter_config",
    "load_case",
    "load_eval_config",
    "load_eval_directory",
    "normalize_case_selector",
    "normalize_target_selectors",
    "parse_yaml_text",
    "read_yaml_mapping",
    "resolve_eval_dir",
    "validate_time_filters",
]

CASE_FILE_SUFFIXES = (".yaml", ".yml")
EVAL_CONFIG_FILE_NAMES = ("config.yaml", "config.yml")
ADAPTER_CONFIG_FILE_NAMES = ("adapter.yaml", "adapter.yml")
CASES_DIR_NAME = "cases"

Materialize = Callable[[RemoteVideo, VideoStoreConfig], Path]


# --- YAML -------------------------------------------------------------------------------------


def parse_yaml_text(text: str, *, source: str = "<text>", error_type: ErrorFactory = CaseError) -> Any:
    """PyYAML safe load (YAML 1.1: `yes` is true, unquoted dates are dates), within the input bounds.

    A syntax error is a `yaml.YAMLError` (in pure PyYAML's wording, which GlassKit users know); a file
    past the bounds (nesting, aliases, huge integers) is `error_type` naming `source`.
    """
    return load_yaml(text, source=source, error=error_type)


def _mapping_from_bytes(path: Path, data: bytes, error_type: type[AssayError]) -> dict[str, Any]:
    source = str(path)
    check_size(data, source=source, error=error_type, max_bytes=MAX_YAML_BYTES)
    text = decode_text(data, source=source, error=error_type)
    try:
        raw = parse_yaml_text(text, source=source, error_type=error_type)
    except yaml.YAMLError as error:
        # PyYAML names a string it parsed "<unicode string>"; the file it came from is what helps.
        detail = str(error).replace('"<unicode string>"', f'"{path}"')
        raise error_type(f"{path}: invalid YAML: {detail}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise error_type(f"{path}: expected a YAML object")
    return raw


def _read_bytes(path: Path, error_type: type[AssayError]) -> bytes:
    try:
        return read_bounded(path, source=str(path), error=error_type, max_bytes=MAX_YAML_BYTES)
    except OSError as error:
        raise error_type(f"{path}: could not read file: {error}") from None


def read_yaml_mapping(path: Path, *, error_type: type[AssayError] = CaseError) -> dict[str, Any]:
    """A YAML file whose top level must be a mapping; an empty file is `{}`."""
    return _mapping_from_bytes(path, _read_bytes(path, error_type), error_type)


# --- eval directory, config, discovery ---------------------------------------------------------


def resolve_eval_dir(eval_dir: Path | str) -> Path:
    path = expand_home(eval_dir).resolve()
    if not path.exists():
        raise CaseError(f"eval directory does not exist: {path}{_inside_eval_dir_hint(path)}")
    if not path.is_dir():
        raise CaseError(f"eval directory must be a directory: {path}")
    return path


def _inside_eval_dir_hint(missing: Path) -> str:
    """When the missing eval dir would lie in one (`assay video validate` run inside `eval/`), say so."""
    parent = missing.parent
    if (parent / CASES_DIR_NAME).is_dir() and parent == Path.cwd().resolve():
        return "; you seem to be inside the eval directory: pass --eval-dir . or run from its parent folder"
    return _nearby_eval_dir_hint(missing)


def _nearby_eval_dir_hint(missing: Path) -> str:
    """An eval dir near the missing one: a misspelt name (`--eval-dir evl` beside `eval/`), or the same name one
    folder down (`assay video run` from the folder above the one `assay video init` ran in); "" otherwise."""
    from itertools import islice

    def is_eval_dir(folder: Path) -> bool:
        return folder.is_dir() and (folder / CASES_DIR_NAME).is_dir()

    parent = missing.parent
    try:
        siblings = [child.name for child in islice(parent.iterdir(), 1000) if is_eval_dir(child)]
        below = sorted(child for child in islice(parent.iterdir(), 1000)
                       if child.is_dir() and is_eval_dir(child / missing.name))
    except OSError:
        return ""
    near = did_you_mean(missing.name, siblings, form="{}", shown=str)
    if near:
        return f"; did you mean --eval-dir {shown_path(parent / near)}?"
    if below:
        found = shown_path(below[0] / missing.name)
        return (f"; there is one in the folder below, {found}: run from {shown_path(below[0])} "
                f"or pass --eval-dir {found}")
    return ""


def _missing_cases_dir_hint(eval_dir: Path) -> str:
    """When the eval dir has no case files in cases/ but holds some itself, say where they go: `--eval-dir eval/cases`
    (the cases folder itself given), or case files written straight into the eval dir."""
    try:
        found = sorted(child.name for child in eval_dir.iterdir() if child.suffix in CASE_FILE_SUFFIXES
                       and child.is_file() and child.name not in EVAL_CONFIG_FILE_NAMES + ADAPTER_CONFIG_FILE_NAMES)
    except OSError:
        return ""
    if not found:
        return ""
    if eval_dir.name == CASES_DIR_NAME:
        return (f"; {eval_dir} is itself the cases folder: pass --eval-dir {eval_dir.parent}, the folder that holds "
                f"{CASES_DIR_NAME}/")
    names = ", ".join(found[:3]) + (", ..." if len(found) > 3 else "")
    return f"; the case files ({names}) go in {eval_dir / CASES_DIR_NAME}/"


def _thresholds_from_raw(raw: RawThresholds) -> Thresholds:
    return Thresholds(
        min_pass_rate=raw.min_pass_rate,
        max_failures=raw.max_failures,
        per_target={target_id: entry.min_pass_rate for target_id, entry in raw.per_target.items()},
    )


def load_eval_config(eval_dir: Path) -> EvalConfig:
    """`config.yaml` or `config.yml` (exact, case-sensitive names) of a resolved eval dir; none → empty."""
    # The listing decides the names: on a case-insensitive file system `CONFIG.YAML` passes is_file().
    present = {child.name for child in eval_dir.iterdir()}
    named = [eval_dir / name for name in EVAL_CONFIG_FILE_NAMES if name in present]
    for path in named:
        if path.is_dir():  # GlassKit skips anything but a file, so its gates vanished without a word: said instead
            raise ConfigError(f"{path} is a folder, not a file: the eval config (its gates) is a file")
    paths = [path for path in named if path.is_file()]
    if not paths:
        return EvalConfig(path=None)
    if len(paths) > 1:
        names = ", ".join(path.name for path in paths)
        raise ConfigError(f"multiple eval config files found: {names}; keep one")
    path = paths[0]
    raw = parse_eval_config_file(read_yaml_mapping(path, error_type=ConfigError), label=str(path))
    stores = {
        name: VideoStoreConfig(
            name=name,
            type=store.type,
            bucket=store.bucket,
            endpoint_url=store.endpoint_url,
            region=store.region,
            public_base_url=store.public_base_url,
            access_key_id_env=store.access_key_id_env,
            secret_access_key_env=store.secret_access_key_env,
            session_token_env=store.session_token_env,
        )
        for name, store in raw.video_stores.items()
    }
    return EvalConfig(path=path, thresholds=_thresholds_from_raw(raw.thresholds), video_stores=stores)


def normalize_case_selector(case: str) -> str:
    """`--case` as a stem: a file name or stem directly under cases/, `.yaml`/`.yml` stripped."""
    if not case or case in (".", "..") or Path(case).name != case:
        raise UsageError("case must be a filename or stem under cases/", option="--case")
    path = Path(case)
    return path.stem if path.suffix in CASE_FILE_SUFFIXES else case


def normalize_target_selectors(targets: Sequence[str]) -> tuple[str, ...]:
    """`--target` values checked and de-duplicated, first occurrence kept."""
    for target in targets:
        if not target or target != target.strip():
            raise UsageError("target must be a target id from a case file", option="--target")
    return tuple(dict.fromkeys(targets))


def _declared_target_ids(case_path: Path) -> list[str]:
    raw_targets = read_yaml_mapping(case_path).get("targets")
    if not isinstance(raw_targets, dict):
        return []
    return [target_id for target_id in raw_targets if isinstance(target_id, str)]


def discover_case_paths(eval_dir: Path, case: str | None = None, targets: Sequence[str] = ()) -> list[Path]:
    """Case files of a resolved eval dir after the case selector and the raw-YAML target pre-filter.

    Files declaring none of the requested targets are dropped without being validated, so an
    unrelated broken case does not block a targeted command.
    """
    cases_dir = eval_dir / CASES_DIR_NAME
    if not cases_dir.exists():
        raise CaseError(f"cases directory does not exist: {cases_dir}{_missing_cases_dir_hint(eval_dir)}")
    if not cases_dir.is_dir():
        raise CaseError(f"cases path must be a directory: {cases_dir}")
    discovered = sorted(
        child for child in cases_dir.iterdir() if child.suffix in CASE_FILE_SUFFIXES and child.is_file()
    )
    if case is not None:
        stem = normalize_case_selector(case)
        candidates = [path for path in discovered if path.stem == stem]
    else:
        candidates = discovered
    if not candidates:
        matching = f" matching case {case!r}" if case else ""
        hint = did_you_mean(normalize_case_selector(case), (path.stem for path in discovered)) if case else ""
        if not discovered:
            hint += _missing_cases_dir_hint(eval_dir)
        raise CaseError(f"no case files found under {cases_dir}{matching}{hint}")
    _check_unique_stems(candidates)
    target_ids = normalize_target_selectors(targets)
    if target_ids:
        candidates = _prefilter_by_targets(candidates, target_ids)
    return candidates


def _check_unique_stems(paths: list[Path]) -> None:
    by_stem: dict[str, list[Path]] = {}
    for path in paths:
        by_stem.setdefault(path.stem, []).append(path)
    shared = {stem: group for stem, group in by_stem.items() if len(group) > 1}
    if shared:
        details = "; ".join(
            f"{stem!r}: {', '.join(path.name for path in group)}" for stem, group in sorted(shared.items())
        )
        raise CaseError(f"multiple case files share a name: {details}")


def _prefilter_by_targets(paths: list[Path], target_ids: tuple[str, ...]) -> list[Path]:
    declared_by_path = {path: set(_declared_target_ids(path)) for path in paths}
    declared = set().union(*declared_by_path.values())
    missing = [target_id for target_id in target_ids if target_id not in declared]
    if missing:
        noun = "target" if len(missing) == 1 else "targets"
        available = ", ".join(repr(target_id) for target_id in sorted(declared)) or "none"
        raise CaseError(
            f"requested eval {noun} not found in the selected cases: {', '.join(map(repr, missing))}; "
            f"available targets: {available}"
        )
    wanted = set(target_ids)
    return [path for path, ids in declared_by_path.items() if wanted & ids]


# --- one case -----------------------------------------------------------------------------------


def _unsupported_suffix(name: str) -> CaseError:
    return CaseError(
        f"unsupported video file type for {name}; supported suffixes: {', '.join(SUPPORTED_VIDEO_SUFFIXES)}"
    )


def _local_video(case_path: Path, written: str, check_exists: bool) -> LocalVideo:
    try:
        path = (case_path.parent / written).resolve()
        if check_exists:
            if not path.exists():
                raise CaseError(f"video file does not exist: {path}")
            if not path.is_file():
                raise CaseError(f"video path is not a file: {path}")
            if path.suffix.lower() not in SUPPORTED_VIDEO_SUFFIXES:
                raise _unsupported_suffix(str(path))
    except (OSError, ValueError) as error:
        # A name longer than the file system allows, or a NUL from a "\0" escape: no file can have it.
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        shown = written if len(written) <= 80 else written[:77] + "..."
        raise CaseError(f"{case_path}: video {shown!r} cannot be a file path: {reason}; fix the video field") from None
    return LocalVideo(path=path, display=written)


def _remote_video(case_path: Path, store: str, key: str, sha256: str, config: EvalConfig) -> RemoteVideo:
    if store not in config.video_stores:
        configured = ", ".join(repr(name) for name in sorted(config.video_stores)) or "none"
        raise CaseError(f"{case_path}: video references unknown store {store!r}; configured stores: {configured}")
    if Path(key).suffix.lower() not in SUPPORTED_VIDEO_SUFFIXES:
        # The key alone does not say which of the cases holds it: name the case file, as for an unknown store.
        raise CaseError(f"{case_path}: {_unsupported_suffix(key)}; fix the video key")
    return RemoteVideo(store=store, key=key, sha256=sha256)


_warned: set[str] = set()


def ignored_tolerances(raw_case: Any) -> list[str]:
    """Where a `tolerance` is written beside a compare mode that never reads it (only `numeric`,
    and the automatic comparison of two numbers, use one): the author meant something else."""
    places = []

    def check(location: str, compare: Any) -> None:
        if compare is not None and compare.tolerance is not None and compare.mode not in (None, "numeric"):
            places.append(f"{location}.compare: tolerance {compare.tolerance:g} is ignored by compare mode {compare.mode!r}")

    check("sample_defaults", raw_case.sample_defaults.compare)
    for target_id, target in raw_case.targets.items():
        check(f"targets.{target_id}.sample_defaults", target.sample_defaults.compare)
        for number, block in enumerate(target.samples):
            check(f"targets.{target_id}.samples.{number}", block.compare)
    return places


def _warn_about_ignored_tolerances(raw_case: Any, label: str) -> None:
    for place in ignored_tolerances(raw_case):
        line = f"warning: {label}: {place} (only 'numeric' uses a tolerance)"
        if line not in _warned:  # once per process: a case is loaded by several steps of one command
            _warned.add(line)
            print(line, file=sys.stderr)


def load_case(
    case_path: Path,
    config: EvalConfig,
    *,
    allow_empty: bool = False,
    materialize_videos: bool = True,
    check_local_videos: bool = True,
    materialize: Materialize | None = None,
    source: bytes | None = None,
) -> Case:
    """One case file fully validated and expanded (drafts allowed; the caller checks them).

    `source` validates candidate bytes as if they were the file's content (review and seed check a
    rewrite before writing it); `case_path` must be absolute. Errors are `CaseError`s.
    """
    data = _read_bytes(case_path, CaseError) if source is None else source
    raw_mapping = _mapping_from_bytes(case_path, data, CaseError)
    label = str(case_path)
    raw_case = parse_case_file(raw_mapping, label=label)
    if source is None:
        _warn_about_ignored_tolerances(raw_case, label)

    video: VideoRef
    if isinstance(raw_case.video, str):
        video = _local_video(case_path, raw_case.video, check_local_videos)
    else:
        reference = raw_case.video
        video = _remote_video(case_path, reference.store, reference.key, reference.sha256, config)

    targets = expand_case_targets(raw_case, case_name=case_path.stem, label=label, allow_empty=allow_empty)

    if isinstance(video, RemoteVideo) and materialize_videos and materialize is not None:
        # Downloaded only once the case is known to be valid. The store's words name the store and the key;
        # the case file that refers to them is named here, as every other case-file error names it.
        try:
            video = replace(video, path=materialize(video, config.video_stores[video.store]))
        except VideoError as error:
            prefix = f"{case_path}: "
            raise type(error)(str(error) if str(error).startswith(prefix) else prefix + str(error)) from error

    return Case(
        name=case_path.stem,
        path=case_path,
        source_sha256=hashlib.sha256(data).hexdigest(),
        description=raw_case.description,
        every_s=raw_case.sampling.every_s,
        video=video,
        targets=targets,
        thresholds=_thresholds_from_raw(raw_case.thresholds),
        declared_target_ids=tuple(raw_case.targets),
        raw=raw_mapping,
    )


# --- selection filters ---------------------------------------------------------------------------


def _is_time(value: float) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def validate_time_filters(
    case: str | None, at: Sequence[float], from_s: float | None, until_s: float | None
) -> tuple[float, ...]:
    """Checks `--at`/`--from`/`--until` use; returns the `--at` times rounded and de-duplicated."""
    if not at and from_s is None and until_s is None:
        return ()
    if case is None:
        option = "--at" if at else "--from" if from_s is not None else "--until"
        raise UsageError("--at, --from, and --until require --case", option=option)
    if at:
        if from_s is not None or until_s is not None:
            raise UsageError("--at cannot be combined with --from or --until", option="--at")
        times = []
        for value in at:
            if not _is_time(value):
                raise UsageError("--at must be a finite, nonnegative number", option="--at")
            times.append(canonical_timestamp(float(value)))
        return tuple(dict.fromkeys(times))
    for option, value in (("--from", from_s), ("--until", until_s)):
        if value is not None and not _is_time(value):
            raise UsageError(f"{option} must be a finite, nonnegative number", option=option)
    if from_s is not None and until_s is not None and from_s >= until_s:
        raise UsageError("--from must be less than --until", option="--until")
    return ()


def _keep_targets(cases: list[Case], target_ids: tuple[str, ...]) -> list[Case]:
    wanted = set(target_ids)
    kept = []
    for case in cases:
        targets = tuple(target for target in case.targets if target.id in wanted)
        if targets:
            kept.append(replace(case, targets=targets))
    return kept


def _filter_samples(cases: list[Case], keep: Callable[[Any], bool]) -> list[Case]:
    # Emptied targets stay: gates must tell "filtered away" from "misspelled in thresholds".
    kept = []
    for case in cases:
        targets: tuple[Target, ...] = tuple(
            replace(target, samples=tuple(sample for sample in target.samples if keep(sample)))
            for target in case.targets
        )
        if any(target.samples for target in targets):
            kept.append(replace(case, targets=targets))
    return kept


def _missing_times_message(missing: list[float], available: list[float]) -> str:
    noun = "time" if len(missing) == 1 else "times"
    message = f"no eval samples found at requested {noun}: {', '.join(f'{t:g}' for t in missing)} seconds"
    if not available:
        return f"{message}; no sample times are available in the selected case and targets"
    nearest = sorted(available, key=lambda t: (min(abs(t - m) for m in missing), t))[:3]
    return f"{message}; nearest available sample times: {', '.join(f'{t:g}' for t in nearest)} seconds"


def _filter_at(cases: list[Case], at_times: tuple[float, ...]) -> list[Case]:
    available = sorted({sample.timestamp_s for case in cases for sample in case.all_samples()})
    available_ticks = {timestamp_tick(t) for t in available}
    missing = [t for t in at_times if timestamp_tick(t) not in available_ticks]
    if missing:
        raise CaseError(_missing_times_message(missing, available))
    requested = {timestamp_tick(t) for t in at_times}
    return _filter_samples(cases, lambda sample: sample.tick in requested)


def _window_text(from_s: float | None, until_s: float | None) -> str:
    if from_s is not None and until_s is not None:
        return f"in time window [{from_s:g}, {until_s:g}) seconds"
    if from_s is not None:
        return f"at or after {from_s:g} seconds"
    return f"before {until_s:g} seconds"


def _filter_window(cases: list[Case], from_s: float | None, until_s: float | None) -> list[Case]:
    kept = _filter_samples(
        cases,
        lambda sample: (from_s is None or sample.timestamp_s >= from_s)
        and (until_s is None or sample.timestamp_s < until_s),
    )
    if not kept:
        raise CaseError(f"no eval samples found {_window_text(from_s, until_s)}")
    return kept


def _check_no_drafts(cases: list[Case]) -> None:
    for case in cases:
        drafts = sum(
            1 for sample in case.all_samples() if not sample.has_expectation and not sample.is_ignored
        )
        if drafts:
            noun = "sample" if drafts == 1 else "samples"
            # "1 sample have" is GlassKit's wording; tests compare it.
            raise CaseError(
                f"{case.path}: {drafts} {noun} have no expect value in the selected scope; "
                "run assay video seed to propose expectations"
            )


# --- the pipeline --------------------------------------------------------------------------------


def load_eval_directory(
    eval_dir: Path | str,
    *,
    case: str | None = None,
    targets: Sequence[str] = (),
    at: Sequence[float] = (),
    from_s: float | None = None,
    until_s: float | None = None,
    allow_empty: bool = False,
    allow_draft: bool = False,
    materialize_videos: bool = True,
    check_local_videos: bool = True,
    materialize: Materialize | None = None,
) -> EvalDirectory:
    """Load, validate, expand and filter an eval directory (spec/video.md §6, in that order).

    `check_local_videos=False` skips existence checks of local videos (`video-store pull`);
    `materialize` downloads a remote video and returns its cache path (skipped when
    `materialize_videos` is False, e.g. `list-samples`).
    """
    at_times = validate_time_filters(case, at, from_s, until_s)
    root = resolve_eval_dir(eval_dir)
    config = load_eval_config(root)
    _warn_of_misnamed_files(root)
    target_ids = normalize_target_selectors(targets)
    case_paths = discover_case_paths(root, case, target_ids)
    cases = [
        load_case(
            path,
            config,
            allow_empty=allow_empty,
            materialize_videos=materialize_videos,
            check_local_videos=check_local_videos,
            materialize=materialize,
        )
        for path in case_paths
    ]
    _warn_of_gates_without_a_target(config, cases, target_ids, whole_eval=case is None and not target_ids)
    if target_ids:
        cases = _keep_targets(cases, target_ids)
    if at_times:
        cases = _filter_at(cases, at_times)
    elif from_s is not None or until_s is not None:
        cases = _filter_window(cases, from_s, until_s)
    if not allow_empty and not any(target.samples for c in cases for target in c.targets):
        raise CaseError("eval has no declared samples")
    if not allow_draft:
        _check_no_drafts(cases)
    selection = Selection(
        case=normalize_case_selector(case) if case is not None else None,
        targets=target_ids,
        at_times_s=at_times,
        from_time_s=from_s,
        until_time_s=until_s,
    )
    return EvalDirectory(path=root, config=config, cases=tuple(cases), selection=selection)


def _warn_of_misnamed_files(root: Path) -> None:
    """GlassKit reads the eval config and the case files by their exact names and skips any other file without
    a word: a `confg.yaml` or `config.YAML` drops the eval's gates (a run that should fail exits 0), a
    `lamp.YAML` drops a case. A file whose name is that close to one read, while the one it resembles is
    missing, is named on stderr, with the name it needs."""
    lines = []
    files = _listed_files(root)
    if not any(name in files for name in EVAL_CONFIG_FILE_NAMES):
        lines += [
            f"Warning: {root / name} is not read: the eval config must be named {' or '.join(EVAL_CONFIG_FILE_NAMES)}, "
            "so its thresholds and video stores do not apply; rename it"
            for name in files
            if _misnamed(name, EVAL_CONFIG_FILE_NAMES)
        ]
    cases_dir = root / CASES_DIR_NAME
    case_files = _listed_files(cases_dir)
    lines += [
        f"Warning: {cases_dir / name} is not read: a case file's name ends in {' or '.join(CASE_FILE_SUFFIXES)} "
        f"(lower case); {_rename_advice(Path(name).stem, case_files)}"
        for name in case_files
        if Path(name).suffix not in CASE_FILE_SUFFIXES and _looks_like(Path(name).suffix, CASE_FILE_SUFFIXES)
    ]
    for line in lines:
        sys.stderr.write(line + "\n")


def _rename_advice(stem: str, case_files: list[str]) -> str:
    """`rename it to lamp.yaml`, unless a case file of that name is read already (renaming would replace it)."""
    taken = [stem + suffix for suffix in CASE_FILE_SUFFIXES if stem + suffix in case_files]
    if taken:
        return f"{taken[0]} is read already, so give this one a name of its own ending in {CASE_FILE_SUFFIXES[0]}"
    return f"rename it to {stem}{CASE_FILE_SUFFIXES[0]}"


def _listed_files(folder: Path) -> list[str]:
    """The names of the regular files in `folder` that a person keeps (no dotfiles, no editor backups `x~`)."""
    try:
        return sorted(
            child.name for child in folder.iterdir()
            if not child.name.startswith(".") and not child.name.endswith("~") and child.is_file()
        )
    except OSError:
        return []


def _looks_like(word: str, words: Sequence[str]) -> bool:
    """Whether `word` is one of `words`, in any letter case, or a close misspelling of one."""
    return bool(word) and (word in words or bool(did_you_mean(word, words, cutoff=0.8, form="{}")))


def _misnamed(name: str, names: Sequence[str]) -> bool:
    """Whether the file `name` is meant as one of `names` (`config.yaml`…): not one of them, but its stem and its
    suffix each look like theirs (`confg.yaml`, `config.YAML`; not `adapter.py` beside `adapter.yml`)."""
    path = Path(name)
    return name not in names and _looks_like(path.stem, [Path(known).stem for known in names]) and _looks_like(
        path.suffix, CASE_FILE_SUFFIXES
    )


def _warn_of_gates_without_a_target(
    config: EvalConfig, cases: Sequence[Case], target_ids: Sequence[str], *, whole_eval: bool
) -> None:
    """A `thresholds.per_target` id that names no target keeps its gate, which fails with no results (§12: so a
    typo shows). `0.0% pass rate` alone reads as a target that failed every sample: one stderr line per such id
    says that no target has the name. Gates a `--target` filter skips are not named; config.yaml's ids only when
    every case was loaded (another case may declare the id)."""
    lines = [
        _no_such_target_line(case.path, target_id, "this case", case.declared_target_ids, f"{case.name}_{target_id}")
        for case in cases
        for target_id, threshold in case.thresholds.per_target.items()
        if threshold is not None and target_id not in case.declared_target_ids
        and (not target_ids or target_id in target_ids)
    ]
    if whole_eval and config.path is not None:
        declared = sorted({target_id for case in cases for target_id in case.declared_target_ids})
        lines += [
            _no_such_target_line(config.path, target_id, "any case", declared, f"eval_{target_id}")
            for target_id, threshold in config.thresholds.per_target.items()
            if threshold is not None and target_id not in declared
        ]
    for line in lines:
        sys.stderr.write(line + "\n")


def _no_such_target_line(path: Path, target_id: str, where: str, declared: Sequence[str], gate: str) -> str:
    hint = did_you_mean(target_id, declared, form=" (did you mean {}?)")
    targets = ", ".join(repr(name) for name in declared) or "none"
    return (f"Warning: {path}: thresholds.per_target.{target_id} names no target of {where}{hint}; its gate "
            f"{gate}_min_pass_rate fails with no results (targets: {targets})")


# --- adapter config ------------------------------------------------------------------------------


def load_adapter_config(eval_dir: Path, explicit: Path | None) -> dict[str, Any]:
    """The adapter's config: `explicit`, else a discovered `adapter.yaml`/`adapter.yml`, else `{}`.

    `.json` files are parsed as JSON, anything else as YAML; environment variables are not expanded.
    A problem is a UsageError in GlassKit's words, reported as GlassKit does (`Invalid value: …`, naming no
    option); a YAML error names the file and where in it, as does a discovered file's every problem.
    """
    if explicit is not None:
        return _read_adapter_config(Path(explicit))
    directory = expand_home(eval_dir)
    candidates = [directory / name for name in ADAPTER_CONFIG_FILE_NAMES if (directory / name).exists()]
    if len(candidates) > 1:
        found = ", ".join(str(path) for path in candidates)
        raise UsageError(
            f"multiple adapter config files found: {found}; remove one or pass --adapter-config", option="",
        )
    if candidates:
        return _read_adapter_config(candidates[0], discovered=True)
    for name in _listed_files(directory):  # a misspelt adapter.yaml would leave the adapter its defaults, unsaid
        if _misnamed(name, ADAPTER_CONFIG_FILE_NAMES):
            sys.stderr.write(
                f"Warning: {directory / name} is not read: the adapter config must be named "
                f"{' or '.join(ADAPTER_CONFIG_FILE_NAMES)}, so the adapter gets {{}}; rename it, or pass "
                f"--adapter-config {directory / name}\n"
            )
    return {}


def _yaml_problem(error: yaml.YAMLError) -> str:
    """A PyYAML syntax error on one line: where, what, and the construct it was reading."""
    if not isinstance(error, yaml.MarkedYAMLError) or error.problem_mark is None:
        return " ".join(str(error).split())
    mark = error.problem_mark
    text = f"line {mark.line + 1}, column {mark.column + 1}: {error.problem}"
    context = error.context_mark
    if error.context and context is not None:
        text += f" ({error.context} at line {context.line + 1}, column {context.column + 1})"
    return text


def _read_adapter_config(path: Path, *, discovered: bool = False) -> dict[str, Any]:
    # `validate` and `run` both read the config here, so a value `run` could not store in its checkpoint
    # (a date, a non-string key, NaN) is refused by both instead of passing one and crashing the other.
    def refuse(message: str) -> UsageError:
        # As GlassKit reports it: `Invalid value: adapter config must contain an object`, naming no option (the
        # file is often the discovered adapter.yaml, given with no option at all); the message names the file.
        return UsageError(message, option="")

    source = f"invalid adapter config: {path}"
    is_json = path.suffix.lower() == ".json"
    try:
        data = read_bounded(path, source=source, error=refuse, max_bytes=MAX_JSON_BYTES if is_json else MAX_YAML_BYTES)
    except OSError as error:
        raise refuse(f"could not read adapter config: {error}") from None
    text = decode_text(data, source=f"could not read adapter config: {path}", error=refuse)
    try:
        raw = load_json(text, source=source, error=refuse) if is_json else parse_yaml_text(
            text, source=source, error_type=refuse
        )
    except yaml.YAMLError as error:
        # One line naming the file, also for a file given with --adapter-config: PyYAML's own text spans
        # several lines and calls the file "<unicode string>".
        raise refuse(f"{source}: {_yaml_problem(error)}") from None
    except json.JSONDecodeError as error:  # only a file given with --adapter-config is JSON; named, as YAML's are
        raise refuse(f"{source}: {error}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        if discovered:
            raise refuse(f"adapter config must contain an object ({path} holds {describe_value(raw)})")
        raise refuse("adapter config must contain an object")
    check_values(raw, source=source, error=refuse, json_like=True)
    return raw
