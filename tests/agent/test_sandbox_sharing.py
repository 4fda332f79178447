"""Attempts sharing sandboxes serially: `sandbox_reuse=True` lanes and eval groups (spec §1.2, §5.6).

Between tasks the workdir is reset to the post-preparation tree while $HOME and /tmp persist; a sandbox
older than its lifetime is retired; reuse is refused with --keep-sandbox and with eval groups before
anything is created. Over the local provider and Docker (skipped, saying why, without a daemon)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.agent import Experiment, Turn, define_eval, docker_sandbox, equals, local_sandbox, message
from assay.agent.discovery import EvalEntry, ExperimentEntry, GroupRef
from assay.agent.plan import build_plan, link_plan, shard_plan
from assay.agent.record import attempt_locator
from assay.agent.run_options import RunOptions
from assay.agent.runner import AgentRun
from assay.agent.sandbox import shell
from assay.errors import ConfigError
from containers import BASE_IMAGE, PROVIDERS, docker_containers, docker_image, provider  # noqa: F401 (fixtures)
from sandbox_helpers import no_sandbox_left, sandbox_agent, sandbox_dir  # noqa: F401

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "shared_sandbox"

# What the agent found when it started, then what it leaves: a note in $HOME and in the temporary folder,
# a new file in the workdir, the prepared file changed and the other prepared file deleted.
LOOK_AND_LEAVE = """
home=$(cat "$HOME/notes" 2>/dev/null | wc -l); tmp=$(cat "${TMPDIR:-/tmp}/assay-reuse-notes" 2>/dev/null | wc -l)
if [ -e added.txt ]; then added=yes; else added=no; fi
printf 'home=%s tmp=%s added=%s kept=%s gone=%s' "$home" "$tmp" "$added" "$(cat kept.txt)" "$(cat gone.txt 2>/dev/null)"
echo x >> "$HOME/notes"; echo x >> "${TMPDIR:-/tmp}/assay-reuse-notes"
echo new > added.txt; echo changed > kept.txt; rm gone.txt
"""


async def _look_and_leave(turn_input, ctx):
    seen = await ctx.sandbox.run_command("sh", "-c", LOOK_AND_LEAVE)
    return Turn([message(seen.stdout)])


def _template(provider: str):
    steps = shell("echo prepared > kept.txt && echo prepared > gone.txt")
    return (docker_sandbox(image=BASE_IMAGE) if provider == "docker" else local_sandbox()).prepare(steps)


async def _send(t):
    await t.send("look around")


def _run(plan, concurrency: int = 4):
    return asyncio.run(AgentRun(plan, RunOptions(concurrency=concurrency)).run())


def _plan(experiment: Experiment, ids, *, keep: str | None = None, groups: dict[str, GroupRef] | None = None):
    entry = ExperimentEntry("exp", experiment)
    evals = [EvalEntry(eval_id, define_eval(_send), group=(groups or {}).get(eval_id)) for eval_id in ids]
    return link_plan(build_plan([entry], {"exp": evals}), keep)


def _seen(result) -> str:
    return result.turns[0]["events"][0]["text"]


def _no_sandbox_left(provider: str, base: Path, results) -> bool:
    if provider == "docker":
        return all(not docker_containers(result.sandbox["sandbox_id"]) for result in results)
    return no_sandbox_left(base)


def test_a_reused_sandbox_keeps_home_and_tmp_and_resets_the_workdir(provider, sandbox_dir):
    experiment = Experiment(
        agent=sandbox_agent(_look_and_leave), sandbox=_template(provider), sandbox_reuse=True, lifetime=600, concurrency=1,
    )
    results = _run(_plan(experiment, ["a", "b", "c"])).results
    assert [result.verdict for result in results] == ["passed"] * 3, [result.error for result in results]
    assert len({result.sandbox["sandbox_id"] for result in results}) == 1
    assert [result.sandbox["shared"]["task"] for result in results] == [1, 2, 3]
    # $HOME and the temporary folder keep what earlier tasks wrote; the workdir is as prepared every time.
    assert [_seen(result) for result in results] == [
        f"home={n} tmp={n} added=no kept=prepared gone=prepared" for n in (0, 1, 2)
    ]
    # Each task's File Changes are its own, against the reset workdir.
    for result in results:
        changes = result.sandbox["file_changes"]["windows"][0]["changes"]
        assert [(change["path"], change["status"]) for change in changes] == [
            ("added.txt", "added"), ("gone.txt", "deleted"), ("kept.txt", "modified"),
        ]
    assert _no_sandbox_left(provider, sandbox_dir, results)


def test_without_reuse_every_attempt_starts_from_a_fresh_sandbox(sandbox_dir):
    experiment = Experiment(agent=sandbox_agent(_look_and_leave), sandbox=_template("local"), concurrency=1)
    results = _run(_plan(experiment, ["a", "b"])).results
    assert [_seen(result) for result in results] == ["home=0 tmp=0 added=no kept=prepared gone=prepared"] * 2
    assert len({result.sandbox["sandbox_id"] for result in results}) == 2
    assert "shared" not in results[0].sandbox


def test_a_sandbox_older_than_its_lifetime_is_retired_and_its_teardowns_run_once(sandbox_dir, tmp_path):
    torn_down = tmp_path / "teardowns"

    async def teardown(sandbox, hook):
        with torn_down.open("a") as file:
            file.write(sandbox.sandbox_id + "\n")

    template = local_sandbox().prepare(shell("echo prepared > kept.txt && echo prepared > gone.txt")).teardown(teardown)
    experiment = Experiment(
        agent=sandbox_agent(_look_and_leave), sandbox=template, sandbox_reuse=True, lifetime=0.001, concurrency=1,
    )
    results = _run(_plan(experiment, ["a", "b"])).results
    ids = [result.sandbox["sandbox_id"] for result in results]
    assert ids[0] != ids[1]
    assert [_seen(result) for result in results] == ["home=0 tmp=0 added=no kept=prepared gone=prepared"] * 2
    assert sorted(torn_down.read_text().split()) == sorted(ids)
    assert no_sandbox_left(sandbox_dir)


def test_lanes_run_in_parallel_up_to_the_concurrency(sandbox_dir):
    running = [0]
    most = [0]

    async def slow(turn_input, ctx):
        running[0] += 1
        most[0] = max(most[0], running[0])
        await asyncio.sleep(0.2)
        running[0] -= 1
        return await _look_and_leave(turn_input, ctx)

    experiment = Experiment(agent=sandbox_agent(slow), sandbox=_template("local"), sandbox_reuse=True, lifetime=600,
                            concurrency=2)
    outcome = _run(_plan(experiment, ["a", "b", "c", "d", "e", "f"]))
    sandboxes = [result.sandbox["sandbox_id"] for result in outcome.results]
    assert len(set(sandboxes)) == 2  # two lanes, each serving three tasks in turn
    assert sorted(sandboxes.count(sandbox) for sandbox in set(sandboxes)) == [3, 3]
    assert most[0] == 2  # the lanes overlapped, never more than the concurrency
    assert no_sandbox_left(sandbox_dir)


def test_sandbox_reuse_needs_a_lifetime():
    with pytest.raises(ConfigError, match=r"sandbox_reuse=True needs lifetime=<seconds>"):
        Experiment(agent=sandbox_agent(), sandbox=local_sandbox(), sandbox_reuse=True)


def test_sandbox_reuse_is_refused_with_keep_sandbox_and_with_eval_groups_before_anything_is_made(sandbox_dir):
    experiment = Experiment(agent=sandbox_agent(), sandbox=local_sandbox(), sandbox_reuse=True, lifetime=60)
    with pytest.raises(ConfigError, match=r"experiment exp .*sandbox_reuse=True.*--keep-sandbox"):
        _plan(experiment, ["a"], keep="failed")
    group = GroupRef("flow", "0" * 16, Path("evals/flow_group.py"))
    with pytest.raises(ConfigError, match=r"experiment exp .*sandbox_reuse=True.*eval group 'flow' \(evals/flow_group.py\)"):
        _plan(experiment, ["a"], groups={"a": group})
    assert not sandbox_dir.exists()


def test_the_command_line_refuses_reuse_with_keep_sandbox_naming_the_experiment_and_field(tmp_path, sandbox_dir):
    project = _copy_example(tmp_path)
    done = _cli(project, "run", "reused", "--keep-sandbox=all")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "experiment reused" in done.stderr and "sandbox_reuse=True" in done.stderr and "--keep-sandbox" in done.stderr
    assert "Traceback" not in done.stderr
    assert not sandbox_dir.exists()


# -- eval groups ------------------------------------------------------------------------------------------


def _copy_example(tmp_path: Path) -> Path:
    project = tmp_path / "shared"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    return project


def _cli(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "assay", "agent", *args, "--project", str(project)],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "ASSAY_STORE": str(project.parent / "store.db")},
    )


def _attempts(done: subprocess.CompletedProcess) -> list[dict]:
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return [line["attempt"] for line in lines if line["type"] == "attempt"]


def test_the_example_runs_a_group_in_one_sandbox_in_id_order_and_reuses_sandboxes(tmp_path, sandbox_dir):
    project = _copy_example(tmp_path)
    done = _cli(project, "run", "--json", "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    attempts = {(a["experiment_id"], a["eval_id"]): a for a in _attempts(done)}
    checkout, login = attempts[("grouped", "flow/checkout")], attempts[("grouped", "flow/login")]
    assert checkout["eval_group"]["id"] == login["eval_group"]["id"] == "flow"
    assert checkout["sandbox"]["sandbox_id"] == login["sandbox"]["sandbox_id"]
    # Members run in id order: checkout made the sandbox, login found checkout's note in $HOME.
    assert (checkout["sandbox"]["shared"]["task"], login["sandbox"]["shared"]["task"]) == (1, 2)
    assert "notes in home: 0" in checkout["turns"][0]["events"][0]["text"]
    assert "notes in home: 1; notes in tmp: 1; leftover in workdir: no (group flow)" in login["turns"][0]["events"][0]["text"]
    reused = [attempts[("reused", f"tasks/notes/{name}")] for name in ("one", "two", "three")]
    assert len({a["sandbox"]["sandbox_id"] for a in reused}) == 1
    assert "eval_group" not in reused[0]
    assert all(a["verdict"] == "passed" for a in attempts.values())
    assert no_sandbox_left(sandbox_dir)


def test_a_failed_member_does_not_skip_the_next_one(sandbox_dir):
    async def first(t):
        await t.send("look around")
        t.check(1, equals(2)).label("fails on purpose")

    group = GroupRef("g", "0" * 16)
    entry = ExperimentEntry("exp", Experiment(agent=sandbox_agent(_look_and_leave), sandbox=_template("local")))
    evals = [EvalEntry("g/a", define_eval(first), group=group), EvalEntry("g/b", define_eval(_send), group=group)]
    results = _run(link_plan(build_plan([entry], {"exp": evals}))).results
    assert [result.verdict for result in results] == ["failed", "passed"]
    assert _seen(results[1]) == "home=1 tmp=1 added=no kept=prepared gone=prepared"
    assert results[0].sandbox["sandbox_id"] == results[1].sandbox["sandbox_id"]
    assert no_sandbox_left(sandbox_dir)


def test_groups_run_in_parallel_with_each_other_and_members_one_at_a_time(sandbox_dir):
    running: list[str] = []
    overlaps: list[tuple[str, ...]] = []

    async def watched(turn_input, ctx):
        running.append(ctx.eval_id)
        overlaps.append(tuple(sorted(running)))
        await asyncio.sleep(0.1)
        running.remove(ctx.eval_id)
        return Turn([message("done")])

    one, two = GroupRef("one", "1" * 16), GroupRef("two", "2" * 16)
    entry = ExperimentEntry("exp", Experiment(agent=sandbox_agent(watched), sandbox=_template("local")))
    evals = [EvalEntry(f"{group.id}/{name}", define_eval(_send), group=group) for group in (one, two) for name in "abc"]
    _run(link_plan(build_plan([entry], {"exp": evals})), concurrency=4)
    # Never two members of one group at once, but the two groups overlapped.
    assert all(len({eval_id.split("/")[0] for eval_id in moment}) == len(moment) for moment in overlaps)
    assert any(len(moment) == 2 for moment in overlaps)


def test_a_shard_keeps_an_eval_group_whole():
    group = GroupRef("g", "0" * 16)
    entry = ExperimentEntry("exp", Experiment(agent=sandbox_agent()))
    evals = [EvalEntry(f"g/{n}", define_eval(_send), group=group) for n in range(6)]
    evals += [EvalEntry(f"solo/{n}", define_eval(_send)) for n in range(6)]
    plan = build_plan([entry], {"exp": evals})
    shards = [shard_plan(plan, f"{index}/3") for index in (1, 2, 3)]
    holding = [shard for shard in shards if any(p.eval.group is not None for p in shard)]
    assert len(holding) == 1 and sum(p.eval.group is not None for p in holding[0]) == 6
    assert sorted(p.eval.id for shard in shards for p in shard) == sorted(e.id for e in evals)


def test_a_group_is_shown_by_list_show_and_junit(tmp_path, sandbox_dir):
    project = _copy_example(tmp_path)
    listed = _cli(project, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    groups = {entry["id"]: entry.get("group") for entry in json.loads(listed.stdout)["evals"]}
    assert groups == {"flow/checkout": "flow", "flow/login": "flow", "tasks/notes/one": None, "tasks/notes/three": None,
                      "tasks/notes/two": None}
    table = _cli(project, "list")
    assert "group" in table.stdout and "flow" in table.stdout
    junit = tmp_path / "junit.xml"
    done = _cli(project, "run", "grouped", "--json", "--quiet", "--junit", str(junit))
    assert done.returncode == 0, done.stderr
    assert junit.read_text().count('<property name="eval_group" value="flow"/>') == 2
    locator = _attempts(done)[1]["attempt_id"]
    shown = _cli(project, "show", attempt_locator(locator))
    assert shown.returncode == 0, shown.stderr
    assert "eval group flow (definition " in shown.stdout and "shared sandbox: task 2 of grouped: eval group flow" in shown.stdout


@pytest.mark.parametrize(("group_file", "message"), [
    ('flow = define_eval_group(["flow/login", "flow/chekout"])',
     # The ids are in the message: `assay agent list`, which it used to recommend, fails the same way.
     r"eval group 'flow' \(.*flow_group.py\) names eval 'flow/chekout', which does not exist; did you mean 'flow/checkout'\? "
     r"\(the evals: flow/checkout, flow/login"),
    ("flow = define_eval_group([])", r"flow_group.py \(line 3\): an eval group needs at least one member eval id"),
])
def test_a_group_naming_no_eval_or_an_unknown_one_is_a_clear_error(tmp_path, group_file, message):
    project = _copy_example(tmp_path)
    (project / "evals" / "flow_group.py").write_text(f"from assay.agent import define_eval_group\n\n{group_file}\n")
    done = _cli(project, "list")
    assert done.returncode == 2, done.stdout + done.stderr
    assert re.search(message, done.stderr), done.stderr
    assert "Traceback" not in done.stderr


def test_a_group_made_in_an_eval_file_is_an_error_saying_where_groups_go(tmp_path):
    """`define_eval_group([...])` in an eval file was silently no group: the evals ran in sandboxes of their own."""
    project = _copy_example(tmp_path)
    (project / "evals" / "flow_group.py").unlink()
    login = project / "evals" / "flow" / "login_eval.py"
    login.write_text(login.read_text() + '\nfrom assay.agent import define_eval_group\n\n'
                     'flow = define_eval_group(["flow/login", "flow/checkout"])\n')
    done = _cli(project, "list")
    assert done.returncode == 2, done.stdout + done.stderr
    line = login.read_text().splitlines().index('flow = define_eval_group(["flow/login", "flow/checkout"])') + 1
    assert (f"Error: {login} (line {line}): define_eval_group(...) is in the eval file login_eval.py, where it makes no group: a "
            "group is declared in a file of its own under evals/, named after the group, like evals/flow_group.py for "
            "the group 'flow'") in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_group_member_that_is_not_an_id_is_named(tmp_path):
    """`define_eval_group(["flow/login", 3])` said only "takes a list of eval ids", not which member was wrong."""
    project = _copy_example(tmp_path)
    (project / "evals" / "flow_group.py").write_text(
        'from assay.agent import define_eval_group\n\nflow = define_eval_group(["flow/login", 3])\n')
    done = _cli(project, "list")
    assert done.returncode == 2, done.stdout + done.stderr
    assert ("flow_group.py (line 3): define_eval_group takes a list of eval ids (as `assay agent list` shows them); 3 is not "
            "one") in done.stderr, done.stderr


def test_an_eval_in_two_groups_names_both_groups_and_files(tmp_path):
    project = _copy_example(tmp_path)
    (project / "evals" / "again_group.py").write_text(
        'from assay.agent import define_eval_group\n\nagain = define_eval_group(["flow/login"])\n'
    )
    done = _cli(project, "list")
    assert done.returncode == 2
    assert "names eval 'flow/login', which is already in eval group 'again'" in done.stderr or (
        "names eval 'flow/login', which is already in eval group 'flow'" in done.stderr
    ), done.stderr
    assert "again_group.py" in done.stderr and "flow_group.py" in done.stderr


def test_changing_a_groups_members_reruns_them(tmp_path, sandbox_dir):
    project = _copy_example(tmp_path)
    first = _cli(project, "run", "grouped", "--json", "--quiet")
    assert first.returncode == 0, first.stderr
    carried = _cli(project, "run", "grouped", "--json", "--quiet")
    assert all(a.get("carried_from") for a in _attempts(carried)), carried.stdout[-2000:]
    (project / "evals" / "flow_group.py").write_text(
        'from assay.agent import define_eval_group\n\nflow = define_eval_group(["flow/login", "flow/checkout", '
        '"tasks/notes/one"])\n'
    )
    rerun = _cli(project, "run", "grouped", "--json", "--quiet")
    attempts = _attempts(rerun)
    assert attempts and not any(a.get("carried_from") for a in attempts)
    assert {a["decision"]["code"] for a in attempts if a["eval_id"].startswith("flow/")} == {"eval-group-changed"}
