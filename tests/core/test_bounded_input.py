import datetime
import json
import time
import tomllib

import pytest
import yaml

from assay.core.bounded_input import (
    MAX_ALIAS_NODES,
    MAX_DEPTH,
    MAX_INT_DIGITS,
    check_values,
    decode_text,
    load_json,
    load_toml,
    load_yaml,
    read_bounded,
)
from assay.errors import ConfigError


def refusal(load, text, **options):
    with pytest.raises(ConfigError) as caught:
        load(text, source="f.yaml", error=ConfigError, **options)
    return str(caught.value)


# --- YAML ---------------------------------------------------------------------------------------


def test_yaml_nested_past_the_limit_is_refused_before_the_parser_recurses():
    for depth in (MAX_DEPTH + 1, 5_000, 100_000):
        message = refusal(load_yaml, "a: " + "[" * depth + "]" * depth)
        assert message.startswith("f.yaml: line 1, column ") and message.endswith(
            ": nested more than 64 levels deep; assay reads at most 64 levels of lists and mappings"
        )


def test_yaml_nested_exactly_to_the_limit_is_read():
    # The top-level mapping is one level, so 63 more lists reach the limit.
    value = load_yaml("a: " + "[" * (MAX_DEPTH - 1) + "1" + "]" * (MAX_DEPTH - 1), source="f", error=ConfigError)
    for _ in range(MAX_DEPTH):
        value = value["a"] if isinstance(value, dict) else value[0]
    assert value == 1


def test_a_yaml_alias_bomb_is_refused_at_the_alias_that_crosses_the_budget():
    levels = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    levels += [f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]" for n in range(1, 9)]
    message = refusal(load_yaml, "\n".join(levels))
    assert "aliases expand to more than 100,000 values" in message
    assert message.startswith("f.yaml: line 5, column ")  # a1..a4 expand to 111,110 values


def test_merge_key_chains_count_towards_the_alias_budget():
    lines = ["a0: &a0 {k0: 0}"] + [f"a{n}: &a{n} {{<<: *a{n - 1}, k{n}: {n}}}" for n in range(1, 2000)]
    assert "aliases expand to more than" in refusal(load_yaml, "\n".join(lines))


def test_shared_blocks_within_the_budget_are_read_as_before():
    text = "base: &base {field: value, compare: {mode: exact}}\nsamples:\n" + "".join(
        f"  - {{at: {n}, <<: *base}}\n" for n in range(500)
    )
    assert load_yaml(text, source="f", error=ConfigError) == yaml.safe_load(text)
    assert 500 * 4 < MAX_ALIAS_NODES


def test_an_alias_inside_its_own_anchor_is_refused():
    assert "the alias *r is inside the value it refers to" in refusal(load_yaml, "a: &r [1, *r]")


@pytest.mark.parametrize(
    "scalar, reason",
    [
        ("2026-13-45", "month must be in 1..12"),
        ("2026-02-30", "day is out of range for month"),
        ("!!bool maybe", "'maybe'"),
        ("9" * (MAX_INT_DIGITS + 1), "Exceeds the limit (4300 digits) for integer string conversion"),
    ],
)
def test_a_scalar_python_cannot_convert_is_a_yaml_error_at_its_line(scalar, reason):
    with pytest.raises(yaml.YAMLError) as caught:
        load_yaml(f"ok: 1\nwhen: {scalar}\n", source="f", error=ConfigError)
    message = str(caught.value)
    assert reason in message and "quote it to keep it as text" in message and "line 2, column 7" in message
    assert "sys.set_int_max_str_digits" not in message


def test_a_hexadecimal_integer_past_the_digit_limit_is_refused():
    with pytest.raises(yaml.YAMLError, match="an integer with more than 4,300 digits"):
        load_yaml("n: 0x" + "f" * 4000, source="f", error=ConfigError)


def test_yaml_syntax_errors_keep_pyyaml_wording():
    with pytest.raises(yaml.YAMLError, match="mapping values are not allowed here"):
        load_yaml("a: b: c", source="f", error=ConfigError)


def test_valid_dates_stay_dates():
    assert load_yaml("d: 2026-01-01", source="f", error=ConfigError) == {"d": datetime.date(2026, 1, 1)}


# --- JSON ---------------------------------------------------------------------------------------


def test_json_nested_past_the_limit_is_refused_with_its_line():
    text = '{\n  "a": ' + "[" * 100_000 + "]" * 100_000 + "\n}"
    assert refusal(load_json, text) == (
        f"f.yaml: line 2, column {7 + MAX_DEPTH}: nested more than 64 levels deep; "
        "assay reads at most 64 levels of lists and mappings"
    )


def test_json_nesting_between_the_limit_and_the_recursion_limit_is_refused_too():
    assert "nested more than 64 levels deep" in refusal(load_json, "[" * 200 + "]" * 200)


def test_json_brackets_inside_strings_do_not_count():
    text = json.dumps({"text": "[" * 1000 + '\\"{' * 1000})
    assert load_json(text, source="f", error=ConfigError)["text"].startswith("[[[")


@pytest.mark.parametrize(
    "literal, expected",
    [
        ("9" * (MAX_INT_DIGITS + 1), "line 1, column 7: an integer with 4,301 digits; assay reads at most 4,300"),
        ("1e400", "line 1, column 7: the number 1e400 is out of range; use a finite number"),
        ("NaN", "line 1, column 7: NaN is not valid JSON; use a finite number or null"),
        ("-Infinity", "line 1, column 7: -Infinity is not valid JSON"),
    ],
)
def test_json_numbers_python_cannot_hold_are_refused(literal, expected):
    assert expected in refusal(load_json, '{"n": ' + literal + "}")


def test_json_syntax_errors_stay_json_errors():
    with pytest.raises(json.JSONDecodeError):
        load_json("{", source="f", error=ConfigError)


def test_a_nul_in_json_strings_is_refused_only_when_asked():
    assert load_json('{"a": "x\\u0000"}', source="f", error=ConfigError) == {"a": "x\x00"}
    assert refusal(load_json, '{"a": ["x\\u0000"]}', no_nul=True) == "f.yaml: a[0]: contains a NUL character; remove it"


# --- TOML ---------------------------------------------------------------------------------------


def test_toml_nesting_is_refused_before_tomllib_recurses():
    message = refusal(load_toml, "[tool.assay]\nx = " + "[" * 100_000 + "]" * 100_000)
    assert message.startswith(f"f.yaml: line 2, column {5 + MAX_DEPTH}: nested more than 64 levels deep")


def test_toml_brackets_in_strings_and_comments_do_not_count():
    text = (
        'a = "' + "[" * 100 + '"\n'
        "b = '" + "{" * 100 + "'\n"
        'c = """\n' + "[" * 100 + '\n"""\n'
        "# " + "[" * 100 + "\n"
        'd = "escaped \\" [[[["\n'
    )
    assert load_toml(text, source="f", error=ConfigError)["a"] == "[" * 100


def test_toml_dotted_keys_past_the_limit_are_refused():
    message = refusal(load_toml, "a." * 100 + "b = 1")
    assert "nested more than 64 levels deep" in message


def test_a_toml_integer_past_the_digit_limit_is_refused_with_its_line():
    message = refusal(load_toml, "[t]\nn = " + "9" * 5000)
    assert message == (
        "f.yaml: line 2, column 5: an integer with more than 4,300 digits; assay reads at most that many, "
        "write it as a string"
    )


def test_toml_syntax_errors_stay_toml_errors():
    with pytest.raises(tomllib.TOMLDecodeError):
        load_toml("a = ", source="f", error=ConfigError)


# --- bytes, text and values ----------------------------------------------------------------------


def test_an_oversized_file_is_refused_without_reading_it_whole(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_bytes(b"x" * 2048)
    with pytest.raises(ConfigError, match=r"big.yaml: the file is larger than 1,024 bytes"):
        read_bounded(path, source=str(path), error=ConfigError, max_bytes=1024)
    assert read_bounded(path, source=str(path), error=ConfigError, max_bytes=2048) == b"x" * 2048


def test_invalid_utf8_is_located():
    with pytest.raises(ConfigError) as caught:
        decode_text(b"a: 1\nb: caf\xe9\n", source="f.yaml", error=ConfigError)
    assert str(caught.value) == "f.yaml: line 2, column 7: byte 0xe9 is not valid UTF-8; save the file as UTF-8"


@pytest.mark.parametrize(
    "value, expected",
    [
        ({"when": datetime.date(2026, 1, 1)},
         'f: when: a date (2026-01-01) is not a JSON value; quote it ("2026-01-01") to keep it as text'),
        ({"a": {1: "x"}}, "f: a: the key 1 is the number 1, not text; keys must be strings"),
        ({"a": [float("nan")]}, "f: a[0]: nan is not a finite number; use a finite number"),
        ({"odd key": {b"x"}}, "f: ['odd key']: a set is not a JSON value"),
    ],
)
def test_json_like_values_name_the_field_and_the_fix(value, expected):
    with pytest.raises(ConfigError) as caught:
        check_values(value, source="f", error=ConfigError, json_like=True)
    assert str(caught.value) == expected


def test_checking_values_does_not_recurse():
    value: list = []
    for _ in range(50_000):
        value = [value]
    with pytest.raises(ConfigError, match=r"f: \[0\]\[0\]\[0\]\.\.\.: nested more than 64 levels deep"):
        check_values(value, source="f", error=ConfigError)


def test_the_depth_scanners_are_linear_in_the_text():
    text = '{"a": "' + '\\"' * 400_000 + '", "b": ' + "[" * 70 + "]" * 70 + "}"
    started = time.perf_counter()
    assert "line 1" in refusal(load_json, text)
    toml_text = 'a = "' + '\\"' * 400_000 + '"\n' + "b = " + "[" * 70 + "]" * 70
    assert "line 2" in refusal(load_toml, toml_text)
    assert time.perf_counter() - started < 2
