"""Carry and rerun through `assay agent run`: a second invocation adopts published attempts whose
execution identity is unchanged (never calling the agent for them), `--rerun` / `--rerun all` run
them again, `--dry` plans with a reason per slot and writes nothing, and every reader (`show`, the
viewer's data, `runs compare`) follows a carried slot's reference to the attempt it adopts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agent_helpers import forget_modules_under
from agent_projects import agent_project
import pytest
import typer
from typer.testing import CliRunner

from assay.cli.agent import agent_app
from assay.core.record import read_record, store_path
from assay.core.results_store import open_store

app = typer.Typer()
app.add_typer(agent_app, name="agent")
ENTRY = "from assay.cli.app import main; main()"

EXPERIMENT = """
import os
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

async def send(turn_input, ctx):
    with open(os.environ["CARRY_CALLS"], "a") as calls:
        calls.write(f"{ctx.eval_id}#{ctx.attempt + 1}\\n")
    if "boom" in turn_input.text and os.environ.get("CARRY_BOOM"):
        raise RuntimeError("the agent broke")
    return Turn([message("no" if "fail" in turn_input.text else "yes")])

main = Experiment(agent=define_agent(name="counting", send=send, evidence_coverage=complete_evidence_coverage),
                  model="m1", ATTEMPTS)
"""


def eval_source(prompt: str, *, helper: bool = False) -> str:
    lines = ["from assay.agent import define_eval, includes"]
    if helper:
        lines.append("from evals._lib.prompts import polite")
    lines += ["", "", "@define_eval", "async def test(t):"]
    lines.append(f"    await t.send(polite({prompt!r}))" if helper else f"    await t.send({prompt!r})")
    lines.append('    t.check(t.reply, includes("yes"))')
    return "\n".join(lines) + "\n"


@pytest.fixture
def carry_project(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    agent_project(root)
    (root / "evals" / "_lib").mkdir()
    (root / "experiments" / "main.py").write_text(EXPERIMENT.replace(", ATTEMPTS", ""))
    (root / "evals" / "_lib" / "prompts.py").write_text("def polite(text):\n    return f'please, {text}'\n")
    (root / "evals" / "greet_eval.py").write_text(eval_source("greet me", helper=True))
    (root / "evals" / "plain_eval.py").write_text(eval_source("answer"))
    (root / "evals" / "wrong_eval.py").write_text(eval_source("fail on purpose"))
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("CARRY_CALLS", str(calls))
    yield root
    forget_modules_under(tmp_path)


def invoke(root: Path, *args: str):
    return CliRunner().invoke(app, ["agent", "run", "--project", str(root), *args])


def calls_of(root: Path) -> list[str]:
    path = Path(os.environ["CARRY_CALLS"])
    return path.read_text().splitlines() if path.exists() else []


def ndjson(output: str) -> tuple[list[dict], dict]:
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    attempts = [line["attempt"] for line in lines if line.get("type") == "attempt"]
    return attempts, lines[-1]["receipt"]


def latest_units() -> tuple[object, list]:
    with open_store(read_only=True) as store:
        stored = store.get_run("latest")
    return read_record(Path(stored.record_path))


def test_a_second_invocation_carries_every_unchanged_slot_and_never_calls_the_agent(carry_project):
    first = invoke(carry_project, "--json")
    assert first.exit_code == 1, first.output
    assert sorted(calls_of(carry_project)) == ["greet#1", "plain#1", "wrong#1"]
    _, first_units = latest_units()

    second = invoke(carry_project, "--json")
    assert second.exit_code == 1, second.output  # the carried failure still counts as failed
    assert len(calls_of(carry_project)) == 3  # no agent call
    attempts, receipt = ndjson(second.output)
    assert receipt["counts"]["carried"] == 3 and receipt["counts"]["passed"] == 2 and receipt["counts"]["failed"] == 1
    assert {attempt["outcome"] for attempt in attempts} == {"carried"}
    origin = {unit.unit_id: unit for unit in first_units}
    for attempt in attempts:
        unit_id = f"main/{attempt['eval_id']}#1"
        assert attempt["carried_from"]["unit_id"] == unit_id
        assert attempt["locator"] == origin[unit_id].artifacts["locator"]  # the adopted attempt's own locator
        assert attempt["decision"]["action"] == "carry"


def test_the_record_references_the_carried_attempt_instead_of_copying_its_transcript(carry_project):
    invoke(carry_project)
    first_manifest, _ = latest_units()
    invoke(carry_project)
    manifest, units = latest_units()
    assert manifest.run_id != first_manifest.run_id
    for unit in units:
        assert unit.carried_from == {"run_id": first_manifest.run_id, "unit_id": unit.unit_id}
        assert "turns" not in unit.detail and unit.usage is None  # a reference, no transcript, nothing spent
    assert [unit.verdict for unit in units] == ["passed", "passed", "failed"]
    with open_store(read_only=True) as store:
        adopted = store.get_unit(manifest.run_id, "main/greet#1")
        raw = store.get_unit(manifest.run_id, "main/greet#1", adopted=False)
        page = store.unit_page(manifest.run_id)
    assert adopted.detail["turns"][0]["input"] == "please, greet me"  # read through the reference
    assert adopted.detail["carried_from"]["run_id"] == first_manifest.run_id
    assert "turns" not in raw.detail
    assert all(unit.detail.get("turns") for unit in page.units)


def test_the_viewer_and_runs_compare_read_carried_slots_through_their_reference(carry_project):
    from assay.view.data import ViewData

    invoke(carry_project)
    invoke(carry_project)
    with open_store(read_only=True) as store:
        view = ViewData(store)
        unit = view.unit({"run": "latest", "unit": "main/wrong#1"})
        comparison = view.compare({"a": "latest~1", "b": "latest", "change": "still_failing"})
    assert unit["verdict"] == "failed" and unit["detail"]["turns"][0]["input"] == "fail on purpose"
    assert unit["timing"] is not None  # the adopted attempt's phase tree
    [row] = comparison["rows"]
    assert row["unit_id"] == "main/wrong#1" and row["after"]["verdict"] == "failed"
    assert "mismatched" in row["after"]["observed"] and 'includes("yes")' in row["expected"]  # the adopted assertions
    result = subprocess.run(
        [sys.executable, "-c", ENTRY, "runs", "compare", "latest~1", "latest"], capture_output=True, text=True,
        env=os.environ, timeout=60,
    )
    assert "regressions 0, fixes 0, still failing 1, still passing 2" in result.stdout, result.stdout + result.stderr


def test_show_resolves_a_carried_attempt_from_the_store(carry_project):
    invoke(carry_project)
    invoke(carry_project)
    listing = CliRunner().invoke(app, ["agent", "show", "--project", str(carry_project), "--json"])
    documents = json.loads(listing.output)["attempts"]
    wrong = next(document for document in documents if document["eval_id"] == "wrong")
    assert wrong["outcome"] == "carried" and "turns" not in wrong
    detail = CliRunner().invoke(app, ["agent", "show", wrong["locator"], "--project", str(carry_project)])
    assert detail.exit_code == 0, detail.output
    assert "FAILED (CARRIED)  wrong [counting/m1]" in detail.output
    assert "carried from run agent-" in detail.output
    assert "user: fail on purpose" in detail.output  # the adopted transcript


def test_rerun_runs_failed_attempts_again_and_rerun_all_runs_everything(carry_project):
    invoke(carry_project)
    rerun = invoke(carry_project, "--rerun", "--json")
    assert calls_of(carry_project)[3:] == ["wrong#1"]
    attempts, receipt = ndjson(rerun.output)
    assert receipt["counts"]["carried"] == 2
    executed = next(attempt for attempt in attempts if attempt["outcome"] == "executed")
    assert executed["decision"] == {"action": "execute", "code": "previously-failed", "message": "previously failed (--rerun)"}
    everything = invoke(carry_project, "--rerun", "all", "--json")
    assert sorted(calls_of(carry_project)[4:]) == ["greet#1", "plain#1", "wrong#1"]
    assert ndjson(everything.output)[1]["counts"]["carried"] == 0


def test_errored_attempts_are_never_carried(carry_project, monkeypatch):
    monkeypatch.setenv("CARRY_BOOM", "1")
    (carry_project / "evals" / "broken_eval.py").write_text(eval_source("boom"))
    invoke(carry_project)
    again = invoke(carry_project, "--json")
    assert calls_of(carry_project).count("broken#1") == 2
    broken = next(attempt for attempt in ndjson(again.output)[0] if attempt["eval_id"] == "broken")
    assert broken["verdict"] == "errored" and broken["decision"]["code"] == "previously-errored"


def test_more_attempts_run_only_the_new_ordinals(carry_project):
    invoke(carry_project)
    result = invoke(carry_project, "--attempts", "2", "--json")
    assert sorted(calls_of(carry_project)[3:]) == ["greet#2", "plain#2", "wrong#2"]
    decisions = {(a["eval_id"], a["attempt"]): a["decision"]["code"] for a in ndjson(result.output)[0]}
    assert decisions[("greet", 1)] == "carried" and decisions[("greet", 2)] == "new-attempt"


def test_a_resume_keeps_the_carried_slots_of_its_checkpoint_and_reruns_only_the_rest(carry_project, monkeypatch):
    from assay.agent.checkpoint import list_checkpoints

    monkeypatch.setenv("CARRY_BOOM", "1")
    (carry_project / "evals" / "broken_eval.py").write_text(eval_source("boom"))
    invoke(carry_project)
    first_manifest, _ = latest_units()
    second = invoke(carry_project, "--json")  # carries three, the errored one runs again and stays errored
    assert ndjson(second.output)[1]["counts"]["carried"] == 3
    path, _ = list_checkpoints(carry_project)[-1]
    invoke(carry_project, "--rerun", "all")  # a newer published run does not change the checkpoint's slots
    monkeypatch.delenv("CARRY_BOOM")
    calls = len(calls_of(carry_project))
    resumed = invoke(carry_project, "--resume", str(path), "--json")
    assert calls_of(carry_project)[calls:] == ["broken#1"]
    attempts, receipt = ndjson(resumed.output)
    assert [attempt["eval_id"] for attempt in attempts] == ["broken"] and attempts[0]["verdict"] == "passed"
    assert receipt["counts"]["carried"] == 3
    _, units = latest_units()
    carried = {unit.unit_id: unit.carried_from for unit in units if unit.carried_from}
    assert set(carried) == {"main/greet#1", "main/plain#1", "main/wrong#1"}
    assert {reference["run_id"] for reference in carried.values()} == {first_manifest.run_id}


def test_shards_carry_their_own_slots(carry_project):
    invoke(carry_project)
    result = invoke(carry_project, "--shard", "1/2", "--json")
    attempts, receipt = ndjson(result.output)
    assert attempts and {attempt["outcome"] for attempt in attempts} == {"carried"}
    assert receipt["counts"]["carried"] == len(attempts) < 3  # only this shard's slots
    assert len(calls_of(carry_project)) == 3


def test_rerun_with_resume_is_refused(carry_project):
    result = invoke(carry_project, "--resume", "x", "--rerun")
    assert result.exit_code == 2 and "--resume reruns the saved selection" in result.output


def test_dry_prints_every_slot_with_its_reason_and_writes_nothing(carry_project, tmp_path):
    environment = {**os.environ}
    subprocess.run([sys.executable, "-c", ENTRY, "agent", "run", "--project", str(carry_project), "-q"],
                   env=environment, capture_output=True, timeout=60)
    (carry_project / "evals" / "_lib" / "prompts.py").write_text("def polite(text):\n    return f'please: {text}'\n")
    (carry_project / "evals" / "new_eval.py").write_text(eval_source("new one"))
    database = store_path(carry_project)
    before = (sorted(os.listdir(carry_project / ".assay" / "runs" / "checkpoints")), database.stat().st_size,
              sorted(os.listdir(database.parent / "records")))
    calls = len(calls_of(carry_project))

    dry = subprocess.run(
        [sys.executable, "-c", ENTRY, "agent", "run", "--project", str(carry_project), "--dry", "--rerun"],
        env=environment, capture_output=True, text=True, timeout=60,
    )
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    assert lines[0] == "PLAN  4 attempts · 4 evals × 1 experiments · 1 carried · 3 to run"
    body = "\n".join(lines)
    assert "run   greet [counting/m1]  helper changed (evals/_lib/prompts.py)" in body
    assert "run   new [counting/m1]    new eval" in body
    assert "carry plain [counting/m1]  carried from run agent-" in body
    assert "run   wrong [counting/m1]  previously failed (--rerun)" in body
    assert lines[-1] == "Nothing was run or written (--dry)."
    after = (sorted(os.listdir(carry_project / ".assay" / "runs" / "checkpoints")), database.stat().st_size,
             sorted(os.listdir(database.parent / "records")))
    assert after == before and len(calls_of(carry_project)) == calls
    assert not (carry_project / "evals" / "__pycache__").exists()

    document = json.loads(subprocess.run(
        [sys.executable, "-c", ENTRY, "agent", "run", "--project", str(carry_project), "--dry", "--json"],
        env=environment, capture_output=True, text=True, timeout=60,
    ).stdout)
    assert document["counts"] == {"carry": 2, "execute": 2, "not-dispatched": 0}
    assert {slot["eval_id"]: slot["code"] for slot in document["slots"]} == {
        "greet": "helper-changed", "new": "new-eval", "plain": "carried", "wrong": "carried",
    }


def test_the_console_shows_carried_slots_as_carried(carry_project):
    environment = {**os.environ, "COLUMNS": "120"}
    command = [sys.executable, "-c", ENTRY, "agent", "run", "--project", str(carry_project)]
    subprocess.run(command, env=environment, capture_output=True, timeout=60)
    second = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=60)
    assert second.returncode == 1
    out = second.stdout
    assert "PLAN  3 attempts · 3 evals × 1 experiments · 3 carried from earlier runs · 0 to run" in out
    assert "✗ FAILED (CARRIED)  wrong [counting/m1]" in out
    assert "carried from run agent-" in out
    assert "3 of 3 attempt(s) carried from earlier runs, not sent to the agent" in out
    assert out.rstrip().splitlines()[-1].startswith("FAILED  in ")
