"""`assay runs list | show | compare` over a store filled by real video, agent and doc runs; `--junit` files."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from xml.etree import ElementTree

import pytest

from filled_store import FilledStore, invoke_runs


def test_every_kind_records_its_run(store_env: FilledStore) -> None:
    result = invoke_runs("runs", "list", "--json")
    assert result.exit_code == 0, result.output
    runs = {run["run_id"]: run for run in json.loads(result.output)["runs"]}
    assert set(runs) == {store_env.video_before, store_env.video_after, store_env.agent, store_env.doc_before, store_env.doc_after}
    assert runs[store_env.video_before]["counts"]["passed"] == 8 and runs[store_env.video_before]["success"] is True
    assert runs[store_env.video_after]["counts"]["failed"] == 8 and runs[store_env.video_after]["exit_code"] == 1
    assert runs[store_env.agent]["counts"] == {"passed": 7, "failed": 1, "errored": 0, "skipped": 0, "ignored": 0}
    assert runs[store_env.doc_after]["counts"]["failed"] == 1


def test_runs_list_filters_by_kind_and_prints_a_table(store_env: FilledStore) -> None:
    result = invoke_runs("runs", "list", "--kind", "video")
    assert result.exit_code == 0
    assert store_env.video_after in result.output and store_env.agent not in result.output
    assert "100.0%" in result.output and "0.0%" in result.output


def test_a_search_that_matches_nothing_says_so_not_that_the_store_is_empty(store_env: FilledStore) -> None:
    result = invoke_runs("runs", "list", "--search", "zzz-no-such-run")
    assert result.exit_code == 0
    assert result.output.strip() == "No runs matching 'zzz-no-such-run'; `assay runs list` shows them all."


def test_runs_show_lists_gates_groups_and_failing_units(store_env: FilledStore) -> None:
    result = invoke_runs("runs", "show", store_env.video_after)
    assert result.exit_code == 0, result.output
    assert "numbers/number" in result.output
    assert "FAILED numbers/number/3@0.3s#1 expected=103 observed=3" in result.output
    document = json.loads(invoke_runs("runs", "show", store_env.agent, "--json").output)
    assert document["manifest" if "manifest" in document else "kind"] == "agent"
    assert document["identity"]["experiments"]["baseline"]["agent"]
    assert [unit["unit_id"] for unit in document["failing_units"]] == ["baseline/wrong_on_purpose#1"]
    assert document["usage"]["input_tokens"] > 0


def test_video_unit_keeps_the_frame_reference_and_git_state(store_env: FilledStore) -> None:
    document = json.loads(invoke_runs("runs", "show", store_env.video_after, "--json").output)
    unit = document["failing_units"][0]
    assert unit["artifacts"]["video"] == str(store_env.video_path.resolve())
    assert unit["artifacts"]["timestamp_s"] == 0.0
    assert unit["detail"]["trial"] == 1
    assert {gate["name"] for gate in document["gates"]}  # video gates are carried over
    assert "adapter_config_keys" in document["identity"]


def test_compare_finds_significant_regressions_and_gates_ci(store_env: FilledStore) -> None:
    result = invoke_runs("runs", "compare", store_env.video_before, store_env.video_after, "--json")
    assert result.exit_code == 0  # without --fail-on-regression compare only reports
    document = json.loads(result.output)
    assert document["counts"]["regressions"] == 8 and document["counts"]["fixes"] == 0
    assert list(document["counts"]) == ["regressions", "fixes", "still_failing", "still_passing", "new", "removed",
                                        "changed_other"]  # as the text's "paired units" line, still passing too
    assert document["counts"]["still_passing"] == document["paired"]["both_passed"]
    assert document["pass_rate_difference"] == -1.0
    assert document["test"]["p_value"] == 2 / 256
    assert document["regression"] is True and document["verdict"] == "regressed"
    assert document["judgement"]["decided_by"]["family"] == "short-history"  # no history: the sign test decides
    gated = invoke_runs("runs", "compare", store_env.video_before, store_env.video_after, "--fail-on-regression")
    assert gated.exit_code == 1
    assert document["sentence"] in gated.output.splitlines()  # the sentence, the JSON and the exit code agree
    assert document["sentence"].startswith("Regressed: units with too little history (8): 0 changed for the better, 8 for the worse")
    # Eight single-trial flips of units with no history: p = 2/256, not enough at alpha 0.001.
    strict = invoke_runs("runs", "compare", store_env.video_before, store_env.video_after, "--fail-on-regression", "--alpha", "0.001")
    assert strict.exit_code == 0 and "Inconclusive" in strict.output
    stricter = invoke_runs("runs", "compare", store_env.video_before, store_env.video_after, "--fail-on-inconclusive",
                           "--alpha", "0.001")
    assert stricter.exit_code == 1
    backwards = invoke_runs("runs", "compare", store_env.video_after, store_env.video_before, "--fail-on-regression")
    assert backwards.exit_code == 0 and "Improved" in backwards.output  # fixes never gate


@pytest.mark.parametrize("option, value, words", [
    ("--alpha", "0", "greater than or equal to 1e-06"), ("--alpha", "1e-300", "greater than or equal to 1e-06"),
    ("--alpha", "nan", "a number from 1e-06 to 0.5"), ("--alpha", "1", "less than or equal to 0.5"),
    ("--margin", "nan", "a number from 0 to 1"), ("--power", "nan", "a number from 0.5 to 0.99"),
])
def test_a_statistical_option_no_test_can_use_is_a_usage_error(store_env: FilledStore, option: str, value: str,
                                                                words: str) -> None:
    """They used to end in a traceback (exit 1, the code of a regression found), or, at --alpha 1, in a verdict
    that contradicts itself ("TOST p = 0.587 < alpha 1")."""
    result = invoke_runs("runs", "compare", store_env.video_before, store_env.video_after, option, value)
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}': Input should be {words}" in result.output
    assert "Traceback" not in result.output


def test_a_single_deterministic_regression_fails_the_gate(store_env: FilledStore) -> None:
    result = invoke_runs("runs", "compare", store_env.doc_before, store_env.doc_after, "--fail-on-regression")
    assert result.exit_code == 1, result.output
    assert "regressions 1, fixes 0" in result.output
    assert "release-notes-v1/deterministic" in result.output
    assert "Regressed: 1 unit that passed every trial of its history fails now" in result.output  # deterministic grading


def test_four_single_trial_flips_in_a_small_suite_are_inconclusive_unless_the_runs_are_deterministic(tmp_path) -> None:
    # Pass rate 93.8% -> 68.8%, 4 regressions and no fixes, McNemar p = 0.125: chance cannot be ruled out,
    # unless the kind says its verdicts cannot vary by chance.
    from damaged_store import assay

    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    database = tmp_path / "assay.db"
    before = [UnitResult(f"case-{index:02d}", "failed" if index == 15 else "passed") for index in range(16)]
    after = [UnitResult(unit.unit_id, "failed" if index < 4 else unit.verdict) for index, unit in enumerate(before)]
    publish_run(RunManifest("doc-before", "doc", "2026-01-01T00:00:00Z"), before, database=database)
    publish_run(RunManifest("doc-after", "doc", "2026-01-02T00:00:00Z"), after, database=database)
    gated = assay(database, "runs", "compare", "doc-before", "doc-after", "--fail-on-regression")
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert "pass rate 93.8% → 68.8%" in gated.stdout and "McNemar exact p = 0.125" in gated.stdout
    assert any(line.startswith("Inconclusive: the pass rate moved -25.0 points") for line in gated.stdout.splitlines())
    strict = assay(database, "runs", "compare", "doc-before", "doc-after", "--fail-on-inconclusive")
    assert strict.returncode == 1
    summary = {"deterministic": True}
    publish_run(RunManifest("doc-before2", "doc", "2026-01-03T00:00:00Z", summary=summary), before, database=database)
    publish_run(RunManifest("doc-after2", "doc", "2026-01-04T00:00:00Z", summary=summary), after, database=database)
    deterministic = assay(database, "runs", "compare", "doc-before2", "doc-after2", "--fail-on-regression")
    assert deterministic.returncode == 1
    # (their history, doc-before then doc-after, saw these four fail: they are stable by the baseline alone)
    assert "Regressed: 4 units that passed in the baseline fail now; 0 expected by chance (deterministic grading)" in deterministic.stdout


def test_compare_reports_new_and_removed_units_across_different_runs(store_env: FilledStore) -> None:
    document = json.loads(invoke_runs("runs", "compare", store_env.doc_after, store_env.agent, "--json").output)
    assert document["counts"]["new"] == 8 and document["counts"]["removed"] == 1
    assert document["paired"]["units"] == 0


def test_runs_of_two_kinds_are_said_to_never_pair_with_the_command_that_compares_one_kind(store_env: FilledStore) -> None:
    # (`runs compare latest~1 latest` after runs of several kinds pairs nothing: --map is no help there.)
    output = invoke_runs("runs", "compare", store_env.agent, store_env.doc_after).output
    assert output.splitlines()[0] == (
        "0 unit(s) paired; 8 of the baseline and 1 of the candidate have no partner. These are runs of two kinds "
        "(agent, then doc), whose units never pair: compare two runs of one kind (`assay runs compare latest` takes "
        "the run of the latest's kind and project before it).")
    assert "--map" not in output


def test_a_candidate_that_carried_every_unit_is_inconclusive_and_says_why(tmp_path, monkeypatch) -> None:
    """`compare latest` right after an agent run that changed nothing: every unit pairs, none was judged again."""
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "assay.db"))
    ids = [f"baseline/eval{index}#1" for index in range(5)]
    publish_run(RunManifest("agent-20261203T100000Z-00000001", "agent", "2026-12-03T10:00:00Z"),
                [UnitResult(unit_id, "passed") for unit_id in ids])
    carried = [UnitResult(unit_id, "passed", carried_from={"run_id": "agent-20261203T100000Z-00000001", "unit_id": unit_id})
               for unit_id in ids]
    publish_run(RunManifest("agent-20261203T110000Z-00000002", "agent", "2026-12-03T11:00:00Z"), carried)
    lines = invoke_runs("runs", "compare", "agent-20261203T100000Z-00000001", "agent-20261203T110000Z-00000002").output.splitlines()
    verdict = lines.index("Inconclusive: no unit was judged in both runs.")
    assert lines[verdict + 1] == (
        "Why: agent-20261203T110000Z-00000002 carried 5 of its units from earlier runs, and a carried unit repeats an "
        "earlier verdict, it is not judged again. Run them again to compare (`assay agent run --rerun all`).")
    document = json.loads(invoke_runs("runs", "compare", "agent-20261203T100000Z-00000001", "latest", "--json").output)
    assert document["carried"] == {"agent-20261203T100000Z-00000001": 0, "agent-20261203T110000Z-00000002": 5}
    trend = invoke_runs("runs", "trend", "--kind", "agent").output.splitlines()
    assert trend[-1] == "  agent-20261203T110000Z-00000002     n/a  no unit judged (each was carried from an earlier run, skipped or ignored)"


def test_runs_that_carried_nothing_have_no_why_line(store_env: FilledStore) -> None:
    output = invoke_runs("runs", "compare", store_env.video_before, store_env.video_after).output
    assert "Why:" not in output and '"carried"' not in invoke_runs(
        "runs", "compare", store_env.video_before, store_env.video_after, "--json").output


@pytest.mark.parametrize("command", ["list", "flaky", "trend"])
def test_a_misspelt_kind_is_refused_alike_by_every_runs_command_with_the_kind_meant(store_env: FilledStore, command: str) -> None:
    from typer.testing import CliRunner

    from assay.cli.app import app

    result = CliRunner().invoke(app, ["runs", command, "--kind", "vidoe"])
    assert result.exit_code == 2
    assert "Invalid value for '--kind': must be one of video, agent, doc, imported; did you mean 'video'?" in result.output


def test_unknown_run_is_a_usage_error(store_env: FilledStore) -> None:
    result = invoke_runs("runs", "show", "no-such-run")
    assert result.exit_code == 2
    assert "no run 'no-such-run'" in result.output


def test_video_run_writes_junit(store_env: FilledStore) -> None:
    suites = ElementTree.parse(store_env.video_junit).getroot()
    assert suites.get("tests") == "8" and suites.get("failures") == "8"
    case = suites.find("testsuite/testcase")
    assert case.get("classname") == "numbers.number" and case.get("name") == "number @0s"
    assert "expected=100 observed=0" in case.find("failure").text


def test_doc_run_case_writes_junit(store_env: FilledStore) -> None:
    suites = ElementTree.parse(store_env.doc_junit).getroot()
    assert suites.get("tests") == "1" and suites.get("failures") == "1"
    assert suites.find("testsuite/testcase/failure").get("message").startswith("verdict red")


def test_store_failure_does_not_change_the_exit_code(tmp_path, monkeypatch) -> None:
    from filled_store import case_yaml
    from video_evals import make_eval, run_eval

    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder", encoding="utf-8")
    monkeypatch.setenv("ASSAY_STORE", str(blocker / "assay.db"))
    eval_dir = make_eval(tmp_path, case_yaml(0), case_name="numbers", frames=12, fps=10)
    result = run_eval(eval_dir)
    assert result.exit_code == 0
    assert "Warning: run record not stored:" in result.output
    # ASSAY_STORE naming a folder: the same one warning (it was "the results store reporter failed … it is off").
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path))
    result = run_eval(eval_dir)
    assert result.exit_code == 0
    assert f"Warning: run record not stored: ASSAY_STORE={tmp_path} is a folder" in " ".join(result.output.split())
    assert "reporter failed" not in result.output


def test_view_export_writes_a_static_site(store_env: FilledStore, tmp_path) -> None:
    site = tmp_path / "site"
    result = invoke_runs("view", "--export", str(site))
    assert result.exit_code == 0, result.output
    assert '<meta name="assay-mode" content="static">' in (site / "index.html").read_text(encoding="utf-8")
    assert (site / "app.js").is_file() and len(list((site / "data").glob("*.js"))) > 10
    assert len(list((site / "frames").glob("*.png"))) == 8  # the failing video units' frames


def test_view_export_never_writes_over_a_folder_of_other_files_and_replaces_an_earlier_export(
    store_env: FilledStore, tmp_path
) -> None:
    """`assay view --export .` in a project overwrote its own index.html; an earlier export kept stale data files."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "index.html").write_text("mine", encoding="utf-8")
    refused = invoke_runs("view", "--export", str(project))
    assert (refused.exit_code, refused.output) == (2, f"Could not export the viewer: --export {project} already holds "
                                                      "files that are not an assay export (index.html); give a new or "
                                                      "empty folder (an earlier export is replaced)\n")
    assert (project / "index.html").read_text(encoding="utf-8") == "mine" and sorted(project.iterdir()) == [project / "index.html"]
    site = tmp_path / "site"
    assert invoke_runs("view", "--export", str(site)).exit_code == 0
    stale = site / "data" / "stale.js"
    stale.write_text("// a run exported before and deleted since", encoding="utf-8")
    again = invoke_runs("view", "--export", str(site))
    assert again.exit_code == 0, again.output
    assert not stale.exists() and len(list((site / "data").glob("*.js"))) > 10


def test_view_export_onto_a_file_says_it_takes_a_folder(store_env: FilledStore, tmp_path) -> None:
    target = tmp_path / "site.html"
    target.write_text("mine", encoding="utf-8")
    result = invoke_runs("view", "--export", str(target))
    assert (result.exit_code, result.output) == (
        2, f"Could not export the viewer: --export {target} is a file, not a folder; give a folder to write the site into\n")
    assert target.read_text(encoding="utf-8") == "mine"


# A folder the export cannot write into is one line, as every `assay view` failure (`Could not …:` on
# stdout), naming --export and the path, exit 2: refused before anything is written when it can be told
# beforehand (the reasons in the words of an unwritable --junit file), else naming the file that failed.
EXPORT_FOLDERS = {
    "under a file": lambda tmp: (tmp / "blocker" / "site", f"cannot be created: {tmp / 'blocker'} is a file, not a folder"),
    "an unknown user's home": lambda tmp: (
        Path("~assay-no-such-user/site"), "cannot be created: there is no user 'assay-no-such-user' whose home folder `~` could name"
    ),
}


@pytest.mark.parametrize("case", list(EXPORT_FOLDERS))
def test_view_export_into_a_folder_it_cannot_write_is_one_line_naming_the_option_and_the_path(
    store_env: FilledStore, tmp_path, case: str
) -> None:
    (tmp_path / "blocker").write_text("a file, not a folder", encoding="utf-8")
    (tmp_path / "site" / "app.js").mkdir(parents=True)  # in an earlier export, which is written over
    (tmp_path / "site" / "index.html").write_text('<meta name="assay-mode" content="static">', encoding="utf-8")
    folder, reason = EXPORT_FOLDERS[case](tmp_path)
    result = invoke_runs("view", "--export", str(folder))
    assert (result.exit_code, result.output) == (2, f"Could not export the viewer: --export {folder} {reason}\n")


def test_an_earlier_export_with_a_folder_where_a_file_goes_is_replaced_whole(store_env: FilledStore, tmp_path) -> None:
    # (it failed "cannot be written: site/app.js: Is a directory" while the site was written in place)
    (tmp_path / "site" / "app.js").mkdir(parents=True)
    (tmp_path / "site" / "index.html").write_text('<meta name="assay-mode" content="static">', encoding="utf-8")
    assert invoke_runs("view", "--export", str(tmp_path / "site")).exit_code == 0
    assert (tmp_path / "site" / "app.js").is_file() and [path.name for path in tmp_path.iterdir()] == ["site"]


def test_view_export_into_a_folder_without_permission_is_refused_before_writing(
    store_env: FilledStore, tmp_path, monkeypatch
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    if os.geteuid() == 0:  # root may write anywhere: the folder answers the access check as it would anyone else
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if Path(path) == locked else real_access(path, mode, **kw))
    try:
        result = invoke_runs("view", "--export", str(locked / "site"))
    finally:
        locked.chmod(0o755)
    assert (result.exit_code, result.output) == (
        2, f"Could not export the viewer: --export {locked / 'site'} cannot be written: no permission in {locked}\n")
    assert list(locked.iterdir()) == []


def test_view_without_a_store_says_so(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "missing.db"))
    result = invoke_runs("view", "--no-open")
    assert result.exit_code == 2
    assert "Could not open the results store: no results store at" in result.output
    # Label mode too: it made an empty store there and served a queue of nothing.
    result = invoke_runs("view", "--label", "--no-open")
    assert result.exit_code == 2
    assert "Could not open the results store: no results store at" in result.output
    assert not (tmp_path / "missing.db").exists()


def test_a_port_in_use_is_one_line_naming_why_and_exit_2(store_env: FilledStore) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = invoke_runs("view", "--no-open", "--port", str(port))
    assert result.exit_code == 2
    assert result.output.splitlines() == [f"Could not start the viewer: [Errno 98] Address already in use (port {port} on "
                                          "127.0.0.1; give another --port, or --port 0 for a free one)"]


def test_reindex_rebuilds_from_records(store_env: FilledStore, tmp_path, monkeypatch) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(store_env.database.parent / "records", copy / "records")
    monkeypatch.setenv("ASSAY_STORE", str(copy / "assay.db"))
    result = invoke_runs("runs", "reindex")
    assert result.exit_code == 0 and "Indexed 5 run(s)" in result.output
    assert "damaged" not in result.output  # a missing index is rebuilt, not reported as damage
    assert json.loads(invoke_runs("runs", "list", "--json").output)["runs"][0]["run_id"] == store_env.agent


def _publish_history(database) -> None:
    """Video runs of two eval dirs and an agent run, interleaved, the newest a video run of `evals/a`."""
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    def video(run_id: str, day: int, eval_dir: str, failing: int) -> None:
        units = [UnitResult(f"clip/t/{index}@{index}s#1", "failed" if index < failing else "passed") for index in range(4)]
        manifest = RunManifest(run_id, "video", f"2026-01-0{day}T00:00:00Z", identity={"eval_dir": eval_dir})
        publish_run(manifest, units, database=database)

    video("video-a-1", 1, "/repo/evals/a", 0)
    video("video-b-1", 2, "/repo/evals/b", 4)
    agent = RunManifest("agent-1", "agent", "2026-01-03T00:00:00Z", identity={"project": "/repo/agent"})
    publish_run(agent, [UnitResult("e/x#1", "passed")], database=database)
    video("video-a-2", 4, "/repo/evals/a", 1)


def test_compare_latest_alone_compares_it_with_the_run_of_the_same_kind_and_project_before_it(tmp_path) -> None:
    from damaged_store import assay

    database = tmp_path / "assay.db"
    _publish_history(database)
    result = assay(database, "runs", "compare", "latest", "--fail-on-inconclusive")
    # One unit of four regressed, which nothing decides: it is not compared with itself (unchanged).
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Baseline: video-a-1, the video run of the same project before video-a-2."
    assert lines[1] == "Compare video-a-1 → video-a-2"
    assert "regressions 1, fixes 0" in result.stdout
    document = json.loads(assay(database, "runs", "compare", "latest", "--json").stdout)
    assert (document["before"], document["after"]) == ("video-a-1", "video-a-2")
    assert document["baseline_chosen"] == lines[0]
    # Two references keep their meaning, and one that is not the latest is still compared with the latest.
    named = json.loads(assay(database, "runs", "compare", "video-b-1", "--json").stdout)
    assert (named["before"], named["after"]) == ("video-b-1", "video-a-2") and "baseline_chosen" not in named


def test_compare_refuses_a_run_with_itself_and_a_run_with_no_run_before_it(tmp_path) -> None:
    from damaged_store import assay

    database = tmp_path / "assay.db"
    _publish_history(database)
    itself = assay(database, "runs", "compare", "video-a-1", "video-a-1")
    assert itself.returncode == 2 and itself.stdout == ""
    assert itself.stderr.strip() == (
        "Error: both references name the run video-a-1; a run compared with itself has no changes: give two different runs"
    )
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    publish_run(RunManifest("video-c-1", "video", "2026-01-05T00:00:00Z", identity={"eval_dir": "/repo/evals/c"}),
                [UnitResult("clip/t/0@0s#1", "passed")], database=database)  # fmt: skip
    # The first CI job of a pipeline (or one whose cached store was evicted): inconclusive, not an error, so the
    # usual gate passes (nothing regressed) and only the strict one fails.
    why = ("Inconclusive: no baseline. video-c-1 is the only video run of its project in the store, so there is no run "
           "before it to compare it with. Keep the store between CI jobs (cache .assay/ or set ASSAY_STORE), or give a "
           "baseline run: `assay runs compare BEFORE AFTER`")
    alone = assay(database, "runs", "compare", "latest", "--fail-on-regression")
    assert (alone.returncode, alone.stdout.strip(), alone.stderr) == (0, why, "")
    strict = assay(database, "runs", "compare", "latest", "--fail-on-inconclusive")
    assert (strict.returncode, strict.stdout.strip()) == (1, why)
    document = json.loads(assay(database, "runs", "compare", "latest", "--json").stdout)
    assert (document["before"], document["after"], document["verdict"], document["regression"]) == (
        None, "video-c-1", "inconclusive", False)
    assert document["judgement"]["verdict"] == "inconclusive" and document["sentence"] == why
