"""`assay runs …` given what scripts give: empty values (an unset variable), a `--limit` meaning "all"."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from assay.cli.app import app
from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import publish_run

FIRST, SECOND, THIRD = "agent-20260201T000000Z-00000001", "agent-20260202T000000Z-00000002", "agent-20260203T000000Z-00000003"


@pytest.fixture
def store(tmp_path, monkeypatch):
    database = tmp_path / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(database))
    for index, run_id in enumerate((FIRST, SECOND, THIRD)):
        units = [UnitResult(f"exp/u{unit}#1", "failed" if unit == index else "passed", group="exp/questions") for unit in range(4)]
        publish_run(RunManifest(run_id, "agent", f"2026-02-0{index + 1}T00:00:00Z", identity={"project": "/p"}), units,
                    database=database)
    return database


def _runs(*args: str):
    return CliRunner().invoke(app, ["runs", *args])


def test_an_empty_after_is_refused_not_read_as_latest(store) -> None:
    """`compare "$BASE" "$HEAD"` with HEAD unset compared BEFORE with the latest run and said nothing of it."""
    result = _runs("compare", FIRST, "")
    assert result.exit_code == 2, result.output
    assert ("AFTER is empty (an unset variable in a script?); give a run id, a unique prefix of one, latest or latest~N, "
            "or leave AFTER out for the latest run") in result.output
    assert "Compare" not in result.output
    assert "Error: BEFORE is empty" in _runs("compare", "", SECOND).output


@pytest.mark.parametrize("args, words", [
    (["show", ""], "RUN is empty (an unset variable in a script?)"),
    (["trend", ""], "GROUP is empty (an unset variable in a script?); give a group (`assay runs show latest` lists them), "
                    "or leave GROUP out for the whole run"),
    (["trend", "--run", ""], "Invalid value for '--run': needs a value, and the value given is empty"),
    (["flaky", "--run", " "], "Invalid value for '--run': needs a value, and the value given is empty"),
    (["list", "--search", ""], "Invalid value for '--search': needs a value, and the value given is empty"),
])
def test_an_empty_value_is_refused_naming_what_was_empty(store, args, words) -> None:
    """An empty GROUP showed the whole run and an empty --search listed every run, as if they had been left out."""
    result = _runs(*args)
    assert result.exit_code == 2, result.output
    assert words in " ".join(result.output.split())


@pytest.mark.parametrize("command", ["list", "show"])
def test_a_limit_beyond_what_sqlite_counts_lists_everything(store, command) -> None:
    """It ended in an OverflowError traceback (exit 1)."""
    result = _runs(command, "--limit", str(10**20), "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    if command == "list":
        assert [run["run_id"] for run in document["runs"]] == [THIRD, SECOND, FIRST]
    else:
        assert [unit["unit_id"] for unit in document["failing_units"]] == ["exp/u2#1"]


def test_trend_json_names_the_kind_of_its_flaky_units_as_flaky_does(store) -> None:
    trend = json.loads(_runs("trend", "--json").output)
    flaky = json.loads(_runs("flaky", "--json").output)
    assert {unit["kind"] for unit in trend["flaky"]} == {unit["kind"] for unit in flaky["series"][0]["flaky"]} == {"agent"}


def test_a_search_is_the_text_given_not_a_pattern(store) -> None:
    """`--search %` or `--search _` listed every run: the text went into a LIKE pattern unescaped."""
    publish_run(RunManifest("agent-20260204T000000Z-0000000a", "agent", "2026-02-04T00:00:00Z", title="100% of q_1"),
                [UnitResult("exp/u0#1", "passed")], database=store)
    for text in ("%", "_", "0% of q_"):
        listed = json.loads(_runs("list", "--search", text, "--json").output)["runs"]
        assert [run["run_id"] for run in listed] == ["agent-20260204T000000Z-0000000a"], text
    assert json.loads(_runs("list", "--search", "q%1", "--json").output)["runs"] == []


@pytest.mark.parametrize("ref, message", [
    ("latest~99999999999999999999", "no run 'latest~99999999999999999999' in the store"),  # was an OverflowError
    ("latest~²", "run reference 'latest~²': write latest or latest~N"),  # `isdigit` takes it, `int` does not
])
def test_a_run_reference_past_any_store_is_refused_in_one_line(store, ref, message) -> None:
    for args in (("show", ref), ("compare", ref, "latest"), ("flaky", "--run", ref)):
        result = _runs(*args)
        assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output, (args, result.output)


def test_a_store_holding_no_run_says_how_to_make_one(tmp_path, monkeypatch) -> None:
    from assay.core.results_store import SqliteRunStore

    database = tmp_path / "assay.db"
    SqliteRunStore(database).close()  # made, empty (a store another tool's run left, or a typo'd ASSAY_STORE)
    monkeypatch.setenv("ASSAY_STORE", str(database))
    result = _runs("show", "latest")
    assert result.exit_code == 2
    assert ("it holds no run yet: run an eval (`assay video run`, `assay agent run`, `assay doc run-case`) or import another "
            "tool's log (`assay runs import`), or set ASSAY_STORE to the store that holds your runs") in " ".join(result.output.split())


def test_a_value_in_the_wrong_case_is_answered_with_the_one_meant(store) -> None:
    """`--kind VIDEO` was refused with the kinds listed but no "did you mean": too far from `video` for difflib."""
    from assay.core.format import did_you_mean

    result = _runs("list", "--kind", "VIDEO")
    assert result.exit_code == 2 and "did you mean 'video'?" in result.output
    assert did_you_mean("Agent", ["video", "agent"]) == "; did you mean 'agent'?"
    assert did_you_mean("vidoe", ["video", "agent"]) == "; did you mean 'video'?"
