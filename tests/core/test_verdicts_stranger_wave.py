"""`assay runs compare` as a team lead gating CI on it, each command in its own process against a real store: the
verdict names the units it rests on, and a candidate is never its own history."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import publish_run


def _assay(database: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, "ASSAY_STORE": str(database)})


def _publish(database: Path, day: int, units: list[UnitResult]) -> str:
    run_id = f"agent-202601{day:02d}T000000Z-{day:08x}"
    publish_run(RunManifest(run_id, "agent", f"2026-01-{day:02d}T00:00:00Z", identity={"project": "/repo/p"}), units,
                database=database)
    return run_id


def test_a_unit_that_regressed_only_in_new_attempts_is_named_by_the_text(tmp_path: Path) -> None:
    """Five runs of one attempt, then `--attempts 3`, eval e0 failing attempts 2 and 3: "Regressed: 1 unit that passed
    every trial of its history fails now" (exit 1 under --fail-on-regression), and no line of the text named that
    unit: its failing attempts pair with nothing, so they were only among the 40 new trials (only `--json`'s
    `decided_by.flips` had it)."""
    database = tmp_path / "assay.db"
    for day in range(1, 6):  # (five trials of history make a clean unit stable)
        _publish(database, day, [UnitResult(f"main/e{index}#1", "passed", group="main") for index in range(20)])
    _publish(database, 6, [UnitResult(f"main/e{index}#{attempt}", "failed" if index == 0 and attempt > 1 else "passed",
                                      group="main") for index in range(20) for attempt in (1, 2, 3)])
    gated = _assay(database, "runs", "compare", "latest", "--fail-on-regression")
    assert gated.returncode == 1, gated.stdout + gated.stderr
    lines = gated.stdout.splitlines()
    assert any(line.startswith("Regressed: 1 unit that passed every trial of its history fails now") for line in lines)
    start = lines.index("Regressions in new trials (1):")
    assert lines[start + 1] == "  main/e0"
    assert lines[start + 2] == "New (40):"  # the new trials themselves are still listed after it
    document = json.loads(_assay(database, "runs", "compare", "latest", "--json").stdout)
    assert document["judgement"]["decided_by"]["flips"] == ["main/e0"]  # the same unit the text names
    # A verdict whose units are listed as regressions adds no such list (the docs' example is unchanged).
    _publish(database, 7, [UnitResult(f"main/e{index}#{attempt}", "failed" if index == 1 else "passed", group="main")
                           for index in range(20) for attempt in (1, 2, 3)])
    paired = _assay(database, "runs", "compare", "latest").stdout
    assert "Regressions (3):\n  main/e1#1\n" in paired and "in new trials" not in paired, paired


def test_a_baseline_recorded_after_the_candidate_does_not_count_the_candidate_as_history(tmp_path: Path) -> None:
    """Ten green runs, a candidate in which e0 fails, then a green run of the main branch; `compare MAIN CANDIDATE`
    (a pull request's run compared with a later baseline, or `compare latest latest~1`) read the baseline's series,
    which holds the candidate: e0's one failure, the candidate's own, made it "flaky", its regression was noise, and
    `--fail-on-regression` passed (exit 0). The candidate is left out of the history: e0 passed every run before."""
    database = tmp_path / "assay.db"
    for day in range(1, 13):
        _publish(database, day, [UnitResult(f"main/e{index}#1", "failed" if day == 11 and index == 0 else "passed",
                                            group="main") for index in range(20)])
    gated = _assay(database, "runs", "compare", "latest", "latest~1", "--fail-on-regression")
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert ("evidence: 10 run(s) of history; paired units stable in it 20, flaky 0, with too little history 0"
            in gated.stdout.splitlines()), gated.stdout
    document = json.loads(_assay(database, "runs", "compare", "latest", "latest~1", "--json").stdout)
    assert (document["verdict"], document["regression"], document["history_runs"]) == ("regressed", True, 10)
    assert document["judgement"]["decided_by"]["flips"] == ["main/e0"]
    assert document["judgement"]["unit_families"] == {"stable": 20, "flaky": 0, "short": 0}
    # The oracle: 20 units with the same history are 20 draws of one chance q of failing (expected = 20 q), so the
    # Poisson-binomial tail of at least one flip is scipy's binomial survival function at 0.
    from scipy.stats import binom

    decided = document["judgement"]["decided_by"]
    assert (decided["family"], decided["units"], decided["observed"]) == ("stable-pass", 20, 1)
    assert abs(decided["p_value"] - binom.sf(0, 20, decided["expected"] / 20)) < 1e-12


def test_the_evidence_line_counts_the_units_weighed_whose_baseline_carried_them(tmp_path: Path) -> None:
    """After an agent run that carried every unit, `compare latest` weighed the units judged now against their history
    and said "Regressed: 1 unit that passed every trial of its history fails now" under an evidence line of "paired
    units stable in it 0, flaky 0, with too little history 0", as if nothing were weighed."""
    database = tmp_path / "assay.db"
    ids = [_publish(database, day, [UnitResult(f"main/e{index}#1", "passed", group="main") for index in range(3)])
           for day in range(1, 7)]
    _publish(database, 7, [UnitResult(f"main/e{index}#1", "passed", group="main",
                                      carried_from={"run_id": ids[-1], "unit_id": f"main/e{index}#1"}) for index in range(3)])
    _publish(database, 8, [UnitResult(f"main/e{index}#1", "failed" if index == 0 else "passed", group="main")
                           for index in range(3)])
    lines = _assay(database, "runs", "compare", "latest").stdout.splitlines()
    assert ("evidence: 7 run(s) of history; paired units stable in it 0, flaky 0, with too little history 0; and 3 units "
            "judged now but not in the baseline (carried or skipped there), weighed against their history") in lines, lines
    assert any(line.startswith("Regressed: 1 unit that passed every trial of its history fails now") for line in lines)
