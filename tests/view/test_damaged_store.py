"""A damaged `.assay/assay.db`: every command says so in one line (file and remedy), exit 2; reindex repairs it.

Real processes over real SQLite files: random bytes, an overwritten header, a truncated file, and a
file that opens but has garbage in the units table.
"""

from __future__ import annotations

import json
import shutil
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from damaged_store import AFTER, BEFORE, DAMAGED_UNITS_PAGE, OPENING_DAMAGE, assay, live_viewer, make_store

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "video"))
from filled_store import REPO, case_yaml  # noqa: E402
from video_evals import make_eval  # noqa: E402


def _lines(completed) -> list[str]:
    return [line for line in (completed.stdout + completed.stderr).splitlines() if line.strip()]


def _assert_one_clear_line(completed, database: Path) -> str:
    lines = _lines(completed)
    assert completed.returncode == 2, lines
    assert "Traceback" not in completed.stdout + completed.stderr
    assert len(lines) == 1, lines
    line = lines[0]
    assert f"the results store {database} is damaged" in line
    assert f"`assay runs reindex` moves it aside and rebuilds it from the run records in {database.parent / 'records'}" in line
    return line


READING_COMMANDS = {
    "runs list": ["runs", "list"],
    "runs show": ["runs", "show"],
    "runs show --json": ["runs", "show", AFTER, "--json"],
    "runs compare": ["runs", "compare", BEFORE, AFTER, "--fail-on-regression"],
    "view": ["view", "--no-open"],
    "view --export": ["view", "--export", "{site}"],
}


@pytest.mark.parametrize("damage", OPENING_DAMAGE, ids=list(OPENING_DAMAGE))
def test_every_command_names_the_damaged_store_in_one_line(damage: str, tmp_path: Path) -> None:
    database = make_store(tmp_path)
    OPENING_DAMAGE[damage](database)
    for name, args in READING_COMMANDS.items():
        completed = assay(database, *(arg.format(site=tmp_path / "site") for arg in args))
        line = _assert_one_clear_line(completed, database)
        if name.startswith("view"):
            assert line.startswith("Could not"), line
        else:
            assert line.startswith("Error: "), line


def test_damage_found_after_opening_is_one_line_too(tmp_path: Path) -> None:
    database = make_store(tmp_path)
    DAMAGED_UNITS_PAGE(database)
    assert assay(database, "runs", "list").returncode == 0  # the runs table is intact
    for args in (["runs", "show", AFTER], ["runs", "compare", BEFORE, AFTER], ["view", "--export", tmp_path / "site"]):
        _assert_one_clear_line(assay(database, *args), database)


@pytest.mark.parametrize("damage", [*OPENING_DAMAGE, "damaged units page"])
def test_reindex_moves_the_damaged_store_aside_and_rebuilds_it_from_the_records(damage: str, tmp_path: Path) -> None:
    database = make_store(tmp_path)
    (OPENING_DAMAGE.get(damage) or DAMAGED_UNITS_PAGE)(database)
    damaged_bytes = database.read_bytes()
    completed = assay(database, "runs", "reindex")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "Traceback" not in completed.stderr
    set_aside = [path for path in database.parent.glob("assay.db.corrupt-*") if not path.name.endswith(("-wal", "-shm"))]
    assert len(set_aside) == 1 and set_aside[0].read_bytes() == damaged_bytes  # kept, byte for byte
    assert not Path(f"{database}-wal").exists() or Path(f"{database}-wal").stat().st_size == 0  # its log went with it
    assert f"moved it aside to {set_aside[0]}" in completed.stdout
    assert "Indexed 2 run(s)" in completed.stdout
    listed = assay(database, "runs", "list", "--json")
    assert [run["run_id"] for run in json.loads(listed.stdout)["runs"]] == [AFTER, BEFORE]
    assert assay(database, "runs", "compare", BEFORE, AFTER).returncode == 0


def test_without_records_the_message_says_to_move_the_store_aside(tmp_path: Path) -> None:
    database = make_store(tmp_path)
    shutil.rmtree(database.parent / "records")
    OPENING_DAMAGE["overwritten header"](database)
    lines = _lines(assay(database, "runs", "show"))
    assert lines == [
        f"Error: the results store {database} is damaged (file is not a database); move it aside; there are no run "
        f"records in {database.parent / 'records'} to rebuild it from, so the next run starts a new store"
    ]


def _video_eval(folder: Path) -> Path:
    return make_eval(folder, case_yaml(0), case_name="numbers", frames=12, fps=10)


def test_a_video_run_into_a_damaged_store_warns_once_and_keeps_its_exit_code(tmp_path: Path) -> None:
    database = make_store(tmp_path)
    OPENING_DAMAGE["random bytes"](database)
    eval_dir = _video_eval(tmp_path)
    completed = assay(database, "video", "run", "--eval-dir", eval_dir, "--adapter", f"{eval_dir}/adapter.py:create_evaluator", "--quiet")
    assert completed.returncode == 0, completed.stdout + completed.stderr  # as with a healthy store
    assert "Traceback" not in completed.stderr
    warnings = [line for line in completed.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"Warning: run recorded in {database.parent / 'records'}")
    assert f"but not indexed: the results store {database} is damaged" in warnings[0]
    assert "`assay runs reindex`" in warnings[0]
    # The record survived, so the rebuilt index has the new run as well.
    rebuilt = assay(database, "runs", "reindex")
    assert "Indexed 3 run(s)" in rebuilt.stdout, rebuilt.stdout + rebuilt.stderr


def test_an_agent_run_into_a_damaged_store_keeps_its_exit_code(tmp_path: Path) -> None:
    project = tmp_path / "agentproject"
    shutil.copytree(REPO / "examples" / "agent", project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    healthy = assay(make_store(tmp_path / "healthy"), "agent", "run", "--project", project, cwd=project)
    database = make_store(tmp_path / "damaged")
    OPENING_DAMAGE["overwritten header"](database)
    damaged = assay(database, "agent", "run", "--project", project, cwd=project)
    assert damaged.returncode == healthy.returncode == 1  # the example fails one eval on purpose
    assert "Traceback" not in damaged.stderr
    warnings = [line for line in damaged.stderr.splitlines() if line.startswith("Warning")]
    assert len(warnings) == 1 and f"the results store {database} is damaged" in warnings[0], damaged.stderr


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_the_live_viewer_answers_a_json_error_not_a_traceback_per_request(tmp_path: Path) -> None:
    database = make_store(tmp_path)
    DAMAGED_UNITS_PAGE(database)
    with live_viewer(database, tmp_path) as viewer:
        status, listing = _get(f"{viewer.origin}/api/runs")
        assert status == 200 and listing["total"] == 2
        for _ in range(3):
            status, answer = _get(f"{viewer.origin}/api/units?run={AFTER}")
            assert status == 503 and answer["error"]["code"] == "store_unusable"
            assert f"the results store {database} is damaged" in answer["error"]["message"]
        status, answer = _get(f"{viewer.origin}/api/compare?a={BEFORE}&b={AFTER}")
        assert status == 503
    assert "Traceback" not in viewer.stderr() and viewer.stderr().strip() == ""


def test_reindex_names_an_unreadable_unit_line_and_indexes_the_rest_of_its_run(tmp_path: Path) -> None:
    database = make_store(tmp_path)
    units_file = database.parent / "records" / AFTER / "units.jsonl"
    lines = units_file.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[4] = lines[4][: len(lines[4]) // 2] + "\n"  # a line torn in the middle
    units_file.write_text("".join(lines), encoding="utf-8")
    completed = assay(database, "runs", "reindex")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "Indexed 2 run(s)" in completed.stdout and "Skipped an unreadable run record" not in completed.stdout
    assert f"Skipped an unreadable unit line (the rest of its run is indexed): {units_file}:5: JSONDecodeError" in completed.stdout
    shown = json.loads(assay(database, "runs", "show", AFTER, "--json").stdout)
    assert shown["unit_count"] == 15


def test_an_emptied_store_beside_run_records_says_to_reindex_not_that_nothing_was_recorded(tmp_path: Path) -> None:
    database = make_store(tmp_path)
    database.write_bytes(b"")  # emptied: the records of both runs are still beside it
    records = database.parent / "records"
    listed = assay(database, "runs", "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip() == (
        f"No runs in the index of {database}, but run records exist in {records}: "
        "`assay runs reindex` rebuilds the index from them."
    )
    shown = assay(database, "runs", "show")
    assert shown.returncode == 2
    assert shown.stderr.strip() == (
        f"Error: no run 'latest' in the store {database}; its index is empty, but run records exist in {records}: "
        "`assay runs reindex` rebuilds the index from them"
    )
    assert "Indexed 2 run(s)" in assay(database, "runs", "reindex").stdout
    assert AFTER in assay(database, "runs", "list").stdout
