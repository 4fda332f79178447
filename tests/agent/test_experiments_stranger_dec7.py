"""A stranger's first CI run of an agent suite (H8, Dec 7): shards run as separate processes and merged, then
read back with `assay agent show`, where no shard's checkpoint is at hand; and `--dry` at the edges (`--budget 0`,
a shard wider than the plan) saying what the run then does. Real processes, a real results store."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

AGENT = '''from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message


async def send(turn_input, ctx):
    reply = "Your order ships Monday." if "order" in turn_input.text else "Sorry, I can't help with that."
    return Turn([message(reply)])


baseline = Experiment(
    agent=define_agent(name="shop", send=send, evidence_coverage=complete_evidence_coverage),
    model="demo-model",
)
'''
EVAL = '''from assay.agent import define_eval, includes


@define_eval
async def test(t):
    await t.send("{question}")
    t.check(t.reply, includes("{expected}"))
'''


def _project(root: Path) -> Path:
    (root / "experiments").mkdir(parents=True)
    (root / "evals").mkdir()
    (root / "pyproject.toml").write_text('[tool.assay]\nname = "carry demo"\n')
    (root / "experiments" / "baseline.py").write_text(AGENT)
    for name, question, expected in (("shipping", "When does my order ship?", "Monday"),
                                     ("greeting", "Is my order on its way?", "ships"),
                                     ("refund", "Can I get a refund?", "refund"),
                                     ("status", "Where is my order?", "Monday")):
        (root / "evals" / f"{name}_eval.py").write_text(EVAL.format(question=question, expected=expected))
    return root


def _assay(*arguments: str, project: Path, store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=120,
                          cwd=project, env={**os.environ, "ASSAY_STORE": str(store)})


def _receipt(done: subprocess.CompletedProcess[str]) -> dict:
    return json.loads(done.stdout.strip().splitlines()[-1])["receipt"]


def test_a_merged_shard_run_is_shown_by_agent_show_also_where_no_shard_checkpoint_is(tmp_path: Path) -> None:
    project, store = _project(tmp_path / "project"), tmp_path / "store" / "assay.db"
    jobs = [subprocess.Popen([sys.executable, "-m", "assay", "agent", "run", "--shard", f"{index}/2", "--json"],
                             cwd=project, env={**os.environ, "ASSAY_STORE": str(store)},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for index in (1, 2)]
    shards = []
    for job in jobs:
        out, err = job.communicate(timeout=120)
        assert job.returncode == 1 or job.returncode == 0, err
        shards.append(json.loads(out.strip().splitlines()[-1])["receipt"]["invocation_id"])
    merged = _assay("runs", "merge", *shards, project=project, store=store)
    assert merged.returncode == 1, merged.stdout + merged.stderr  # refund fails
    [merged_id] = [line.split()[1] for line in _assay("runs", "list", project=project, store=store).stdout.splitlines()
                   if "agent-" in line and "[shard" not in line]

    shown = _assay("agent", "show", "--run", merged_id, project=project, store=store)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"Run {merged_id}\n"), shown.stdout
    for eval_id in ("shipping", "greeting", "refund", "status"):
        assert f" {eval_id} [shop/demo-model]" in shown.stdout, shown.stdout
    assert "FAILED  refund [shop/demo-model]" in shown.stdout and "does not include \"refund\"" in shown.stdout
    by_prefix = _assay("agent", "show", "--run", merged_id[:-3], project=project, store=store)
    assert by_prefix.returncode == 0 and by_prefix.stdout == shown.stdout, by_prefix.stderr

    # The merge job of a CI pipeline has the records, not the shards' checkpoints: the locators it prints are
    # still shown whole (conversation, assertions), read from the store.
    [refund_row] = [line for line in shown.stdout.splitlines() if "refund [shop" in line and line.startswith("│")]
    locator = refund_row.split()[1]
    shutil.rmtree(project / ".assay" / "runs" / "checkpoints")
    one = _assay("agent", "show", locator, project=project, store=store)
    assert one.returncode == 0, one.stderr
    assert one.stdout.startswith(f"{locator}  FAILED  refund [shop/demo-model]\n"), one.stdout
    assert "user: Can I get a refund?" in one.stdout and "assistant: Sorry, I can't help with that." in one.stdout
    latest = _assay("agent", "show", project=project, store=store)
    assert latest.returncode == 0 and latest.stdout.startswith(f"Run {merged_id}\n"), latest.stdout + latest.stderr
    unknown = _assay("agent", "show", "@ZZZZZZ", project=project, store=store)
    assert unknown.returncode == 2 and "no attempt @ZZZZZZ in any run of" in unknown.stderr, unknown.stderr


def test_dry_says_a_zero_budget_dispatches_nothing_as_the_run_then_does(tmp_path: Path) -> None:
    project, store = _project(tmp_path / "project"), tmp_path / "store" / "assay.db"
    first = _assay("agent", "run", "--json", project=project, store=store)
    assert _receipt(first)["counts"]["failed"] == 1, first.stdout
    (project / "evals" / "status_eval.py").write_text(EVAL.format(question="Where is my order now?", expected="Monday"))

    dry = _assay("agent", "run", "--dry", "--budget", "0", "--json", project=project, store=store)
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert plan["counts"] == {"carry": 3, "execute": 0, "not-dispatched": 1}, plan["counts"]
    [status] = [slot for slot in plan["slots"] if slot["eval_id"] == "status"]
    assert status["action"] == "not-dispatched" and status["code"] == "budget_exhausted", status
    # Every reason is kept: why it would have run, too.
    assert [reason["code"] for reason in status["reasons"]] == ["budget_exhausted", "eval-source-changed"], status["reasons"]
    text = _assay("agent", "run", "--dry", "--budget", "0", project=project, store=store).stdout
    assert text.splitlines()[0].endswith("· 3 carried · 0 to run · 1 not dispatched"), text

    run = _assay("agent", "run", "--budget", "0", "--json", project=project, store=store)
    counts = _receipt(run)["counts"]
    assert (counts["carried"], counts["not_dispatched"]) == (3, 1), counts


def test_dry_of_a_shard_wider_than_the_plan_warns_as_its_run_does(tmp_path: Path) -> None:
    project, store = _project(tmp_path / "project"), tmp_path / "store" / "assay.db"
    dry = _assay("agent", "run", "--dry", "--shard", "7/9", project=project, store=store)
    assert dry.returncode == 0, dry.stderr
    warning = ("warning [empty-shard]: shard 7/9 holds none of the plan's 4 attempt(s) (an eval's attempts are never "
               "split between shards): nothing to run, no gate to fail")
    assert dry.stdout.splitlines()[1] == warning, dry.stdout
    document = json.loads(_assay("agent", "run", "--dry", "--shard", "7/9", "--json", project=project, store=store).stdout)
    assert [item["code"] for item in document["warnings"]] == ["empty-shard"], document
    run = _assay("agent", "run", "--shard", "7/9", project=project, store=store)
    assert run.returncode == 0 and warning in run.stdout + run.stderr, run.stdout + run.stderr


PRICED_AGENT = '''from assay.agent import Experiment, Turn, Usage, complete_evidence_coverage, define_agent, message


async def send(turn_input, ctx):
    return Turn([message("ok")], usage=Usage(input_tokens=1, output_tokens=0))


main = Experiment(
    agent=define_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage), model="m",{budget}
)
'''


def _priced_project(root: Path, budget: str = "") -> Path:
    (root / "experiments").mkdir(parents=True)
    (root / "evals").mkdir()
    # $1 an attempt: one input token at a million dollars per million.
    (root / "pyproject.toml").write_text('[tool.assay]\nconcurrency = 1\n\n[tool.assay.pricing]\n'
                                         '"m" = { input = 1000000.0, output = 0.0 }\n')
    (root / "experiments" / "main.py").write_text(PRICED_AGENT.format(budget=budget))
    for index in range(6):
        (root / "evals" / f"e{index}_eval.py").write_text(EVAL.format(question="q", expected="ok"))
    return root


def test_a_run_only_its_budget_option_stopped_says_to_run_again_with_more_not_to_resume(tmp_path: Path) -> None:
    project, store = _priced_project(tmp_path / "project"), tmp_path / "store" / "assay.db"
    stopped = _assay("agent", "run", "--budget", "2", project=project, store=store)
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert "Resume with" not in stopped.stdout, stopped.stdout
    assert ("--budget 2 stopped this run, and a --resume keeps it (it would stop at once again): run `assay agent run` "
            "again with a larger --budget, which carries the attempts that finished.") in stopped.stdout, stopped.stdout
    [checkpoint] = [line.removeprefix("Checkpoint: ") for line in stopped.stdout.splitlines()
                    if line.startswith("Checkpoint: ")]
    # What the line says: a resume dispatches nothing, a larger --budget carries the two that finished.
    resumed = _assay("agent", "run", "--resume", checkpoint, "--json", project=project, store=store)
    assert _receipt(resumed)["counts"]["not_dispatched"] == 4, resumed.stdout
    more = _assay("agent", "run", "--budget", "10", "--json", project=project, store=store)
    counts = _receipt(more)["counts"]
    assert (counts["carried"], counts["passed"], counts["not_dispatched"]) == (2, 6, 0), counts


def test_a_run_its_experiment_budget_stopped_keeps_the_resume_line(tmp_path: Path) -> None:
    # The experiment's budget= can be raised in its file before resuming (the checkpoint allows that edit).
    project, store = _priced_project(tmp_path / "project", budget=" budget=2,"), tmp_path / "store" / "assay.db"
    stopped = _assay("agent", "run", project=project, store=store)
    assert stopped.returncode == 1 and "Resume with `assay agent run --project" in stopped.stdout, stopped.stdout
    assert "stopped this run" not in stopped.stdout


def test_dry_says_a_renamed_or_added_experiment_is_new_not_that_every_eval_is(tmp_path: Path) -> None:
    project, store = _project(tmp_path / "project"), tmp_path / "store" / "assay.db"
    first = _assay("agent", "run", "--dry", "--json", project=project, store=store)
    assert {slot["code"] for slot in json.loads(first.stdout)["slots"]} == {"new-eval"}  # a first run: all new
    assert _assay("agent", "run", project=project, store=store).returncode == 1
    (project / "experiments" / "baseline.py").rename(project / "experiments" / "shop.py")
    (project / "experiments" / "models").mkdir()
    (project / "experiments" / "models" / "other.py").write_text(AGENT.replace('"demo-model"', '"other-model"'))
    (project / "evals" / "late_eval.py").write_text(EVAL.format(question="Late order?", expected="Monday"))
    plan = json.loads(_assay("agent", "run", "--dry", "--json", project=project, store=store).stdout)
    codes = {(slot["experiment_id"], slot["eval_id"]): slot["code"] for slot in plan["slots"]}
    assert set(codes.values()) == {"new-experiment"} and len(codes) == 10, codes
    text = _assay("agent", "run", "--dry", "shop", "refund", project=project, store=store).stdout
    assert "  run   refund [shop/demo-model]  new experiment (no earlier run of the project ran it)" in text, text

    assert _assay("agent", "run", "shop", project=project, store=store).returncode == 1
    (project / "evals" / "later_eval.py").write_text(EVAL.format(question="Later order?", expected="Monday"))
    plan = json.loads(_assay("agent", "run", "--dry", "--json", project=project, store=store).stdout)
    codes = {(slot["experiment_id"], slot["eval_id"]): slot["code"] for slot in plan["slots"]}
    assert codes[("shop", "later")] == "new-eval" and codes[("shop", "late")] == "carried", codes
    assert codes[("models/other", "later")] == "new-experiment", codes
