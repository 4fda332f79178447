"""`assay runs compare` as a CI engineer meets it for the first time: two real agent projects recorded in one store
(the shop of `docs/examples/history` and `assay agent init`'s starter), and runs of two kinds that share no unit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
ASSAY = [sys.executable, "-m", "assay"]


def _assay(store: Path, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ASSAY, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "ASSAY_STORE": str(store), "NO_COLOR": "1", **env})


def _two_projects(tmp_path: Path) -> tuple[Path, str, str]:
    """The shop's run, then the starter's: the latest two runs of the store, of one kind, two projects."""
    store = tmp_path / "store" / "assay.db"
    shop, starter = tmp_path / "shop", tmp_path / "starter"
    shutil.copytree(REPOSITORY / "docs" / "examples" / "history", shop)
    starter.mkdir()
    assert _assay(store, starter, "agent", "init").returncode == 0
    assert _assay(store, shop, "agent", "run", "--rerun", "all", SHOP_RUN="1").returncode in (0, 1)
    assert _assay(store, starter, "agent", "run").returncode in (0, 1)
    runs = json.loads(_assay(store, starter, "runs", "list", "--json").stdout)["runs"]
    return store, runs[1]["run_id"], runs[0]["run_id"]


def test_two_projects_that_share_no_unit_are_said_to_be_two_projects_and_the_verdict_says_what_to_do(tmp_path) -> None:
    """The shop's run compared with the starter's: the first line said "The runs name their units differently:
    --map renames the baseline's ids" (the two suites are not one renamed), a Note said that "their units pair by
    name and are judged with the history of" the shop (none paired), and the verdict read "Inconclusive: no unit was
    judged in both runs. It covers the 0 paired units only: 1 new unit and 12 removed units count in the pass rates
    but not in it.", which leaves a CI engineer with nothing to do."""
    store, shop_run, starter_run = _two_projects(tmp_path)
    done = _assay(store, tmp_path, "runs", "compare", shop_run, starter_run, "--fail-on-regression")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        f"0 unit(s) paired; 12 of the baseline and 1 of the candidate have no partner. These are runs of two projects "
        f"({tmp_path / 'shop'}, then {tmp_path / 'starter'}), which share no unit: compare two runs of one project "
        "(`assay runs compare latest` takes the run of the latest's kind and project before it).")
    assert "--map" not in done.stdout and "pair by name" not in done.stdout
    sentence = ("Inconclusive: the runs share no unit (1 new unit and 12 removed units), so there is no change to weigh. "
                "Compare two runs of one suite (`assay runs compare latest` takes the run of the same kind and project "
                "before the latest).")
    assert sentence in lines and "paired units only" not in done.stdout
    document = json.loads(_assay(store, tmp_path, "runs", "compare", shop_run, starter_run, "--json").stdout)
    assert (document["verdict"], document["sentence"], document.get("notes")) == ("inconclusive", sentence, None)
    strict = _assay(store, tmp_path, "runs", "compare", shop_run, starter_run, "--fail-on-inconclusive")
    assert strict.returncode == 1 and sentence in strict.stdout.splitlines()


def test_two_kinds_that_share_no_unit_get_a_verdict_that_says_what_to_do(tmp_path) -> None:
    """An agent run against a doc run: the pairing line said to compare two runs of one kind, but the verdict under it
    still read "It covers the 0 paired units only: 1 new unit and 1 removed unit count in the pass rates"."""
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    store = tmp_path / "assay.db"
    publish_run(RunManifest("agent-1", "agent", "2026-01-01T00:00:00Z", identity={"project": "/repo/agent"}),
                [UnitResult("e/x#1", "passed")], database=store)
    publish_run(RunManifest("doc-1", "doc", "2026-01-02T00:00:00Z"),
                [UnitResult("case/deterministic", "failed")], database=store)
    done = _assay(store, tmp_path, "runs", "compare", "agent-1", "doc-1", "--fail-on-regression")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    lines = done.stdout.splitlines()
    assert "These are runs of two kinds (agent, then doc)" in lines[0]
    assert ("Inconclusive: the runs share no unit (1 new unit and 1 removed unit), so there is no change to weigh. "
            "Compare two runs of one suite") in done.stdout
    assert "paired units only" not in done.stdout and "--map" not in done.stdout  # (no help for two kinds)


def test_runs_that_still_pair_keep_the_sentence_that_says_what_the_verdict_covers(tmp_path) -> None:
    """The fix above is for runs that share no unit: runs that pair some units still say which the verdict covers
    (one of them as "over 1 paired unit" and "the 1 paired unit", not "1 paired units")."""
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    store = tmp_path / "assay.db"
    publish_run(RunManifest("agent-1", "agent", "2026-01-01T00:00:00Z", identity={"project": "/repo/agent"}),
                [UnitResult("e/x#1", "passed")], database=store)
    publish_run(RunManifest("agent-2", "agent", "2026-01-02T00:00:00Z", identity={"project": "/repo/agent"}),
                [UnitResult("e/x#1", "passed"), UnitResult("e/y#1", "passed")], database=store)
    sentence = json.loads(_assay(store, tmp_path, "runs", "compare", "agent-1", "agent-2", "--json").stdout)["sentence"]
    assert " over 1 paired unit; " in sentence, sentence
    assert sentence.endswith(" It covers the 1 paired unit only: 1 new unit counts in the pass rates but not in it."), sentence


def test_trend_of_an_evaluator_named_as_the_console_names_it_points_at_its_whole_group_path(tmp_path) -> None:
    """`assay video run` prints a table row "Lamp colour (lamp_color)"; `assay runs trend lamp_color` answered only
    "no unit of the group 'lamp_color' was judged …", with no hint that the group is `traffic-light/lamp_color`
    (difflib finds the whole path too far from its last part). A misspelt last part is found the same way."""
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    store = tmp_path / "assay.db"
    for day in (1, 2):
        publish_run(RunManifest(f"video-{day}", "video", f"2026-01-0{day}T00:00:00Z", identity={"eval_dir": "/repo/eval"}),
                    [UnitResult(f"traffic-light/lamp_color/{index}@{index}s#1", "passed", group="traffic-light/lamp_color")
                     for index in range(3)]
                    + [UnitResult("traffic-light/may_go/0@0s#1", "passed", group="traffic-light/may_go")], database=store)
    expected = ("Error: no unit of the group {!r} was judged in the last 2 runs of video; did you mean "
                "'traffic-light/lamp_color'? A group is named by its whole path (`assay runs show latest` lists its groups)")
    for given in ("lamp_color", "lamp_colr"):
        refused = _assay(store, tmp_path, "runs", "trend", given)
        assert (refused.returncode, refused.stdout, refused.stderr.strip()) == (2, "", expected.format(given)), refused.stderr
    # A misspelt whole path keeps the hint it had, and the whole path is the trend.
    assert "did you mean 'traffic-light/may_go'? (`" in _assay(store, tmp_path, "runs", "trend", "traffic-light/may_g").stderr
    shown = _assay(store, tmp_path, "runs", "trend", "traffic-light/lamp_color")
    assert shown.returncode == 0 and shown.stdout.startswith("video traffic-light/lamp_color: pass rate over 2 run(s)")


def test_a_run_of_no_unit_gets_a_verdict_that_names_it_and_says_what_to_do(tmp_path) -> None:
    """`compare latest` after a run that judged nothing (every eval filtered out): the verdict read "Inconclusive: no
    unit was judged in both runs. It covers the 0 paired units only: 1 removed unit counts in the pass rates but not
    in it.", and "compare two runs of one suite" would send the reader back to the same `compare latest`."""
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    store = tmp_path / "assay.db"
    publish_run(RunManifest("agent-1", "agent", "2026-01-01T00:00:00Z", identity={"project": "/repo/agent"}),
                [UnitResult("e/x#1", "passed"), UnitResult("e/y#1", "passed")], database=store)
    publish_run(RunManifest("agent-2", "agent", "2026-01-02T00:00:00Z", identity={"project": "/repo/agent"}), [],
                database=store)
    sentence = ("Inconclusive: agent-2 has no unit judged, so there is nothing to compare with agent-1's 2 units. "
                "`assay runs show agent-2` says what it ran; compare a run that judged units.")
    done = _assay(store, tmp_path, "runs", "compare", "latest", "--fail-on-regression")
    assert (done.returncode, done.stderr) == (0, "") and sentence in done.stdout.splitlines(), done.stdout
    assert "agent-2 has no unit at all: there is nothing to pair." in done.stdout.splitlines()[1]
    # Given the other way round, the empty run is still the one named.
    document = json.loads(_assay(store, tmp_path, "runs", "compare", "agent-2", "agent-1", "--json").stdout)
    assert document["sentence"] == sentence and document["verdict"] == "inconclusive"
