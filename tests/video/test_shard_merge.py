"""`assay video run --shard i/n` + `assay runs merge`: the merged run equals the unsharded run."""

from __future__ import annotations

import json
from pathlib import Path

from stored_runs import latest_record
from video_evals import invoke, make_eval, read_report, run_eval, write

from assay.core.results_store import open_store

CASE = """
video: clip.mp4
thresholds:
  min_pass_rate: {case_rate}
targets:
  number:
    samples:
      - range: [0.0, {until}]
        every_s: 0.2
        expect: {expect}
  even:
    config: {{mode: even}}
    samples:
      - at: [0.1, 0.2]
        expect: true
"""
CONFIG = """
thresholds:
  per_target:
    number: {min_pass_rate: 0.3}
    even: {min_pass_rate: 0.4}
"""
CASES = {"a": (0.5, 1.0, 0), "b": (0.1, 2.0, 4), "c": (0.9, 0.6, 2), "d": (0.2, 1.4, 8), "e": (0.0, 0.4, 0)}


def _eval(tmp_path):
    name, (rate, until, expect) = next(iter(CASES.items()))
    eval_dir = make_eval(tmp_path, CASE.format(case_rate=rate, until=until, expect=expect), case_name=name,
                         config_yaml=CONFIG)
    for name, (rate, until, expect) in list(CASES.items())[1:]:
        write(eval_dir / "cases" / f"{name}.yaml", CASE.format(case_rate=rate, until=until, expect=expect))
    return eval_dir



def _shard_runs(eval_dir, *shards):
    """Run each `--shard` of the eval; the runs the store recorded them as, in that order."""
    runs = []
    for shard in shards:
        run_eval(eval_dir, "--shard", shard)
        with open_store(read_only=True) as store:
            runs.append(store.get_run("latest"))
    return runs


def _shard_run_ids(eval_dir, *shards):
    return [run.run_id for run in _shard_runs(eval_dir, *shards)]


def _shard_folders(eval_dir, *shards):
    """Run each `--shard` of the eval; the record folders they wrote, as CI jobs upload them."""
    return [run.record_path for run in _shard_runs(eval_dir, *shards)]


def _comparable_units(units):
    return [(unit.unit_id, unit.verdict, unit.group, unit.expected, unit.observed, unit.reason) for unit in units]


def _report_results(report):
    return [
        {key: value for key, value in result.items() if key != "evaluation_duration_seconds"}
        for trial in report["trials"]
        for result in trial["results"]
    ]


def test_sharded_runs_merged_equal_the_unsharded_run(tmp_path):
    eval_dir = _eval(tmp_path)
    whole = run_eval(eval_dir, "--repeat", "2", "--output-json", tmp_path / "whole.json")
    whole_manifest, whole_units = latest_record()
    shard_ids = []
    shard_cases = []
    for index in (1, 2, 3):
        result = run_eval(eval_dir, "--repeat", "2", "--shard", f"{index}/3")
        assert result.exit_code in (0, 1), result.output
        manifest, units = latest_record()
        assert manifest.options["shard"] == f"{index}/3"
        shard_ids.append(manifest.run_id)
        shard_cases.append({unit.detail["case"] for unit in units})
    # Each case (so each video) belongs to exactly one shard.
    assert sorted(case for cases in shard_cases for case in cases) == sorted(CASES)

    merged = invoke("runs", "merge", *shard_ids, "--output-json", tmp_path / "merged.json")
    merged_manifest, merged_units = latest_record()
    assert merged.exit_code == whole.exit_code == 1  # case c's 90% gate fails
    assert _comparable_units(merged_units) == _comparable_units(whole_units)
    assert merged_manifest.gates == whole_manifest.gates
    assert merged_manifest.success == whole_manifest.success is False
    assert merged_manifest.options["merged_from"] == shard_ids
    assert merged_manifest.title == whole_manifest.title
    merged_report, whole_report = read_report(tmp_path / "merged.json"), read_report(tmp_path / "whole.json")
    assert _report_results(merged_report) == _report_results(whole_report)
    assert [trial["gates"] for trial in merged_report["trials"]] == [trial["gates"] for trial in whole_report["trials"]]
    assert merged_report["stability"] == whole_report["stability"]
    # The same summary lines as the unsharded run's console output.
    for line in ("Failed gates", "c_min_pass_rate", "Samples:"):
        assert (line in merged.flat) == (line in whole.flat)


def test_merge_accepts_record_folders_as_ci_jobs_upload_them(tmp_path):
    eval_dir = _eval(tmp_path)
    folders = _shard_folders(eval_dir, "1/2", "2/2")
    # The folder they are in, or one that is not there: said as such, not as a run missing from the store.
    parent = str(Path(folders[0]).parent)
    whole_folder = invoke("runs", "merge", parent)
    assert whole_folder.exit_code == 2 and f"{parent} holds run records rather than being one" in whole_folder.flat
    assert f"({parent}/*)" in whole_folder.flat
    gone = invoke("runs", "merge", f"{parent}/nope", folders[1])
    assert gone.exit_code == 2 and f"no run record folder {parent}/nope: it does not exist" in gone.flat
    merged = invoke("runs", "merge", *folders)
    manifest, units = latest_record()
    assert merged.exit_code == 1, merged.output
    shard_units = [Path(folder, "units.jsonl").read_text().splitlines() for folder in folders]
    assert len(units) == sum(map(len, shard_units))
    assert manifest.options["merged_from"] and "shard" not in manifest.options


def test_merge_refuses_an_incomplete_or_mixed_shard_set(tmp_path):
    eval_dir = _eval(tmp_path)
    ids = _shard_run_ids(eval_dir, "1/3", "2/3")
    listed = invoke("runs", "list")
    assert "[shard 1/3]" in listed.output and "[shard 2/3]" in listed.output  # told apart from whole runs
    missing = invoke("runs", "merge", *ids)
    assert missing.exit_code == 2
    assert "missing shard(s) 3/3 of 3" in missing.output
    twice = invoke("runs", "merge", ids[0], ids[0], ids[1])
    assert twice.exit_code == 2 and "is given twice" in twice.output
    run_eval(eval_dir, "--shard", "3/3", "--min-pass-rate", "0.1")
    with open_store(read_only=True) as store:
        other = store.get_run("latest").run_id
    mixed = invoke("runs", "merge", *ids, other)
    assert mixed.exit_code == 2 and "shards of different invocations" in mixed.output


def test_shard_option_is_checked_and_recorded_for_resume(tmp_path):
    eval_dir = _eval(tmp_path)
    bad = run_eval(eval_dir, "--shard", "4/3")
    assert bad.exit_code == 2
    assert "i must be between 1 and n" in bad.flat
    listing = json.loads(invoke("runs", "list", "--json").output)
    assert all(run["options"].get("shard") != "4/3" for run in listing["runs"])


def test_a_shard_that_holds_no_case_passes_saying_so_and_still_merges(tmp_path):
    """More CI jobs than cases: the empty shard failed its job (exit 1, `eval_min_pass_rate 0.0%`) and said
    nothing about being empty; its record is still one of the set `runs merge` needs."""
    eval_dir = make_eval(tmp_path, CASE.format(case_rate=0.5, until=1.0, expect=0), case_name="a",
                         config_yaml="thresholds:\n  min_pass_rate: 0.9\n")
    runs = []
    for shard in ("1/2", "2/2"):
        runs.append(run_eval(eval_dir, "--shard", shard))
    empty = next(run for run in runs if "Cases: 0" in run.output)
    assert empty.exit_code == 0, empty.output
    assert "shard" in empty.stderr and "holds none of the eval's 1 case(s)" in empty.stderr
    assert "eval_min_pass_rate" not in empty.output
    merged = invoke("runs", "merge", "latest", "latest~1")
    assert merged.exit_code in (0, 1), merged.output


def test_merge_after_a_case_was_added_says_so(tmp_path):
    """It asked only "was a shard incomplete?" about a unit of a case written after the shards ran."""
    eval_dir = _eval(tmp_path)
    ids = _shard_run_ids(eval_dir, "1/2", "2/2")
    write(eval_dir / "cases" / "f.yaml", CASE.format(case_rate=0.0, until=0.4, expect=0))
    merged = invoke("runs", "merge", *ids)
    assert merged.exit_code == 2
    assert "the shard records have no result for unit f/number/0@0s#1, which the eval directory's cases hold now: " \
           "was a case or sample added since the shards ran, or a shard incomplete?" in merged.flat, merged.flat


def test_a_shard_spelled_with_spaces_or_zeros_is_recorded_as_the_shard_it_is(tmp_path):
    """`--shard " 2/2"` (a CI matrix's template) recorded " 2/2": listed as `[shard  2/2]`, and a series of
    its own in the store, so `2/2` of the next pipeline had no baseline."""
    eval_dir = _eval(tmp_path)
    first, second = _shard_run_ids(eval_dir, " 2/2", "02/2")
    with open_store(read_only=True) as store:
        latest = store.get_run(second)
        assert latest.manifest.options["shard"] == store.get_run(first).manifest.options["shard"] == "2/2"
        assert store.previous_run(latest).run_id == first
    assert "[shard 2/2]" in invoke("runs", "list").output


def test_merge_names_the_record_file_and_line_it_cannot_read(tmp_path):
    """A shard record torn or copied in part was `Error: JSONDecodeError: Unterminated string …`, naming
    no file; an empty reference was read as the current folder, a manifest's path as no record at all."""
    eval_dir = _eval(tmp_path)
    folders = _shard_folders(eval_dir, "1/2", "2/2")
    units = Path(folders[0], "units.jsonl")
    whole = units.read_bytes()
    units.write_bytes(whole[:-30])
    torn = invoke("runs", "merge", *folders)
    assert torn.exit_code == 2
    lines = whole.count(b"\n")
    assert f"the run record {folders[0]} cannot be read ({units}:{lines}: JSONDecodeError: " in torn.flat, torn.flat
    assert "copy it again from the shard's job, or run that shard again" in torn.flat
    units.unlink()
    gone = invoke("runs", "merge", *folders)
    assert gone.exit_code == 2 and f"({units}: No such file or directory)" in gone.flat, gone.flat
    units.write_bytes(whole)

    empty = invoke("runs", "merge", "", folders[1])
    assert empty.exit_code == 2 and "a shard run given is empty (an unset variable in a script?)" in empty.flat
    a_file = invoke("runs", "merge", str(units), folders[1])
    assert a_file.exit_code == 2 and f"{units} is a file, not a run record folder" in a_file.flat, a_file.flat
    manifests = invoke("runs", "merge", *(str(Path(folder, "manifest.json")) for folder in folders))
    assert manifests.exit_code == 1, manifests.output  # `records/*/manifest.json` names the records


def test_shards_run_at_different_concurrency_merge(tmp_path):
    """`--concurrency` only sets how many adapter calls are in flight, yet shards sized to their CI machines were
    refused: "shards of different invocations: --concurrency is 1 in … and 3 in …"."""
    eval_dir = _eval(tmp_path)
    ids = []
    for shard, concurrency in (("1/2", "1"), ("2/2", "3")):
        run_eval(eval_dir, "--shard", shard, "--concurrency", concurrency)
        ids.append(latest_record()[0].run_id)
    merged = invoke("runs", "merge", *ids)
    assert merged.exit_code == 1, merged.flat  # case c's gate fails, as unsharded
    manifest, _ = latest_record()
    assert manifest.options["merged_from"] == ids
    # No one width describes the merged run: null, and each shard's beside it.
    assert manifest.options["concurrency"] is None and manifest.options["shard_concurrency"] == [1, 3]
    # An option that can change a verdict still tells two invocations apart.
    run_eval(eval_dir, "--shard", "2/2", "--concurrency", "3", "--min-pass-rate", "0.1")
    mixed = invoke("runs", "merge", ids[0], latest_record()[0].run_id)
    assert mixed.exit_code == 2 and "--min-pass-rate is not given in" in mixed.flat, mixed.flat


def test_merging_the_same_shards_again_replaces_the_merged_run(tmp_path):
    """Each `assay runs merge` of the same shards recorded one more merged run: a CI job run again listed the
    merged run twice, and `compare latest` compared it with its own twin."""
    eval_dir = _eval(tmp_path)
    folders = _shard_folders(eval_dir, "1/2", "2/2")
    assert invoke("runs", "merge", *folders).exit_code == 1
    first = latest_record()[0]
    # Again, named the other way (their run ids, the other order): the same set of shards.
    with open_store(read_only=True) as store:
        ids = [store.get_run(Path(folder).name).run_id for folder in reversed(folders)]
    assert invoke("runs", "merge", *ids).exit_code == 1
    again = latest_record()[0]
    assert again.run_id == first.run_id
    listing = json.loads(invoke("runs", "list", "--kind", "video", "--limit", "1000", "--json").output)["runs"]
    merged = [run["run_id"] for run in listing if sorted(run["options"].get("merged_from") or ()) == sorted(ids)]
    assert merged == [first.run_id], merged


def test_merge_refuses_a_shard_record_cut_at_a_line_boundary(tmp_path):
    """A units.jsonl copied in part, cut between two lines: every line left reads whole, so the record passed as
    complete and the merge blamed the eval directory ("was a case or sample added since the shards ran?"),
    naming no file; the manifest says how many units the record holds."""
    eval_dir = _eval(tmp_path)
    folders = _shard_folders(eval_dir, "1/2", "2/2")
    units = Path(folders[1], "units.jsonl")
    lines = units.read_bytes().splitlines(keepends=True)
    units.write_bytes(b"".join(lines[:-3]))
    cut = invoke("runs", "merge", *folders)
    assert cut.exit_code == 2, cut.flat
    assert (f"the run record {folders[1]} cannot be read ({units}: 3 of its {len(lines)} unit(s) missing after line "
            f"{len(lines) - 3}): copy it again from the shard's job, or run that shard again") in cut.flat, cut.flat
    units.write_bytes(b"".join(lines))
    assert invoke("runs", "merge", *folders).exit_code == 1


def test_trend_suggests_a_group_when_the_newest_shard_run_is_empty(tmp_path, monkeypatch):
    """The newest run of a shard's series held no unit (cases removed, so `--shard 2/2` got none): a misspelt
    group was met with no suggestion, though the series' earlier runs hold the group meant."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))  # the newest run is this test's
    eval_dir = _eval(tmp_path)
    run_eval(eval_dir, "--shard", "2/2")
    group = latest_record()[1][0].group  # `<case>/number`, of a case shard 2/2 held
    for case in (eval_dir / "cases").glob("*.yaml"):
        if case.stem != "a":
            case.unlink()
    empty = run_eval(eval_dir, "--shard", "2/2")
    assert "Cases: 0" in empty.output and not latest_record()[1]
    trend = invoke("runs", "trend", group[:-1])
    assert trend.exit_code == 2
    assert f"did you mean {group!r}?" in trend.flat, trend.flat


def test_merged_run_keeps_the_timing_mode_of_its_samples(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    eval_dir = _eval(tmp_path)
    whole = run_eval(eval_dir, "--output-json", tmp_path / "whole.json")
    merged = invoke("runs", "merge", *_shard_run_ids(eval_dir, "1/2", "2/2"), "--output-json", tmp_path / "merged.json")
    merged_report, whole_report = read_report(tmp_path / "merged.json"), read_report(tmp_path / "whole.json")
    modes = {result["evaluation_timing_mode"] for trial in merged_report["trials"] for result in trial["results"]
             if result["status"] != "ignored"}
    assert modes == {"individual"}
    assert merged_report["summary"]["evaluation_timing_mode"] == whole_report["summary"]["evaluation_timing_mode"]
    assert merged_report["trials"][0]["summary"]["evaluation_timing_mode"] == "individual"
    # The console's timing lines, as the unsharded run prints them.
    assert "Avg evaluation latency:" in whole.flat
    assert "Avg evaluation latency:" in merged.flat
