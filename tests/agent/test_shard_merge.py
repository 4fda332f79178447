"""`assay agent run --shard i/n` + `assay runs merge`: the merged run equals the unsharded run."""

from __future__ import annotations

import typer
from stored_runs import latest_record
from typer.testing import CliRunner

from assay.cli.agent import agent_app
from assay.cli.runs import runs_app

app = typer.Typer()
app.add_typer(agent_app, name="agent")
app.add_typer(runs_app, name="runs")


def invoke(*args):
    return CliRunner().invoke(app, [str(arg) for arg in args])



def _comparable(units):
    rows = []
    for unit in units:
        detail = dict(unit.detail)
        rows.append((unit.unit_id, unit.verdict, unit.group, unit.reason, detail.get("failing", []),
                     [assertion["status"] for assertion in detail.get("assertions", [])]))
    return rows


def test_sharded_agent_runs_merged_equal_the_unsharded_run(project):
    # --rerun all: the shards run what the whole run ran instead of carrying its attempts.
    whole = invoke("agent", "run", "--project", project, "--attempts", "2", "--rerun", "all")
    whole_manifest, whole_units = latest_record()
    shard_ids, shard_groups = [], []
    for index in (1, 2, 3):
        result = invoke("agent", "run", "--project", project, "--attempts", "2", "--shard", f"{index}/3",
                        "--rerun", "all")
        assert result.exit_code in (0, 1), result.output
        # A CI log of one shard names it and the whole plan (the line read as if the run were the whole), as --dry does.
        assert f"PLAN  shard {index}/3: " in result.output and " of 16 attempts · " in result.output, result.output
        dry = invoke("agent", "run", "--project", project, "--attempts", "2", "--shard", f"{index}/3", "--dry")
        assert dry.output.startswith(f"PLAN  shard {index}/3: "), dry.output
        manifest, units = latest_record()
        assert manifest.options["shard"] == f"{index}/3"
        shard_ids.append(manifest.run_id)
        shard_groups.append({unit.group for unit in units})
    # Every (experiment, eval) runs in exactly one shard, both of its attempts together.
    assert sorted(group for groups in shard_groups for group in groups) == sorted({unit.group for unit in whole_units})
    assert max(map(len, shard_groups)) - min(map(len, shard_groups)) <= 1

    merged = invoke("runs", "merge", *shard_ids)
    merged_manifest, merged_units = latest_record()
    assert merged.exit_code == whole.exit_code == 1, merged.output
    assert _comparable(merged_units) == _comparable(whole_units)
    assert merged_manifest.gates == whole_manifest.gates
    assert merged_manifest.success is whole_manifest.success is False
    assert {k: v for k, v in merged_manifest.options.items() if k != "merged_from"} == dict(whole_manifest.options)
    assert "7/8 (" not in merged.output  # 16 attempts: the summary counts the merged run, not a shard
    assert "14/16" in merged.output


def test_agent_shard_option_is_validated(project):
    result = invoke("agent", "run", "--project", project, "--shard", "0/2")
    assert result.exit_code == 2
    assert "i must be between 1 and n" in result.output
    result = invoke("agent", "run", "--project", project, "--ray-address", "127.0.0.1:1")
    assert result.exit_code == 2
    assert "--ray-address needs --executor ray" in result.output


def test_a_shard_with_nothing_to_run_says_so(project):
    """A CI matrix wider than the plan: `--shard 40/40` printed an empty table and COMPLETED with no word of why."""
    result = invoke("agent", "run", "--project", project, "--shard", "40/40")
    assert result.exit_code == 0, result.output
    assert "empty-shard" in result.output and "shard 40/40 holds none of the plan's " in result.output


def test_shards_of_a_project_changed_between_them_say_so(project):
    """An eval added after the shards ran: the merge said only "was a shard incomplete or interrupted?"."""
    shard_ids = []
    for index in (1, 2):
        assert invoke("agent", "run", "--project", project, "--shard", f"{index}/2", "--rerun", "all").exit_code in (0, 1)
        shard_ids.append(latest_record()[0].run_id)
    (project / "evals" / "added_eval.py").write_text(
        "from assay.agent import define_eval\n\n\nasync def test(t):\n    await t.send('hello')\n\n\n"
        "added = define_eval(test)\n")
    merged = invoke("runs", "merge", *shard_ids)
    assert merged.exit_code == 2
    flat = " ".join(merged.output.split())
    assert "which the project's plan holds now: was an eval added since the shards ran, or a shard incomplete" in flat, flat


def _shards(project, *extra_by_shard):
    """Run `--shard i/n` for each entry's options; the record folders their runs wrote."""
    from pathlib import Path

    from assay.core.results_store import open_store

    folders = []
    for index, extra in enumerate(extra_by_shard, 1):
        result = invoke("agent", "run", "--project", project, "--shard", f"{index}/{len(extra_by_shard)}", "--rerun", "all",
                        *extra)
        assert result.exit_code in (0, 1), result.output
        with open_store(read_only=True) as store:
            folders.append(Path(store.get_run(latest_record()[0].run_id).record_path))
    return folders


def test_merging_the_same_shards_again_replaces_the_merged_run(project):
    """Each `assay runs merge` of the same shards recorded one more merged run. The shards ran at different
    --concurrency, which an agent run does not record: they merge."""
    import json

    folders = _shards(project, ("--concurrency", "1"), ("--concurrency", "4"))
    ids = [folder.name for folder in folders]
    assert invoke("runs", "merge", *folders).exit_code == 1
    first = latest_record()[0]
    assert invoke("runs", "merge", *reversed(ids)).exit_code == 1
    assert latest_record()[0].run_id == first.run_id
    listing = json.loads(invoke("runs", "list", "--kind", "agent", "--limit", "1000", "--json").output)["runs"]
    merged = [run["run_id"] for run in listing if sorted(run["options"].get("merged_from") or ()) == sorted(ids)]
    assert merged == [first.run_id], merged


def test_merge_refuses_a_shard_record_cut_at_a_line_boundary(project):
    """A units.jsonl cut between two lines read as a complete record: the merge blamed the project ("was an eval
    added since the shards ran?"), naming no file."""
    folders = _shards(project, (), ())
    units = folders[0] / "units.jsonl"
    lines = units.read_bytes().splitlines(keepends=True)
    units.write_bytes(b"".join(lines[:-1]))
    cut = invoke("runs", "merge", *folders)
    assert cut.exit_code == 2
    flat = " ".join(cut.output.split())
    assert (f"the run record {folders[0]} cannot be read ({units}: 1 of its {len(lines)} unit(s) missing after line "
            f"{len(lines) - 1}): copy it again from the shard's job, or run that shard again") in flat, flat


def test_merging_old_shards_again_after_a_newer_run_does_not_make_their_run_the_latest(project):
    """The merged run was stamped with the time of the merge: merging the shards again after a newer whole run
    made the old merged run `latest`, and `compare latest` compared it against the newer run."""
    import json

    folders = _shards(project, (), ())
    shard_times = [json.loads((folder / "manifest.json").read_text())["created_at"] for folder in folders]
    assert invoke("runs", "merge", *folders).exit_code == 1
    merged = latest_record()[0]
    assert merged.created_at > max(shard_times)  # just after the newest shard (its run id has that shard's time)
    whole = invoke("agent", "run", "--project", project, "--rerun", "all")
    assert whole.exit_code == 1, whole.output
    newer = latest_record()[0]
    assert invoke("runs", "merge", *folders).exit_code == 1
    listing = json.loads(invoke("runs", "list", "--kind", "agent", "--limit", "1000", "--json").output)["runs"]
    assert listing[0]["run_id"] == newer.run_id, [run["run_id"] for run in listing]
    assert "merged_from" not in listing[0]["options"]
