"""`inspect eval-set` writes `logs.json` and `eval-set.json` beside its logs, so `assay runs import logs/*.json` of a
set logged as JSON (the page's `logs/*.eval` pattern, for the other format) names them too. Each was refused with
"cannot tell which tool wrote this file; give --format, one of …", and with `--format inspect` with "not an Inspect
eval log (its header needs …)": neither said what the file is or which files to give. The set here is a real one,
written by Inspect with its mock model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="Inspect AI: pip install inspect-ai")

EVAL_SET = """
import sys
from inspect_ai import Task, eval_set
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


def answer(messages, tools, tool_choice, config):
    output = ModelOutput.from_content(model="mockllm", content="Paris")
    # usage given here: the mock model's own count would download a tokenizer
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


task = Task(name="capitals", dataset=[Sample(input="France?", target="Paris", id="fr"),
                                      Sample(input="Spain?", target="Madrid", id="es")],
            solver=generate(), scorer=includes())
done, _ = eval_set([task], log_dir=sys.argv[1], log_format="json", model=get_model("mockllm/model", custom_outputs=answer),
                   display="none")
assert done
"""


@pytest.fixture(autouse=True)
def own_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "own-store" / "assay.db"))


def _assay(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=120,
                          check=False, env=dict(os.environ))


def test_an_eval_sets_listing_files_are_named_with_the_logs_to_give(tmp_path):
    logs = tmp_path / "logs"
    script = tmp_path / "capitals_set.py"
    script.write_text(EVAL_SET, encoding="utf-8")
    subprocess.run([sys.executable, str(script), str(logs)], check=True, capture_output=True, timeout=240,
                   env={**os.environ, "INSPECT_LOG_LEVEL": "error"})
    (log,) = sorted(logs.glob("*_*.json"))
    assert (logs / "logs.json").is_file() and (logs / "eval-set.json").is_file()
    tail = f"not an eval log; import the set's logs themselves, such as {log} ({logs}/*_*.json names them, and not this file)"
    said = {"eval-set.json": f"this is Inspect's eval-set.json, the record of an eval set's tasks, {tail}",
            "logs.json": f"this is Inspect's logs.json, the index of an eval set's logs, {tail}"}
    # logs/*.json as the shell expands it: every file checked first, so nothing is imported
    named = [str(path) for path in sorted(logs.glob("*.json"))]
    done = _assay("runs", "import", *named, "--json")
    assert done.returncode == 2
    failed = {Path(entry["file"]).name: entry["error"] for entry in json.loads(done.stdout)["failed"]}
    for name, why in said.items():
        assert failed[name] == f"{logs / name}: {why}", failed[name]
        told = _assay("runs", "import", str(logs / name), "--format", "inspect")
        assert told.returncode == 2 and told.stderr == f"Error: {logs / name}: {why}\n", told.stderr
    assert json.loads(done.stdout)["imported"] == []
    # the pattern it names imports the set
    given = _assay("runs", "import", *(str(path) for path in sorted(logs.glob("*_*.json"))))
    assert given.returncode == 0 and "(inspect, inspect-ai" in given.stdout and "2 units: passed 1 failed 1" in given.stdout
