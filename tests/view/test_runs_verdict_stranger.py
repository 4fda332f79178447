"""`assay runs compare / trend / flaky` as a stranger uses them, each in its own process against a real store:
what the text says, `--json` says too."""

from __future__ import annotations

import json
from pathlib import Path

from damaged_store import assay

from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import publish_run


def _publish_groups(database: Path, groups: int, *, runs: int = 6, broken: tuple[int, ...] = ()) -> None:
    """`runs` video runs of `groups` groups of ten units that always pass, but for the groups `broken` in the last run."""
    for run in range(runs):
        units = [UnitResult(f"g{group:02d}/case-{index}#1",
                            "failed" if run == runs - 1 and group in broken else "passed", group=f"g{group:02d}")
                 for group in range(groups) for index in range(10)]
        publish_run(RunManifest(f"video-202601{run + 1:02d}T000000Z-{run:08x}", "video", f"2026-01-{run + 1:02d}T00:00:00Z"),
                    units, database=database)


def test_the_json_of_a_comparison_has_the_regressed_group_the_text_names_past_the_first_twenty(tmp_path: Path) -> None:
    """`--limit` (20 unit ids per change kind) used to cut `judgement.groups` to the first 20 groups: the text named
    the regressed 25th group, `group_counts` counted it, and the groups of the JSON left it out."""
    database = tmp_path / "assay.db"
    _publish_groups(database, 25, broken=(24,))
    text = assay(database, "runs", "compare", "latest")
    assert text.returncode == 0, text.stderr
    assert "groups: 1 regressed, 24 inconclusive" in text.stdout
    assert any(line.startswith("  REGRESSED g24: Regressed:") for line in text.stdout.splitlines()), text.stdout
    for limit in ("20", "0"):
        shown = assay(database, "runs", "compare", "latest", "--json", "--limit", limit)
        assert shown.returncode == 0, shown.stderr
        judgement = json.loads(shown.stdout)["judgement"]
        assert judgement["group_counts"]["regressed"] == 1
        assert len(judgement["groups"]) == 25
        assert judgement["groups"]["g24"]["verdict"] == "regressed"
        assert f"  REGRESSED g24: {judgement['groups']['g24']['sentence']}" in text.stdout.splitlines()


def test_a_deterministic_unit_whose_history_disagrees_is_said_to_have_changed_since_the_baseline(tmp_path: Path) -> None:
    """The demo, run twice: the same doc case graded on a weak draft (red), then the finished one (green), twice.
    `compare latest` said "1 unit that failed every trial of its history passes now" of a unit whose history
    holds a pass: a deterministic unit is stable by the baseline run alone, and the text now says so."""
    database = tmp_path / "assay.db"
    for index, verdict in enumerate(("failed", "passed", "failed", "passed")):
        publish_run(RunManifest(f"doc-2026010{index + 1}T000000Z-0000000{index}", "doc", f"2026-01-0{index + 1}T00:00:00Z",
                                summary={"deterministic": True}),
                    [UnitResult("release-notes-v1/deterministic", verdict, group="release-notes-v1")], database=database)
    text = assay(database, "runs", "compare", "latest")
    assert text.returncode == 0, text.stderr
    assert "evidence: 3 run(s) of history; paired units stable in it 1, flaky 0, with too little history 0" in text.stdout
    assert "every trial of its history" not in text.stdout, text.stdout
    sentence = ("Improved: 1 unit that failed in the baseline passes now; 0 expected by chance (deterministic grading) "
                "(Poisson-binomial tail vs the suite's history, p < 1e-12, Holm-adjusted p < 1e-12); pass rate +100.0 points "
                "[+100.0, +100.0].")
    assert sentence in text.stdout.splitlines(), text.stdout
    assert json.loads(assay(database, "runs", "compare", "latest", "--json").stdout)["sentence"] == sentence
    # With a history that agrees (the first comparison), the stronger claim is still the true one.
    first = assay(database, "runs", "compare", "latest~3", "latest~2")
    assert "Improved: 1 unit that failed every trial of its history passes now" in first.stdout, first.stdout


def _publish_shards(database: Path) -> None:
    """A whole agent run of four evals, then the two shards of the next one (`--shard 1/2`, `--shard 2/2`)."""
    whole = [UnitResult(f"e{index}#1", "passed", group=f"e{index}") for index in range(4)]
    for run_id, day, units, shard in (("agent-20260201T000000Z-00000001", 1, whole, None),
                                      ("agent-20260202T000000Z-00000002", 2, whole[:2], "1/2"),
                                      ("agent-20260202T000001Z-00000003", 3, whole[2:], "2/2")):
        publish_run(RunManifest(run_id, "agent", f"2026-02-0{day}T00:00:00Z", identity={"project": "/repo/p"},
                                options={"shard": shard} if shard else {}), units, database=database)


def test_compare_latest_of_a_first_shard_says_it_is_a_shard_not_the_only_run_of_its_project(tmp_path: Path) -> None:
    """`assay agent run --shard 2/2` in CI, then `assay runs compare latest`: "… is the only agent run of its project in
    the store", with a whole run of that project right there. A shard's baseline is an earlier run of its shard."""
    database = tmp_path / "assay.db"
    _publish_shards(database)
    gated = assay(database, "runs", "compare", "latest", "--fail-on-regression")
    assert gated.returncode == 0 and gated.stderr == ""  # no baseline: nothing regressed (it was exit 2, a red CI job)
    assert gated.stdout.strip() == (
        "Inconclusive: no baseline. agent-20260202T000001Z-00000003 is shard 2/2 of an agent run, and no earlier run of "
        "shard 2/2 of its project is in the store to compare it with; compare the whole run once `assay runs merge` has "
        "combined its shards, or give a baseline run: `assay runs compare BEFORE AFTER`")


def test_two_shards_that_share_no_unit_are_not_said_to_name_their_units_differently(tmp_path: Path) -> None:
    """`runs compare latest~1 latest` after the two shards of a CI run: the hint was "--map renames the baseline's
    ids", but the units are named alike; each shard holds another part of the suite."""
    database = tmp_path / "assay.db"
    _publish_shards(database)
    compared = assay(database, "runs", "compare", "latest~1", "latest")
    assert compared.returncode == 0, compared.stderr
    first = compared.stdout.splitlines()[0]
    assert "--map" not in first, first
    assert first == ("0 unit(s) paired; 2 of the baseline and 2 of the candidate have no partner. "
                     "agent-20260202T000000Z-00000002 is shard 1/2 and agent-20260202T000001Z-00000003 is shard 2/2: a shard "
                     "holds a part of the suite, so compare two runs of one shard, or the whole runs `assay runs merge` makes "
                     "of the shards.")
    # A run with no unit at all (the empty shard of a suite smaller than its shards) has nothing to pair either.
    publish_run(RunManifest("agent-20260204T000000Z-00000004", "agent", "2026-02-04T00:00:00Z", identity={"project": "/repo/p"},
                            options={"shard": "3/3"}), [], database=database)
    empty = assay(database, "runs", "compare", "agent-20260201T000000Z-00000001", "latest").stdout.splitlines()[0]
    assert empty == ("0 unit(s) paired; 4 of the baseline and 0 of the candidate have no partner. "
                     "agent-20260204T000000Z-00000004 has no unit at all: there is nothing to pair."), empty


def test_regressed_groups_past_the_limit_are_counted_as_the_unit_lists_are(tmp_path: Path) -> None:
    """`--limit 1` with two regressed groups listed one and said nothing of the other (the unit lists say "… 1 more")."""
    database = tmp_path / "assay.db"
    _publish_groups(database, 4, broken=(1, 3))
    lines = assay(database, "runs", "compare", "latest", "--limit", "1").stdout.splitlines()
    start = lines.index("groups: 2 regressed, 2 inconclusive")
    assert lines[start + 1].startswith("  REGRESSED g01: Regressed:"), lines
    assert lines[start + 2] == "  … 1 more (--limit, --json)", lines
    assert lines[start + 3] == "Regressions (20):" and lines[start + 5] == "  … 19 more", lines


def test_a_trend_point_of_a_run_without_the_group_is_not_said_to_be_carried(tmp_path: Path) -> None:
    """`runs trend GROUP` for an eval added in the last run: the runs before it read "no unit judged (each was carried
    from an earlier run, skipped or ignored)", though they had no unit of the group at all."""
    database = tmp_path / "assay.db"
    old = [UnitResult("main/old#1", "passed", group="main/old")]
    runs = (("agent-20260301T000000Z-00000001", old), ("agent-20260302T000000Z-00000002", old + [
        UnitResult("main/new#1", "passed", group="main/new")]),
        ("agent-20260303T000000Z-00000003", [UnitResult(unit.unit_id, "passed", carried_from={
            "run_id": "agent-20260302T000000Z-00000002", "unit_id": unit.unit_id}, group=unit.group) for unit in old] + [
            UnitResult("main/new#1", "failed", group="main/new")]))
    for day, (run_id, units) in enumerate(runs, start=1):
        publish_run(RunManifest(run_id, "agent", f"2026-03-0{day}T00:00:00Z", identity={"project": "/p"}), units,
                    database=database)
    trend = assay(database, "runs", "trend", "main/new")
    assert trend.returncode == 0, trend.stderr
    assert trend.stdout.splitlines()[1] == "  agent-20260301T000000Z-00000001     n/a  no unit of the group in this run"
    carried = assay(database, "runs", "trend", "main/old").stdout.splitlines()
    assert carried[-1] == ("  agent-20260303T000000Z-00000003     n/a  no unit judged (each was carried from an earlier run, "
                           "skipped or ignored)"), carried
    points = json.loads(assay(database, "runs", "trend", "main/new", "--json").stdout)["points"]
    assert [(point["units"], point["pass_rate"]) for point in points] == [(0, None), (1, 1.0), (1, 0.0)]


def test_a_misspelt_group_of_another_kinds_series_points_at_a_run_that_has_its_groups(tmp_path: Path) -> None:
    """`runs trend GROUP --kind agent` in a store whose latest run is a doc run: the error said "`assay runs show latest`
    lists its groups", which lists the doc run's groups, none of the agent series'."""
    database = tmp_path / "assay.db"
    publish_run(RunManifest("agent-20260301T000000Z-00000001", "agent", "2026-03-01T00:00:00Z"),
                [UnitResult("baseline/orders/status#1", "passed", group="baseline/orders/status")], database=database)
    publish_run(RunManifest("doc-20260302T000000Z-00000002", "doc", "2026-03-02T00:00:00Z"),
                [UnitResult("release-notes-v1/deterministic", "passed", group="release-notes-v1")], database=database)
    refused = assay(database, "runs", "trend", "baseline/order", "--kind", "agent")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.strip() == (
        "Error: no unit of the group 'baseline/order' was judged in the last 1 runs of agent; did you mean "
        "'baseline/orders'? (`assay runs show agent-20260301T000000Z-00000001` lists its groups)")
    shown = assay(database, "runs", "show", "agent-20260301T000000Z-00000001")
    assert "baseline/orders/status" in shown.stdout
    # The latest run's own series still says `latest`.
    assert "(`assay runs show latest` lists its groups)" in assay(database, "runs", "trend", "release-notes").stderr


def test_the_no_baseline_json_has_the_fields_every_comparison_has(tmp_path: Path) -> None:
    """A script reading `history_runs` (or `counts`, `units`) of each CI job's `runs compare latest --json` met a KeyError
    on the first job's, which has no baseline yet."""
    database = tmp_path / "assay.db"
    _publish_shards(database)
    document = json.loads(assay(database, "runs", "compare", "latest", "--json").stdout)
    assert document["verdict"] == "inconclusive" and document["before"] is None
    assert document["history_runs"] == 0 and document["before_pass_rate"] is None
    assert document["counts"] == {"regressions": 0, "fixes": 0, "still_failing": 0, "still_passing": 0, "new": 0,
                                  "removed": 0, "changed_other": 0}
    assert all(ids == [] for ids in document["units"].values()) and "regressions" in document["units"]


def test_a_backwards_comparison_and_one_of_two_projects_are_said(tmp_path: Path) -> None:
    """`runs compare latest latest~1` (BEFORE recorded after AFTER) read a regression as a fix and passed
    `--fail-on-regression` without a word; two projects whose units share names paired as one suite, silently."""
    database = tmp_path / "assay.db"
    for day, project, verdict in ((1, "/p", "passed"), (2, "/p", "failed"), (3, "/q", "passed")):
        publish_run(RunManifest(f"agent-2026030{day}T000000Z-0000000{day}", "agent", f"2026-03-0{day}T00:00:00Z",
                                identity={"project": project}),
                    [UnitResult("main/e0#1", verdict, group="main"), UnitResult("main/e1#1", "passed", group="main")],
                    database=database)
    backwards = assay(database, "runs", "compare", "agent-20260302T000000Z-00000002", "agent-20260301T000000Z-00000001")
    assert ("Note: BEFORE (agent-20260302T000000Z-00000002) was recorded after AFTER (agent-20260301T000000Z-00000001), "
            "so what changed is read backwards: a unit that broke since AFTER counts as a fix. `assay runs compare "
            "agent-20260301T000000Z-00000001 agent-20260302T000000Z-00000002` reads it forwards.") in backwards.stdout.splitlines()
    projects = assay(database, "runs", "compare", "agent-20260302T000000Z-00000002", "agent-20260303T000000Z-00000003",
                     "--json")
    assert json.loads(projects.stdout)["notes"] == [
        "Note: the runs are of two projects (/p, then /q); their units pair by name and are judged with the history of /p."]
    forwards = assay(database, "runs", "compare", "agent-20260301T000000Z-00000001", "agent-20260302T000000Z-00000002")
    assert "Note:" not in forwards.stdout, forwards.stdout  # one project, in order: nothing to say
