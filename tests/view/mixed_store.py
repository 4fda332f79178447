"""A store with video, agent and doc units of real runs, judge-graded ones among them, for label mode.

A private copy of the shared filled store (video, doc and agent runs, see filled_store.py), plus an
agent project whose evals are judged by a fake OpenAI-compatible model (`assay agent run`) and doc
`judge-coverage` / `judge-pairwise` runs against the same fake model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
DOC_TESTS = HERE.parent / "doc"
if str(DOC_TESTS) not in sys.path:
    sys.path.insert(0, str(DOC_TESTS))

from doc_judges import judge_responder  # noqa: E402
from doc_suites import invoke, make_suite  # noqa: E402
from servers.fake_openai import FakeOpenAIServer, RecordedRequest, json_reply  # noqa: E402

# Each judged eval's reply, and the score the fake judge gives it.
REPLIES = {
    "paris": ("Paris, 21 C and sunny.", 0.9),
    "lyon": ("Lyon is rainy today.", 0.8),
    "nowhere": ("I cannot tell.", 0.1),
    "oslo": ("Oslo: -3 C.", 0.7),
    "vague": ("Somewhere warm.", 0.3),
    "rome": ("Rome, 25 C.", 0.95),
}


@dataclass(frozen=True)
class MixedStore:
    database: Path
    agent_judged: str  # the run id of the judged agent run
    doc_coverage: str
    doc_pairwise: str


def _judge(request: RecordedRequest):
    """The agent judge's score for the reply in the prompt; doc judges get valid eval-kit answers."""
    prompt = request.prompt
    if "[Output to judge]" in prompt:
        output = prompt.split("[Output to judge]", 1)[1]
        for reply, score in REPLIES.values():
            if reply in output:
                return json_reply({"reasons": f"graded {score}", "score": score})
        return json_reply({"reasons": "no reply", "score": 0.5})
    kind = "pairwise" if "<candidate_a>" in prompt else "pointwise"
    return judge_responder(kind, verdict="missing")(request) if kind == "pointwise" else judge_responder(kind)(request)


def _agent_project(root: Path, base_url: str) -> Path:
    project = root / "judged"
    for folder in ("evals", "agents", "experiments"):
        (project / folder).mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        f'[tool.assay]\nname = "judged"\n\n[tool.assay.judge]\nmodel = "judge-1"\nbase_url = "{base_url}"\napi_key_env = ""\n',
        encoding="utf-8",
    )
    replies = {f"question {name}": reply for name, (reply, _) in REPLIES.items()}
    (project / "agents" / "cities.py").write_text(
        "from assay.agent import Turn, complete_evidence_coverage, define_agent, message\n\n"
        f"REPLIES = {replies!r}\n\n"
        "async def send(turn_input, ctx):\n    return Turn([message(REPLIES.get(turn_input.text, 'no idea'))])\n\n"
        "cities = define_agent(name='cities', send=send, evidence_coverage=complete_evidence_coverage)\n",
        encoding="utf-8",
    )
    (project / "experiments" / "main.py").write_text(
        "from agents.cities import cities\nfrom assay.agent import Experiment\n\nmain = Experiment(agent=cities)\n",
        encoding="utf-8",
    )
    (project / "evals" / "weather_eval.py").write_text(
        "from assay.agent import define_eval, includes\n\n"
        "def ask(city):\n"
        "    async def test(t):\n"
        "        await t.send(f'question {city}')\n"
        "        t.check(t.reply, includes(' C'))\n"
        "        t.judge('Names a city and gives a temperature.', threshold=0.5)\n"
        "    return define_eval(test, judge=True)\n\n"
        f"EVALS = {{name: ask(name) for name in {list(REPLIES)!r}}}\n",
        encoding="utf-8",
    )
    return project


def _latest(database: Path) -> str:
    from assay.core.results_store import SqliteRunStore

    with SqliteRunStore(database, read_only=True) as store:
        return store.resolve("latest")


def build_mixed_store(root: Path, filled_database: Path) -> MixedStore:
    """Copy the filled store into `root` and add the judged runs; returns where it is."""
    folder = root / "store"
    shutil.copytree(filled_database.parent, folder)
    database = folder / filled_database.name
    server = FakeOpenAIServer().start()
    try:
        server.respond_with(_judge)
        project = _agent_project(root, server.base_url)
        environment = {**os.environ, "ASSAY_STORE": str(database)}
        completed = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--quiet"], cwd=project, env=environment,
                                   capture_output=True, text=True, timeout=120, check=False)
        assert completed.returncode == 1, completed.stdout + completed.stderr  # two replies fail the judge
        agent_judged = _latest(database)
        suite = make_suite(root / "doc")
        suite.enable("judge_coverage", "judge_pairwise")
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(suite.repo)
            patch.setenv("ASSAY_STORE", str(database))
            env = {"ASSAY_JUDGE_BASE_URL": server.base_url, "ASSAY_JUDGE_API_KEY": "test-key"}
            model = ["--model", "judge-model", "--provider", "openai", "--effort", "low"]
            coverage = invoke("judge-coverage", "--case", "case-one", "--candidate", "candidates/good.md", *model,
                              "--run-id", "cov-1", env=env)
            assert coverage.exit_code == 0, coverage.stderr
            doc_coverage = _latest(database)
            pairwise = invoke("judge-pairwise", "--case", "case-one", "--candidate-a", "candidates/good.md",
                              "--candidate-b", "candidates/bad.md", *model, "--seed", "0", "--run-id", "pair-1", env=env)
            assert pairwise.exit_code == 0, pairwise.stderr
            doc_pairwise = _latest(database)
    finally:
        server.stop()
    return MixedStore(database, agent_judged, doc_coverage, doc_pairwise)


def labels_in(database: Path) -> list[dict]:
    lines = (database.parent / "labels.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]
