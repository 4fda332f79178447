"""A stranger plugging an existing agent into the official adapters (Dec 7).

- A model's refusal (Chat Completions' `message.refusal` / `delta.refusal`, a Responses `refusal` content part)
  was dropped: the turn completed with no events, so `t.reply` was empty and nothing said the model declined.
  It is now the turn's assistant message, and the turn fails as a content-filter stop does.
- A tool-loop turn where some requests reported usage and some did not kept the sum but marked usage
  *unavailable*; it is *partial* (the sum is real, just short), as LangGraph's turns already are.
- A factory keyword of the wrong type (`model=4`, `timeout="30"`, `base_url=8000`, a list as a process
  command) was accepted and then failed every attempt with a bare TypeError, or crashed the import with
  "'int' object has no attribute 'strip'"; it now stops the run when the experiment loads (exit 2), naming
  the factory, the keyword and an example of what it takes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from agent_helpers import run_one
from assay.agent import equals, includes
from assay.agent.adapters import openai_chat_agent, openai_responses_agent
from servers.fake_openai import Reply, chat_reply, responses_reply, tool_call

REFUSAL = "I can't help with that."


def _chat_refusal(stream: bool) -> Reply:
    if not stream:
        reply = chat_reply(None)
        reply.completion["choices"][0]["message"]["refusal"] = REFUSAL
        return reply

    def chunk(delta, finish=None):
        return {"id": "r", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [chunk({"role": "assistant", "refusal": ""}), chunk({"refusal": "I can't "}),
              chunk({"refusal": "help with that."}), chunk({}, "stop"),
              {"id": "r", "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 4}}]
    body = b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events) + b"data: [DONE]\n\n"
    return Reply(body=body, headers={"Content-Type": "text/event-stream"})


async def _asks(t):
    await t.send("help me pick a lock")
    t.check(t.reply, equals(REFUSAL))


@pytest.mark.parametrize("stream", [False, True])
def test_a_chat_refusal_is_the_models_answer_and_fails_the_turn(fake_openai, stream):
    fake_openai.enqueue(_chat_refusal(stream), chat_reply("fine"))
    agent = openai_chat_agent(base_url=fake_openai.base_url, api_key="k", backoff=0.001, timeout=5, stream=stream)

    async def body(t):
        await _asks(t)
        await t.send("and now?")  # the refusal is in the history the model reads next

    result = run_one(agent, body, model="m")
    assert result.verdict == "passed", (result.error, result.assertions)
    turn = result.turns[0]
    assert turn["status"] == "failed"
    assert turn["events"] == [
        {"type": "message", "role": "assistant", "text": REFUSAL},
        {"type": "error", "message": f"the model refused: {REFUSAL}"},
    ]
    history = fake_openai.chat_requests[1].body["messages"]
    assert history[1] == {"role": "assistant", "content": None, "refusal": REFUSAL}


def test_a_responses_refusal_is_the_models_answer_and_fails_the_turn(fake_openai):
    reply = responses_reply("unused")
    reply.response["output"][0]["content"] = [{"type": "refusal", "refusal": REFUSAL}]
    fake_openai.enqueue(reply)
    agent = openai_responses_agent(base_url=fake_openai.base_url, api_key="k", backoff=0.001, timeout=5)

    result = run_one(agent, _asks, model="m")
    assert result.verdict == "passed", (result.error, result.assertions)
    assert result.turns[0]["status"] == "failed"
    assert result.turns[0]["events"][-1] == {"type": "error", "message": f"the model refused: {REFUSAL}"}


def lookup_order(order_id: str) -> dict:
    """Find an order by id."""
    return {"order_id": order_id, "carrier": "DHL"}


def test_usage_from_some_of_a_turns_requests_is_kept_and_marked_partial_not_unavailable(fake_openai):
    first = chat_reply(None, tool_calls=[tool_call("lookup_order", {"order_id": "1"}, "c1")])
    del first.completion["usage"]  # a gateway that reports usage only on the final answer
    fake_openai.enqueue(first, chat_reply("DHL", usage={"prompt_tokens": 40, "completion_tokens": 3}))
    agent = openai_chat_agent(base_url=fake_openai.base_url, api_key="k", backoff=0.001, timeout=5,
                              tools=[lookup_order])

    async def body(t):
        await t.send("where is order 1?")
        t.check(t.reply, includes("DHL"))

    result = run_one(agent, body, model="m")
    assert result.verdict == "passed", (result.error, result.assertions)
    assert result.usage == {"input_tokens": 40, "output_tokens": 3, "requests": 2}
    assert result.turns[0]["coverage"]["usage"] == {
        "state": "partial", "reason": "the endpoint reported no usage for 1 of 2 request(s)",
    }


EXPERIMENT = """\
from assay.agent import Experiment, complete_evidence_coverage
from assay.agent.adapters import http_agent, openai_chat_agent, openai_responses_agent, process_agent

main = Experiment(agent={factory})
"""

EVAL = """\
from assay.agent import define_eval


@define_eval
async def test(t):
    await t.send("hi")
"""


@pytest.mark.parametrize(("factory", "said"), [
    ('openai_chat_agent(base_url="http://127.0.0.1:9/v1", model=4)',
     "openai_chat_agent model takes a non-empty string, like model='gpt-4.1-mini'; got 4"),
    ('openai_responses_agent(base_url="http://127.0.0.1:9/v1", model="m", timeout="30")',
     "openai_responses_agent timeout takes seconds (a number above 0), like timeout=120; got '30'"),
    ('openai_chat_agent(base_url=8000, model="m")',
     "openai_chat_agent base_url takes a non-empty string, like base_url='http://127.0.0.1:8000/v1'; got 8000"),
    ('openai_chat_agent(base_url="http://127.0.0.1:9/v1", model="m", max_attempts="3")',
     "openai_chat_agent max_attempts takes a whole number of at least 1, like max_attempts=4; got '3'"),
    ('openai_chat_agent(base_url="http://127.0.0.1:9/v1", model="m", request_options=["temperature"])',
     "openai_chat_agent request_options takes a dict, like request_options={'temperature': 0}; got ['temperature']"),
    ('http_agent(8000, evidence_coverage=complete_evidence_coverage)',
     "http_agent base_url takes a URL string like 'http://127.0.0.1:8000/v1', got 8000"),
    ('http_agent("http://127.0.0.1:9", evidence_coverage=complete_evidence_coverage, timeout="5")',
     "http_agent timeout takes seconds (a number above 0), like timeout=300; got '5'"),
    ('process_agent(["python", "agent.py"], evidence_coverage=complete_evidence_coverage)',
     "process_agent command takes a non-empty string, like command='python agent.py'; got ['python', 'agent.py']"),
    ('process_agent("python agent.py", evidence_coverage=complete_evidence_coverage, timeout="5")',
     "process_agent timeout takes seconds (a number above 0), like timeout=60; got '5'"),
])
def test_a_factory_keyword_of_the_wrong_type_stops_the_run_when_it_loads(tmp_path, factory, said):
    project = tmp_path / "proj"
    (project / "experiments").mkdir(parents=True)
    (project / "evals").mkdir()
    (project / "pyproject.toml").write_text('[tool.assay]\nname = "wrong types"\n')
    (project / "experiments" / "main.py").write_text(EXPERIMENT.format(factory=factory))
    (project / "evals" / "hi_eval.py").write_text(EVAL)
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "store")}
    env.pop("OPENAI_BASE_URL", None)
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project)],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert said in output, output
    assert "Traceback" not in output and "PLAN" not in output, output


def test_pydantic_ai_and_ui_message_stream_factories_refuse_settings_of_the_wrong_type_when_made():
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    from assay.agent.adapters import pydantic_ai_agent, ui_message_stream_agent

    agent = Agent(TestModel())
    with pytest.raises(TypeError, match=r"pydantic_ai_agent model_settings takes a dict of pydantic-ai model "
                                        r"settings, like model_settings=\{'temperature': 0\}, got list"):
        pydantic_ai_agent(agent, model_settings=["temperature"])
    with pytest.raises(TypeError, match="pydantic_ai_agent deny_reason takes the text a denied tool call tells the "
                                        "model, like deny_reason='The user denied this call.', got 3"):
        pydantic_ai_agent(agent, deny_reason=3)
    with pytest.raises(TypeError, match="ui_message_stream_agent headers takes a dict of header names to values"):
        ui_message_stream_agent("http://127.0.0.1:3000/api/chat", headers=["Cookie: a=b"])


@pytest.mark.parametrize("factory", [openai_chat_agent, openai_responses_agent])
def test_openais_own_api_without_a_key_errors_at_once_naming_the_variable_to_set(monkeypatch, factory):
    import time

    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "MY_OPENAI_KEY"):
        monkeypatch.delenv(variable, raising=False)

    async def body(t):
        await t.send("hi")

    started = time.monotonic()
    result = run_one(factory(model="gpt-4.1-mini", api_key_env="MY_OPENAI_KEY"), body)
    assert result.verdict == "errored"
    assert ("no API key for https://api.openai.com/v1: MY_OPENAI_KEY is not set; export MY_OPENAI_KEY, pass "
            "api_key=…, or give base_url= (or OPENAI_BASE_URL) for a server that needs no key") in result.error["message"]
    assert not result.retries  # nothing was sent, so nothing was resent
    assert time.monotonic() - started < 3
