"""docs/results.md and docs/scale.md followed as written: what `assay runs …` prints and exits with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def own_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))


def _assay(*arguments: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The installed command in its own process, as a user (or CI) runs it, stdout not a terminal."""
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "COLUMNS": "200"}, timeout=120)


def _agent_runs(count: int) -> list[str]:
    """`count` agent runs of one project in the store (newest last), each unit passing."""
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    run_ids = []
    for index in range(count):
        run_id = f"agent-20261206T10{index:02d}00Z-0000{index:04x}"
        manifest = RunManifest(run_id, "agent", f"2026-12-06T10:{index:02d}:00Z", title="shop: main",
                               identity={"project": "/ci/shop"})
        publish_run(manifest, [UnitResult(f"main/questions/q{unit}#1", "passed") for unit in range(4)])
        run_ids.append(run_id)
    return run_ids


def test_compare_latest_without_a_baseline_has_every_field_of_a_comparison_in_json(tmp_path, monkeypatch):
    """results.md: with no baseline "its `--json` has every field a comparison has, empty, and `history_runs` 0". It
    lacked `paired`, `test`, `alpha` and `pairing`, and its judgement `tests`, `groups`, `units_needed` and the rest,
    so a CI script reading `judgement.tests` of every job's compare met a KeyError on the first job's."""
    first, second = _agent_runs(2)
    compared = _assay("runs", "compare", first, second, "--json")
    assert compared.returncode == 0, compared.stderr
    full = json.loads(compared.stdout)
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "first-job" / "assay.db"))  # the first CI job: one run
    _agent_runs(1)
    alone = _assay("runs", "compare", "latest", "--json")
    assert alone.returncode == 0, alone.stderr
    empty = json.loads(alone.stdout)
    assert empty["verdict"] == "inconclusive" and empty["before"] is None and empty["history_runs"] == 0
    assert set(full) - set(empty) <= {"baseline_chosen"}
    optional = {"decided_by", "pass_at_k"}  # (only when a test decided, and where units have trials)
    assert set(full["judgement"]) - set(empty["judgement"]) - optional == set()
    for key in ("paired", "test", "pairing"):
        assert set(empty[key]) == set(full[key]), key
    assert empty["paired"]["units"] == 0 and empty["pairing"]["paired"] == 0 and empty["test"]["p_value"] is None
    assert empty["judgement"]["tests"] == [] and empty["judgement"]["groups"] == {}
    assert empty["alpha"] == 0.05 and empty["judgement"]["settings"]["margin"] == 0.05


def test_merging_the_store_records_again_names_the_merged_run_among_them(tmp_path):
    """scale.md: merge the shards' records, and "merging the same shards again replaces that run". Given the same
    folder of records again (`records/*`, which now holds the merged run too), the merged run was refused as "not
    started with --shard", as if a shard had been run wrongly; it is named as the run the merge made, with the fix."""
    import shutil

    repository = tmp_path / "repo"
    shutil.copytree(Path(__file__).parents[2] / "examples" / "video", repository / "eval",
                    ignore=shutil.ignore_patterns("runs", "*.mp4", "__pycache__"))
    sys.path.insert(0, str(repository / "eval"))  # the example's clip is made at test time (a fresh clone has none)
    try:
        from make_video import make_demo_video
    finally:
        sys.path.pop(0)
    make_demo_video(repository / "eval" / "cases" / "traffic-light.mp4")
    for shard in ("1/2", "2/2"):
        ran = _assay("video", "run", "--eval-dir", "eval", "--shard", shard, cwd=repository)
        assert ran.returncode == 0, ran.stdout + ran.stderr
    records = Path(os.environ["ASSAY_STORE"]).parent / "records"
    shards = sorted(str(folder) for folder in records.iterdir())
    merged = _assay("runs", "merge", *shards, cwd=repository)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    (merged_id,) = {folder.name for folder in records.iterdir()} - {Path(folder).name for folder in shards}
    again = _assay("runs", "merge", *sorted(str(folder) for folder in records.iterdir()), cwd=repository)
    assert again.returncode == 2
    shard_ids = json.loads((records / merged_id / "manifest.json").read_text())["options"]["merged_from"]
    assert again.stderr.startswith(f"Error: run {merged_id} is not a shard run (it is the run `assay runs merge` made of "
                                   f"{', '.join(shard_ids)}); give the shard runs only:")
    assert "folder of their own" in again.stderr and "Traceback" not in again.stderr


def test_compare_reports_pass_at_k_and_pass_hat_k_with_their_intervals():
    """results.md: "With several trials per unit, pass@k and pass^k (reliability) are reported before and after, with
    intervals." The text gave the four values alone (`pass@3 66.7% → 50.0%`); the intervals were only in `--json`."""
    from scipy.special import comb

    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    passes = ({"a": 3, "b": 2, "c": 3, "d": 1}, {"a": 3, "b": 1, "c": 0, "d": 3})  # passed trials of 3, per unit
    for index, passed in enumerate(passes):
        manifest = RunManifest(f"agent-20261206T10{index:02d}00Z-0000000{index}", "agent", f"2026-12-06T10:{index:02d}:00Z",
                               title="trials", identity={"project": "/ci/trials"})
        publish_run(manifest, [UnitResult(f"main/{unit}#{trial}", "passed" if trial <= count else "failed")
                               for unit, count in passed.items() for trial in (1, 2, 3)])
    text = _assay("runs", "compare", "latest")
    document = json.loads(_assay("runs", "compare", "latest", "--json").stdout)["judgement"]["pass_at_k"]
    assert text.returncode == 0, text.stderr
    rows = {name: document[name][-1] for name in ("before_pass_at_k", "after_pass_at_k", "before_pass_hat_k",
                                                  "after_pass_hat_k")}
    for side, passed in zip(("before", "after"), passes, strict=True):  # the estimators, against scipy's binomials
        assert rows[f"{side}_pass_at_k"]["value"] == pytest.approx(
            sum(1 - comb(3 - count, 3) / comb(3, 3) for count in passed.values()) / 4)
        assert rows[f"{side}_pass_hat_k"]["value"] == pytest.approx(
            sum(comb(count, 3) / comb(3, 3) for count in passed.values()) / 4)

    def shown(row):
        low, high = row["interval"]
        return f"{row['value'] * 100:.1f}% [{low * 100:.1f}, {high * 100:.1f}]"

    assert rows["before_pass_at_k"]["interval"] != rows["after_pass_at_k"]["interval"]
    assert (f"  pass@3 {shown(rows['before_pass_at_k'])} → {shown(rows['after_pass_at_k'])}; "
            f"pass^3 {shown(rows['before_pass_hat_k'])} → {shown(rows['after_pass_hat_k'])}") in text.stdout.splitlines()


@pytest.mark.parametrize("command", [("runs", "trend"), ("runs", "flaky"), ("runs", "flaky", "--kind", "agent")])
def test_flaky_and_trend_of_an_emptied_store_say_how_to_rebuild_it_not_no_runs_yet(command):
    """results.md: "An `assay.db` emptied, replaced or deleted while run records lie beside it is not 'no runs yet'".
    `runs list` said so; `runs trend` and `runs flaky` said "No runs recorded yet." beside ten runs' records."""
    _agent_runs(3)
    store = Path(os.environ["ASSAY_STORE"])
    for stale in (store, store.with_name("assay.db-wal"), store.with_name("assay.db-shm")):
        if stale.exists():
            stale.write_bytes(b"")  # emptied, as `: > assay.db` does
    records = store.parent / "records"
    shown = _assay(*command)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == (f"No runs in the index of {store}, but run records exist in {records}: `assay runs reindex` "
                            "rebuilds the index from them.\n")
    assert _assay("runs", "reindex").returncode == 0
    assert "No runs" not in _assay(*command).stdout


def test_runs_show_of_a_shard_run_says_which_shard_it_is():
    """scale.md: `runs list` marks a shard's run `[shard i/n]`; `runs show` of it (the run id `runs merge` is given)
    read as a whole run of part of the suite: `Run video-… (video) eval (traffic-light)`."""
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    manifest = RunManifest("video-20261206T100000Z-00000001", "video", "2026-12-06T10:00:00Z", title="eval (traffic-light)",
                           options={"shard": "1/2"})
    publish_run(manifest, [UnitResult("traffic-light/lamp_color/0@0s#1", "passed")])
    shown = _assay("runs", "show", "latest")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == "Run video-20261206T100000Z-00000001 (video) eval (traffic-light) [shard 1/2]"
    listed = _assay("runs", "list")
    assert "eval (traffic-light) [shard 1/2]" in listed.stdout


def test_group_depth_zero_is_described_as_what_it_does():
    """`--group-depth 0` was described as "no groups", yet `--json` holds one group named "" (the whole run) with its
    verdict; the help says so now."""
    _agent_runs(2)
    document = json.loads(_assay("runs", "compare", "latest", "--group-depth", "0", "--json").stdout)
    assert list(document["judgement"]["groups"]) == [""]
    described = " ".join(_assay("runs", "compare", "-h").stdout.split())
    assert "(0: the whole run as one group, named \"\")" in described and "0: no groups" not in described


def test_the_counts_of_a_big_comparison_are_written_with_thousands_separators():
    """`paired units 100000: regressions 9030` stood a line above `(100,000)`: every count is written one way."""
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    for index, failing in enumerate((0, 1200)):
        manifest = RunManifest(f"agent-20261206T11{index:02d}00Z-0000{index:04x}", "agent", f"2026-12-06T11:{index:02d}:00Z",
                               title="shop: main", identity={"project": "/ci/shop"})
        publish_run(manifest, [UnitResult(f"main/q{unit}#1", "failed" if unit < failing else "passed")
                               for unit in range(2500)])
    compared = _assay("runs", "compare", "latest~1", "latest")
    assert compared.returncode == 0, compared.stderr
    assert "paired units 2,500: regressions 1,200, fixes 0, still failing 0, still passing 1,300; new 0, removed 0" \
        in compared.stdout, compared.stdout
