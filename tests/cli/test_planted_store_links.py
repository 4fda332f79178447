"""A planted `.assay` link (or a store file linked to another program's SQLite database) cannot move
what runs record out of the checkout, nor put assay's tables into someone else's database: video,
agent and doc runs in real processes. A location chosen with ASSAY_STORE is taken as it is."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
for helpers in ("doc", "video", "view"):
    if str(TESTS / helpers) not in sys.path:
        sys.path.insert(0, str(TESTS / helpers))

from doc_suites import make_suite  # noqa: E402
from filled_store import case_yaml  # noqa: E402
from video_evals import make_eval  # noqa: E402

EXAMPLES = TESTS.parent / "examples"


def assay(*args: object, cwd: Path, store: Path | None = None) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key != "ASSAY_STORE"}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH", "")]))
    if store is not None:
        environment["ASSAY_STORE"] = str(store)
    return subprocess.run(
        [sys.executable, "-m", "assay", *map(str, args)], cwd=cwd, env=environment, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A repository with a doc suite (its root), a video eval dir and an agent project."""
    suite = make_suite(tmp_path)
    make_eval(suite.repo / "video", case_yaml(0), case_name="numbers", frames=12, fps=10)
    shutil.copytree(EXAMPLES / "agent", suite.repo / "shop", ignore=shutil.ignore_patterns("__pycache__", ".assay"))
    return suite.repo


def _runs(checkout: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    eval_dir = next(path.parent for path in (checkout / "video").rglob("adapter.py"))
    return {
        "doc": assay("doc", "run-case", "--case", "case-one", "--candidate", "candidates/good.md", cwd=checkout),
        "video": assay("video", "run", "--eval-dir", eval_dir, "--adapter", f"{eval_dir}/adapter.py:create_evaluator",
                       "--quiet", cwd=checkout),  # fmt: skip
        "agent": assay("agent", "run", "--project", checkout / "shop", "--quiet", cwd=checkout),
    }


def test_a_planted_assay_link_keeps_every_kind_from_writing_outside_the_checkout(checkout: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, checkout / ".assay")
    (checkout / "shop" / ".assay").symlink_to(outside)  # the agent project's own checkpoints folder too
    refused = f"{checkout / '.assay'} is a link (to {outside})"
    runs = _runs(checkout)
    # The runs themselves still run and report; only their record is refused, in one warning line.
    for kind in ("doc", "video"):
        done = runs[kind]
        assert done.returncode == 0, done.stdout + done.stderr
        [warning] = [line for line in done.stderr.splitlines() if line.startswith("Warning")]
        assert warning.startswith("Warning: run record not stored: ") and refused in warning, warning
    # An agent run keeps its checkpoints in the project's .assay: with it linked, it does not start.
    agent = runs["agent"]
    assert agent.returncode == 2, agent.stdout + agent.stderr
    assert f"{checkout / 'shop' / '.assay'} is a link (to {outside})" in agent.stderr
    assert "Traceback" not in agent.stderr
    listed = assay("runs", "list", cwd=checkout)
    assert listed.returncode == 2 and refused in listed.stderr
    assert list(outside.iterdir()) == []  # nothing was written through the link


def test_a_store_file_linked_to_another_programs_database_gets_no_tables(checkout: Path, tmp_path: Path) -> None:
    theirs = tmp_path / "theirs.db"
    with closing(sqlite3.connect(theirs)) as connection:
        connection.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        connection.execute("INSERT INTO users (name) VALUES ('ada')")
        connection.commit()
    before = theirs.read_bytes()
    (checkout / ".assay").mkdir()
    os.symlink(theirs, checkout / ".assay" / "assay.db")
    doc = assay("doc", "run-case", "--case", "case-one", "--candidate", "candidates/good.md", cwd=checkout)
    assert doc.returncode == 0, doc.stdout + doc.stderr
    assert f"{checkout / '.assay' / 'assay.db'} is a link (to {theirs})" in doc.stderr
    assert theirs.read_bytes() == before

    # Chosen on purpose with ASSAY_STORE, the file is used as it is, but still gets none of assay's tables.
    chosen = assay("doc", "run-case", "--case", "case-one", "--candidate", "candidates/good.md", cwd=checkout, store=theirs)
    assert chosen.returncode == 0, chosen.stdout + chosen.stderr
    [warning] = chosen.stderr.splitlines()
    assert warning.startswith(f"Warning: run recorded in {tmp_path / 'records'}")
    assert f"the file {theirs} is not an assay results store: it holds tables assay did not make (users)" in warning
    with closing(sqlite3.connect(theirs)) as connection:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        assert tables == ["users"] and connection.execute("PRAGMA application_id").fetchone()[0] == 0
    for command in (["runs", "list"], ["runs", "reindex"]):
        refused = assay(*command, cwd=checkout, store=theirs)
        assert refused.returncode == 2 and "is not an assay results store" in refused.stderr, refused.stderr
    with closing(sqlite3.connect(theirs)) as connection:
        assert [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["users"]


def test_a_linked_location_chosen_with_assay_store_is_used(checkout: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "shared"
    elsewhere.mkdir()
    os.symlink(elsewhere, checkout / ".assay")
    store = checkout / ".assay" / "assay.db"
    done = assay("doc", "run-case", "--case", "case-one", "--candidate", "candidates/good.md", cwd=checkout, store=store)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    listed = json.loads(assay("runs", "list", "--json", cwd=checkout, store=store).stdout)
    assert len(listed["runs"]) == 1 and (elsewhere / "assay.db").is_file()
