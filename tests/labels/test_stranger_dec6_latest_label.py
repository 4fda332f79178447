"""Which of a labeller's labels of a unit counts once an import brings labels made elsewhere: the one made last, not
the one appended last. ann labelled on her laptop, changed her mind in the team's store a day later, and then
imported her laptop's labels there: her old answer came back."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from judged_runs import agent_unit, publish

from assay.core.labels.store import LabelBook
from assay.core.labels.units import make_label, read_unit
from assay.core.results_store import SqliteRunStore

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _store(path: Path, verdict: str, when: datetime) -> None:
    """The run both stores hold, and ann's label of its first unit."""
    publish(path, "agent", [agent_unit(1, 0.9), agent_unit(2, 0.2)], run_id="agent-run-1", identity={"project": "/p"})
    with SqliteRunStore(path) as store:
        LabelBook(store).add([make_label(read_unit(store, "agent-run-1", "main/eval1#1"), "ann", verdict=verdict, now=when)])


def _assay(*arguments: str, store: Path) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "ASSAY_STORE": str(store)})


def _anns_answer(store: Path) -> str:
    """ann's answer as `judge agreement` counts it: the row of the confusion matrix that holds the unit."""
    result = _assay("judge", "agreement", "--labeller", "ann", "--json", store=store)
    assert result.returncode == 0, result.stderr
    judge = json.loads(result.stdout)["judges"][0]
    assert judge["binary"]["confusion"]["labels"] == ["pass", "fail"]
    rows = judge["binary"]["confusion"]["matrix"]
    return "pass" if sum(rows[0]) else "fail"


@pytest.fixture
def stores(tmp_path, monkeypatch) -> tuple[Path, Path]:
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "unused" / "assay.db"))  # each command names its store
    return tmp_path / "laptop" / "assay.db", tmp_path / "team" / "assay.db"


def test_an_older_label_imported_after_a_newer_one_does_not_take_its_place(stores, tmp_path):
    laptop, team = stores
    _store(laptop, "pass", T0)
    _store(team, "fail", T0 + timedelta(days=1))
    shared = tmp_path / "laptop.jsonl"
    assert _assay("labels", "export", "-o", str(shared), store=laptop).returncode == 0
    assert _anns_answer(team) == "fail"
    imported = _assay("labels", "import", str(shared), store=team)
    assert imported.stdout == "Imported 1 label(s); 0 already present.\n", imported.stderr
    assert _anns_answer(team) == "fail"  # it was "pass": the label of the day before, appended last
    # and a label made later still, imported later, does count
    later = json.loads(shared.read_text(encoding="utf-8"))
    del later["label_id"]
    later["created_at"] = "2026-12-03T09:00:00.000Z"
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps(later) + "\n", encoding="utf-8")
    assert _assay("labels", "import", str(newer), store=team).returncode == 0
    assert _anns_answer(team) == "pass"


def test_times_with_and_without_fractions_of_a_second_are_ordered_as_the_moments_are(stores, tmp_path):
    """Import accepts `09:00:00Z` and `09:00:00.5Z` alike; compared as text, the first sorts after the second."""
    laptop, team = stores
    _store(laptop, "pass", T0)
    exported = _assay("labels", "export", store=laptop).stdout
    made = json.loads(exported)
    del made["label_id"]
    lines = [{**made, "verdict": "fail", "created_at": "2026-12-01T09:00:00.5Z"},
             {**made, "verdict": "pass", "created_at": "2026-12-01T09:00:00Z"}]
    hand = tmp_path / "hand.jsonl"
    hand.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    publish(team, "agent", [agent_unit(1, 0.9), agent_unit(2, 0.2)], run_id="agent-run-1", identity={"project": "/p"})
    assert _assay("labels", "import", str(hand), store=team).returncode == 0
    assert _anns_answer(team) == "fail"  # half a second after the other
