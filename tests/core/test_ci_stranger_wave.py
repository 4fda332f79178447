"""What a CI user meets with big suites: shards merged, carry between pipeline jobs, and the compare gate after them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli.app import app


@pytest.fixture(autouse=True)
def own_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))


def _assay(*arguments: str):
    return CliRunner().invoke(app, list(arguments), catch_exceptions=False)


def _pipeline_of_carrying_jobs() -> list[str]:
    """Eight jobs that judged all 30 evals, then two jobs that each changed (and broke) one eval and carried the rest."""
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    ids = [f"baseline/e{index}#1" for index in range(30)]
    run_ids = [f"agent-20261203T1{hour:01d}0000Z-0000000{hour}" for hour in range(10)]
    identity = {"project": "/ci/checkout"}
    for hour, run_id in enumerate(run_ids[:8]):
        manifest = RunManifest(run_id, "agent", f"2026-12-03T1{hour}:00:00Z", title="ci: baseline", identity=identity)
        publish_run(manifest, [UnitResult(unit_id, "passed") for unit_id in ids])
    broken: dict[str, str] = {}
    for hour, (run_id, now_broken) in enumerate(zip(run_ids[8:], ids[:2], strict=True), start=8):
        units = []
        for unit_id in ids:
            if unit_id == now_broken:
                units.append(UnitResult(unit_id, "failed"))
            else:  # carried from the run that last judged it
                verdict = "failed" if unit_id in broken else "passed"
                units.append(UnitResult(unit_id, verdict, carried_from={"run_id": broken.get(unit_id, run_ids[7]),
                                                                         "unit_id": unit_id}))
        broken[now_broken] = run_id
        manifest = RunManifest(run_id, "agent", f"2026-12-03T1{hour}:00:00Z", title="ci: baseline", identity=identity)
        publish_run(manifest, units)
    return run_ids


def test_a_job_that_carried_most_units_says_how_many_were_judged_in_both_runs_not_that_they_are_trials():
    """`compare latest` after a CI job that changed one eval of 30 read "paired trials 30 (1 units)": no unit has
    trials; 29 of them were carried, and the verdict weighs the one judged in both runs."""
    run_ids = _pipeline_of_carrying_jobs()
    lines = _assay("runs", "compare", run_ids[7], run_ids[8]).output.splitlines()
    assert lines[2] == ("paired units 30 (1 judged in both runs, the others carried, skipped or ignored): regressions 1, "
                        "fixes 0, still failing 0, still passing 29; new 0, removed 0")


def test_a_regression_decided_by_history_has_no_line_asking_to_rerun_to_compare():
    """The next job broke an eval the job before had carried: the verdict is Regressed (it passed all its history),
    yet a `Why:` line under it said no unit was judged in both runs and asked to rerun everything to compare."""
    run_ids = _pipeline_of_carrying_jobs()
    result = _assay("runs", "compare", "latest", "--fail-on-regression")
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("Regressed: 1 unit that passed every trial of its history fails now") for line in lines)
    assert not any(line.startswith("Why:") for line in lines), result.output
    assert lines[3].startswith("paired units 30 (0 judged in both runs, the others carried, skipped or ignored)")
    document = json.loads(_assay("runs", "compare", "latest", "--json").output)
    assert document["verdict"] == "regressed" and document["carried"] == {run_ids[8]: 29, run_ids[9]: 29}


def _checkpoint(folder: Path, checkpoint_id: str, kind: str, status: str) -> Path:
    """A checkpoint as a run leaves it (the folder it prints after `Checkpoint:`): its manifest and journal."""
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"id": checkpoint_id, "kind": kind, "status": status}))
    (folder / "events.jsonl").write_text("")
    return folder


def test_merging_the_checkpoint_of_an_interrupted_shard_says_to_finish_it_not_that_a_record_is_damaged(tmp_path):
    """A shard job cancelled mid-run leaves its checkpoint, whose path the run printed; merged, it read "the run record
    … cannot be read (…manifest.json: KeyError: 'run_id'): copy it again from the shard's job"."""
    folder = _checkpoint(tmp_path / "checkpoints" / "agent-20261206T065759Z-1c08f6e1", "agent-20261206T065759Z-1c08f6e1",
                         "agent", "in_progress")
    result = _assay("runs", "merge", str(folder))
    assert result.exit_code == 2
    message = result.output.strip()
    assert message.startswith(f"Error: {folder} is the checkpoint of run agent-20261206T065759Z-1c08f6e1, not its record")
    assert f"`assay agent run --resume {folder}` finishes it" in message
    assert "KeyError" not in message and "copy it again" not in message


def test_merging_a_finished_video_checkpoint_names_the_run_id_to_give_instead(tmp_path):
    folder = _checkpoint(tmp_path / "run-20261206T065650Z-81c7ad1a", "run-20261206T065650Z-81c7ad1a", "run", "complete")
    result = _assay("runs", "merge", str(folder / "manifest.json"))
    assert result.exit_code == 2
    assert "the run finished, so give its run id (video-20261206T065650Z-81c7ad1a) or its record folder" in result.output


def test_an_incomplete_shard_set_says_what_to_give_and_how_to_make_the_missing_shard():
    """A CI matrix job whose upload failed leaves `records/*` one shard short: the merge said only "missing shard(s)
    3/4 of 4", with nothing on what to do about it."""
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    for index in (1, 2, 4):
        manifest = RunManifest(f"video-20261206T07000{index}Z-0000000{index}", "video", f"2026-12-06T07:00:0{index}Z",
                               identity={"eval_dir": "/ci/eval"}, options={"shard": f"{index}/4"})
        publish_run(manifest, [UnitResult(f"case-{index}/t/0@0s#1", "passed")])
    result = _assay("runs", "merge", "latest", "latest~1", "latest~2")
    assert result.exit_code == 2
    assert result.output.strip() == (
        "Error: missing shard(s) 3/4 of 4: give every shard's run id or record folder (a shard whose job recorded no "
        "run is run again with --shard 3/4, then merged with the rest)")


def test_a_regression_over_units_the_baseline_carried_estimates_no_pass_rate_change():
    """Beside that verdict, "pass rate +0.0 points [+0.0, +0.0]" was a difference over no unit at all."""
    run_ids = _pipeline_of_carrying_jobs()
    lines = _assay("runs", "compare", run_ids[8], run_ids[9]).output.splitlines()
    [verdict] = [line for line in lines if line.startswith("Regressed:")]
    assert verdict.endswith("; no unit was judged in both runs, so the pass rate's change is not estimated."), verdict
    assert "+0.0 points" not in verdict
    # A verdict over units judged in both runs keeps its estimate.
    [earlier] = [line for line in _assay("runs", "compare", run_ids[7], run_ids[8]).output.splitlines()
                 if line.startswith("Regressed:")]
    assert "; pass rate " in earlier and "points [" in earlier, earlier
