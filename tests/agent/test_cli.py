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

from agent_projects import agent_project, replying_project

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
    assert failed[0].get("classname") == "baseline.wrong_on_purpose"


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
    assert receipt["completion"] == "completed" and receipt["exit_code"] == 0 and receipt["counts"]["passed"] == 1
    attempt = next(line["attempt"] for line in lines if line.get("type") == "attempt")
    assert attempt["eval_id"] == "memory" and attempt["locator"].startswith("@") and len(attempt["locator"]) == 13
    # The receipt names the run it recorded, by the id the runs commands take (it listed the experiment ids)
    (run_id,) = receipt["run_ids"]
    assert receipt["experiments"] == ["baseline"] and run_id == receipt["invocation_id"]
    from assay.cli.runs import runs_app

    shown = CliRunner().invoke(runs_app, ["show", run_id, "--json"], env={"ASSAY_STORE": os.environ["ASSAY_STORE"]})
    assert shown.exit_code == 0 and json.loads(shown.output)["run_id"] == run_id, shown.output


def test_list_and_init_refuse_the_project_config_run_would_refuse(project):
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "\n[tool.assay.judge]\nmodle = 'judge-model'\n")
    for command in (("list", "--project", str(project)), ("init", str(project)), ("run", "--project", str(project))):
        result = invoke(*command)
        assert result.exit_code == 2, (command, result.output)
        assert "unknown setting 'modle' (did you mean 'model'?)" in " ".join(result.output.split()), command


def test_agent_and_model_options_are_rejected_with_guidance(project):
    result = invoke("run", "--project", str(project), "--model", "gpt-9")
    assert result.exit_code == 2
    assert "--model is not an option: an experiment file binds the agent and model" in result.output


@pytest.mark.parametrize("args, message", [
    (["nope"], "no experiment matches 'nope'"),
    (["baseline", "zzz"], "no eval id starts with 'zzz' (`assay agent list` shows the eval ids)"),
    (["baseline", "orders/status", "ordres/refund"], "no eval id starts with 'ordres/refund'; did you mean 'orders/refund'?"),
    # A misspelt folder is suggested as the folder, not as one eval in it.
    (["baseline", "ordrs/"], "no eval id starts with 'ordrs/'; did you mean 'orders/'?"),
    (["baseline", "greetngs"], "no eval id starts with 'greetngs'; did you mean 'greetings'?"),
    # An eval prefix given where the experiment goes.
    (["orders/"], "'orders/' starts eval ids, and evals are named after the experiment: `assay agent run baseline orders/`"),
    # A misspelt eval id there: the eval meant is named, not only the experiments.
    (["greetngs"], "no experiment matches 'greetngs'; experiments: baseline. Did you mean the eval 'greetings'? Evals are "
                   "named after the experiment: `assay agent run baseline greetings`"),
    (["baselnie"], "no experiment matches 'baselnie' (did you mean 'baseline'?); experiments: baseline\n"),
    (["baseline", "--tag", "no-such-tag"], "--tag 'no-such-tag': no eval has this tag (the evals' tags: "),
    (["baseline", "--tag", "hitll"], "--tag 'hitll': no eval has this tag; did you mean 'hitl'?"),
    (["baseline", "orders/status", "--tag", "hitl"], "no evals selected after narrowing"),
    (["--rerun=faild"], "got 'faild'; did you mean 'failed'?"),
    (["--concurrency", "0"], "--concurrency must be > 0"),
    # NaN passed every range check: --shared-state-wait nan waited forever.
    (["--shared-state-wait", "nan"], "--shared-state-wait must be a finite number, got nan"),
    (["--timeout", "inf"], "--timeout must be a finite number, got inf"),
    (["--budget", "nan"], "--budget must be a finite number, got nan"),
    # The `=` form is checked after parsing, where it suggested nothing.
    (["--telemetry-host", ""], "--telemetry-host needs an address to listen on, like 127.0.0.1 (the default) or 0.0.0.0"),
    (["--keep-sandbox=fialed"], "--keep-sandbox takes failed or all (--keep-sandbox=all), got 'fialed'; did you mean 'failed'?"),
])
def test_usage_errors_exit_2(project, args, message):
    result = invoke("run", "--project", str(project), *args)
    assert result.exit_code == 2
    assert message in result.output


def test_a_tag_no_eval_has_is_a_usage_error_for_list_too(project):
    """`agent list --tag hitll` printed empty tables and exited 0 where `run` refused."""
    result = invoke("list", "--project", str(project), "--tag", "hitll")
    assert result.exit_code == 2 and "--tag 'hitll': no eval has this tag; did you mean 'hitl'?" in result.output


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
    assert f"no attempt @ZZZZZZZZZZZZ in any run of {project}" in " ".join(missing.output.split())
    # A locator an earlier run printed still shows its attempt after another run of other evals.
    assert invoke("run", "baseline", "orders/status", "--project", str(project), "--rerun", "all").exit_code == 0
    again = invoke("show", failed["locator"][:8], "--project", str(project))
    assert again.exit_code == 0 and "user: Where is my order 1002?" in again.output, again.output


def test_show_takes_the_start_of_a_run_id_and_names_the_runs_for_one_it_does_not_know(project):
    """`--run` took only a whole id, and a wrong one was "no run 'x'" with nothing to choose from."""
    for _ in range(2):
        assert invoke("run", "baseline", "orders/status", "--project", str(project), "--rerun", "all").exit_code == 0
    newest = json.loads(invoke("show", "--project", str(project), "--json").output)["run"]
    shown = invoke("show", "--project", str(project), "--run", newest[:-3])
    assert shown.exit_code == 0 and f"Run {newest}" in shown.output, shown.output
    several = invoke("show", "--project", str(project), "--run", "agent-")
    assert several.exit_code == 2 and "--run 'agent-' starts 2 runs' ids" in " ".join(several.output.split())
    typo = invoke("show", "--project", str(project), "--run", newest + "x")
    assert typo.exit_code == 2 and f"did you mean '{newest}'?" in " ".join(typo.output.split())


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


def interrupted_while_slow(root: Path, marker: Path, environment: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """`agent run` of `write_slow_project`'s project, Ctrl-C once its slow send has begun; the process and its output."""
    process = subprocess.Popen(
        [sys.executable, "-c", ENTRY, "agent", "run", "--project", str(root), "--concurrency", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment,
    )
    deadline = time.monotonic() + 20
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=20)
    return process, output


def test_ctrl_c_ends_cleanly_with_130_and_the_run_resumes(tmp_path):
    root = tmp_path / "proj"
    write_slow_project(root)
    marker = tmp_path / "marker"
    environment = {**os.environ, "MARKER": str(marker), "PYTHONUNBUFFERED": "1"}
    process, output = interrupted_while_slow(root, marker, environment)
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

    from agent_helpers import run_evals, scripted_agent
    from assay.agent import Turn, equals, message
    from assay.agent.report import ConsoleReporter
    from assay.core.console import LineWriter

    stream = io.StringIO()
    reporter = ConsoleReporter(LineWriter(stream))
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


def run_cli(*args, env=None, timeout=60):
    completed = subprocess.run(
        [sys.executable, "-c", ENTRY, "agent", *args], capture_output=True, text=True, env=env, timeout=timeout,
    )
    return completed


def test_a_run_killed_after_it_was_recorded_but_before_its_seal_is_recorded_once_after_resume(
    project, tmp_path, monkeypatch
):
    from assay.agent import run_kind
    from assay.core.results_store import open_store

    store = tmp_path / "store" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(store))
    # Killed right here: recorded and indexed, the checkpoint's lock gone with the process, not sealed.
    monkeypatch.setattr(run_kind._OpenedAgentRun, "seal", lambda self, finished: self.checkpoint.release())
    first = invoke("run", "--project", str(project))
    assert first.exit_code == 1, first.output
    monkeypatch.undo()
    monkeypatch.setenv("ASSAY_STORE", str(store))
    [checkpoint] = (project / ".assay" / "runs" / "checkpoints").glob("agent-*")
    resumed = invoke("run", "--resume", checkpoint.name, "--project", str(project))
    assert resumed.exit_code == 1, resumed.output
    assert json.loads((checkpoint / "manifest.json").read_text())["status"] == "complete"
    with open_store(store, read_only=True) as opened:
        [run] = opened.list_runs()
        assert run.run_id == checkpoint.name and run.unit_count == 8  # the record is named after its checkpoint
    assert [path.name for path in (store.parent / "records").iterdir()] == [checkpoint.name]


def interrupted_in_slow(tmp_path):
    """The slow project run with Ctrl-C while `slow` is in its send: (project, environment, receipt)."""
    root = tmp_path / "proj"
    write_slow_project(root)
    marker = tmp_path / "marker"
    environment = {**os.environ, "MARKER": str(marker), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-c", ENTRY, "agent", "run", "--project", str(root), "--concurrency", "1", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment,
    )
    deadline = time.monotonic() + 20
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)  # `slow` is inside its send
    output, errors = process.communicate(timeout=20)
    assert process.returncode == 130, output + errors
    return root, environment, json.loads(output.splitlines()[-1])["receipt"]


def test_a_new_run_of_a_plan_an_interrupted_run_began_says_how_to_reuse_its_attempts(tmp_path):
    root, environment, receipt = interrupted_in_slow(tmp_path)
    checkpoint = Path(receipt["checkpoint"]).name
    command = f"assay agent run --project {root} --resume {checkpoint}"
    expected = (f"warning [resumable-checkpoint]: the interrupted run {checkpoint} of this plan finished 1 of the 2 "
                f"attempts this run would send again; `{command}` reuses them")
    dry = run_cli("run", "--project", str(root), "--dry", env=environment)
    assert dry.returncode == 0 and dry.stdout.splitlines()[1] == expected, dry.stdout + dry.stderr
    document = json.loads(run_cli("run", "--project", str(root), "--dry", "--json", env=environment).stdout)
    assert [warning["code"] for warning in document["warnings"]] == ["resumable-checkpoint"]
    # Another plan (one eval), or the same plan once resumed to the end: nothing to say.
    narrowed = run_cli("run", "--project", str(root), "--dry", "slow", env=environment)
    assert narrowed.returncode == 0 and "resumable" not in narrowed.stdout, narrowed.stdout + narrowed.stderr
    everything = run_cli("run", "--project", str(root), "--dry", "--rerun", "all", env=environment)
    assert everything.returncode == 0 and "resumable" not in everything.stdout, everything.stdout + everything.stderr
    resumed = run_cli("run", "--project", str(root), "--resume", checkpoint, env={**environment, "FAST": "1"})
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    again = run_cli("run", "--project", str(root), "--dry", env=environment)
    assert "resumable" not in again.stdout + again.stderr


def test_a_misspelt_resume_id_names_where_ids_are_looked_up_and_the_id_meant(project):
    first = invoke("run", "--project", str(project))
    assert first.exit_code == 1, first.output  # complete: nothing to resume, but its id exists
    [checkpoint] = (project / ".assay" / "runs" / "checkpoints").glob("agent-*")
    typo = checkpoint.name[:-1] + ("0" if checkpoint.name[-1] != "0" else "1")
    result = invoke("run", "--project", str(project), "--resume", typo)
    assert result.exit_code == 2
    where = f"ids are looked up in {project}/.assay/runs/checkpoints"
    assert f"--resume {typo}: no such checkpoint ({where}); did you mean {checkpoint.name}?" in " ".join(result.output.split())
    unrelated = invoke("run", "--project", str(project), "--resume", "yesterday")
    assert f"({where}); the latest is {checkpoint.name}" in " ".join(unrelated.output.split())


def test_resuming_a_complete_run_names_the_option_and_says_what_to_do_instead(project):
    # Before: "checkpoint is already complete: <path>", naming neither --resume nor what to run instead.
    first = invoke("run", "--project", str(project))
    assert first.exit_code == 1, first.output  # failed, but every attempt finished: complete
    [checkpoint] = (project / ".assay" / "runs" / "checkpoints").glob("agent-*")
    result = invoke("run", "--project", str(project), "--resume", checkpoint.name)
    assert result.exit_code == 2
    assert (f"--resume {checkpoint.name}: that run is complete (every attempt finished), so there is nothing to "
            f"resume; `assay agent show --run {checkpoint.name}` shows its results, and `assay agent run` without "
            "--resume starts a new run") in " ".join(result.output.split())
    shown = invoke("show", "--project", str(project), "--run", checkpoint.name)
    assert shown.exit_code == 0 and checkpoint.name in shown.output, shown.output


def test_an_attempt_interrupted_in_flight_is_sealed_shown_and_rerun_on_resume(tmp_path):
    root, environment, receipt = interrupted_in_slow(tmp_path)
    assert receipt["completion"] == "interrupted" and receipt["counts"]["interrupted"] == 1
    assert receipt["counts"]["passed"] == 1

    shown = run_cli("show", "--project", str(root), "--json", env=environment)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    attempts = json.loads(shown.stdout)["attempts"]
    assert [(a["eval_id"], a["outcome"], a["verdict"]) for a in attempts] == [
        ("quick", "executed", "passed"), ("slow", "interrupted", None),
    ]
    assert attempts[1]["duration_seconds"] > 0
    listing = run_cli("show", "--project", str(root), env=environment)
    assert listing.returncode == 0, listing.stdout + listing.stderr
    rows = [line.split("│")[1:4] for line in listing.stdout.splitlines() if "@" in line]
    assert [(verdict.strip(), title.strip()) for _, verdict, title in rows] == [
        ("passed", "quick [slow]"), ("interrupted", "slow [slow]"),
    ]

    resumed = run_cli("run", "--project", str(root), "--resume", receipt["checkpoint"],
                       env={**environment, "FAST": "1"})
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "1 reused from the checkpoint" in resumed.stdout and "PASSED" in resumed.stdout
    after = json.loads(run_cli("show", "--project", str(root), "--json", env=environment).stdout)["attempts"]
    assert [(a["eval_id"], a["verdict"]) for a in after] == [("quick", "passed"), ("slow", "passed")]


def write_staggered_project(root: Path) -> None:
    """Three evals whose attempts finish in the reverse of discovery order, under two experiments."""
    (root / "evals").mkdir(parents=True)
    (root / "experiments").mkdir()
    (root / "agents").mkdir()
    (root / "agents" / "staggered.py").write_text(textwrap.dedent("""
        import asyncio
        from assay.agent import Turn, complete_evidence_coverage, define_agent, message

        DELAYS = {"first": 0.6, "second": 0.3, "third": 0.0}

        async def send(turn_input, ctx):
            await asyncio.sleep(DELAYS[turn_input.text] + (0.1 if ctx.experiment_id == "alpha" else 0.0))
            return Turn([message("ok")])

        agent = define_agent(name="staggered", send=send, evidence_coverage=complete_evidence_coverage)
    """))
    for name, attempts in (("alpha", 2), ("beta", 1)):
        (root / "experiments" / f"{name}.py").write_text(
            f"from assay.agent import Experiment\nfrom agents.staggered import agent\n"
            f"experiment = Experiment(agent=agent, attempts={attempts})\n"
        )
    for name in ("first", "second", "third"):
        (root / "evals" / f"{name}_eval.py").write_text(textwrap.dedent(f"""
            from assay.agent import define_eval
            @define_eval
            async def test(t):
                await t.send("{name}")
                t.succeeded()
        """))


def test_readback_lists_attempts_in_discovery_order_not_the_order_they_finished(tmp_path):
    root = tmp_path / "proj"
    write_staggered_project(root)
    ran = invoke("run", "--project", str(root), "--concurrency", "9", "--json")
    assert ran.exit_code == 0, ran.output
    finished = [(a["attempt"]["eval_id"], a["attempt"]["experiment_id"], a["attempt"]["attempt"])
                for a in map(json.loads, ran.output.splitlines()) if a.get("type") == "attempt"]
    discovery = [
        ("first", "alpha", 1), ("first", "alpha", 2), ("first", "beta", 1),  # attempts numbered from 1
        ("second", "alpha", 1), ("second", "alpha", 2), ("second", "beta", 1),
        ("third", "alpha", 1), ("third", "alpha", 2), ("third", "beta", 1),
    ]
    assert finished != discovery and sorted(finished) == sorted(discovery)  # they really finished out of order
    shown = json.loads(invoke("show", "--project", str(root), "--json").output)["attempts"]
    assert [(a["eval_id"], a["experiment_id"], a["attempt"]) for a in shown] == discovery
    listing = invoke("show", "--project", str(root)).output
    locators = [line.split("│")[1].strip() for line in listing.splitlines() if "@" in line]
    assert locators == [attempt["locator"] for attempt in shown]


def test_a_send_returning_the_wrong_type_names_the_agent_file_and_line(tmp_path):
    root = tmp_path / "proj"
    (root / "evals").mkdir(parents=True)
    (root / "experiments").mkdir()
    (root / "agents").mkdir()
    (root / "agents" / "chatty.py").write_text(textwrap.dedent("""
        from assay.agent import complete_evidence_coverage, define_agent


        async def send(turn_input, ctx):
            return "Hello there"  # a string, not a Turn


        agent = define_agent(name="chatty", send=send, evidence_coverage=complete_evidence_coverage)
    """))
    (root / "experiments" / "base.py").write_text(
        "from assay.agent import Experiment\nfrom agents.chatty import agent\nexperiment = Experiment(agent=agent)\n"
    )
    (root / "evals" / "hello_eval.py").write_text(
        "from assay.agent import define_eval\n@define_eval\nasync def test(t):\n    await t.send('hi')\n"
    )
    ran = invoke("run", "--project", str(root))
    assert ran.exit_code == 1, ran.output
    where = f"{root / 'agents' / 'chatty.py'}:5"
    assert "agent send must return a Turn, got str" in ran.output
    assert f"({where})" in ran.output and "attempt.py" not in ran.output
    attempt = json.loads(invoke("show", "--project", str(root), "--json").output)["attempts"][0]
    assert attempt["error"]["where"] == where and "traceback" not in attempt["error"]
    detail = invoke("show", attempt["locator"], "--project", str(root))
    assert where in detail.output and "attempt.py" not in detail.output and "Traceback" not in detail.output


def test_a_command_given_to_run_as_an_experiment_suggests_the_command(project):
    result = invoke("run", "show", "--project", str(project))
    assert result.exit_code == 2
    assert "no experiment matches 'show'" in result.output
    assert "Did you mean `assay agent show`?" in result.output
    assert "Traceback" not in result.output


def test_attempts_get_a_pass_at_k_and_flakiness_summary_and_json_is_snake_case(tmp_path):
    root = tmp_path / "proj"
    write_staggered_project(root)
    ran = invoke("run", "--project", str(root), "--attempts", "2")
    assert ran.exit_code == 0, ran.output
    assert "alpha: pass@2 3/3 evals · pass^2 3/3 · flaky 0" in ran.output
    assert "beta: pass@2 3/3 evals · pass^2 3/3 · flaky 0" in ran.output
    lines = [json.loads(line) for line in invoke("run", "--project", str(root), "--json").output.splitlines()]
    receipt = lines[-1]["receipt"]
    assert receipt["stability"]["alpha"] == {"evals": 3, "attempts": 2, "pass_at_k": 3, "pass_all_k": 3, "flaky": 0}

    def keys(value):
        if isinstance(value, dict):
            for key, item in value.items():
                yield key
                yield from keys(item)
        elif isinstance(value, list):
            for item in value:
                yield from keys(item)

    camel = {key for line in lines for key in keys(line) if any(c.isupper() for c in key)}
    assert camel == set(), camel  # one spelling in machine output: snake_case


def test_a_misspelt_rerun_value_is_named_not_taken_for_an_experiment(tmp_path):
    # Bare `--rerun` means failed, so the next word could be an experiment; one that is close to
    # a value is a typo, and saying "no experiment matches 'faild'" would send the user astray.
    completed = run_cli("run", "--project", str(tmp_path), "--rerun", "faild")
    assert completed.returncode == 2
    assert completed.stderr.strip() == "Error: --rerun takes failed or all, got 'faild'; did you mean 'failed'?"


def write_quiet_agent_project(root: Path) -> None:
    """Two experiments over one agent that stays silent for 2 s: `bounded` has a time limit, `open` none."""
    agent_project(root)
    agent = textwrap.dedent("""
        import asyncio
        from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

        async def send(turn_input, ctx):
            await asyncio.sleep(2)
            return Turn([message("late, but here")])

        quiet = define_agent(name="quiet", send=send, evidence_coverage=complete_evidence_coverage)
    """)
    (root / "experiments" / "open.py").write_text(agent + "experiment = Experiment(agent=quiet)\n")
    (root / "experiments" / "bounded.py").write_text(agent + "experiment = Experiment(agent=quiet, timeout=60)\n")
    for name in ("first", "second"):
        (root / "evals" / f"{name}_eval.py").write_text(
            "from assay.agent import define_eval\n\n@define_eval\nasync def test(t):\n    await t.send('hi')\n"
        )


def test_an_agent_with_no_time_limit_that_stays_silent_gets_one_warning_naming_it_and_timeout(tmp_path):
    root = tmp_path / "proj"
    write_quiet_agent_project(root)
    environment = {**os.environ, "ASSAY_SILENCE_WARNING_SECONDS": "0.5", "ASSAY_STORE": str(tmp_path / "store.db")}
    completed = run_cli("run", "--project", str(root), env=environment)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    warnings = [line for line in completed.stdout.splitlines() if line.startswith("warning")]
    assert len(warnings) == 1, completed.stdout  # once for the experiment, not once per silent send
    assert warnings[0].startswith("warning [agent_silent]: agent 'quiet' has sent nothing back for 0.5s (open/")
    assert "has no time limit" in warnings[0] and "set `timeout=`" in warnings[0]
    assert "PASSED" in completed.stdout  # it kept waiting, and the late replies were graded

    off = run_cli("run", "--project", str(root), "--rerun", "all", env={**environment, "ASSAY_SILENCE_WARNING_SECONDS": "0"})
    assert off.returncode == 0 and "agent_silent" not in off.stdout, off.stdout
    wrong = run_cli("run", "--project", str(root), env={**environment, "ASSAY_SILENCE_WARNING_SECONDS": "soon"})
    assert wrong.returncode == 2
    assert "ASSAY_SILENCE_WARNING_SECONDS must be a number of seconds (0: never warn), got 'soon'" in wrong.stderr


def test_a_bare_keep_sandbox_means_failed_as_niceevals_does(tmp_path):
    """`--keep-sandbox[=failed|all]`: click alone refused the bare flag ("requires an argument")."""
    from assay.agent.request import with_bare_values
    from assay.errors import UsageError

    assert with_bare_values(["--keep-sandbox"]) == ["--keep-sandbox", "failed"]
    assert with_bare_values(["--keep-sandbox", "fixer", "--rerun"]) == ["--keep-sandbox", "failed", "fixer", "--rerun", "failed"]
    assert with_bare_values(["--keep-sandbox", "all", "--", "--keep-sandbox"]) == ["--keep-sandbox", "all", "--", "--keep-sandbox"]
    with pytest.raises(UsageError, match=r"--keep-sandbox takes failed or all, got 'al'; did you mean 'all'\?"):
        with_bare_values(["--keep-sandbox", "al"])
    bare = run_cli("run", "--project", str(tmp_path), "--keep-sandbox", "--dry")
    spelt = run_cli("run", "--project", str(tmp_path), "--keep-sandbox=failed", "--dry")
    assert "requires an argument" not in bare.stderr
    assert (bare.returncode, bare.stdout, bare.stderr) == (spelt.returncode, spelt.stdout, spelt.stderr)


def test_the_attempts_gate_says_what_it_found_so_a_failed_gate_does_not_read_as_its_rule(tmp_path, monkeypatch):
    """`runs show` printed "FAIL attempts: no failed or errored attempts" for a run with failed attempts: the
    message was the rule. Every other gate's message is what it found."""
    project = agent_project(tmp_path / "gate")
    (project / "experiments" / "base.py").write_text(
        "from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message\n\n"
        "async def send(turn_input, ctx):\n    return Turn(events=[message('hello')])\n\n"
        "base = Experiment(agent=define_agent(name='echo', send=send, evidence_coverage=complete_evidence_coverage))\n")
    (project / "evals" / "two_eval.py").write_text(
        "from assay.agent import define_eval, equals\n\n"
        "async def good(t):\n    await t.send('hi')\n\n"
        "async def bad(t):\n    await t.send('hi')\n    t.check(t.reply, equals('bye'))\n\n"
        "evals = {'good': define_eval(good), 'bad': define_eval(bad)}\n")
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    ran = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project)], capture_output=True,
                         text=True, timeout=120, env=os.environ)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    shown = subprocess.run([sys.executable, "-m", "assay", "runs", "show", "latest"], capture_output=True, text=True,
                           timeout=60, env=os.environ)
    assert "FAIL attempts: 1 failed and 0 errored attempt(s)" in shown.stdout.splitlines(), shown.stdout


def test_the_progress_line_of_a_resumed_run_counts_what_it_reused(tmp_path):
    """The agent runner tells the progress line the verdicts of the attempts it reuses from the checkpoint."""
    project = replying_project(tmp_path / "p")
    (project / "evals" / "two_eval.py").write_text(
        "from assay.agent import define_eval, includes\n\n"
        "async def fails(t):\n    await t.send('hi')\n    t.check(t.reply, includes('yes'))\n\n"
        "async def errs(t):\n    raise RuntimeError('broken')\n\n"
        "EVALS = {'fails': define_eval(fails), 'errs': define_eval(errs)}\n")
    environment = {**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")}
    first = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project)],
                           capture_output=True, text=True, env=environment, timeout=120)
    assert first.returncode == 1 and "[2/2] 0 passed · 1 failed · 1 errored" in first.stderr, first.stderr
    [checkpoint] = (project / ".assay" / "runs" / "checkpoints").iterdir()
    resumed = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--resume", str(checkpoint)],
                             capture_output=True, text=True, env=environment, timeout=120)
    # the failed attempt is reused, the errored one runs again
    assert "[2/2] 0 passed · 1 failed · 1 errored" in resumed.stderr, resumed.stdout + resumed.stderr


def test_a_sandbox_override_no_eval_can_take_says_it_changes_nothing(project):
    """`--sandbox docker:IMAGE` on evals that run in no sandbox was taken without a word."""
    result = invoke("run", "--project", str(project), "--sandbox", "local", "baseline", "orders/")
    assert ("warning [sandbox-override-unused]: --sandbox local: no selected eval runs in a sandbox, so it changes "
            "nothing") in result.output, result.output


def test_a_failure_message_of_several_lines_stays_under_its_attempt(tmp_path):
    """A message holding a command's stderr tail went on at the margin, out of the RESULTS indentation."""
    root = replying_project(tmp_path / "p")
    (root / "evals" / "multi_eval.py").write_text(
        "from assay.agent import define_eval\n\n"
        "@define_eval\nasync def test(t):\n    raise RuntimeError('first line\\nsecond line\\nthird line')\n")
    result = invoke("run", "--project", str(root))
    lines = result.output.splitlines()
    at = next(index for index, line in enumerate(lines) if "first line" in line)
    assert lines[at].startswith("      eval-exception: RuntimeError: first line"), lines[at]
    assert lines[at + 1] == "        second line" and lines[at + 2].startswith("        third line"), lines[at:at + 3]
    shown = invoke("show", "--project", str(root))
    continued = [line for line in shown.output.splitlines() if "second line" in line]
    assert continued == ["      second line"], shown.output


def test_a_refused_resume_says_what_changed_since_the_checkpoint(tmp_path):
    """`checkpoint inputs changed; start a new operation …` (GlassKit's words) named nothing: which file, eval or
    experiment changed was left to guess."""
    project = replying_project(tmp_path / "p")
    evals = project / "evals" / "two_eval.py"
    evals.write_text("from assay.agent import define_eval\n\n"
                     "async def errs(t):\n    raise RuntimeError('broken')\n\n"
                     "EVALS = {'errs': define_eval(errs)}\n")
    environment = {**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")}
    first = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project)],
                           capture_output=True, text=True, env=environment, timeout=120)
    assert first.returncode == 1, first.stdout + first.stderr  # the errored attempt leaves a checkpoint to resume
    [checkpoint] = (project / ".assay" / "runs" / "checkpoints").iterdir()

    def resume() -> str:
        resumed = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--resume",
                                  checkpoint.name], capture_output=True, text=True, env=environment, timeout=120)
        assert resumed.returncode == 2, resumed.stdout + resumed.stderr
        return resumed.stderr

    evals.write_text(evals.read_text().replace("'errs': define_eval(errs)", "'errs': define_eval(errs), 'more': define_eval(errs)"))
    assert (f"checkpoint inputs changed (eval file changed: evals/two_eval.py; eval added: two/more); start a new "
            f"operation instead of resuming {checkpoint}") in resume()
    evals.write_text(evals.read_text().replace(", 'more': define_eval(errs)", ""))
    experiment = project / "experiments" / "e.py"
    experiment.write_text(experiment.read_text().replace("Experiment(agent=", "Experiment(model='m2', agent="))
    assert "checkpoint inputs changed (experiment changed: e (model)); start a new operation" in resume()


def test_after_ctrl_c_attempts_that_never_started_are_counted_and_shown_as_not_started(tmp_path):
    """`2 attempt(s) interrupted before they finished` counted a slot that never began, and `show` said of it
    `executed: new eval`."""
    root = tmp_path / "proj"
    write_slow_project(root)
    (root / "evals" / "zlater_eval.py").write_text(
        "from assay.agent import define_eval\n\n@define_eval\nasync def test(t):\n    await t.send('quick')\n")
    marker = tmp_path / "marker"
    environment = {**os.environ, "MARKER": str(marker), "PYTHONUNBUFFERED": "1", "ASSAY_STORE": str(tmp_path / "s.db")}
    process, output = interrupted_while_slow(root, marker, environment)
    assert process.returncode == 130, output
    assert "1 attempt(s) interrupted before they finished; 1 not started" in output.splitlines(), output
    shown = subprocess.run([sys.executable, "-c", ENTRY, "agent", "show", "--project", str(root), "--json"],
                           capture_output=True, text=True, env=environment, timeout=60)
    locator = next(attempt["locator"] for attempt in json.loads(shown.stdout)["attempts"]
                   if attempt["eval_id"].startswith("zlater"))
    detail = subprocess.run([sys.executable, "-c", ENTRY, "agent", "show", "--project", str(root), locator],
                            capture_output=True, text=True, env=environment, timeout=60)
    assert "not run: the run was interrupted before it started" in detail.stdout.splitlines(), detail.stdout
    assert "executed:" not in detail.stdout


def test_what_an_agent_or_eval_prints_goes_to_stderr_and_json_stays_parseable(tmp_path):
    project = replying_project(tmp_path / "p", reply="yes")
    experiment = project / "experiments" / "e.py"
    # The agent prints from its send and from a worker thread; the eval prints too.
    experiment.write_text(experiment.read_text().replace(
        "async def send(turn_input, ctx):\n",
        "import asyncio\n\nasync def send(turn_input, ctx):\n    print('agent says hi')\n"
        "    await asyncio.to_thread(print, 'thread says hi')\n",
    ))
    (project / "evals" / "chatty_eval.py").write_text(
        "from assay.agent import define_eval\n\n"
        "async def body(t):\n    print('eval says hi')\n    await t.send('hello')\n\n"
        "chatty = define_eval(body)\n"
    )
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]  # every line is an event
    assert lines[-1]["type"] == "receipt" and lines[-1]["receipt"]["counts"]["passed"] == 1
    for said in ("agent says hi", "thread says hi", "eval says hi"):
        assert said in done.stderr and said not in done.stdout
