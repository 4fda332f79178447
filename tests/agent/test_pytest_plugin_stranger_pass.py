"""The pytest plugin as a new user meets it: judged evals in a project run with `pytest`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from agent_projects import replying_project
from servers.fake_openai import json_reply


def pytest_in(project: Path, store: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", *arguments], cwd=project,
        env={**os.environ, "ASSAY_STORE": str(store)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def judged_project(root: Path, base_url: str) -> Path:
    replying_project(root, reply="Paris is sunny, 21 degrees.")
    with (root / "pyproject.toml").open("a", encoding="utf-8") as toml:
        toml.write(f'\n[tool.assay.judge]\nmodel = "judge-1"\nbase_url = "{base_url}"\napi_key_env = ""\n')
    (root / "evals" / "weather_eval.py").write_text(
        "from assay.agent import define_eval\n\n\n"
        "@define_eval(judge=True)\n"
        "async def test(t):\n"
        "    await t.send('What is the weather in Paris?')\n"
        "    t.judge('Names the city and gives a temperature.')\n",
        encoding="utf-8",
    )
    return root


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_second_session_reads_the_judges_answers_from_the_project_cache(tmp_path, fake_openai):
    """`pytest` kept judge answers in memory only: every session paid for every judge call again, where
    judges.md promises that running the same eval again on the same reply costs nothing."""
    fake_openai.respond_with(lambda request: json_reply({"reasons": "names both", "score": 0.9}))
    project = judged_project(tmp_path / "proj", fake_openai.base_url)
    store = tmp_path / "store" / "assay.db"
    first = pytest_in(project, store)
    assert first.returncode == 0, first.stdout + first.stderr
    assert len(fake_openai.chat_requests) == 1
    assert any((project / ".assay" / "cache" / "judge").rglob("*")), "no answer was cached on disk"
    second = pytest_in(project, store)
    assert second.returncode == 0, second.stdout + second.stderr
    assert len(fake_openai.chat_requests) == 1, "the second session asked the judge again"
    # The recorded session says what its judge calls were, as a run's record does.
    shown = subprocess.run(
        [sys.executable, "-m", "assay", "runs", "show", "latest", "--json"], cwd=project,
        env={**os.environ, "ASSAY_STORE": str(store)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    usage = json.loads(shown.stdout)["summary"]["judge_usage"]
    assert usage["judge-1"]["calls"] == 0 and usage["judge-1"]["cached"] == 1, usage


def test_a_judge_endpoint_that_is_down_fails_its_preflight_once_instead_of_each_call_retrying(tmp_path):
    """No preflight ran under pytest: each judge assertion retried a closed port four times, and nothing said
    that the endpoint itself was down."""
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    project = judged_project(tmp_path / "proj", base_url)
    done = pytest_in(project, tmp_path / "store" / "assay.db")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"judge-precheck-failed: judge endpoint {base_url} failed the preflight" in done.stdout, done.stdout
    assert "after 4 attempt(s)" not in done.stdout
    assert (f"assay: warning [judge-precheck-failed]: judge endpoint {base_url} failed the preflight"
            in done.stdout), done.stdout
    assert "1 judge assertion(s) in 1 of 1 planned attempt(s) are unavailable, not passed" in done.stdout


def test_a_misspelt_word_of_k_names_the_eval_meant(tmp_path):
    """`pytest -k refnd` deselected every eval and said nothing (exit 5), where `-m ordrs` names the tag meant."""
    project = replying_project(tmp_path / "proj")
    (project / "evals" / "orders").mkdir()
    (project / "evals" / "orders" / "refund_eval.py").write_text(
        "from assay.agent import define_eval\n\n\n"
        "@define_eval()\n"
        "async def test(t):\n"
        "    await t.send('refund order 7')\n",
        encoding="utf-8",
    )
    store = tmp_path / "store" / "assay.db"
    typo = pytest_in(project, store, "-k", "refnd")
    assert typo.returncode == 5, typo.stdout + typo.stderr
    assert ("assay: -k 'refnd': no eval id or test name contains 'refnd'; did you mean 'refund'? "
            "(the evals: orders/refund)") in typo.stdout, typo.stdout
    # A word that is part of a collected name, in any case and under `not`, is no typo (one session for them all).
    expression = "REFUND or orders/refund[e] or (not refund) or refund_eval.py"
    fine = pytest_in(project, store, "--collect-only", "-k", expression)
    assert fine.returncode == 0 and "no eval id or test name contains" not in fine.stdout, fine.stdout
