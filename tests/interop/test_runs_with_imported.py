"""`assay runs list|show|compare` on imported runs, and compare across an imported baseline and an
assay run whose units are named differently (`--map`)."""

from __future__ import annotations

import json
import subprocess
import sys

from assay.core.record import RunManifest, UnitResult, utc_timestamp
from assay.core.results_store import publish_run


def _assay(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=120,
                          check=False)


def _imported(path) -> str:
    done = _assay("runs", "import", str(path), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["imported"][0]["run_id"]


def _agent_run(run_id: str, verdicts: dict[str, str]) -> None:
    """An assay agent run of the same capitals, named the agent's way: `capitals/<sample>#<attempt>`."""
    manifest = RunManifest(run_id=run_id, kind="agent", created_at=utc_timestamp(), title="capitals agent",
                           identity={"project": "/capitals"})
    publish_run(manifest, [UnitResult(unit_id, verdict, group="capitals") for unit_id, verdict in verdicts.items()])


def test_list_show_and_the_kind_filter_take_imported_runs(inspect_logs):
    run_id = _imported(inspect_logs["eval"].path)
    listed = json.loads(_assay("runs", "list", "--kind", "imported", "--json").stdout)["runs"]
    assert run_id in [run["run_id"] for run in listed] and {run["kind"] for run in listed} == {"imported"}
    shown = _assay("runs", "show", run_id)
    assert shown.returncode == 0
    assert shown.stdout.splitlines()[0] == f"Run {run_id} (imported) Inspect capitals (mockllm/model): {inspect_logs['eval'].path.name}"
    assert "capitals" in shown.stdout and "Failing units (6):" in shown.stdout
    document = json.loads(_assay("runs", "show", run_id, "--json").stdout)
    assert document["identity"]["tool"] == "inspect-ai" and document["identity"]["tool_version"] == inspect_logs["eval"].summary["version"]
    assert document["identity"]["task"] == "capitals" and document["identity"]["model"] == "mockllm/model"
    assert document["summary"]["total_samples"] == 8


def test_compare_maps_the_imported_baselines_ids_and_says_how_many_paired(inspect_logs):
    baseline = _imported(inspect_logs["json"].path)
    # The agent run fixes peru, keeps france, loses spain (sample 3) and has a unit the baseline never had.
    _agent_run("agent-20261203T120000-cafe01", {
        "capitals/france#1": "passed", "capitals/france#2": "passed", "capitals/peru#1": "passed",
        "capitals/peru#2": "passed", "capitals/3#1": "failed", "capitals/3#2": "failed", "capitals/lima#1": "passed",
    })
    unmapped = _assay("runs", "compare", baseline, "agent-20261203T120000-cafe01")
    assert "0 unit(s) paired; 8 of the baseline and 7 of the candidate have no partner. The runs name their units " \
           "differently: --map renames the baseline's ids." in unmapped.stdout
    rule = r"^(.+)#(\d+)$=>capitals/\1#\2"
    mapped = _assay("runs", "compare", baseline, "agent-20261203T120000-cafe01", "--map", rule)
    assert mapped.returncode == 0, mapped.stderr
    assert ("Mapped the baseline's unit ids (1 --map rule): 6 unit(s) paired; 2 of the baseline and 1 of the candidate "
            "have no partner.") in mapped.stdout
    document = json.loads(_assay("runs", "compare", baseline, "agent-20261203T120000-cafe01", "--map", rule, "--json").stdout)
    assert document["pairing"] == {"paired": 6, "unpaired_before": 2, "unpaired_after": 1, "map": [rule]}
    assert sorted(document["units"]["fixes"]) == ["capitals/peru#1", "capitals/peru#2"]
    assert sorted(document["units"]["removed"]) == ["capitals/atlantis#1", "capitals/atlantis#2"]
    assert document["units"]["new"] == ["capitals/lima#1"]


def test_trials_pair_with_the_unit_another_tool_names_bare_and_every_count_says_so(tmp_path, inspect_logs, deepeval_run):
    """Inspect names each epoch (`france#1`, `france#2`), DeepEval the unit (`france`). The verdict paired each
    trial with its unit, the other counts only equal ids: the output began "0 unit(s) paired", then "paired trials
    0 (3 units)", and the verdict spoke of 3 paired units, "It covers the 0 paired units only"."""
    inspect, deepeval = _imported(inspect_logs["json"].path), _imported(deepeval_run.path)
    # The cases of both: france passes in both, peru is fixed, atlantis errors in both, and the Inspect sample 3
    # (Spain) fails, as DeepEval's spain does.
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("before,after\n3,spain\n")  # sample 3's trials are 3#1 and 3#2: this pairs none of them
    done = _assay("runs", "compare", inspect, deepeval, "--map", f"@{pairs}", "--limit", "0")
    assert done.returncode == 0 and "Warning: --map '@" in done.stderr, done.stderr  # (it applied to no id)
    lines = done.stdout.splitlines()
    assert lines[0] == ("Mapped the baseline's unit ids (1 --map file): 6 unit(s) paired; 2 of the baseline and 1 of the "
                        "candidate have no partner.")
    assert lines[3] == ("paired trials 6 (3 units): regressions 0, fixes 2, still failing 2, still passing 2; "
                        "new 1, removed 2")
    verdict = next(line for line in lines if line.startswith("Inconclusive:"))
    assert " over 3 paired units;" in verdict
    assert verdict.endswith(" It covers the 3 paired units only: 1 new unit and 1 removed unit count in the pass rates "
                            "but not in it."), verdict
    document = json.loads(_assay("runs", "compare", inspect, deepeval, "--map", f"@{pairs}", "--json").stdout)
    assert document["pairing"] == {"paired": 6, "unpaired_before": 2, "unpaired_after": 1, "map": [f"@{pairs}"]}
    assert (document["paired"]["units"], document["judgement"]["paired_units"]) == (6, 3)
    assert (document["counts"]["fixes"], document["counts"]["new"], document["counts"]["removed"]) == (2, 1, 2)
    assert sorted(document["units"]["fixes"]) == ["peru#1", "peru#2"]
    assert document["units"]["new"] == ["spain"] and sorted(document["units"]["removed"]) == ["3#1", "3#2"]

    pairs.write_text("before,after\n3#1,spain#1\n3#2,spain#2\n")  # each trial of sample 3 named as spain's
    document = json.loads(_assay("runs", "compare", inspect, deepeval, "--map", f"@{pairs}", "--json").stdout)
    assert document["pairing"] == {"paired": 8, "unpaired_before": 0, "unpaired_after": 0, "map": [f"@{pairs}"]}
    assert (document["paired"]["units"], document["judgement"]["paired_units"]) == (8, 4)
    assert sorted(document["units"]["still_failing"]) == ["atlantis#1", "atlantis#2", "spain#1", "spain#2"]
    # The other way round, DeepEval's unit pairs with each of Inspect's trials of it (listed by the trial's id).
    document = json.loads(_assay("runs", "compare", deepeval, inspect, "--map", "^spain$=>3", "--json").stdout)
    assert document["pairing"] == {"paired": 8, "unpaired_before": 0, "unpaired_after": 0, "map": ["^spain$=>3"]}
    assert (document["paired"]["units"], document["judgement"]["paired_units"]) == (8, 4)
    assert sorted(document["units"]["regressions"]) == ["peru#1", "peru#2"]


def test_without_map_trials_pair_with_the_unit_another_tool_names_bare_as_the_verdict_pairs_them(inspect_logs, deepeval_run):
    """An Inspect log and a DeepEval report imported, compared without --map: the store paired equal ids only, so the
    output began "0 unit(s) paired; 8 of the baseline and 4 of the candidate have no partner", listed every unit as
    new or removed and said "paired trials 0 (3 units)", while the verdict, which weighs a unit's trials together,
    spoke of "3 paired units". Every count now says the verdict's pairing, as with --map."""
    inspect, deepeval = _imported(inspect_logs["json"].path), _imported(deepeval_run.path)
    done = _assay("runs", "compare", inspect, deepeval, "--limit", "0")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "6 unit(s) paired; 2 of the baseline and 1 of the candidate have no partner."
    assert lines[3] == ("paired trials 6 (3 units): regressions 0, fixes 2, still failing 2, still passing 2; "
                        "new 1, removed 2")
    verdict = next(line for line in lines if line.startswith("Inconclusive:"))
    assert " over 3 paired units;" in verdict and verdict.endswith(
        " It covers the 3 paired units only: 1 new unit and 1 removed unit count in the pass rates but not in it."), verdict
    document = json.loads(_assay("runs", "compare", inspect, deepeval, "--json").stdout)
    assert document["pairing"] == {"paired": 6, "unpaired_before": 2, "unpaired_after": 1, "map": []}
    assert (document["paired"]["units"], document["judgement"]["paired_units"]) == (6, 3)
    assert document["units"]["new"] == ["spain"] and sorted(document["units"]["removed"]) == ["3#1", "3#2"]
    assert sorted(document["units"]["fixes"]) == ["peru#1", "peru#2"]
    # The other way round, DeepEval's unit pairs with each of Inspect's trials of it.
    document = json.loads(_assay("runs", "compare", deepeval, inspect, "--json").stdout)
    assert document["pairing"] == {"paired": 6, "unpaired_before": 1, "unpaired_after": 2, "map": []}
    assert (document["paired"]["units"], document["judgement"]["paired_units"]) == (6, 3)
    assert sorted(document["units"]["regressions"]) == ["peru#1", "peru#2"]


def test_a_map_file_of_id_pairs_and_a_bad_rule(tmp_path, inspect_logs):
    baseline = _imported(inspect_logs["json"].path)
    _agent_run("agent-20261203T120001-cafe02", {"capitals/france#1": "failed"})
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("before,after\nfrance#1,capitals/france#1\n")
    document = json.loads(_assay("runs", "compare", baseline, "agent-20261203T120001-cafe02", "--map", f"@{pairs}", "--json").stdout)
    assert document["pairing"]["paired"] == 1 and document["units"]["regressions"] == ["capitals/france#1"]
    bad = _assay("runs", "compare", baseline, "agent-20261203T120001-cafe02", "--map", "(=>x")
    assert bad.returncode == 2 and bad.stderr.startswith("Error: --map '(=>x': missing ), unterminated subpattern")
    folded = _assay("runs", "compare", baseline, "agent-20261203T120001-cafe02", "--map", "#\\d+$=>")
    assert folded.returncode == 2
    assert "--map sends two baseline units to" in folded.stderr and "Traceback" not in folded.stderr


def test_a_map_that_applies_to_no_baseline_id_is_said_and_a_rule_is_echoed_as_written(tmp_path, inspect_logs):
    """A misspelt rule or file of ids renamed nothing, and the output still began "Mapped the baseline's unit ids
    (1 --map rule)"; a rule without => was echoed with its backslashes doubled (Python's repr)."""
    baseline = _imported(inspect_logs["json"].path)
    _agent_run("agent-20261203T120002-cafe03", {"capitals/france#1": "failed"})
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("frnace#1,capitals/france#1\n")
    rule, kept = r"^(.+)#(\d+)$=>capitls/\1#\2", r"^(.+)#(\d+)$=>capitals/\1#\2"
    done = _assay("runs", "compare", baseline, "agent-20261203T120002-cafe03", "--map", r"^frnace#=>capitals/france#",
                  "--map", f"@{pairs}", "--map", kept, "--map", rule)
    assert done.returncode == 0, done.stderr
    warnings = done.stderr.splitlines()
    assert warnings == [
        "Warning: --map '^frnace#=>capitals/france#' applied to no unit id: its pattern matches no id in the baseline "
        "(8 unit(s), such as '3#1')",
        f"Warning: --map '@{pairs}' applied to no unit id: none of the ids it lists is in the baseline (8 unit(s), such "
        "as '3#1')",
    ], done.stderr  # the last rule applies to what the one before made of each id: it matches, so it is not named
    bad = _assay("runs", "compare", baseline, "agent-20261203T120002-cafe03", "--map", r"^(.+)#(\d+)$->x/\1")
    assert bad.returncode == 2 and bad.stderr.startswith(r"Error: --map '^(.+)#(\d+)$->x/\1': write PATTERN=>REPLACEMENT")


def test_an_imported_runs_series_is_its_tool_and_task(inspect_logs, junit_log):
    """History (compare latest, flaky, trend) follows one tool's runs of one task, not every import."""
    from assay.core.record import store_path
    from assay.core.results_store import SqliteRunStore

    first, second, other = _imported(inspect_logs["eval"].path), _imported(inspect_logs["json"].path), _imported(junit_log.path)
    with SqliteRunStore(store_path(), read_only=True) as store:
        series = store.series(store.get_run(first).manifest)
        assert {first, second} <= set(series) and other not in series
        assert store.get_run(first).manifest.identity["project"] == "inspect:Inspect capitals (mockllm/model)"


def test_show_keeps_each_failing_unit_to_one_line_when_its_message_runs_to_several(junit_log):
    """pytest's message for `assert "Paris" == "Lima", "wrong capital"` is the assertion's whole diff; `runs show`
    printed it as it is, so the list of failing units was no longer one unit per line."""
    shown = _assay("runs", "show", _imported(junit_log.path))
    assert shown.returncode == 0, shown.stderr
    failing = shown.stdout.split("Failing units (", 1)[1].splitlines()[1:]
    assert failing and all(line.startswith(("  FAILED ", "  ERRORED ")) for line in failing), shown.stdout
    [fails] = [line for line in failing if "test_fails " in line + " "]
    assert fails.endswith("AssertionError: wrong capital …"), fails


def test_trend_and_flaky_reach_an_older_series_through_run(inspect_logs, junit_log, tmp_path, monkeypatch):
    """Every import is kind `imported`, and `runs trend`/`runs flaky` followed only the newest run's series: with a
    JUnit log imported beside two Inspect logs, the series of whichever is older could not be reached at all."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))  # its own series, whatever ran before
    first, second = _imported(inspect_logs["eval"].path), _imported(inspect_logs["json"].path)
    other = _imported(junit_log.path)

    def trend_of(*arguments: str) -> list[str]:
        return [point["run_id"] for point in json.loads(_assay("runs", "trend", *arguments, "--json").stdout)["points"]]

    # The Inspect task's series. Both logs are written in the same second, so which of the two is the later
    # run is the store's tie-break of equal times (by run id, whose end is a hash): the later one's trend
    # reaches both, the earlier one's itself alone.
    reached = [sorted(trend_of("--run", run)) for run in (first, second)]
    assert max(reached, key=len) == sorted([first, second]) and min(reached, key=len) in ([first], [second]), reached
    assert trend_of("--run", other) == [other]  # the JUnit suite's
    assert _assay("runs", "trend", "capitals", "--run", second).returncode == 0
    flaky = json.loads(_assay("runs", "flaky", "--run", first, "--json").stdout)
    assert [sorted(series["runs"]) for series in flaky["series"]] in ([[first]], [sorted([first, second])])
    latest = json.loads(_assay("runs", "list", "--limit", "1", "--json").stdout)["runs"][0]["run_id"]
    assert trend_of() == trend_of("--run", latest)  # without --run: the newest run's series, as before
    wrong = _assay("runs", "trend", "--run", second, "--kind", "agent")
    assert (wrong.returncode, wrong.stderr) == (2, f"Error: --run {second!r} is a run of kind imported, not agent: leave "
                                                   "out --kind, or give a run of kind agent\n")


def test_logs_stamped_in_the_same_second_keep_the_order_they_were_imported_in(tmp_path, monkeypatch):
    """JUnit's timestamps have no fraction: two logs of one second were ordered by their run ids, whose end is a
    hash of the file, so `runs list`, `latest` and a series put them in an order neither file's time nor the
    command line gave. The later import is now the newer run (a millisecond after the earlier one)."""
    import hashlib

    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    logs = []
    for name in ("nightly", "retry", "rerun"):
        path = tmp_path / f"{name}.xml"
        path.write_text(f'<testsuites><testsuite name="capitals" timestamp="2026-01-02T03:04:05" tests="1">'
                        f'<testcase classname="capitals" name="test_{name}"/></testsuite></testsuites>\n')
        logs.append(path)
    # The hash's order the wrong way round: the file named first has the larger hash, so the later run id.
    first, second, third = sorted(logs, key=lambda path: hashlib.sha256(path.read_bytes()).hexdigest(), reverse=True)
    done = _assay("runs", "import", str(first), str(second), "--json")
    assert done.returncode == 0, done.stderr
    named = [run["run_id"] for run in json.loads(done.stdout)["imported"]]
    assert _assay("runs", "import", str(third)).returncode == 0
    named.append(_imported(third))  # (already imported: found again by its content)
    runs = json.loads(_assay("runs", "list", "--kind", "imported", "--json").stdout)["runs"]
    assert [run["run_id"] for run in runs] == named[::-1]  # newest first
    assert [run["created_at"] for run in runs] == [
        "2026-01-02T03:04:05.002Z", "2026-01-02T03:04:05.001Z", "2026-01-02T03:04:05.000Z"]


def test_an_interrupt_after_the_run_is_recorded_says_it_was_imported(tmp_path, monkeypatch, capsys) -> None:
    """A SIGTERM that lands once the file's run is recorded (while the import reads it back, or closes its reader)
    said "Interrupted while importing X: run the same command again to finish", though X was in the store."""
    from assay.core.history.shown import imported
    from assay.core.interop import importing
    from assay.core.interop.formats import detect_format
    from assay.core.results_store import SqliteRunStore

    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    report = tmp_path / "junit.xml"
    report.write_text('<testsuite name="s" tests="1"><testcase classname="m" name="t"/></testsuite>', encoding="utf-8")

    def interrupted(*arguments, **keywords):
        raise KeyboardInterrupt

    monkeypatch.setattr(importing, "_outcome", interrupted)
    _, failures, stopped = imported([(report, detect_format(report))])
    assert stopped and failures == 0
    with SqliteRunStore(tmp_path / "store" / "assay.db", read_only=True) as store:
        [run] = store.list_runs()
    assert capsys.readouterr().err.strip() == f"Interrupted after importing {report} (its run {run.run_id} is recorded)"


def test_an_interrupted_import_names_the_files_it_did_not_import_in_its_document(tmp_path, monkeypatch) -> None:
    """`runs import --json a b c` stopped by Ctrl-C while importing b printed `"failed": []` beside a alone: a script
    reading only the document (the exit code aside) took b and c as imported."""
    from assay.core.history.shown import imported
    from assay.core.interop import importing
    from assay.core.interop.formats import detect_format

    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    reports = []
    for name in ("a", "b", "c"):
        path = tmp_path / f"{name}.xml"
        path.write_text(f'<testsuite name="s" tests="1"><testcase classname="m" name="{name}"/></testsuite>', encoding="utf-8")
        reports.append(path)
    real = importing.import_log

    def stopped_at_b(path, *arguments, **keywords):
        if path.name == "b.xml":
            raise KeyboardInterrupt
        return real(path, *arguments, **keywords)

    monkeypatch.setattr(importing, "import_log", stopped_at_b)
    shown, _, interrupted = imported([(path, detect_format(path)) for path in reports])
    assert interrupted
    assert [entry["file"] for entry in shown.document["imported"]] == [str(reports[0].resolve())]
    assert [(entry["file"], entry["interrupted"]) for entry in shown.document["failed"]] == [
        (str(reports[1].resolve()), True), (str(reports[2].resolve()), True)]
    assert "interrupted (Ctrl-C) while importing it" in shown.document["failed"][0]["error"]
    assert "interrupted (Ctrl-C) before it" in shown.document["failed"][1]["error"]
