"""Every command of every kind behind `| head -1`: it ends promptly, without a traceback.

Two readers: one that takes a line and leaves (`head -1`), and one that is gone before the
command writes anything (the harshest case: every write fails)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agent_projects import agent_project, replying_project
from reader_pipes import reader_leaves
from cli_examples import AGENT_RUN, DOC_CONFIG, DOC_RUN, VIDEO_RUN, assay, environment
CLOSED_MESSAGE = "assay: standard output was closed, so the command stopped as on Ctrl-C"



COMMANDS = {
    "video run": VIDEO_RUN,
    "video validate": ("video", "validate", "--eval-dir", "examples/video"),
    "video list-samples": ("video", "list-samples", "--eval-dir", "examples/video"),
    "video export-frames": ("video", "export-frames", "--eval-dir", "examples/video", "--case", "traffic-light", "--at", "1.0"),
    "video seed": ("video", "seed", "--eval-dir", "examples/video"),
    "video review": ("video", "review", "--eval-dir", "examples/video", "--port", "0", "--no-open"),
    "video store prune-cache": ("video", "store", "prune-cache"),
    "agent list": ("agent", "list", "--project", "examples/agent"),
    "agent run": AGENT_RUN,
    "agent show": ("agent", "show", "--project", "examples/agent"),
    "doc doctor": ("doc", "doctor", *DOC_CONFIG),
    "doc list-cases": ("doc", "list-cases", *DOC_CONFIG),
    "doc validate-fixtures": ("doc", "validate-fixtures", *DOC_CONFIG),
    "doc run-case": DOC_RUN,
    "runs list": ("runs", "list"),
    "runs show": ("runs", "show", "latest"),
    "runs compare": ("runs", "compare", "latest~1", "latest"),
    "view": ("view", "--port", "0", "--no-open"),
    "help": ("--help",),
}


# Servers print their address and then write nothing: they stop because the pipe is watched.
@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_command_whose_reader_leaves_after_one_line_ends_without_a_traceback(workspace: Path, name: str) -> None:
    [first], code, stderr = reader_leaves(assay(*COMMANDS[name]), cwd=workspace, env=environment(workspace), timeout=30)
    assert first, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert code in (0, 1, 130), stderr
    if code == 130:
        assert stderr.strip().splitlines()[-1].startswith(CLOSED_MESSAGE), stderr
        assert "Interrupted." not in stderr.splitlines(), stderr  # the closed-stdout line says it once


def test_an_agent_run_that_writes_nothing_more_stops_promptly_once_its_reader_leaves(tmp_path: Path) -> None:
    project = tmp_path / "slow"
    agent_project(project)
    (project / "experiments" / "slow.py").write_text(
        "import asyncio\n"
        "from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message\n\n"
        "async def send(turn_input, ctx):\n"
        "    await asyncio.sleep(60)\n"
        "    return Turn([message('late')])\n\n"
        "slow = Experiment(agent=define_agent(name='slow', send=send, evidence_coverage=complete_evidence_coverage))\n"
    )
    (project / "evals" / "waits_eval.py").write_text(
        "from assay.agent import define_eval\n\n@define_eval\nasync def test(t):\n    await t.send('hi')\n"
    )
    process = subprocess.Popen(
        assay("agent", "run", "--project", str(project)), env=environment(tmp_path),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()  # the plan; then nothing until the 60 s send ends
    process.stdout.close()  # `assay agent run | head -1`
    left = time.monotonic()
    try:
        code = process.wait(timeout=30)
    finally:
        process.kill()
    stopped_after = time.monotonic() - left
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert first.startswith(b"PLAN"), stderr
    assert code == 130 and stopped_after < 5, (code, stopped_after, stderr)
    assert stderr.strip().splitlines()[-1].startswith(CLOSED_MESSAGE) and "Resume with" in stderr, stderr
    assert "Traceback" not in stderr and "Interrupted." not in stderr.splitlines(), stderr


def test_a_run_whose_reader_leaves_during_its_summary_is_still_recorded_and_exits_with_its_verdict(tmp_path: Path) -> None:
    """`assay agent run | head -40`: every attempt has finished when the reader leaves in the middle of the
    results. Stopping then (as on Ctrl-C) used to skip the results store, which hears the run after the
    console, and leave the finished checkpoint open for a resume; the run is recorded and its verdict kept."""
    project = replying_project(tmp_path / "many")
    # 600 failing evals: their failure lines are far more than a pipe holds, so the summary blocks on the pipe.
    (project / "evals" / "many_eval.py").write_text(
        "from assay.agent import define_eval, includes\n\n"
        "def failing(n):\n"
        "    async def test(t):\n        await t.send('hi')\n        t.check(t.reply, includes('yes ' + 'x' * 200))\n"
        "    return define_eval(test)\n\n"
        "EVALS = {f'case{n:04d}': failing(n) for n in range(600)}\n"
    )
    env = {**environment(tmp_path), "ASSAY_STORE": str(tmp_path / "store.db")}
    # up to the first lines of the results: every attempt has settled
    _, code, stderr = reader_leaves(assay("agent", "run", "--project", str(project)), env=env,
                                    until=lambda line: line.startswith(b"  "))
    assert code == 1, (code, stderr)
    assert "Traceback" not in stderr, stderr
    listed = subprocess.run(assay("runs", "list", "--json"), env=env, capture_output=True, text=True, timeout=60)
    [run] = json.loads(listed.stdout)["runs"]
    assert (run["unit_count"], run["counts"]["failed"], run["exit_code"]) == (600, 600, 1), run
    [manifest] = (project / ".assay" / "runs" / "checkpoints").glob("*/manifest.json")
    assert json.loads(manifest.read_text())["status"] == "complete"  # not an interrupted run to resume


def test_a_doc_run_whose_reader_leaves_at_its_first_line_is_recorded_with_its_own_exit_code(workspace: Path) -> None:
    """`assay doc run-case --json | head -1`: the reader leaves at `run_started`, and the run finds out as it
    shows its verdict, its bundle finished. That bundle used to be left unrecorded, its held record dropped."""
    env = {**environment(workspace), "ASSAY_STORE": str(workspace / "doc-store" / "assay.db")}
    [first], code, stderr = reader_leaves(assay(*DOC_RUN, "--json"), cwd=workspace, env=env, timeout=60)
    assert json.loads(first)["type"] == "run_started"
    assert code == 0 and "Traceback" not in stderr, (code, stderr)
    listed = subprocess.run(assay("runs", "list", "--json"), cwd=workspace, env=env, capture_output=True, text=True,
                            timeout=60)
    [run] = json.loads(listed.stdout)["runs"]
    assert (run["kind"], run["exit_code"], run["counts"]["passed"]) == ("doc", 0, 1), run


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_command_whose_reader_is_gone_before_it_writes_ends_without_a_traceback(workspace: Path, name: str) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to stdout now fails with EPIPE
    try:
        done = subprocess.run(
            assay(*COMMANDS[name]), cwd=workspace, env=environment(workspace),
            stdout=write_end, stderr=subprocess.PIPE, timeout=30,
        )  # fmt: skip
    finally:
        os.close(write_end)
    stderr = done.stderr.decode()
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert done.returncode in (0, 1, 130), stderr


@pytest.mark.parametrize("name", ["runs compare", "runs list", "agent run", "doc run-case", "video validate", "help"])
def test_a_command_whose_stdout_and_stderr_share_the_closed_pipe_exits_130_not_1(workspace: Path, name: str) -> None:
    """`assay runs compare latest 2>&1 | head -1`: the closed-stdout line then fails on stderr too. That failed
    write used to escape as an exception, exit 1, which `runs compare` uses for "a regression was found"."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(assay(*COMMANDS[name]), cwd=workspace, env=environment(workspace), stdout=write_end,
                              stderr=write_end, timeout=60)
    finally:
        os.close(write_end)
    assert done.returncode == (0 if name == "help" else 130)


def test_the_demo_whose_reader_leaves_after_one_line_ends_without_a_traceback(workspace: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, str(workspace / "examples" / "demo.py")], cwd=workspace, env=environment(workspace),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()  # `python examples/demo.py | head -1`
    assert first.startswith(b"== assay video run "), first  # what `head -1` shows is the first command (it was blank)
    try:
        code = process.wait(timeout=120)
    finally:
        process.kill()
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert code == 130, stderr
    assert "Traceback" not in stderr and stderr.splitlines()[-1] == "demo: standard output was closed, so the demo stopped."


def test_a_reader_that_leaves_on_a_warning_after_the_last_attempt_does_not_stop_the_run(tmp_path: Path) -> None:
    """`assay agent run | head -3` leaving on the judge-preflight warning (printed once every attempt has
    settled, before the results) made the run exit 130 with a resume line, as if it had been cut short."""
    project = replying_project(tmp_path / "judged", reply="Paris")
    with (project / "pyproject.toml").open("a", encoding="utf-8") as config:  # a judge nobody answers for
        config.write('\n[tool.assay.judge]\nmodel = "j"\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = ""\n')
    (project / "evals" / "j_eval.py").write_text(
        "from assay.agent import define_eval\n\n@define_eval(judge=True)\nasync def test(t):\n"
        "    await t.send('capital?')\n    t.judge('names a city')\n")
    env = {**environment(tmp_path), "ASSAY_STORE": str(tmp_path / "store.db")}
    read, code, stderr = reader_leaves(assay("agent", "run", "--project", str(project)), env=env,
                                       until=lambda line: line.startswith(b"warning [judge-precheck-failed]"))
    assert read[-1].startswith(b"warning [judge-precheck-failed]"), read
    assert code == 1, (code, stderr)  # the run's own verdict: its one attempt errored
    listed = subprocess.run(assay("runs", "list", "--json"), env=env, capture_output=True, text=True, timeout=60)
    [run] = json.loads(listed.stdout)["runs"]
    assert run["counts"]["errored"] == 1, run


def test_a_run_stopped_before_it_kept_anything_does_not_say_finished_results_are_kept(tmp_path: Path) -> None:
    """`assay video run | head -1` stops the run while it loads, before its checkpoint exists: the closed-stdout
    line said "finished results are kept" with nothing kept and nothing to resume."""
    import shutil

    from cli_examples import EXAMPLES

    shutil.copytree(EXAMPLES / "video", tmp_path / "video", ignore=shutil.ignore_patterns("runs", "__pycache__", "*.mp4"))
    sys.path.insert(0, str(tmp_path / "video"))
    try:
        from make_video import make_demo_video
    finally:
        sys.path.pop(0)
    make_demo_video(tmp_path / "video" / "cases" / "traffic-light.mp4")
    _, code, stderr = reader_leaves(assay("video", "run", "--eval-dir", "video"), cwd=tmp_path, env=environment(tmp_path))
    assert code == 130, stderr
    last = stderr.strip().splitlines()[-1]
    kept = [path for path in (tmp_path / "video" / "runs" / "checkpoints").glob("run-*") if (path / "manifest.json").exists()]
    if kept:  # a loaded machine may get as far as a first journaled result: then it is kept, and said
        assert last.startswith(CLOSED_MESSAGE + "; finished results are kept. Resume with "), stderr
    else:
        assert last == CLOSED_MESSAGE + ".", stderr


def test_a_run_whose_reader_is_gone_before_it_starts_does_not_say_finished_results_are_kept(tmp_path: Path) -> None:
    """`assay agent run --quiet | true`: the reader had gone before the run began, which then stopped before making
    anything, yet the closed-stdout line said "finished results are kept"."""
    project = replying_project(tmp_path / "project")
    (project / "evals" / "one_eval.py").write_text(
        "from assay.agent import define_eval\n\n@define_eval\nasync def test(t):\n    await t.send('hi')\n")
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(assay("agent", "run", "--quiet"), cwd=project, env=environment(tmp_path), stdout=write_end,
                              stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write_end)
    stderr = done.stderr.decode()
    assert done.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == CLOSED_MESSAGE + ".", stderr
    assert not (project / ".assay" / "runs" / "checkpoints").exists() or not any(
        (project / ".assay" / "runs" / "checkpoints").iterdir())
