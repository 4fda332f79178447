"""Carry and a process agent's script (agents.md's `process_agent("node agents/agent.mjs", …)`).

The agent's identity covered the experiment file and the Python modules it imports, but not the script the
command runs: editing agents/agent.mjs, the agent itself, left every attempt carried from the old script.
The project files a process agent's command names are now part of the agent component (a Python script with
the project modules it imports), so such an edit reruns the slots, saying which file changed.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

NODE_AGENT = """\
import readline from "node:readline";
const reply = "Your order ships Monday.";
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const request = JSON.parse(line);
  const result = request.method === "send" ? { events: [{ type: "message", text: reply }] } : {};
  process.stdout.write(JSON.stringify({ id: request.id, result }) + "\\n");
});
"""

PYTHON_AGENT = """\
import json
import sys

sys.path.insert(0, ".")  # started in the project folder
from agents.replies import REPLY

for line in sys.stdin:
    request = json.loads(line)
    result = {"events": [{"type": "message", "text": REPLY}]} if request["method"] == "send" else {}
    print(json.dumps({"id": request["id"], "result": result}), flush=True)
"""

EXPERIMENT = """\
from assay.agent import Experiment, complete_evidence_coverage
from assay.agent.adapters import process_agent

baseline = Experiment(agent=process_agent({command!r}, evidence_coverage=complete_evidence_coverage), model="m")
"""

EVAL = """\
from assay.agent import define_eval, includes


@define_eval
async def test(t):
    await t.send("When does my order ship?")
    t.check(t.reply, includes("Monday"))
"""


def make_project(tmp_path, command):
    project = tmp_path / "proj"
    for folder in ("experiments", "evals", "agents"):
        (project / folder).mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.assay]\nname = "process carry"\n')
    (project / "agents" / "agent.mjs").write_text(NODE_AGENT)
    (project / "agents" / "agent.py").write_text(PYTHON_AGENT)
    (project / "agents" / "replies.py").write_text('REPLY = "Your order ships Monday."\n')
    (project / "experiments" / "baseline.py").write_text(EXPERIMENT.format(command=command))
    (project / "evals" / "ship_eval.py").write_text(EVAL)
    return project


def assay(project, tmp_path, *arguments):
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "assay.db")}
    return subprocess.run([sys.executable, "-m", "assay", "agent", "run", *arguments], capture_output=True,
                          text=True, timeout=120, env=env, cwd=project)


def plan(project, tmp_path):
    done = assay(project, tmp_path, "--dry", "--json")
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")][-1]["slots"]


@pytest.mark.parametrize(
    ("command", "edited"),
    [("node agents/agent.mjs", "agents/agent.mjs"),
     (shlex.join([sys.executable, "agents/agent.py"]), "agents/replies.py")],  # a module the script imports
)
def test_editing_a_process_agents_script_reruns_its_slots_naming_the_file(tmp_path, command, edited):
    project = make_project(tmp_path, command)
    first = assay(project, tmp_path)
    assert first.returncode == 0, (first.stdout, first.stderr)
    [slot] = plan(project, tmp_path)
    assert slot["action"] == "carry", slot  # unchanged: carried

    with open(project / edited, "a") as file:
        file.write("\n// edited\n" if edited.endswith(".mjs") else "\n# edited\n")
    [slot] = plan(project, tmp_path)
    assert slot["action"] == "execute", slot
    assert slot["reasons"] == [{"code": "agent-changed", "message": f"agent changed ({edited})"}], slot


def test_a_process_agent_runs_in_the_project_folder_when_assay_is_started_elsewhere(tmp_path):
    """`assay agent run --project proj` from another folder: `node agents/agent.mjs` is the project's script (the
    command ran in the folder assay was started in, where node found no agents/agent.mjs and every attempt
    errored), and editing that script still reruns its slot."""
    project = make_project(tmp_path, "node agents/agent.mjs")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "assay.db")}

    def run(*arguments):
        return subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), *arguments],
                              capture_output=True, text=True, timeout=120, env=env, cwd=elsewhere)

    first = run()
    assert first.returncode == 0, (first.stdout, first.stderr)
    assert first.stdout.rstrip().splitlines()[-1].startswith("PASSED"), first.stdout
    (project / "agents" / "agent.mjs").write_text(NODE_AGENT.replace("Monday", "Tuesday"))
    dry = run("--dry", "--json")
    [slot] = [json.loads(line) for line in dry.stdout.splitlines() if line.startswith("{")][-1]["slots"]
    assert slot["action"] == "execute", slot
    assert slot["reasons"] == [{"code": "agent-changed", "message": "agent changed (agents/agent.mjs)"}], slot
