"""The example shop (examples/agent) with and without the OpenTelemetry SDK: with it every attempt has a
waterfall; without it the shop answers the same and `python examples/demo.py` says so in one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.view.waterfall import waterfall_view

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Makes the SDK and its exporter unimportable in the child, as in an install without the `otel` extra.
WITHOUT_SDK = '''
import sys

class _WithoutSdk:
    def find_spec(self, name, path=None, target=None):
        if name.startswith(("opentelemetry.sdk", "opentelemetry.exporter")):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _WithoutSdk())
'''


def _environment(tmp_path: Path, *, sdk: bool) -> dict[str, str]:
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")}
    if not sdk:
        hook = tmp_path / "without-sdk"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(WITHOUT_SDK, encoding="utf-8")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hook), env.get("PYTHONPATH")]))
    return env


def _assay(*arguments: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120, check=False)


def test_the_example_shop_gives_every_attempt_a_waterfall(project, tmp_path):
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the OTLP/HTTP exporter is in the otel extra")
    env = _environment(tmp_path, sdk=True)
    ran = _assay("agent", "run", "--project", str(project), cwd=project, env=env)
    assert ran.returncode == 1, ran.stdout + ran.stderr  # wrong_on_purpose fails by design
    assert "telemetry" not in ran.stdout + ran.stderr
    attempts = json.loads(_assay("agent", "show", "--json", "--project", str(project), cwd=project, env=env).stdout)["attempts"]
    assert len(attempts) == 8
    for attempt in attempts:
        waterfall = waterfall_view(attempt)
        assert waterfall is not None and len(waterfall["turns"]) == len(attempt["turns"]), attempt["eval_id"]
        for turn in waterfall["turns"]:
            assert turn["counts"]["subagent"] == 1 and turn["counts"]["model"] == 2, attempt["eval_id"]
    lookup = next(attempt for attempt in attempts if attempt["eval_id"] == "orders/status")
    [tool] = [row for row in waterfall_view(lookup)["turns"][0]["rows"] if row["category"] == "tool"]
    assert tool["name"] == "execute_tool lookup_order" and tool["io"]["input"] == {"order_id": "1001"}


def test_without_the_sdk_the_demo_runs_the_same_and_says_so_in_one_line(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)  # the document demo reads its config from a repository root
    shutil.copytree(EXAMPLES, root / "examples",
                    ignore=shutil.ignore_patterns(".assay", "__pycache__", "*.mp4", "runs", "results"))
    demo = subprocess.run([sys.executable, str(root / "examples" / "demo.py")], capture_output=True, text=True,
                          cwd=root, env=_environment(tmp_path, sdk=False), timeout=120, check=False)
    output = demo.stdout + demo.stderr
    assert demo.returncode == 0, output
    assert "7/8 (87.5%)" in output and "All demos ran" in output
    about_spans = [line for line in output.splitlines() if "telemetry" in line.lower() or "span" in line.lower()]
    assert len(about_spans) == 1, about_spans
    [line] = about_spans
    assert line.startswith("warning [telemetry-no-spans]: no span reached the OTLP trace receiver at http://127.0.0.1:")
    assert "the OpenTelemetry SDK is not installed in this environment (assay's `otel` extra: pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http)" in line
    assert "Traceback" not in output and "ModuleNotFoundError" not in output
    # The "Try next" lines work in the shell that ran the demo, with no virtual environment activated.
    suggested = demo.stdout.split(f"Try next, from {root}:\n", 1)[1].splitlines()
    command = suggested[0].rsplit("   ", 1)[0].strip()
    assert command.endswith(" runs list") and command != "assay runs list", suggested
    bare_path = os.pathsep.join(part for part in os.environ["PATH"].split(os.pathsep)
                                if Path(part).resolve() != Path(sys.executable).parent.resolve())
    listed = subprocess.run(command, shell=True, cwd=root, capture_output=True, text=True, timeout=60,
                            env={**_environment(tmp_path, sdk=True), "PATH": bare_path})
    assert listed.returncode == 0 and "release-notes-v1" in listed.stdout, listed.stdout + listed.stderr
    # The suggested comparison has a change to show: the weak draft, then the finished one.
    command = suggested[1].rsplit("   ", 1)[0].strip()
    assert command.endswith(" runs compare latest"), suggested
    compared = subprocess.run(command, shell=True, cwd=root, capture_output=True, text=True, timeout=60,
                              env={**_environment(tmp_path, sdk=True), "PATH": bare_path})
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "Improved: 1 unit that failed every trial of its history passes now" in compared.stdout
    assert "Fixes (1):\n  release-notes-v1/deterministic" in compared.stdout
