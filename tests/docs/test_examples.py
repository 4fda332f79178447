"""The guide's examples run: the files under docs/examples/ that the pages include (pymdownx.snippets)
are run here with the real CLI, so an example that stops working fails the suite.

- Agent: every eval of docs/examples/agent/ runs against its offline scripted agent and every
  assertion must hold; the judge examples run against the local fake OpenAI-compatible server.
  The assertion page must show (in code that runs) every assertion, matcher and handle method.
- Video: the case-file reference, its Python adapter, the node adapter on the shipped kit, the
  `assay.video.serve` adapter and the plain protocol adapter run on the starter's clip.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import assay.agent
import assay.video
from assay.agent import EvalContext, TurnHandle
from servers.fake_openai import fake_openai, json_reply  # noqa: F401  (the fixture)

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
AGENT_EXAMPLES = DOCS / "examples" / "agent"
VIDEO_EXAMPLES = DOCS / "examples" / "video"
ASSERTION_PAGE = DOCS / "agent" / "assertions.md"
NODE = shutil.which("node")


def run_assay(*arguments: str, cwd: Path, env: dict[str, str] | None = None, timeout: int = 120):
    return subprocess.run([sys.executable, "-m", "assay", *arguments], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def ndjson(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def included(page: Path) -> list[Path]:
    return [DOCS / name for name in re.findall(r'--8<-- "([^"]+)"', page.read_text(encoding="utf-8"))]


def eval_ids(folder: Path) -> set[str]:
    """The eval ids the files under evals/<folder> define, as the project layout names them."""
    ids = set()
    for path in (AGENT_EXAMPLES / "evals" / folder).rglob("*_eval.py"):
        eval_id = path.relative_to(AGENT_EXAMPLES / "evals").as_posix().removesuffix("_eval.py")
        keys = re.search(r"^EVALS = \{(.*)\}", path.read_text(encoding="utf-8"), re.MULTILINE)
        ids |= {f"{eval_id}/{key}" for key in re.findall(r'"(\w+)":', keys.group(1))} if keys else {eval_id}
    return ids


@pytest.fixture
def agent_project(tmp_path):
    project = tmp_path / "guide"
    shutil.copytree(AGENT_EXAMPLES, project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    return project


def failures(done: subprocess.CompletedProcess[str]) -> str:
    """What went wrong in an `assay agent run --json`, short enough to read in a test report."""
    lines = []
    for message in ndjson(done.stdout):
        attempt = message.get("attempt") or {}
        if message["type"] == "attempt" and attempt.get("verdict") not in ("passed", "scored"):
            broken = [a for a in attempt.get("assertions", []) if a.get("status") != "matched"]
            lines.append(f"{attempt.get('eval_id')}: {attempt.get('verdict')} {broken} {attempt.get('error', '')}")
        elif message["type"] == "warning":
            lines.append(f"warning: {message}")
    return "\n".join(lines) + "\n" + done.stderr[-2000:]


def attempts_of(done: subprocess.CompletedProcess[str]) -> list[dict]:
    messages = ndjson(done.stdout)
    warnings = [message for message in messages if message["type"] == "warning"]
    assert not warnings, warnings
    return [message["attempt"] for message in messages if message["type"] == "attempt"]


def assert_all_held(attempts: list[dict]) -> None:
    for attempt in attempts:
        assert attempt["verdict"] in ("passed", "scored"), attempt
        for assertion in attempt["assertions"]:
            assert assertion["status"] == "matched", (attempt["eval_id"], assertion)


def test_every_agent_example_runs_and_every_assertion_in_it_holds(agent_project):
    done = run_assay("agent", "run", "guide", "--json", "--quiet", cwd=agent_project)
    assert done.returncode == 0, failures(done)
    attempts = attempts_of(done)
    assert_all_held(attempts)
    expected = set().union(*(eval_ids(folder) for folder in ("assertions", "matchers", "handles", "drive")))
    assert {attempt["eval_id"] for attempt in attempts} == expected
    score = next(attempt for attempt in attempts if attempt["eval_id"] == "assertions/score")
    assert score["score"] == pytest.approx(6.5)  # 2 + 1 + 1.0 × 3 + 0.5, as the page explains


def test_the_judge_examples_run_against_an_openai_compatible_judge(agent_project, fake_openai):
    fake_openai.respond_with(lambda request: json_reply({"reasons": "names Paris and 21 °C", "score": 0.9}))
    environment = {**os.environ, "OPENAI_BASE_URL": fake_openai.base_url}
    done = run_assay("agent", "run", "judged", "--json", "--quiet", cwd=agent_project, env=environment)
    assert done.returncode == 0, failures(done)
    attempts = attempts_of(done)
    assert [attempt["eval_id"] for attempt in attempts] == sorted(eval_ids(Path("judges")))
    assert_all_held(attempts)
    assert {request.body["model"] for request in fake_openai.chat_requests} == {"judge-model"}


def _public_functions(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_")}


def test_the_assertion_page_shows_every_assertion_matcher_and_handle_method_in_code_that_runs():
    page = ASSERTION_PAGE.read_text(encoding="utf-8")
    examples = included(ASSERTION_PAGE)
    runnable = {path for folder in ("assertions", "matchers", "handles") for path in
                (AGENT_EXAMPLES / "evals" / folder).rglob("*_eval.py")}
    assert runnable <= set(examples), f"not on the page: {sorted(map(str, runnable - set(examples)))}"
    code = "\n".join(path.read_text(encoding="utf-8") for path in examples)

    assertions = _public_functions(TurnHandle) | {"check", "score"}
    assert _public_functions(TurnHandle) >= {"succeeded", "called_tool", "event", "max_cost"}
    matchers = {name for name in assay.agent.__all__ if inspect.isfunction(getattr(assay.agent, name))
                and getattr(assay.agent, name).__module__ == "assay.agent.matchers"}
    assert {"equals", "json_match", "tool_match", "event_match"} <= matchers
    handle = _public_functions(typing.get_type_hints(TurnHandle.succeeded)["return"])  # the assertion handle
    assert {"gate", "or_stop"} <= handle
    assert _public_functions(EvalContext) >= {"check", "score"}
    for name in sorted(assertions | matchers | {"at_least", "define_score_eval"} | handle):
        assert re.search(rf"\b{name}\(", code), f"no example calls {name}(…)"
        assert f"`{name}" in page or f".{name}(" in page, f"the page does not name {name}"


# ---------------------------------------------------------------------------------------------
# Video


@pytest.fixture
def starter(tmp_path):
    """`assay video init`'s eval directory (its clip is made with PyAV) in a git repository."""
    root = tmp_path / "lamp"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    done = run_assay("video", "init", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def _copy(names: list[str], eval_dir: Path) -> None:
    for name in names:
        target = eval_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(VIDEO_EXAMPLES / name, target)


def test_the_case_file_reference_validates_lists_and_passes_with_its_adapter(starter):
    eval_dir = starter / "eval"
    _copy(["adapter.py", "adapter.yaml", "config.yaml", "cases/reference.yaml"], eval_dir)
    validated = run_assay("video", "validate", "--adapter", "eval/adapter.py:create_evaluator", cwd=starter)
    assert validated.returncode == 0, validated.stdout
    listed = run_assay("video", "list-samples", "--case", "reference", cwd=starter)
    assert listed.returncode == 0, listed.stdout
    shown = listed.stdout.replace("\n", " ")
    for mode in ("json_subset", "set_equals", "set_contains_any", "set_contains_all", "numeric", "exact"):
        assert mode in shown
    done = run_assay("video", "run", "--case", "reference", "--output-json", "report.json", "--quiet", cwd=starter)
    assert done.returncode == 0, done.stdout
    report = json.loads((starter / "report.json").read_text(encoding="utf-8"))
    assert report["summary"]["evaluated_samples"] == 17 and report["summary"]["ignored_samples"] == 1
    assert report["summary"]["passed_attempts"] == 17
    gates = {gate["name"] for gate in report["trials"][0]["gates"]}
    assert gates == {"adapter_errors", "eval_min_pass_rate", "eval_max_failures", "eval_color_min_pass_rate",
                     "reference_min_pass_rate", "reference_max_failures", "reference_brightness_min_pass_rate"}


def _run_starter_case(starter: Path, command: str) -> subprocess.CompletedProcess[str]:
    return run_assay("video", "run", "--case", "lamp", "--adapter-command", command, "--quiet", cwd=starter)


@pytest.mark.skipif(NODE is None, reason="node is not installed: the node adapter example needs it")
def test_the_node_adapter_example_passes_on_the_shipped_kit(starter):
    eval_dir = starter / "eval"
    _copy(["adapter.mjs"], eval_dir)
    shutil.copy(assay.video.js_kit_path(), eval_dir / "adapter-kit.mjs")
    done = _run_starter_case(starter, "node eval/adapter.mjs")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "10 passed, 0 failed" in done.stdout
    assert f"adapter ready for {eval_dir.resolve()}" in done.stderr  # console.log went to stderr


def test_the_serve_adapter_example_passes_as_a_process(starter):
    _copy(["serve_adapter.py"], starter / "eval")
    done = _run_starter_case(starter, f"{sys.executable} eval/serve_adapter.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "10 passed, 0 failed" in done.stdout
    assert "evaluated 1.0" in done.stderr  # print() went to stderr


def test_the_plain_protocol_adapter_example_passes(starter):
    _copy(["plain_adapter.py"], starter / "eval")
    (starter / "eval" / "cases" / "lamp.yaml").write_text(
        "video: lamp.mp4\ntargets:\n  frame:\n    samples:\n      - at: [1.0, 2.5]\n        field: width\n"
        "        expect: 160\n", encoding="utf-8")
    done = _run_starter_case(starter, f"{sys.executable} eval/plain_adapter.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed, 0 failed" in done.stdout
