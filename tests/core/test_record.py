"""The run record: unit and manifest round trips, files written units-first, project root and store path."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from assay.core.record import (
    RunManifest,
    UnitResult,
    checkpointed_run_id,
    count_verdicts,
    git_state,
    group_counts,
    iter_units,
    jsonable,
    new_run_id,
    project_root,
    read_record,
    records_dir,
    store_path,
    write_record,
)


def _manifest(run_id: str = "video-20260101T000000-abcdef") -> RunManifest:
    return RunManifest(
        run_id=run_id, kind="video", created_at="2026-01-01T00:00:00.000Z", title="t", git_commit="abc",
        git_dirty=True, identity={"adapter": "a.py:make"}, options={"repeat": 2},
        gates=[{"name": "min_pass_rate", "passed": False, "message": "0.5 < 0.9"}], summary={"evaluated": 2},
        usage={"input_tokens": 3}, cost_usd=0.25, success=False, exit_code=1, duration_seconds=1.5,
    )


def test_unit_round_trips_through_json() -> None:
    unit = UnitResult("c/t/0@0s#1", "failed", "c/t", expected=1, observed=2, reason="mismatch", duration_seconds=0.1,
                      usage={"tokens": 4}, cost_usd=0.01, artifacts={"video": "/v.mp4"}, detail={"trial": 1})
    assert UnitResult.from_json(json.loads(json.dumps(unit.to_json()))) == unit


def test_unit_refuses_an_unknown_verdict() -> None:
    with pytest.raises(ValueError, match="verdict must be one of"):
        UnitResult("u", "red")


def test_manifest_round_trips_through_json() -> None:
    manifest = _manifest()
    assert RunManifest.from_json(json.loads(json.dumps(manifest.to_json()))) == manifest


def test_record_writes_units_then_manifest_and_reads_back(tmp_path: Path) -> None:
    units = [UnitResult("a", "passed", "g"), UnitResult("b", "errored", "g", reason="boom")]
    record = write_record(tmp_path, _manifest(), units)
    assert record == tmp_path / "video-20260101T000000-abcdef"
    lines = (record / "units.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["unit_id"] for line in lines] == ["a", "b"]
    manifest, read_units = read_record(record)
    assert manifest == _manifest()
    assert read_units == units


def test_record_without_manifest_is_not_a_record(tmp_path: Path) -> None:
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "units.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(FileNotFoundError):
        read_record(tmp_path / "half")


def test_record_refuses_duplicate_unit_ids(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="duplicate unit id"):
        write_record(tmp_path, _manifest(), [UnitResult("a", "passed"), UnitResult("a", "failed")])
    assert not (tmp_path / _manifest().run_id).exists()


def test_record_never_overwrites_an_existing_run(tmp_path: Path) -> None:
    write_record(tmp_path, _manifest(), [])
    with pytest.raises(FileExistsError):
        write_record(tmp_path, _manifest(), [])


def test_a_record_replaced_by_its_resumed_run_is_whole_and_a_failed_replacement_keeps_it(tmp_path: Path) -> None:
    record = write_record(tmp_path, _manifest(), [UnitResult("a", "failed")])
    assert write_record(tmp_path, _manifest(), [UnitResult("a", "passed")], replace=True) == record
    assert [unit.verdict for unit in read_record(record)[1]] == ["passed"]
    with pytest.raises(ValueError, match="duplicate unit id"):
        write_record(tmp_path, _manifest(), [UnitResult("b", "passed"), UnitResult("b", "failed")], replace=True)
    assert [unit.unit_id for unit in read_record(record)[1]] == ["a"]
    assert sorted(path.name for path in record.iterdir()) == ["manifest.json", "units.jsonl"]  # no temporary left


def test_a_checkpointed_run_is_recorded_under_its_checkpoint_s_time_and_suffix() -> None:
    assert checkpointed_run_id("video", "run-20261202T041909Z-785031e3") == "video-20261202T041909Z-785031e3"
    assert checkpointed_run_id("agent", "agent-20261202T041909Z-785031e3") == "agent-20261202T041909Z-785031e3"
    assert checkpointed_run_id("agent", "plain") == "agent-plain"


def test_run_ids_sort_by_time_and_differ() -> None:
    first, second = new_run_id("doc"), new_run_id("doc")
    assert first.startswith("doc-") and first != second


def test_counts_by_verdict_and_group_keep_first_seen_order() -> None:
    units = [UnitResult("1", "passed", "b"), UnitResult("2", "failed", "a"), UnitResult("3", "passed", "b")]
    assert count_verdicts(units) == {"passed": 2, "failed": 1, "errored": 0, "skipped": 0, "ignored": 0}
    groups = group_counts(units)
    assert list(groups) == ["b", "a"]
    assert groups["b"]["passed"] == 2


def test_jsonable_names_non_finite_numbers_and_foreign_objects() -> None:
    assert jsonable({"x": [math.nan, math.inf, 1.5, (1, 2)], 3: b"raw"}) == {
        "x": ["nan", "inf", 1.5, [1, 2]], "3": "b'raw'",
    }


def test_project_root_is_the_enclosing_repository_even_below_a_pyproject(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    project = tmp_path / "agents" / "shop"
    project.mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.assay]\n", encoding="utf-8")
    assert project_root(project / "evals") == tmp_path.resolve()


def test_project_root_falls_back_to_the_start_folder(tmp_path: Path) -> None:
    marked = [folder for folder in tmp_path.resolve().parents if (folder / ".git").exists()]
    if marked:
        pytest.skip(f"{marked[0]} holds .git, so no folder below it can fall back")
    assert project_root(tmp_path) == tmp_path.resolve()


def test_store_path_defaults_to_dot_assay_and_follows_assay_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    monkeypatch.delenv("ASSAY_STORE", raising=False)
    assert store_path(tmp_path) == tmp_path.resolve() / ".assay" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "elsewhere" / "results.db"))
    assert store_path(tmp_path) == (tmp_path / "elsewhere" / "results.db").resolve()
    assert records_dir(store_path(tmp_path)) == (tmp_path / "elsewhere" / "records").resolve()


def test_git_state_reports_commit_and_dirty_flag(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    assert git_state(tmp_path) == (None, None)
    git("init", "-q")
    (tmp_path / "f.txt").write_text("1", encoding="utf-8")
    git("add", "f.txt")
    git("-c", "user.email=a@b", "-c", "user.name=n", "commit", "-qm", "one")
    commit, dirty = git_state(tmp_path)
    assert commit is not None and len(commit) == 40 and dirty is False
    (tmp_path / "f.txt").write_text("2", encoding="utf-8")
    assert git_state(tmp_path) == (commit, True)


def test_a_lone_surrogate_in_a_unit_is_stored_escaped_not_lost(tmp_path: Path) -> None:
    from assay.core.results_store import SqliteRunStore

    unit = UnitResult("u", "failed", "g", reason="adapter said \udcff")
    manifest = _manifest()
    record = write_record(tmp_path / "records", manifest, [unit])
    _, [back] = read_record(record)
    assert back.reason == "adapter said \udcff"
    with SqliteRunStore(tmp_path / "assay.db") as store:
        store.add_run(manifest, [unit], str(record))
        assert store.get_unit(manifest.run_id, "u").reason == "adapter said \udcff"


def test_a_record_line_orjson_refuses_is_read_by_the_json_module(tmp_path: Path) -> None:
    # Units are read back with orjson; a line written with what it refuses (NaN, an integer past 64
    # bits, a lone surrogate's escape) is still read, as the json module reads it.
    record = tmp_path / "run"
    record.mkdir()
    lines = ['{"unit_id":"a","verdict":"failed","group":"g","expected":NaN,"observed":null}',
             '{"unit_id":"b","verdict":"passed","group":"g","expected":123456789012345678901234567890,"observed":null}',
             '{"unit_id":"c","verdict":"failed","group":"g","expected":null,"observed":null,"reason":"bad \\udcff"}',
             '{"unit_id":"d","verdict":"passed","group":"g","expected":1,"observed":1}', "  "]
    (record / "units.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    units = list(iter_units(record))
    assert [unit.unit_id for unit in units] == ["a", "b", "c", "d"]
    assert math.isnan(units[0].expected) and units[1].expected == 123456789012345678901234567890
    assert units[2].reason == "bad \udcff" and units[3].expected == 1


def test_jsonable_takes_a_dataclass_by_its_fields_and_a_date_as_iso_text():
    """The agent adapters each had their own conversion for what frameworks return (a pydantic-ai output dataclass,
    a LangChain message's datetime); the one conversion takes them, and a dataclass was its repr before."""
    import dataclasses
    import datetime

    from assay.core.jsonvalue import jsonable

    @dataclasses.dataclass
    class Order:
        order_id: str
        placed: datetime.date
        total: float

    assert jsonable({"out": Order("1001", datetime.date(2026, 12, 7), float("inf"))}) == {
        "out": {"order_id": "1001", "placed": "2026-12-07", "total": "inf"}}
    assert jsonable(Order) == repr(Order)  # a class is not an instance's fields
