from __future__ import annotations

import datetime
from typing import Any

import pytest

from assay.errors import CaseError, ConfigError
from assay.video.casefile_schema import parse_case_file, parse_eval_config_file, parse_number
from assay.video.loading import parse_yaml_text


def case_with_block(**block: Any) -> dict[str, Any]:
    return {"video": "clip.mp4", "targets": {"t": {"samples": [block]}}}


def schema_error(raw: Any) -> str:
    with pytest.raises(CaseError) as caught:
        parse_case_file(raw, label="/evals/cases/c.yaml")
    return str(caught.value)


def config_error(raw: Any) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_eval_config_file(raw, label="/evals/config.yaml")
    return str(caught.value)


def test_numeric_strings_are_accepted_as_numbers() -> None:
    raw = parse_case_file(
        {"video": "clip.mp4", "sampling": {"every_s": "0.25"}, "targets": {"t": {"samples": [
            {"at": "1.5", "expect": 1},
            {"range": ["2", 3], "compare": {"tolerance": "0.5"}, "expect": 1},
        ]}}},
        label="c.yaml",
    )
    first, second = raw.targets["t"].samples
    assert first.at == 1.5
    assert second.range_ == [2.0, 3.0]
    assert second.compare is not None and second.compare.tolerance == 0.5
    assert raw.sampling.every_s == 0.25


def test_booleans_are_not_numbers() -> None:
    message = schema_error(case_with_block(at=True, expect=1))
    assert message == "/evals/cases/c.yaml: invalid schema: targets.t.samples.0.at: Value error, at must be a number"


@pytest.mark.parametrize("text", [".nan", ".inf", "-.inf"])
def test_non_finite_numbers_are_rejected(text: str) -> None:
    raw = parse_yaml_text(f"video: clip.mp4\ntargets:\n  t:\n    samples:\n      - at: {text}\n        expect: 1\n")
    assert schema_error(raw).endswith("targets.t.samples.0.at: Value error, at must be finite")


def test_integer_too_large_for_a_float_is_not_finite() -> None:
    with pytest.raises(ValueError, match="at must be finite"):
        parse_number(10**400, label="at", minimum=0.0)


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ({"at": -1}, "targets.t.samples.0.at: Value error, at must be greater than or equal to 0"),
        ({"range": [-1, 2]}, "targets.t.samples.0.range: Value error, range start must be greater than or equal to 0"),
        ({"range": [0, "x"]}, "targets.t.samples.0.range: Value error, range end must be a number"),
        ({"range": [2, 2]}, "targets.t.samples.0.range: Value error, end must be greater than start"),
        ({"range": [1, 2, 3]}, "targets.t.samples.0.range: Value error, must be [start, end]"),
        ({"range": 5}, "targets.t.samples.0.range: Value error, must be [start, end]"),
        ({"at": []}, "targets.t.samples.0.at: Value error, must contain at least one timestamp"),
        ({"at": 1, "every_s": 0}, "targets.t.samples.0.every_s: Value error, every_s must be greater than 0"),
        ({"at": 1, "compare": {"tolerance": -0.1}},
         "targets.t.samples.0.compare.tolerance: Value error, tolerance must be greater than or equal to 0"),
        ({"at": 1, "comment": "  "}, "targets.t.samples.0.comment: Value error, must not be empty"),
        ({"at": 1, "ignore": ""}, "targets.t.samples.0.ignore: Value error, must not be empty"),
        ({"at": 1, "field": " "}, "targets.t.samples.0.field: Value error, must not be empty"),
    ],
)
def test_block_rules_report_located_messages(block: dict[str, Any], expected: str) -> None:
    assert schema_error(case_with_block(**block)) == f"/evals/cases/c.yaml: invalid schema: {expected}"


def test_block_needs_exactly_one_of_range_or_at() -> None:
    both = schema_error(case_with_block(at=1, range=[0, 1]))
    neither = schema_error(case_with_block(expect=1))
    for message in (both, neither):
        assert message.endswith("targets.t.samples.0: Value error, must contain exactly one of range or at")


def test_unsupported_compare_mode_lists_the_modes_sorted() -> None:
    message = schema_error(case_with_block(at=1, compare={"mode": " fuzzy "}))
    assert message.endswith(
        "targets.t.samples.0.compare.mode: Value error, unsupported compare mode 'fuzzy'; expected one of: "
        "exact, json_subset, numeric, set_contains_all, set_contains_any, set_equals"
    )


@pytest.mark.parametrize("mode", ["", "  "])
def test_blank_compare_mode_must_not_be_empty(mode: str) -> None:
    # spec §4.1: `mode` is stripped and non-empty; GlassKit 0.1.12 says so before it checks the mode's name.
    message = schema_error(case_with_block(at=1, compare={"mode": mode}))
    assert message.endswith("targets.t.samples.0.compare.mode: Value error, must not be empty")


def test_compare_mode_is_stripped() -> None:
    raw = parse_case_file(case_with_block(at=1, compare={"mode": " numeric "}), label="c.yaml")
    assert raw.targets["t"].samples[0].compare.mode == "numeric"  # type: ignore[union-attr]


def test_all_errors_are_joined_into_one_message_with_dotted_locations() -> None:
    message = schema_error(
        {"video": "clip.mp4", "colour": 1, "targets": {"step_1": {"samples": [{"at": 1, "comment": "", "extra": 2}]}}}
    )
    # pydantic reports declared fields first, then unknown keys.
    assert message == (
        "/evals/cases/c.yaml: invalid schema: targets.step_1.samples.0.comment: Value error, must not be empty; "
        "targets.step_1.samples.0.extra: Extra inputs are not permitted; "
        "colour: Extra inputs are not permitted"
    )


def test_missing_required_keys_use_pydantics_message() -> None:
    assert schema_error({}) == (
        "/evals/cases/c.yaml: invalid schema: video: Field required; targets: Field required"
    )
    assert schema_error({"video": "v.mp4", "targets": {"t": {}}}).endswith("targets.t.samples: Field required")


def test_targets_need_at_least_one_entry_and_clean_keys() -> None:
    assert schema_error({"video": "v.mp4", "targets": {}}).endswith(
        "targets: Value error, must contain at least one target"
    )
    assert schema_error({"video": "v.mp4", "targets": {" t": {"samples": []}}}).endswith(
        "targets: Value error, targets keys must not have surrounding whitespace"
    )
    assert schema_error({"video": "v.mp4", "targets": {"": {"samples": []}}}).endswith(
        "targets: Value error, targets keys must not be empty"
    )


def test_expect_must_be_json_like_and_an_unquoted_date_says_so() -> None:
    raw = parse_yaml_text("video: v.mp4\ntargets:\n  t:\n    samples:\n      - at: 1\n        expect: 2026-01-01\n")
    assert isinstance(raw["targets"]["t"]["samples"][0]["expect"], datetime.date)
    assert schema_error(raw).endswith("targets.t.samples.0.expect: Value error, expect must be JSON-like; got date")
    nested = schema_error(case_with_block(at=1, expect={"a": [1, float("nan")]}))
    assert nested.endswith("targets.t.samples.0.expect: Value error, expect.a[1] must be finite")


def test_an_unquoted_date_where_text_belongs_says_it_is_a_date_and_how_to_quote_it() -> None:
    raw = parse_yaml_text("video: v.mp4\ndescription: 2026-01-01\ntargets:\n  t:\n    samples: []\n")
    assert schema_error(raw).endswith(
        'description: Input should be a valid string, got a date (2026-01-01); quote it ("2026-01-01") to keep it as text'
    )
    # Other wrong types keep pydantic's wording unchanged.
    assert schema_error({"video": "v.mp4", "description": 5, "targets": {"t": {"samples": []}}}).endswith(
        "description: Input should be a valid string"
    )


def test_explicit_null_expect_is_an_expectation_but_a_missing_one_is_a_draft() -> None:
    raw = parse_case_file(
        {"video": "v.mp4", "targets": {"t": {"samples": [{"at": 1, "expect": None}, {"at": 2}]}}}, label="c.yaml"
    )
    explicit, draft = raw.targets["t"].samples
    assert explicit.has_expectation and explicit.expect is None
    assert not draft.has_expectation


def test_yaml_one_one_booleans_are_booleans() -> None:
    raw = parse_yaml_text("video: v.mp4\ntargets:\n  t:\n    samples:\n      - at: 1\n        expect: yes\n")
    assert parse_case_file(raw, label="c.yaml").targets["t"].samples[0].expect is True


def test_multiline_comment_keeps_inner_newlines_and_is_stripped() -> None:
    raw = parse_case_file(case_with_block(at=1, comment="  first\nsecond\n"), label="c.yaml")
    assert raw.targets["t"].samples[0].comment == "first\nsecond"


def test_workflow_target_entries_allow_extra_keys_but_need_an_id() -> None:
    raw = parse_case_file(
        {"video": "v.mp4", "workflow": {"targets": [{"id": " a ", "prompt": "p", "nested": {"x": 1}}]},
         "targets": {"a": {"samples": [{"at": 1, "expect": 1}]}}},
        label="c.yaml",
    )
    entry = raw.workflow.targets[0]
    assert entry.id == "a" and entry.extra_metadata == {"prompt": "p", "nested": {"x": 1}}
    assert schema_error(
        {"video": "v.mp4", "workflow": {"targets": [{"label": "L"}], "other": 1},
         "targets": {"a": {"samples": []}}}
    ).endswith("workflow.targets.0.id: Field required; workflow.other: Extra inputs are not permitted")


def test_target_config_is_a_free_mapping_and_unknown_target_keys_are_rejected() -> None:
    raw = parse_case_file(
        {"video": "v.mp4", "targets": {"t": {"config": {"anything": {"goes": [1]}}, "samples": []}}}, label="c.yaml"
    )
    assert raw.targets["t"].config == {"anything": {"goes": [1]}}
    assert schema_error({"video": "v.mp4", "targets": {"t": {"samples": [], "prompt": "x"}}}).endswith(
        "targets.t.prompt: Extra inputs are not permitted"
    )


def test_remote_video_mapping_normalises_digest_and_reports_nested_locations() -> None:
    digest = "AB" * 32
    raw = parse_case_file(
        {"video": {"store": " s ", "key": " clips/a.mp4 ", "sha256": f" {digest} "}, "targets": {"t": {"samples": []}}},
        label="c.yaml",
    )
    assert (raw.video.store, raw.video.key, raw.video.sha256) == ("s", "clips/a.mp4", digest.lower())  # type: ignore[union-attr]
    message = schema_error({"video": {"store": "s", "sha256": "xyz", "bucket": 1}, "targets": {"t": {"samples": []}}})
    assert message == (
        "/evals/cases/c.yaml: invalid schema: video.key: Field required; "
        "video.sha256: Value error, must be a 64-character hexadecimal SHA-256 digest; "
        "video.bucket: Extra inputs are not permitted"
    )


def test_local_video_string_is_stripped_and_must_not_be_empty() -> None:
    assert parse_case_file({"video": " a.mp4 ", "targets": {"t": {"samples": []}}}, label="c").video == "a.mp4"
    assert schema_error({"video": "  ", "targets": {"t": {"samples": []}}}).endswith(
        "video: Value error, must not be empty"
    )


def test_case_thresholds_follow_the_number_and_integer_rules() -> None:
    message = schema_error(
        {"video": "v.mp4", "targets": {"t": {"samples": []}},
         "thresholds": {"min_pass_rate": 1.5, "max_failures": 1.0, "per_target": {"t": {"min_pass_rate": True}}}}
    )
    assert message.endswith(
        "thresholds.min_pass_rate: Value error, min_pass_rate must be less than or equal to 1; "
        "thresholds.max_failures: Value error, must be an integer; "
        "thresholds.per_target.t.min_pass_rate: Value error, min_pass_rate must be a number"
    )
    assert schema_error(
        {"video": "v.mp4", "targets": {"t": {"samples": []}}, "thresholds": {"max_failures": -1}}
    ).endswith("thresholds.max_failures: Value error, must be greater than or equal to 0")


def test_sample_defaults_remember_which_keys_were_declared() -> None:
    raw = parse_case_file(
        {"video": "v.mp4", "sample_defaults": {"field": None},
         "targets": {"t": {"sample_defaults": {"compare": {"mode": "exact"}}, "samples": []}}},
        label="c.yaml",
    )
    assert raw.sample_defaults.model_fields_set == {"field"}
    assert raw.targets["t"].sample_defaults.model_fields_set == {"compare"}


def test_eval_config_accepts_thresholds_and_video_stores() -> None:
    config = parse_eval_config_file(
        {"thresholds": {"min_pass_rate": "0.9"},
         "video_stores": {"main": {"bucket": "b", "public_base_url": "https://cdn.example.com/videos/",
                                   "access_key_id_env": "KEY", "secret_access_key_env": "SECRET"}}},
        label="config.yaml",
    )
    store = config.video_stores["main"]
    assert (store.type, store.region, store.public_base_url) == ("s3", "us-east-1", "https://cdn.example.com/videos")
    assert config.thresholds.min_pass_rate == 0.9


@pytest.mark.parametrize(
    ("store", "expected"),
    [
        ({"bucket": "b", "type": "gcs"}, "video_stores.s.type: Value error, type must be 's3'"),
        ({}, "video_stores.s.bucket: Field required"),
        ({"bucket": "b", "endpoint_url": "ftp://host"},
         "video_stores.s.endpoint_url: Value error, endpoint_url must be an HTTP(S) URL without credentials, "
         "a query, or a fragment"),
        ({"bucket": "b", "endpoint_url": "https://user:pw@host"},
         "video_stores.s.endpoint_url: Value error, endpoint_url must be an HTTP(S) URL without credentials, "
         "a query, or a fragment"),
        ({"bucket": "b", "public_base_url": "https://host/x?y=1"},
         "video_stores.s.public_base_url: Value error, public_base_url must be an HTTP(S) URL without "
         "credentials, a query, or a fragment"),
        ({"bucket": "b", "access_key_id_env": "KEY"},
         "video_stores.s: Value error, access_key_id_env and secret_access_key_env must be set together"),
        ({"bucket": "b", "session_token_env": "TOKEN"},
         "video_stores.s: Value error, session_token_env requires access_key_id_env and secret_access_key_env"),
        ({"bucket": "b", "access_key_id_env": "1KEY", "secret_access_key_env": "S"},
         "video_stores.s.access_key_id_env: Value error, access_key_id_env must be an environment variable name "
         "matching [A-Za-z_][A-Za-z0-9_]*"),
        ({"bucket": "b", "acl": "public"}, "video_stores.s.acl: Extra inputs are not permitted"),
    ],
)
def test_video_store_rules(store: dict[str, Any], expected: str) -> None:
    assert config_error({"video_stores": {"s": store}}) == f"/evals/config.yaml: invalid schema: {expected}"


def test_eval_config_rejects_unknown_keys_and_bad_store_names() -> None:
    assert config_error({"adapter": "x"}) == "/evals/config.yaml: invalid schema: adapter: Extra inputs are not permitted"
    assert config_error({"video_stores": {" s": {"bucket": "b"}}}).endswith(
        "video_stores: Value error, video_stores keys must not have surrounding whitespace"
    )
