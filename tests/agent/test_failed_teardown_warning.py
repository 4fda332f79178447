"""A teardown that fails (the agent's, or a sandbox hook's) changes no verdict, as NiceEval has it, but what it
was to release may be left behind. It was a diagnostic of each attempt, in `assay agent show` alone: a teardown
failing in every attempt passed in silence. The run now says it once per kind of teardown, with how many
attempts and the first one's unit id."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

EXPERIMENT = '''
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, define_sandbox_agent, message

async def send(turn_input, ctx):
    return Turn([message("hello")])

def close_browser(ctx):
    raise RuntimeError("the browser did not close")

AGENT = define_{kind}(name="{name}", send=send, evidence_coverage=complete_evidence_coverage{teardown})
{name} = Experiment(agent=AGENT, evals=lambda e: {which}"box" in e.tags)
'''
EVALS = '''
from assay.agent import define_eval, local_sandbox

def drop_row(sandbox, hook_ctx):
    raise RuntimeError("the row was not dropped")

async def ask(t):
    await t.send("hi")

evals = {"first": define_eval(ask), "second": define_eval(ask),
         "boxed": define_eval(ask, sandbox=local_sandbox(isolation="none").teardown(drop_row), tags=["box"])}
'''


def _project(root: Path) -> Path:
    (root / "experiments").mkdir(parents=True)
    (root / "evals").mkdir()
    (root / "pyproject.toml").write_text("[tool.assay]\n", encoding="utf-8")
    for name, kind, teardown, which in (("direct", "agent", ", teardown=close_browser", "not "), ("boxed", "sandbox_agent", "", "")):
        text = EXPERIMENT.format(name=name, kind=kind, teardown=teardown, which=which)
        (root / "experiments" / f"{name}.py").write_text(text, encoding="utf-8")
    (root / "evals" / "some_eval.py").write_text(EVALS, encoding="utf-8")
    return root


def _run(project: Path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay", "agent", "run", *arguments], cwd=project, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "ASSAY_STORE": str(project / "store" / "assay.db"),
                                                       "ASSAY_SANDBOX_DIR": str(project / "sandboxes")})


def test_failed_teardowns_are_said_once_a_run_with_their_count_and_the_first_attempt(tmp_path):
    project = _project(tmp_path / "p")
    done = _run(project)
    assert done.returncode == 0, done.stdout + done.stderr  # the verdicts stand: every attempt passed
    said = [line for line in done.stdout.splitlines() if line.startswith("warning [")]
    assert len(said) == 2, done.stdout
    # (which of the two attempts finished first is the scheduler's to say)
    assert re.fullmatch(r"warning \[agent-teardown-failed\]: agent teardown failed: the browser did not close \(in 2 "
                        r"attempt\(s\); what it releases may be left behind; `assay agent show "
                        r"direct/some/(first|second)#1` has the first\)", said[0]), said[0]
    assert said[1].startswith("warning [sandbox-teardown-failed]: ") and "the row was not dropped" in said[1], said[1]
    assert said[1].endswith("(in 1 attempt(s); what it releases may be left behind; `assay agent show "
                            "boxed/some/boxed#1` has the first)"), said[1]


def test_the_json_stream_carries_the_same_warnings(tmp_path):
    project = _project(tmp_path / "p")
    done = _run(project, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    warnings = [json.loads(line) for line in done.stdout.splitlines() if '"event":"warning"' in line.replace(" ", "")]
    assert {(w["code"], w["attempts"]) for w in warnings} == {("agent-teardown-failed", 2), ("sandbox-teardown-failed", 1)}
