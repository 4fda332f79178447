"""Two things `runs compare` and `runs import` said inconsistently, without the tools' own logs (the tests
beside this one hold the same against them):

- `runs compare` of two tools' imported runs without --map, one naming a unit's trials (`france#1`), the other the
  unit (`france`): the pairing line and the unit lists paired equal ids only ("0 unit(s) paired"), the verdict
  paired the trials with their unit ("over 2 paired units").
- `runs import --json` printed no JSON when the check before any import refused a file or an option.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from assay.core.run_diff import pairs_trials_with_units
from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import publish_run

JUNIT = ('<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="1" failures="0" errors="0" skipped="0">'
         '<testcase classname="t" name="a" time="0.1"/></testsuite></testsuites>')


def _assay(store: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, "ASSAY_STORE": str(store)})


def _imported_run(store: Path, run_id: str, tool: str, created_at: str, verdicts: dict[str, str]) -> None:
    manifest = RunManifest(run_id=run_id, kind="imported", created_at=created_at, title=f"{tool} capitals",
                           identity={"tool": tool, "format": tool, "project": f"{tool}:capitals"})
    publish_run(manifest, [UnitResult(unit_id, verdict, group="capitals") for unit_id, verdict in verdicts.items()],
                database=store)


# Inspect names each epoch of a sample, DeepEval the case: france passes in both, peru is fixed, spain is one
# tool's only, lima the other's.
INSPECT = {"france#1": "passed", "france#2": "passed", "peru#1": "failed", "peru#2": "failed", "spain#1": "failed"}
DEEPEVAL = {"france": "passed", "peru": "passed", "lima": "passed"}


def test_trials_pair_with_the_unit_another_tool_names_bare_without_map(tmp_path: Path) -> None:
    store = tmp_path / "assay.db"
    _imported_run(store, "imported-20260101T000000-aaaaaa", "inspect-ai", "2026-01-01T00:00:00Z", INSPECT)
    _imported_run(store, "imported-20260102T000000-bbbbbb", "deepeval", "2026-01-02T00:00:00Z", DEEPEVAL)
    done = _assay(store, "runs", "compare", "imported-20260101T000000-aaaaaa", "imported-20260102T000000-bbbbbb")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # Before: "0 unit(s) paired; 5 of the baseline and 3 of the candidate have no partner. …", "paired trials 0 (2
    # units)", every id new or removed, and a verdict "over 2 paired units".
    assert lines[0] == "4 unit(s) paired; 1 of the baseline and 1 of the candidate have no partner."
    assert lines[3] == ("paired trials 4 (2 units): regressions 0, fixes 2, still failing 0, still passing 2; "
                        "new 1, removed 1")
    verdict = next(line for line in lines if " paired units" in line and line.split(":")[0] in
                   ("Inconclusive", "Improved", "Regressed", "Unchanged"))
    assert " over 2 paired units;" in verdict, verdict
    document = json.loads(_assay(store, "runs", "compare", "imported-20260101T000000-aaaaaa",
                                 "imported-20260102T000000-bbbbbb", "--json").stdout)
    assert document["pairing"] == {"paired": 4, "unpaired_before": 1, "unpaired_after": 1, "map": []}
    assert (document["paired"]["units"], document["judgement"]["paired_units"]) == (4, 2)
    assert document["units"]["fixes"] == ["peru#1", "peru#2"]
    assert (document["units"]["new"], document["units"]["removed"]) == (["lima"], ["spain#1"])


def test_runs_that_name_their_units_alike_are_still_paired_by_the_store(tmp_path: Path) -> None:
    """Only a trial against a unit named bare changes the pairing: other runs keep the store's, and their history."""
    assert pairs_trials_with_units(INSPECT, DEEPEVAL) and pairs_trials_with_units(DEEPEVAL, INSPECT)
    assert not pairs_trials_with_units(INSPECT, INSPECT) and not pairs_trials_with_units({"a": "passed"}, {"b": "passed"})
    assert not pairs_trials_with_units({"france#1": "passed"}, {"capitals/france#1": "passed"})
    store = tmp_path / "assay.db"
    for day, verdict in ((1, "passed"), (2, "failed"), (3, "passed")):
        _imported_run(store, f"imported-2026010{day}T000000-00000{day}", "inspect-ai", f"2026-01-0{day}T00:00:00Z",
                      {**INSPECT, "france#2": verdict})
    done = _assay(store, "runs", "compare", "imported-20260102T000000-000002", "imported-20260103T000000-000003", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["pairing"] == {"paired": 5, "unpaired_before": 0, "unpaired_after": 0, "map": []}
    assert document["history_runs"] == 2  # (the series before the baseline is read, as it was)
    # One tool's runs that name a unit both ways pair as the verdict pairs them, too.
    _imported_run(store, "imported-20260104T000000-000004", "inspect-ai", "2026-01-04T00:00:00Z",
                  {"france#1": "passed", "france#2": "failed", "spain": "passed"})
    document = json.loads(_assay(store, "runs", "compare", "imported-20260103T000000-000003",
                                 "imported-20260104T000000-000004", "--json").stdout)
    assert document["pairing"] == {"paired": 3, "unpaired_before": 2, "unpaired_after": 0, "map": []}
    assert document["judgement"]["paired_units"] == 2 and document["units"]["fixes"] == ["spain#1"]


def test_import_json_prints_the_document_when_the_check_refuses_before_any_import(tmp_path: Path) -> None:
    store = tmp_path / "store" / "assay.db"
    good, unknown, missing = tmp_path / "good.xml", tmp_path / "unknown.json", tmp_path / "missing.xml"
    good.write_text(JUNIT)
    unknown.write_text('{"x": 1}')

    def refused(*arguments: str) -> tuple[list[dict[str, str]], str]:
        done = _assay(store, "runs", "import", "--json", *arguments)
        assert done.returncode == 2, (done.stdout, done.stderr)
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("Error: "), done.stderr  # one line, as without --json
        document = json.loads(done.stdout)  # (before: nothing at all on stdout)
        assert document["imported"] == [], document
        return document["failed"], done.stderr

    failed, stderr = refused(str(missing))
    assert failed == [{"file": str(missing), "error": f"{missing}: no such file"}]
    assert stderr == f"Error: {missing}: no such file\n"
    failed, stderr = refused(str(unknown))
    assert [entry["file"] for entry in failed] == [str(unknown)]
    assert failed[0]["error"].startswith(f"{unknown}: cannot tell which tool wrote this file; give --format")
    assert stderr == f"Error: {failed[0]['error']}\n"
    # A misspelt --format is every file's error.
    failed, stderr = refused("--format", "junitt", str(good), str(unknown))
    message = ("--format 'junitt' is not a format assay reads (did you mean 'junit'?); use one of inspect, junit, "
               "pydantic-evals, deepeval, promptfoo")
    assert failed == [{"file": str(good), "error": message}, {"file": str(unknown), "error": message}]
    assert stderr == f"Error: {message}\n"
    # Every file is checked, and each refused one says why; one that passed says why it was not imported either.
    failed, stderr = refused(str(good), str(missing), "--format", "junit")
    assert failed == [{"file": str(good), "error": f"{good}: not imported, because {missing} was refused before any file "
                                                    "was imported (every file is checked first); fix it or leave it out, and import again"},
                      {"file": str(missing), "error": f"{missing}: no such file"}]
    assert stderr == f"Error: {missing}: no such file\n"
    failed, stderr = refused(str(good), "")
    empty = "a file name given is empty (an unset variable in a script?); name the log files to import"
    assert failed[1] == {"file": "", "error": empty} and "because an empty file name was refused" in failed[0]["error"]
    assert stderr == f"Error: {empty}\n"
    assert not store.exists() or json.loads(_assay(store, "runs", "list", "--json").stdout)["runs"] == []
    # Without --json: the error line alone, as before.
    done = _assay(store, "runs", "import", str(missing))
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"Error: {missing}: no such file\n")
