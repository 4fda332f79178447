"""The examples of docs/agent/traces.md work as written: every code block with a `title="PATH"` is written
to a project at PATH, and `assay agent run` there gives each attempt its spans, with no warning."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the page's examples use the otel extra")

from assay.view.waterfall import waterfall_view  # noqa: E402

PAGE = Path(__file__).resolve().parents[2] / "docs" / "agent" / "traces.md"
BLOCK = re.compile(r'^```\w+ title="([^"]+)"\n(.*?)^```$', re.MULTILINE | re.DOTALL)


def _assay(*arguments: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120, check=False)


def test_the_pages_titled_examples_form_a_project_whose_attempts_all_get_their_spans(tmp_path):
    project = tmp_path / "project"
    files = BLOCK.findall(PAGE.read_text(encoding="utf-8"))
    assert sorted(name for name, _ in files) == [
        "app.py", "evals/hello_eval.py", "experiments/child_process.py", "experiments/in_process.py",
        "experiments/private_spans.py", "private_app.py", "pyproject.toml",
    ]
    for name, text in files:
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text, encoding="utf-8")
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")}
    ran = _assay("agent", "run", "--project", str(project), cwd=project, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "warning" not in ran.stdout + ran.stderr
    attempts = json.loads(_assay("agent", "show", "--json", "--project", str(project), cwd=project, env=env).stdout)["attempts"]
    assert sorted(attempt["experiment_id"] for attempt in attempts) == ["child_process", "in_process", "private_spans"]
    [private] = [attempt for attempt in attempts if attempt["experiment_id"] == "private_spans"]
    [trace] = waterfall_view(private)["turns"]
    assert {row["name"]: row["category"] for row in trace["rows"]} == {
        "handle": "other", "ask": "model", "fetch": "tool", "delegate to reviewer": "subagent",
    }
    assert private["verdict"] == "passed"
    for attempt in attempts:
        if attempt is private:
            continue
        [turn] = attempt["spans"]["turns"]
        assert [span["name"] for span in turn["spans"]] in (
            ["chat my-model", "invoke_agent my-app"], ["invoke_agent my-app", "chat my-model"],
        ), attempt["experiment_id"]
        assert {span["trace_id"] for span in turn["spans"]} == {turn["trace_id"]}
        [trace] = waterfall_view(attempt)["turns"]
        assert [row["category"] for row in trace["rows"]] == ["subagent", "model"]
        timing = _assay("agent", "show", attempt["locator"], "--timing", "--project", str(project), cwd=project, env=env)
        assert [line.split("+")[0].strip() for line in timing.stdout.splitlines()[1:]] == [
            "attempt", "eval.run", "agent.send turn 1",
        ]
