"""A base URL without http:// or https:// (`htp://…`, or `127.0.0.1:8000/v1` with no scheme at all).

The official agents took it as given and every attempt errored with "the connection failed once it
was open", which points at the server, not at the typo. A mistyped base_url now fails when the
experiment loads (exit 2, naming the value and the URL it probably meant); a mistyped
OPENAI_BASE_URL errors the attempt at once with the same words, without touching the network.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agent_helpers import run_one
from assay.agent.adapters import openai_chat_agent, openai_responses_agent

EXPERIMENT = """\
from assay.agent import Experiment, complete_evidence_coverage
from assay.agent.adapters import http_agent, openai_chat_agent


def lookup_order(order_id: str) -> dict:
    \"\"\"Find an order by id.\"\"\"
    return {{"order_id": order_id, "carrier": "DHL"}}


agent = {factory}

chat = Experiment(agent=agent, model="m1")
"""

EVAL = """\
from assay.agent import define_eval, includes


@define_eval
async def test(t):
    await t.send("Where is order A1?")
    t.check(t.reply, includes("DHL"))
"""


def make_project(tmp_path, factory: str):
    project = tmp_path / "proj"
    (project / "experiments").mkdir(parents=True)
    (project / "evals").mkdir()
    (project / "pyproject.toml").write_text('[tool.assay]\nname = "base url demo"\n')
    (project / "experiments" / "chat.py").write_text(EXPERIMENT.format(factory=factory))
    (project / "evals" / "order_eval.py").write_text(EVAL)
    return project


def assay_run(project, tmp_path):
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "assay.db")}
    env.pop("OPENAI_BASE_URL", None)
    return subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project)],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)


@pytest.mark.parametrize(
    ("factory", "shown", "meant"),
    [
        ('openai_chat_agent(tools=[lookup_order], base_url="htp://{server}/v1")', "base_url 'htp://{server}/v1'",
         "http://{server}/v1"),
        ('openai_chat_agent(base_url="{server}/v1")', "base_url '{server}/v1'", "http://{server}/v1"),
        ('http_agent("htps://{server}", evidence_coverage=complete_evidence_coverage)',
         "http_agent base_url 'htps://{server}'", "http://{server}"),
    ],
)
def test_a_base_url_without_an_http_scheme_is_refused_when_the_experiment_loads(
        tmp_path, fake_openai, factory, shown, meant):
    server = fake_openai.base_url.removeprefix("http://").removesuffix("/v1")
    project = make_project(tmp_path, factory.format(server=server))
    done = assay_run(project, tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert "experiments/chat.py (line 10)" in done.stderr, done.stderr
    expected = f"{shown.format(server=server)} is not an http:// or https:// URL: did you mean {meant.format(server=server)}?"
    assert expected in done.stderr, done.stderr
    assert fake_openai.requests == []


def test_the_same_project_with_the_base_url_right_passes(tmp_path, fake_openai):
    from servers.fake_openai import chat_reply

    fake_openai.enqueue(chat_reply("Order A1 ships with DHL."))
    project = make_project(tmp_path, f'openai_chat_agent(base_url="{fake_openai.base_url}")')
    done = assay_run(project, tmp_path)
    assert done.returncode == 0, (done.stdout, done.stderr)


@pytest.mark.parametrize("make", [openai_chat_agent, openai_responses_agent])
def test_a_mistyped_openai_base_url_errors_the_attempt_at_once_naming_the_variable(monkeypatch, tmp_path, make,
                                                                                   fake_openai):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "assay.db"))
    server = fake_openai.base_url.removeprefix("http://")
    monkeypatch.setenv("OPENAI_BASE_URL", server)
    agent = make(api_key="k")

    async def send_hi(t):
        await t.send("hi")

    result = run_one(agent, send_hi, model="m")
    assert result.verdict == "errored" and result.error["code"] == "network", result.error
    assert result.error["message"] == (
        f"agent '{agent.name}' send failed: OPENAI_BASE_URL '{server}' is not an http:// or https:// URL: "
        f"did you mean http://{server}?")
    assert result.retries is None
    assert fake_openai.requests == []


@pytest.fixture
def model_server_under_v1():
    """A real HTTP server that, like vLLM or llama.cpp, answers 404 to anything not under /v1."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length") or 0))
            body = json.dumps({"detail": "Not Found"}).encode()
            self.send_response(404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("make", [openai_chat_agent, openai_responses_agent])
def test_a_404_from_a_base_url_without_v1_says_which_url_to_try(monkeypatch, tmp_path, make, model_server_under_v1):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "assay.db"))
    agent = make(base_url=model_server_under_v1, api_key="k")

    async def send_hi(t):
        await t.send("hi")

    result = run_one(agent, send_hi, model="m")
    assert result.verdict == "errored" and result.error["code"] == "agent-http-error", result.error
    assert result.error["message"].endswith(
        f"(OpenAI-compatible servers answer under /v1: is the base URL {model_server_under_v1}/v1?)"), result.error

    agent = make(base_url=model_server_under_v1 + "/v1", api_key="k")  # under /v1 already: no such hint
    result = run_one(agent, send_hi, model="m")
    assert result.verdict == "errored" and "is the base URL" not in result.error["message"], result.error
