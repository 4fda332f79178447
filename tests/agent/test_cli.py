import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from xml.etree import ElementTree

import pytest
import typer
from typer.testing import CliRunner

from assay.cli.agent import agent_app

app = typer.Typer()
app.add_typer(agent_app, name="agent")
ENTRY = "import typer, sys\nfrom assay.cli.agent import agent_app\napp = typer.Typer()\napp.add_typer(agent_app, name='agent')\napp(prog_name='assay')\n"


def invoke(*args):
    return CliRunner().invoke(app, ["agent", *args])


def test_init_creates_folders_and_config_and_is_idempotent(tmp_path):
    result = invoke("init", str(tmp_path / "new"))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "new" / "evals").is_dir() and (tmp_path / "new" / "experiments").is_dir()
    assert "[tool.assay]" in (tmp_path / "new" / "pyproject.toml").read_text()
    again = invoke("init", str(tmp_path / "new"))
    assert "nothing to do" in again.output


def test_init_appends_tool_assay_to_an_existing_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "app"\n')
    invoke("init", str(tmp_path))
    text = (tmp_path / "pyproject.toml").read_text()
    assert text.startswith('[project]\nname = "app"\n') and "[tool.assay]" in text


def test_list_shows_evals_and_experiments_as_json(project):
    result = invoke("list", "--project", str(project), "--json", "--tag", "hitl")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert [e["id"] for e in document["evals"]] == ["orders/refund", "orders/refund_denied"]
    assert document["experiments"][0]["id"] == "baseline"
    assert document["experiments"][0]["selectedEvalIds"] == ["orders/refund", "orders/refund_denied"]


def test_run_the_example_fails_only_the_eval_that_fails_on_purpose(project, tmp_path):
    junit = tmp_path / "out" / "junit.xml"
    result = invoke("run", "--project", str(project), "--junit", str(junit))
    assert result.exit_code == 1, result.output
    assert "✗ FAILED  wrong_on_purpose [shop-assistant/demo-model]" in result.output
    assert "mismatched: called_tool('cancel_order'): expected a call to 'cancel_order' at least 1 time, found 0" in result.output
    assert "7/8 (87.5%)" in result.output
    assert result.output.rstrip().splitlines()[-1].startswith("FAILED  in ")
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("8", "1", "0")
    failed = [case for case in suite if case.find("failure") is not None]
    assert failed[0].get("name") == "wrong_on_purpose [shop-assistant/demo-model]"
    assert failed[0].get("classname") == "baseline"


def test_run_passing_selection_exits_zero(project):
    result = invoke("run", "baseline", "orders/", "--project", str(project))
    assert result.exit_code == 0, result.output
    assert "PASSED" in result.output


def test_json_mode_prints_ndjson_ending_with_one_receipt(project):
    result = invoke("run", "--project", str(project), "--json", "--tag", "memory")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert lines[-1]["type"] == "receipt"
    assert sum(1 for line in lines if line.get("type") == "receipt") == 1
    receipt = lines[-1]["receipt"]
    assert receipt["completion"] == "completed" and receipt["exitCode"] == 0 and receipt["counts"]["passed"] == 1
    attempt = next(line["attempt"] for line in lines if line.get("type") == "attempt")
    assert attempt["eval_id"] == "memory" and attempt["locator"].startswith("@") and len(attempt["locator"]) == 13


def test_agent_and_model_options_are_rejected_with_guidance(project):
    result = invoke("run", "--project", str(project), "--model", "gpt-9")
    assert result.exit_code == 2
    assert "--model is not an option: an experiment file binds the agent and model" in result.output


@pytest.mark.parametrize("args, message", [
    (["nope"], "no experiment matches 'nope'"),
    (["baseline", "zzz"], "no evals selected after narrowing"),
    (["--concurrency", "0"], "--concurrency must be > 0"),
])
def test_usage_errors_exit_2(project, args, message):
    result = invoke("run", "--project", str(project), *args)
    assert result.exit_code == 2
    assert message in result.output


def test_show_lists_the_latest_run_and_one_attempt_in_detail(project):
    invoke("run", "--project", str(project))
    listing = invoke("show", "--project", str(project))
    assert listing.exit_code == 0
    assert "wrong_on_purpose" in listing.output
    run = json.loads(invoke("show", "--project", str(project), "--json").output)
    failed = next(a for a in run["attempts"] if a["verdict"] == "failed")
    detail = invoke("show", failed["locator"][:8], "--project", str(project))
    assert detail.exit_code == 0, detail.output
    assert "Conversation:" in detail.output and "user: Where is my order 1002?" in detail.output
    assert "→ tool lookup_order" in detail.output
    missing = invoke("show", "@ZZZZZZZZZZZZ", "--project", str(project))
    assert missing.exit_code == 2


def write_slow_project(root: Path) -> None:
    (root / "evals").mkdir(parents=True)
    (root / "experiments").mkdir()
    (root / "experiments" / "slow.py").write_text(textwrap.dedent("""
        import asyncio, os
        from pathlib import Path
        from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

        async def send(turn_input, ctx):
            if turn_input.text == "slow" and not os.environ.get("FAST"):
                Path(os.environ["MARKER"]).write_text("started")
                await asyncio.sleep(30)
            return Turn([message("ok")])

        experiment = Experiment(agent=define_agent(name="slow", send=send, evidence_coverage=complete_evidence_coverage))
    """))
    (root / "evals" / "quick_eval.py").write_text(textwrap.dedent("""
        from assay.agent import define_eval
        @define_eval
        async def test(t):
            await t.send("quick")
            t.succeeded()
    """))
    (root / "evals" / "slow_eval.py").write_text(textwrap.dedent("""
        from assay.agent import define_eval
        @define_eval
        async def test(t):
            await t.send("slow")
            t.succeeded()
    """))


def test_ctrl_c_ends_cleanly_with_130_and_the_run_resumes(tmp_path):
    root = tmp_path / "proj"
    write_slow_project(root)
    marker = tmp_path / "marker"
    environment = {**os.environ, "MARKER": str(marker), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-c", ENTRY, "agent", "run", "--project", str(root), "--concurrency", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment,
    )
    deadline = time.monotonic() + 20
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=20)
    assert process.returncode == 130, output
    assert "INTERRUPTED" in output and "Resume with" in output
    assert "Traceback" not in output
    resume_ref = next(line for line in output.splitlines() if line.startswith("Checkpoint: ")).split(": ", 1)[1]
    resumed = subprocess.run(
        [sys.executable, "-c", ENTRY, "agent", "run", "--project", str(root), "--resume", resume_ref],
        capture_output=True, text=True, env={**environment, "FAST": "1"}, timeout=60,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "1 reused from the checkpoint" in resumed.stdout
    assert "PASSED" in resumed.stdout


def test_the_console_reporter_draws_a_progress_bar_on_a_terminal():
    import io

    from rich.console import Console

    from agent_helpers import run_evals, scripted_agent
    from assay.agent import Turn, equals, message
    from assay.agent.report import ConsoleReporter

    stream = io.StringIO()
    console = Console(file=stream, force_terminal=True, width=120)
    reporter = ConsoleReporter(console)
    agent, _ = scripted_agent(lambda i, c: Turn([message("ok")]))

    async def failing(t):
        await t.send("x")
        t.check(t.reply, equals("no")).label("reply is no")

    outcome = run_evals(agent, {"bad": failing}, listener=reporter)
    reporter.summary(outcome)
    text = stream.getvalue()
    assert "PLAN  1 attempts" in text
    assert "mismatched: reply is no" in text
    assert "FAILED" in text
