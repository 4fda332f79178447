from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from assay.errors import CaseError, ConfigError, UsageError
from assay.video.loading import load_adapter_config, load_eval_directory
from assay.video.model import CompareSpec, LocalVideo, RemoteVideo, Selection, VideoStoreConfig

DIGEST = "ab" * 32

SIMPLE_CASE = """
video: clip.mp4
targets:
  t:
    samples:
      - range: [0, 2]
        expect: true
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def make_eval(tmp_path: Path, cases: dict[str, str], *, config: str | None = None) -> Path:
    eval_dir = tmp_path / "eval"
    (eval_dir / "cases").mkdir(parents=True)
    (eval_dir / "cases" / "clip.mp4").write_bytes(b"")  # loading never decodes
    for name, text in cases.items():
        write(eval_dir / "cases" / name, text)
    if config is not None:
        write(eval_dir / "config.yaml", config)
    return eval_dir


def load_error(eval_dir: Path, error: type[Exception] = CaseError, **options: Any) -> str:
    with pytest.raises(error) as caught:
        load_eval_directory(eval_dir, **options)
    return str(caught.value)


# --- discovery -----------------------------------------------------------------------------------


def test_eval_directory_must_exist_and_be_a_directory(tmp_path: Path) -> None:
    assert load_error(tmp_path / "missing") == f"eval directory does not exist: {tmp_path / 'missing'}"
    write(tmp_path / "file", "x")
    assert load_error(tmp_path / "file") == f"eval directory must be a directory: {tmp_path / 'file'}"


def test_cases_directory_must_exist_and_be_a_directory(tmp_path: Path) -> None:
    (tmp_path / "eval").mkdir()
    assert load_error(tmp_path / "eval") == f"cases directory does not exist: {tmp_path / 'eval' / 'cases'}"
    write(tmp_path / "eval" / "cases", "x")
    assert load_error(tmp_path / "eval") == f"cases path must be a directory: {tmp_path / 'eval' / 'cases'}"


def test_eval_dir_is_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": SIMPLE_CASE})
    monkeypatch.chdir(tmp_path)
    loaded = load_eval_directory("eval")
    assert loaded.path == eval_dir.resolve()
    assert loaded.cases[0].path == eval_dir.resolve() / "cases" / "a.yaml"


def test_case_files_are_yaml_and_yml_children_sorted_by_name(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {
        "b.yml": SIMPLE_CASE, "a.yaml": SIMPLE_CASE, "c.YML": "broken: [", "nested/d.yaml": SIMPLE_CASE,
        "notes.txt": "x",
    })
    assert [case.name for case in load_eval_directory(eval_dir).cases] == ["a", "b"]


def test_no_case_files_message_with_and_without_a_filter(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {})
    cases_dir = eval_dir / "cases"
    assert load_error(eval_dir) == f"no case files found under {cases_dir}"
    write(cases_dir / "a.yaml", SIMPLE_CASE)
    assert load_error(eval_dir, case="b") == f"no case files found under {cases_dir} matching case 'b'"


def test_a_misspelt_case_names_the_case_meant(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"colors.yaml": SIMPLE_CASE, "lamp.yaml": SIMPLE_CASE})
    cases_dir = eval_dir / "cases"
    message = f"no case files found under {cases_dir} matching case 'colour'; did you mean 'colors'?"
    assert load_error(eval_dir, case="colour") == message
    assert load_error(eval_dir, case="colour.yaml") == message.replace("'colour'", "'colour.yaml'")
    assert load_error(eval_dir, case="zzz").endswith("matching case 'zzz'")  # nothing close: no guess


def test_commands_run_inside_the_eval_directory_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from video_evals import invoke

    eval_dir = make_eval(tmp_path, {"a.yaml": SIMPLE_CASE})
    monkeypatch.chdir(eval_dir)
    hint = "you seem to be inside the eval directory: pass --eval-dir . or run from its parent folder"
    validated = invoke("video", "validate")
    assert validated.exit_code == 1
    assert f"- eval: eval directory does not exist: {eval_dir / 'eval'}; {hint}" in validated.flat
    ran = invoke("video", "run")
    assert ran.exit_code == 2 and f"Eval failed: eval directory does not exist: {eval_dir / 'eval'}; {hint}" in ran.flat
    monkeypatch.chdir(tmp_path)  # elsewhere, a missing eval dir is only missing
    assert invoke("video", "validate", "--eval-dir", "nowhere").flat.strip().endswith(
        f"eval directory does not exist: {tmp_path / 'nowhere'}"
    )


@pytest.mark.parametrize("selector", ["a", "a.yaml", "a.yml"])
def test_case_selector_matches_on_stem(tmp_path: Path, selector: str) -> None:
    eval_dir = make_eval(tmp_path, {"a.yml": SIMPLE_CASE, "b.yaml": SIMPLE_CASE})
    loaded = load_eval_directory(eval_dir, case=selector)
    assert [case.name for case in loaded.cases] == ["a"]
    assert loaded.selection.case == "a"


@pytest.mark.parametrize("selector", ["", ".", "..", "cases/a", "../a.yaml"])
def test_case_selector_must_be_a_file_name(tmp_path: Path, selector: str) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": SIMPLE_CASE})
    assert load_error(eval_dir, UsageError, case=selector) == "case must be a filename or stem under cases/"


def test_duplicate_stems_are_rejected_after_the_case_filter(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": SIMPLE_CASE, "a.yml": SIMPLE_CASE, "b.yaml": SIMPLE_CASE})
    assert load_error(eval_dir) == "multiple case files share a name: 'a': a.yaml, a.yml"
    assert [case.name for case in load_eval_directory(eval_dir, case="b").cases] == ["b"]


def test_eval_config_names_are_case_sensitive_and_exclusive(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": SIMPLE_CASE})
    write(eval_dir / "config.YML", "thresholds: {min_pass_rate: 2}")
    assert load_eval_directory(eval_dir).config.path is None
    write(eval_dir / "config.yml", "thresholds: {min_pass_rate: 0.5, max_failures: 2, per_target: {t: {min_pass_rate: 1}}}")
    config = load_eval_directory(eval_dir).config
    assert config.path == eval_dir / "config.yml"
    assert (config.thresholds.min_pass_rate, config.thresholds.max_failures) == (0.5, 2)
    assert dict(config.thresholds.per_target) == {"t": 1.0}
    write(eval_dir / "config.yaml", "{}")
    assert load_error(eval_dir, ConfigError) == "multiple eval config files found: config.yaml, config.yml; keep one"


def test_a_folder_named_like_the_eval_config_is_an_error_not_no_gates(tmp_path: Path) -> None:
    """GlassKit skips anything but a file, so `config.yaml/` made a run without its gates pass (exit 0)."""
    eval_dir = make_eval(tmp_path, {"a.yaml": SIMPLE_CASE})
    (eval_dir / "config.yaml").mkdir()
    assert load_error(eval_dir, ConfigError) == f"{eval_dir / 'config.yaml'} is a folder, not a file: the eval config (its gates) is a file"


def test_invalid_eval_config_is_a_config_error_naming_the_file(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": SIMPLE_CASE}, config="thresholds: {min_pass_rate: true}\n")
    assert load_error(eval_dir, ConfigError) == (
        f"{eval_dir / 'config.yaml'}: invalid schema: thresholds.min_pass_rate: Value error, "
        "min_pass_rate must be a number"
    )
    write(eval_dir / "config.yaml", "- a\n")
    assert load_error(eval_dir, ConfigError) == f"{eval_dir / 'config.yaml'}: expected a YAML object"


# --- YAML ----------------------------------------------------------------------------------------


def test_a_key_given_twice_is_read_as_glasskit_reads_it_and_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A second `t:` target replaced the first one's samples without a word (PyYAML keeps the later value)."""
    twice = SIMPLE_CASE + "  t:\n    samples:\n      - at: [3]\n        expect: false\n"
    eval_dir = make_eval(tmp_path, {"a.yaml": twice})
    [case] = load_eval_directory(eval_dir).cases
    assert [sample.timestamp_s for target in case.targets for sample in target.samples] == [3.0]  # the later, as GlassKit
    warning = capsys.readouterr().err
    assert warning == (f"Warning: {eval_dir / 'cases' / 'a.yaml'}: line 8: the key 't' is given again; the later one "
                       "replaces the earlier, whose content is not read (rename or merge them)\n")


def test_invalid_yaml_reports_pyyamls_own_message_with_the_file_named(tmp_path: Path) -> None:
    # GlassKit passes PyYAML's "<unicode string>" through; the file's path is what a person needs.
    eval_dir = make_eval(tmp_path, {"a.yaml": "video: a: b\n"})
    path = eval_dir / "cases" / "a.yaml"
    assert load_error(eval_dir) == (
        f"{path}: invalid YAML: mapping values are not allowed here\n"
        f'  in "{path}", line 1, column 9:\n'
        "    video: a: b\n"
        "            ^"
    )


def test_top_level_must_be_a_mapping_and_an_empty_file_is_an_empty_mapping(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": "- 1\n"})
    path = eval_dir / "cases" / "a.yaml"
    assert load_error(eval_dir) == f"{path}: expected a YAML object"
    path.write_text("", encoding="utf-8")
    assert load_error(eval_dir) == f"{path}: invalid schema: video: Field required; targets: Field required"


# --- target selection ----------------------------------------------------------------------------

TWO_TARGETS = """
video: clip.mp4
targets:
  second:
    samples:
      - at: 1
        expect: 2
  first:
    samples:
      - at: 1
        expect: 1
"""


def test_unknown_target_lists_available_targets(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": TWO_TARGETS})
    assert load_error(eval_dir, targets=["nope"]) == (
        "requested eval target not found in the selected cases: 'nope'; available targets: 'first', 'second'"
    )
    assert load_error(eval_dir, targets=["x", "first", "y"]) == (
        "requested eval targets not found in the selected cases: 'x', 'y'; available targets: 'first', 'second'"
    )
    write(eval_dir / "cases" / "a.yaml", "video: clip.mp4\n")
    assert load_error(eval_dir, targets=["x"]) == (
        "requested eval target not found in the selected cases: 'x'; available targets: none"
    )


@pytest.mark.parametrize("target", ["", " first", "first "])
def test_target_selector_must_be_a_clean_id(tmp_path: Path, target: str) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": TWO_TARGETS})
    assert load_error(eval_dir, UsageError, targets=[target]) == "target must be a target id from a case file"


def test_target_filter_ignores_broken_unrelated_cases(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {
        "a.yaml": TWO_TARGETS,
        "broken.yaml": "video: missing.mp4\ntargets:\n  other:\n    samples: [{bogus: 1}]\n",
    })
    with pytest.raises(CaseError):
        load_eval_directory(eval_dir)
    loaded = load_eval_directory(eval_dir, targets=["first", "second", "first"])
    assert [case.name for case in loaded.cases] == ["a"]
    # Case-file order, not --target order; duplicates collapse.
    assert [target.id for target in loaded.cases[0].targets] == ["second", "first"]
    assert loaded.selection.targets == ("first", "second")


def test_target_filter_keeps_indices_and_declared_ids(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": TWO_TARGETS})
    (case,) = load_eval_directory(eval_dir, targets=["first"]).cases
    (target,) = case.targets
    assert (target.id, target.index, target.samples[0].sample_index) == ("first", 1, 1)
    assert case.declared_target_ids == ("second", "first")


# --- videos --------------------------------------------------------------------------------------


def test_local_video_must_exist_be_a_file_and_have_a_supported_suffix(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": SIMPLE_CASE.replace("clip.mp4", "../videos/x.mp4")})
    video = (eval_dir / "videos" / "x.mp4").resolve()
    assert load_error(eval_dir) == f"video file does not exist: {video}"
    video.mkdir(parents=True)
    assert load_error(eval_dir) == f"video path is not a file: {video}"
    write(eval_dir / "cases" / "a.yaml", SIMPLE_CASE.replace("clip.mp4", "notes.txt"))
    write(eval_dir / "cases" / "notes.txt", "x")
    assert load_error(eval_dir) == (
        f"unsupported video file type for {eval_dir / 'cases' / 'notes.txt'}; "
        "supported suffixes: .m4v, .mkv, .mov, .mp4, .webm"
    )


def test_local_video_suffix_is_compared_case_insensitively(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": SIMPLE_CASE.replace("clip.mp4", "CLIP.MOV")})
    (eval_dir / "cases" / "CLIP.MOV").write_bytes(b"")
    video = load_eval_directory(eval_dir).cases[0].video
    assert isinstance(video, LocalVideo)
    assert video.path == eval_dir / "cases" / "CLIP.MOV" and video.display == "CLIP.MOV"


def test_local_video_existence_is_not_checked_when_asked(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": SIMPLE_CASE.replace("clip.mp4", "gone.mp4")})
    loaded = load_eval_directory(eval_dir, check_local_videos=False)
    assert loaded.cases[0].video.path == eval_dir / "cases" / "gone.mp4"  # type: ignore[union-attr]


REMOTE_CASE = f"""
video:
  store: media
  key: clips/a.MP4
  sha256: {DIGEST.upper()}
targets:
  t:
    samples:
      - at: 1
        expect: 1
"""


def test_remote_video_with_unknown_store_fails_even_without_materialising(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": REMOTE_CASE})
    path = eval_dir / "cases" / "a.yaml"
    assert load_error(eval_dir, materialize_videos=False) == (
        f"{path}: video references unknown store 'media'; configured stores: none"
    )
    write(eval_dir / "config.yaml", "video_stores:\n  b: {bucket: x}\n  a: {bucket: y}\n")
    assert load_error(eval_dir, materialize_videos=False) == (
        f"{path}: video references unknown store 'media'; configured stores: 'a', 'b'"
    )


def test_remote_video_key_needs_a_supported_suffix(tmp_path: Path) -> None:
    eval_dir = make_eval(
        tmp_path, {"a.yaml": REMOTE_CASE.replace("clips/a.MP4", "clips/a.gif")}, config="video_stores: {media: {bucket: b}}"
    )
    # The key alone does not say which case holds it: the case file is named, as for an unknown store.
    assert load_error(eval_dir, materialize_videos=False) == (
        f"{eval_dir / 'cases' / 'a.yaml'}: unsupported video file type for clips/a.gif; "
        "supported suffixes: .m4v, .mkv, .mov, .mp4, .webm; fix the video key"
    )


def test_remote_video_is_materialised_through_the_given_function(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": REMOTE_CASE}, config="video_stores: {media: {bucket: b}}")
    calls: list[tuple[RemoteVideo, VideoStoreConfig]] = []

    def materialize(video: RemoteVideo, store: VideoStoreConfig) -> Path:
        calls.append((video, store))
        return tmp_path / "cache" / f"{video.sha256}.mp4"

    not_downloaded = load_eval_directory(eval_dir, materialize_videos=False, materialize=materialize).cases[0].video
    assert calls == [] and isinstance(not_downloaded, RemoteVideo) and not_downloaded.path is None
    video = load_eval_directory(eval_dir, materialize=materialize).cases[0].video
    assert video == RemoteVideo("media", "clips/a.MP4", DIGEST, tmp_path / "cache" / f"{DIGEST}.mp4")
    assert calls[0][1] == VideoStoreConfig(name="media", bucket="b")
    assert load_eval_directory(eval_dir).cases[0].video.path is None  # type: ignore[union-attr]


# --- the loaded model ----------------------------------------------------------------------------


def test_loaded_case_carries_raw_mapping_hash_defaults_and_thresholds(tmp_path: Path) -> None:
    text = """
    video: clip.mp4
    description: " Demo "
    sampling: {every_s: 1}
    sample_defaults: {field: state, compare: {mode: exact}}
    thresholds: {min_pass_rate: 0.5, per_target: {t: {min_pass_rate: 0.75}}}
    targets:
      t:
        sample_defaults: {compare: {mode: numeric, tolerance: 2}}
        samples:
          - range: [0, 2]
            expect: 1
    """
    eval_dir = make_eval(tmp_path, {"a.yaml": text})
    (case,) = load_eval_directory(eval_dir).cases
    path = eval_dir / "cases" / "a.yaml"
    assert case.source_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert case.raw["targets"]["t"]["samples"][0] == {"range": [0, 2], "expect": 1}
    assert (case.description, case.every_s) == ("Demo", 1.0)
    assert case.thresholds.min_pass_rate == 0.5 and dict(case.thresholds.per_target) == {"t": 0.75}
    (target,) = case.targets
    assert target.sample_defaults_field == "state"
    assert target.sample_defaults_compare == CompareSpec("numeric", 2.0)
    assert [sample.timestamp_s for sample in target.samples] == [0.0, 1.0]


# --- time filters --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"at": [1.0]}, "--at, --from, and --until require --case"),
        ({"until_s": 1.0}, "--at, --from, and --until require --case"),
        ({"case": "a", "at": [1.0], "from_s": 0.0}, "--at cannot be combined with --from or --until"),
        ({"case": "a", "at": [float("nan")]}, "--at must be a finite, nonnegative number"),
        ({"case": "a", "at": [-1.0]}, "--at must be a finite, nonnegative number"),
        ({"case": "a", "from_s": float("inf")}, "--from must be a finite, nonnegative number"),
        ({"case": "a", "until_s": -0.5}, "--until must be a finite, nonnegative number"),
        ({"case": "a", "from_s": 2.0, "until_s": 2.0}, "--from must be less than --until"),
    ],
)
def test_time_filter_misuse_is_a_usage_error(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    # Checked before the eval directory is even looked at.
    assert load_error(tmp_path / "missing", UsageError, **options) == message


FILTER_CASE = """
video: clip.mp4
targets:
  a:
    samples:
      - range: [0, 3]
        expect: 1
  b:
    samples:
      - at: [5, 7]
        expect: 2
"""


def test_at_filter_keeps_matching_samples_with_their_original_indices(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": FILTER_CASE, "other.yaml": SIMPLE_CASE})
    loaded = load_eval_directory(eval_dir, case="a", at=[7.0000000001, 1.0, 1.0])
    (case,) = loaded.cases
    assert [(t.id, [(s.timestamp_s, s.sample_index) for s in t.samples]) for t in case.targets] == [
        ("a", [(1.0, 2)]), ("b", [(7.0, 7)]),
    ]
    assert loaded.selection == Selection(case="a", at_times_s=(7.0, 1.0))


def test_at_filter_names_the_nearest_available_times(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": FILTER_CASE})
    assert load_error(eval_dir, case="a", at=[2.3]) == (
        "no eval samples found at requested time: 2.3 seconds; nearest available sample times: 2.5, 2, 1.5 seconds"
    )
    assert load_error(eval_dir, case="a", at=[6.0, 9.0, 0.5]) == (
        "no eval samples found at requested times: 6, 9 seconds; "
        "nearest available sample times: 5, 7, 2.5 seconds"
    )


def test_at_filter_emptied_targets_stay_for_gates(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": FILTER_CASE})
    (case,) = load_eval_directory(eval_dir, case="a", at=[5.0]).cases
    assert [(t.id, len(t.samples)) for t in case.targets] == [("a", 0), ("b", 1)]


def test_window_filter_is_inclusive_then_exclusive(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": FILTER_CASE})
    (case,) = load_eval_directory(eval_dir, case="a", from_s=1.0, until_s=5.0).cases
    assert [[s.timestamp_s for s in t.samples] for t in case.targets] == [[1.0, 1.5, 2.0, 2.5], []]
    (case,) = load_eval_directory(eval_dir, case="a", from_s=5.0).cases
    assert [[s.timestamp_s for s in t.samples] for t in case.targets] == [[], [5.0, 7.0]]


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ({"from_s": 3.0, "until_s": 4.5}, "no eval samples found in time window [3, 4.5) seconds"),
        ({"from_s": 8.0}, "no eval samples found at or after 8 seconds"),
        ({"until_s": 0.0}, "no eval samples found before 0 seconds"),
    ],
)
def test_empty_window_is_an_error_even_when_empty_is_allowed(
    tmp_path: Path, window: dict[str, float], message: str
) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": FILTER_CASE})
    assert load_error(eval_dir, case="a", allow_empty=True, **window) == message


def test_at_filter_with_no_times_available(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": "video: clip.mp4\ntargets:\n  t:\n    samples: []\n"})
    assert load_error(eval_dir, case="a", at=[1.0], allow_empty=True) == (
        "no eval samples found at requested time: 1 seconds; "
        "no sample times are available in the selected case and targets"
    )


# --- empty and draft checks ----------------------------------------------------------------------


def test_empty_cases_load_only_with_allow_empty(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": "video: clip.mp4\ntargets:\n  t:\n    samples: []\n"})
    assert load_error(eval_dir) == f"{eval_dir / 'cases' / 'a.yaml'}: target 't' has no samples"
    loaded = load_eval_directory(eval_dir, allow_empty=True)
    assert loaded.sample_count == 0 and len(loaded.cases) == 1


DRAFT_CASE = """
video: clip.mp4
targets:
  done:
    samples:
      - at: 1
        expect: 1
  draft:
    samples:
      - at: [1, 2]
      - at: 3
        ignore: not labelled yet
"""


def test_drafts_are_rejected_with_glasskits_grammar(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": DRAFT_CASE})
    path = eval_dir / "cases" / "a.yaml"
    assert load_error(eval_dir) == (
        f"{path}: 2 samples have no expect value in the selected scope; "
        "run assay video seed to propose expectations"
    )
    assert load_error(eval_dir, case="a", at=[2.0]) == (
        f"{path}: 1 sample have no expect value in the selected scope; "
        "run assay video seed to propose expectations"
    )


def test_drafts_outside_the_selection_do_not_block(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": DRAFT_CASE})
    assert load_eval_directory(eval_dir, targets=["done"]).sample_count == 1
    assert load_eval_directory(eval_dir, allow_draft=True).sample_count == 4


# --- adapter config ------------------------------------------------------------------------------


def adapter_config_error(eval_dir: Path, explicit: Path | None = None) -> str:
    with pytest.raises(UsageError) as caught:
        load_adapter_config(eval_dir, explicit)
    # GlassKit reports it as a bad value of no named option (`Invalid value: …`), checked by the CLI's tests.
    assert caught.value.option == ""
    return str(caught.value)


def test_adapter_config_is_discovered_as_yaml_or_yml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_adapter_config(tmp_path, None) == {}
    write(tmp_path / "adapter.yml", "model: $MODEL\nflag: yes\n")
    monkeypatch.setenv("MODEL", "expanded")
    assert load_adapter_config(tmp_path, None) == {"model": "$MODEL", "flag": True}
    write(tmp_path / "adapter.yaml", "model: x\n")
    assert adapter_config_error(tmp_path) == (
        f"multiple adapter config files found: {tmp_path / 'adapter.yaml'}, {tmp_path / 'adapter.yml'}; "
        "remove one or pass --adapter-config"
    )
    explicit = write(tmp_path / "local.json", json.dumps({"model": "explicit"}))
    assert load_adapter_config(tmp_path, explicit) == {"model": "explicit"}


def test_adapter_config_empty_file_is_an_empty_object(tmp_path: Path) -> None:
    assert load_adapter_config(tmp_path, write(tmp_path / "a.yaml", "")) == {}


def test_adapter_config_errors(tmp_path: Path) -> None:
    assert adapter_config_error(tmp_path, tmp_path / "missing.yaml").startswith("could not read adapter config: ")
    assert adapter_config_error(tmp_path, write(tmp_path / "a.json", "{'a': 1}")) == (
        f"invalid adapter config: {tmp_path / 'a.json'}: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)"
    )
    assert adapter_config_error(tmp_path, write(tmp_path / "b.yaml", "a: [")).startswith("invalid adapter config: ")
    assert adapter_config_error(tmp_path, write(tmp_path / "c.yaml", "- 1\n")) == (
        "adapter config must contain an object"
    )
    # `.JSON` is JSON too: YAML would have accepted this flow mapping.
    assert adapter_config_error(tmp_path, write(tmp_path / "d.JSON", "{a: 1}")).startswith("invalid adapter config: ")


def test_a_discovered_adapter_config_problem_names_the_file_and_where(tmp_path: Path) -> None:
    # Nobody passed --adapter-config: the message (GlassKit's words first) names the eval's adapter.yaml, on one line.
    path = write(tmp_path / "adapter.yaml", "lamp_region: [30, 90\n")
    assert adapter_config_error(tmp_path) == (
        f"invalid adapter config: {path}: line 2, column 1: expected ',' or ']', but got '<stream end>' "
        "(while parsing a flow sequence at line 1, column 14)"
    )
    write(tmp_path / "adapter.yaml", "- 1\n")
    assert adapter_config_error(tmp_path) == f"adapter config must contain an object ({path} holds a list)"
    # The same file given with --adapter-config keeps GlassKit's words on that option.
    assert adapter_config_error(tmp_path, path) == "adapter config must contain an object"


def test_a_given_adapter_config_with_bad_yaml_is_named_on_one_line(tmp_path: Path) -> None:
    # PyYAML's own text spans five lines and calls the file "<unicode string>".
    given = write(tmp_path / "local.yaml", "lamp_region: [30, 90\n")
    assert adapter_config_error(tmp_path, given) == (
        f"invalid adapter config: {given}: line 2, column 1: expected ',' or ']', but got '<stream end>' "
        "(while parsing a flow sequence at line 1, column 14)"
    )


# --- performance ---------------------------------------------------------------------------------


def test_loading_three_targets_of_600_samples_is_fast(tmp_path: Path) -> None:
    import time

    blocks = "\n".join(
        f"  t{index}:\n    samples:\n      - range: [0, 60]\n        every_s: 0.1\n        expect: {index}\n"
        for index in range(3)
    )
    eval_dir = make_eval(tmp_path, {"perf.yaml": f"video: clip.mp4\ntargets:\n{blocks}"})
    started = time.perf_counter()
    loaded = load_eval_directory(eval_dir)
    assert loaded.sample_count == 1800
    assert time.perf_counter() - started < 0.25


# --- hostile and damaged files -------------------------------------------------------------------


def test_an_adapter_config_run_could_not_store_is_refused_by_validate_and_run_alike(tmp_path: Path) -> None:
    # Both commands read the config through load_adapter_config; run stores it as JSON in its checkpoint.
    path = write(tmp_path / "adapter.yaml", "model: m\nschedule:\n  since: 2026-01-01\n")
    assert adapter_config_error(tmp_path) == (
        f"invalid adapter config: {path}: schedule.since: a date (2026-01-01) is not a JSON value; "
        'quote it ("2026-01-01") to keep it as text'
    )
    write(tmp_path / "adapter.yaml", "limits: {1: low, 2: high}\n")
    assert adapter_config_error(tmp_path).endswith(": limits: the key 1 is the number 1, not text; keys must be strings")
    write(tmp_path / "adapter.yaml", "ratio: .nan\n")
    assert adapter_config_error(tmp_path).endswith(": ratio: nan is not a finite number; use a finite number")


def test_an_adapter_config_alias_bomb_or_deep_nesting_names_the_file_and_line(tmp_path: Path) -> None:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]" for n in range(1, 9)]
    path = write(tmp_path / "adapter.yaml", "\n".join(levels) + "\n")
    assert adapter_config_error(tmp_path).startswith(f"invalid adapter config: {path}: line 5, column ")
    write(tmp_path / "adapter.yaml", "a: " + "[" * 10_000 + "]" * 10_000 + "\n")
    assert "nested more than 64 levels deep" in adapter_config_error(tmp_path)
    json_path = write(tmp_path / "config.json", '{"n": ' + "9" * 5000 + "}")
    assert adapter_config_error(tmp_path, json_path) == (
        f"invalid adapter config: {json_path}: line 1, column 7: an integer with 5,000 digits; "
        "assay reads at most 4,300, write it as a string"
    )


def test_an_adapter_config_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "adapter.yaml"
    path.write_bytes(b"model: m\nname: caf\xe9\n")
    assert adapter_config_error(tmp_path) == (
        f"could not read adapter config: {path}: line 2, column 10: byte 0xe9 is not valid UTF-8; save the file as UTF-8"
    )


@pytest.mark.parametrize(
    "text, expected",
    [
        ("video: clip.mp4\ntargets: " + "[" * 5000 + "]" * 5000 + "\n", ": nested more than 64 levels deep"),
        ("video: clip.mp4\nwhen: 2026-13-45\n", "cannot read the value '2026-13-45': month must be in 1..12"),
        ("video: clip.mp4\nn: " + "9" * 4301 + "\n", "Exceeds the limit (4300 digits) for integer string conversion"),
        ("video: clip.mp4\nloop: &r [*r]\n", "the alias *r is inside the value it refers to"),
    ],
)
def test_a_hostile_case_file_is_one_case_error_naming_it(tmp_path: Path, text: str, expected: str) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": text})
    message = load_error(eval_dir)
    assert message.startswith(str(eval_dir / "cases" / "a.yaml")) and expected in message


def test_a_case_file_alias_bomb_in_expect_is_refused_before_it_is_walked(tmp_path: Path) -> None:
    levels = "[&a0 [lol, lol], " + ", ".join(f"&a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]" for n in range(1, 9))
    case = SIMPLE_CASE.replace("expect: true", f"expect: {levels}]")
    eval_dir = make_eval(tmp_path, {"a.yaml": case})
    assert "aliases expand to more than 100,000 values" in load_error(eval_dir)


def test_an_oversized_case_file_is_refused_unread(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": SIMPLE_CASE + "description: " + "x" * (3 * 1024 * 1024) + "\n"})
    assert load_error(eval_dir) == (
        f"{eval_dir / 'cases' / 'a.yaml'}: the file is larger than 2,097,152 bytes, the most assay reads from it; "
        "split it into smaller files"
    )


def test_a_config_yaml_that_is_not_utf8_is_a_config_error_naming_the_line(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": SIMPLE_CASE})
    (eval_dir / "config.yaml").write_bytes(b"thresholds:\n  min_pass_rate: 0.5 # \xff\n")
    assert load_error(eval_dir, ConfigError) == (
        f"{eval_dir / 'config.yaml'}: line 2, column 24: byte 0xff is not valid UTF-8; save the file as UTF-8"
    )


@pytest.mark.parametrize("video", ["x" * 300 + ".mp4", '"clip\\0.mp4"'])
def test_a_video_path_no_file_system_can_hold_is_a_case_error(tmp_path: Path, video: str) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": SIMPLE_CASE.replace("video: clip.mp4", f"video: {video}")})
    message = load_error(eval_dir)
    assert message.startswith(f"{eval_dir / 'cases' / 'a.yaml'}: video ") and "cannot be a file path: " in message


# --- messages that say what to do ---------------------------------------------------------------


def test_an_unknown_key_keeps_glasskits_message_and_names_the_key_meant(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"a.yaml": SIMPLE_CASE.replace("expect: true", "expcet: true")})
    assert load_error(eval_dir).endswith(
        "invalid schema: targets.t.samples.0.expcet: Extra inputs are not permitted (did you mean `expect`?)"
    )
    # A key cut short, which difflib scores too low to offer (`tol`, `sha` for `sha256`).
    cut = make_eval(tmp_path / "cut", {"a.yaml": SIMPLE_CASE.replace(
        "expect: true", "expect: 1\n        compare: {mode: numeric, tol: 0.5}")})
    assert load_error(cut).endswith(
        "targets.t.samples.0.compare.tol: Extra inputs are not permitted (did you mean `tolerance`?)")
    far = make_eval(tmp_path / "far", {"a.yaml": SIMPLE_CASE.replace("expect: true", "zzzzzz: true")})
    assert load_error(far).endswith("targets.t.samples.0.zzzzzz: Extra inputs are not permitted")


def test_a_key_of_compare_written_in_the_sample_says_where_it_belongs(tmp_path: Path) -> None:
    """`tolerence` beside `expect` was offered `tolerance`, which is refused there too with nothing more said: it is a
    key of `compare:`. Inside `compare:`, or inside a video store or `per_target`, only the key meant is said."""
    placed = make_eval(tmp_path / "placed", {"a.yaml": SIMPLE_CASE.replace("expect: true", "expect: 1\n        tolerance: 0.5")})
    assert load_error(placed).endswith(
        "targets.t.samples.0.tolerance: Extra inputs are not permitted (`tolerance` belongs under `compare:`)")
    typo = make_eval(tmp_path / "typo", {"a.yaml": SIMPLE_CASE.replace("expect: true", "expect: 1\n        tolerence: 0.5")})
    assert load_error(typo).endswith(
        "targets.t.samples.0.tolerence: Extra inputs are not permitted (did you mean `tolerance`, under `compare:`?)")
    inside = make_eval(tmp_path / "inside", {"a.yaml": SIMPLE_CASE.replace(
        "expect: true", "expect: 1\n        compare: {mode: numeric, tolerence: 0.5}")})
    assert load_error(inside).endswith(
        "targets.t.samples.0.compare.tolerence: Extra inputs are not permitted (did you mean `tolerance`?)")


def test_a_yaml_syntax_error_names_the_file_not_a_unicode_string(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"broken.yaml": "video: clip.mp4\ntargets: [\n"})
    message = load_error(eval_dir)
    assert "<unicode string>" not in message
    assert f'in "{eval_dir / "cases" / "broken.yaml"}", line 3' in message


def test_a_tolerance_beside_a_mode_that_ignores_it_is_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = SIMPLE_CASE.replace("expect: true", "expect: 1\n        compare: {mode: exact, tolerance: 0.5}")
    eval_dir = make_eval(tmp_path, {"a.yaml": case})
    load_eval_directory(eval_dir)
    warning = capsys.readouterr().err.strip()
    assert warning == (
        f"warning: {eval_dir / 'cases' / 'a.yaml'}: targets.t.samples.0.compare: tolerance 0.5 is ignored by "
        "compare mode 'exact' (only 'numeric' uses a tolerance)"
    )
    numeric = make_eval(tmp_path / "numeric", {"a.yaml": case.replace("mode: exact", "mode: numeric")})
    load_eval_directory(numeric)
    assert capsys.readouterr().err == ""


def test_a_config_with_thousands_of_unknown_keys_is_a_short_message_naming_the_first_few(tmp_path: Path) -> None:
    from video_evals import invoke

    config = "".join(f"unknown_key_{index}: 1\n" for index in range(20_000))
    eval_dir = make_eval(tmp_path, {"a.yaml": SIMPLE_CASE}, config=config)
    for command in ("run", "validate"):
        result = invoke("video", command, "--eval-dir", eval_dir)
        assert result.exit_code == (2 if command == "run" else 1)
        assert len(result.output) < 1_000, len(result.output)
        assert (
            f"{eval_dir / 'config.yaml'}: invalid schema: unknown_key_0: Extra inputs are not permitted; "
            "unknown_key_1: Extra inputs are not permitted;"
        ) in result.flat
        assert result.flat.rstrip().endswith("unknown_key_4: Extra inputs are not permitted; and 19,995 more")
