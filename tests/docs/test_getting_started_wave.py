"""A newcomer's pass over docs/getting-started/: the video page's commands run as written print what the page
shows, and the slips a newcomer makes on the way (running from the wrong folder, a misspelt eval dir, leaving out
the model-judge config) get a message that names the fix, exit 2 and no traceback."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = REPO / "docs" / "getting-started"
NODE = shutil.which("node")


def _env(tmp_path: Path) -> dict[str, str]:
    """This interpreter's `assay` first on PATH (the pages' commands call it by name), a store of the test's own."""
    shim = tmp_path / "bin" / "assay"
    if not shim.exists():
        shim.parent.mkdir()
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m assay "$@"\n', encoding="utf-8")
        shim.chmod(0o755)
    return {**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db"), "COLUMNS": "200",
            "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}"}


def _sh(script: str, *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", "set -eu\n" + script], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def _blocks(page: str, section: str, fence: str) -> list[str]:
    """The ```<fence> blocks of one `## N.` section of a page, in order."""
    text = (PAGES / page).read_text(encoding="utf-8")
    body = text.split(f"\n## {section}", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{fence}\n(.*?)```", body, re.DOTALL)


def _varying(line: str) -> str:
    """A line with what differs from run to run (latencies, the folder) taken out."""
    line = re.sub(r"\d+\.\d+ms *", "…ms ", line)
    return re.sub(r"^(Eval|Duration|Avg evaluation latency|Throughput): .*", r"\1: …", line)


def _printed(page_block: str, stdout: str) -> tuple[list[str], list[str]]:
    progress = re.compile(r"^\[\d+/\d+\] ")  # the page shows the progress line; it goes to stderr
    # Blank lines count: GlassKit's, before the summary, are shown as printed.
    shown = [_varying(line) for line in page_block.splitlines() if line != "…" and not progress.match(line)]
    return shown, [_varying(line) for line in stdout.splitlines()]


def test_the_video_page_prints_what_it_shows(tmp_path):
    env = _env(tmp_path)
    start, starter_output = _blocks("video.md", "1.", "sh")[0], _blocks("video.md", "1.", "text")[0]
    done = _sh(start, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == starter_output
    demo = tmp_path / "lamp-demo"
    [run] = _blocks("video.md", "2.", "sh")
    done = _sh(run, cwd=demo, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    shown, printed = _printed(_blocks("video.md", "2.", "text")[0], done.stdout)
    # The "By target" table was shown with "Lamp colour (color)" folded over two lines; assay never folds a cell.
    assert printed == shown
    case = demo / "eval" / "cases" / "lamp.yaml"
    case.write_text(case.read_text(encoding="utf-8").replace("expect: 0.6\n", "expect: 0.9\n"), encoding="utf-8")
    done = _sh(run, cwd=demo, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    shown, printed = _printed(_blocks("video.md", "3.", "text")[0], done.stdout)
    assert [line for line in shown if line not in printed] == []
    if NODE:
        commands = _blocks("video.md", "4.", "sh")
        done = _sh("\n".join(commands), cwd=demo, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Samples: 10 evaluated, 10 passed, 0 failed, 0 errors, 0 ignored" in done.stdout


def test_a_video_run_from_the_folder_above_or_with_a_misspelt_eval_dir_names_the_eval_dir(tmp_path):
    env = _env(tmp_path)
    assert _sh("mkdir lamp-demo && cd lamp-demo && git init -q && assay video init", cwd=tmp_path, env=env).returncode == 0
    above = _sh("assay video run", cwd=tmp_path, env=env)
    assert above.returncode == 2 and "Traceback" not in above.stdout + above.stderr
    assert above.stdout.strip() == (f"Eval failed: eval directory does not exist: {tmp_path.resolve() / 'eval'}; there is "
                                    "one in the folder below, lamp-demo/eval: run from lamp-demo or pass --eval-dir lamp-demo/eval")
    misspelt = _sh("assay video run --eval-dir evl", cwd=tmp_path / "lamp-demo", env=env)
    assert misspelt.returncode == 2
    assert misspelt.stdout.strip().endswith("/lamp-demo/evl; did you mean --eval-dir eval?")
    elsewhere = _sh("assay video run --eval-dir nowhere", cwd=tmp_path / "lamp-demo", env=env)
    assert elsewhere.returncode == 2 and elsewhere.stdout.strip().endswith("/lamp-demo/nowhere")  # nothing near: no guess


@pytest.mark.parametrize("command", ["assay agent run", "assay agent list", "assay agent show"])
def test_an_agent_command_run_inside_or_above_the_project_names_the_project(tmp_path, command):
    env = _env(tmp_path)
    assert _sh(_blocks("agent.md", "1.", "sh")[0], cwd=tmp_path, env=env).returncode == 0
    project = (tmp_path / "weather-demo").resolve()
    assert _sh("assay agent run --quiet", cwd=project, env=env).returncode == 0
    # It said "no evals/ folder in …/weather-demo/evals; run `assay agent init` there": a second, empty project.
    inside = _sh(command, cwd=project / "evals", env=env)
    assert inside.returncode == 2 and "Traceback" not in inside.stderr
    assert inside.stderr.strip().endswith(f"; it is inside the agent project {project}: run from there "
                                          f"(cd {project}) or pass --project {project}")
    assert "assay agent init" not in inside.stderr
    above = _sh(command, cwd=tmp_path, env=env)
    assert above.returncode == 2
    assert above.stderr.strip().endswith("; the agent project is in the folder below, weather-demo: run from there "
                                         "(cd weather-demo) or pass --project weather-demo")
    (tmp_path / "fresh").mkdir()
    fresh = _sh(command, cwd=tmp_path / "fresh", env=env)  # no project near: the advice is still to make one
    assert fresh.returncode == 2 and "weather-demo" not in fresh.stderr


def test_a_model_judge_run_without_its_config_names_the_config_to_pass(tmp_path):
    env = _env(tmp_path)
    setup = "\n".join([*_blocks("doc.md", "1.", "sh"), *_blocks("doc.md", "2.", "sh"), _blocks("doc.md", "4.", "sh")[0]])
    done = _sh(setup.replace("assay doc run-case", "true"), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    # Step 5 without its `--config evals/eval-kit.model-judge.config.json`: the main config keeps model methods off.
    done = _sh("assay doc judge-coverage --case release-notes --candidate candidate.md --model gpt-4o-mini "
               "--provider openai --effort low", cwd=tmp_path / "notes-demo", env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        "Execution failed: judge-coverage is disabled by methods.judge_coverage.enabled=false (it is off in eval-kit.config.json); "
        "evals/eval-kit.model-judge.config.json enables it: add --config evals/eval-kit.model-judge.config.json"
    )
    page = (PAGES / "doc.md").read_text(encoding="utf-8")
    assert "--config evals/eval-kit.model-judge.config.json" in page  # the fix named is the page's own command
