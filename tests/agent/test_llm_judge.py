"""`t.judge(…)` and the recipes through the built-in LLM judge against the fake OpenAI-compatible server."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agent_helpers import run_evals, run_one, statuses
from assay.agent import Turn, define_eval, message
from assay.agent.judging import JudgeRequest, LLMJudge, resolve_judge_config, JudgeUnavailable
from assay.agent.run_options import RunOptions
from assay.judge import MemoryCallCache
from servers.fake_openai import chat_reply, error_reply, json_reply

from agent_helpers import scripted_agent


@pytest.fixture(autouse=True)
def judge_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "judge-key")


def run_assay(*arguments, cwd):
    return subprocess.run([sys.executable, "-m", "assay", *arguments], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def config_for(server, **extra):
    return {"model": "judge-1", "base_url": server.base_url, **extra}


def test_judge_passes_and_fails_against_its_threshold_and_records_reasons(fake_openai):
    # The two calls go out together (an attempt's judge calls are resolved at once), so the answer follows the
    # criterion in the prompt, not the order in which the requests arrive.
    fake_openai.respond_with(lambda request: json_reply(
        {"reasons": "rude", "score": 0.4} if "apologises" in request.prompt
        else {"reasons": "polite and correct", "score": 0.9}))
    agent, _ = scripted_agent([Turn([message("Your order ships Monday.")])])

    async def body(t):
        await t.send("When does my order ship?")
        t.judge("The answer gives a shipping day politely.", threshold=0.8)
        t.judge("The answer apologises.", value={"text": "Your order ships Monday."}, threshold=0.5)

    result = run_one(agent, define_eval(body, judge=config_for(fake_openai)))
    assert statuses(result) == ["matched", "matched"]
    assert result.verdict == "failed" and len(result.failing) == 1 and "apologises" in result.failing[0]
    first, second = result.assertions
    assert (first["value"], first["reason"], first["threshold"]) == (0.9, "polite and correct", 0.8)
    assert first["judge"] == {"recipe": "rubric", "model": "judge-1", "cached": False, "prompt": "assay-agent-judge/1"}
    shipping, = (request for request in fake_openai.chat_requests if "shipping day" in request.prompt)
    apology, = (request for request in fake_openai.chat_requests if "apologises" in request.prompt)
    assert "When does my order ship?" in shipping.prompt and "Your order ships Monday." in shipping.prompt
    assert '"text": "Your order ships Monday."' in apology.prompt
    sent = shipping.body
    assert sent["model"] == "judge-1" and sent["temperature"] == 0
    assert sent["response_format"]["type"] == "json_schema"


def test_judge_without_a_model_or_key_is_unavailable_and_calls_nothing(fake_openai, monkeypatch):
    agent, _ = scripted_agent([Turn([message("x")])] * 2)

    async def body(t):
        await t.send("q")
        t.judge("anything")

    no_model = run_one(agent, define_eval(body, judge=True))
    assert statuses(no_model) == ["unavailable"] and no_model.verdict == "errored"
    assert no_model.assertions[0]["reason"].startswith("judge-model-unresolved")
    monkeypatch.delenv("OPENAI_API_KEY")
    no_key = run_one(agent, define_eval(body, judge=config_for(fake_openai)))
    assert no_key.assertions[0]["reason"].startswith(
        "judge-key-unresolved: neither ASSAY_JUDGE_API_KEY nor OPENAI_API_KEY is set")
    assert fake_openai.requests == []


def test_judge_transport_failure_is_unavailable_not_failed(fake_openai):
    fake_openai.respond_with(lambda request: error_reply(500))
    agent, _ = scripted_agent([Turn([message("x")])])

    async def body(t):
        await t.send("q")
        t.judge("anything").optional()

    result = run_one(agent, define_eval(body, judge=config_for(fake_openai)),
                     options=RunOptions(judge=LLMJudge(max_attempts=2, backoff_s=0.001)))
    assert statuses(result) == ["unavailable"] and result.verdict == "passed"
    # what failed, without the error's class name (`judge-call-failed: JudgeError: judge endpoint failed …`)
    assert result.assertions[0]["reason"].startswith("judge-call-failed: judge endpoint"), result.assertions[0]["reason"]
    assert len(fake_openai.chat_requests) == 1  # a 5xx is the agent endpoint's rule too: reported, not resent


def test_judge_resends_a_rate_limited_call_and_counts_it(fake_openai):
    from servers.fake_openai import rate_limited

    fake_openai.enqueue(rate_limited(0), json_reply({"reasons": "fine", "score": 1}))
    agent, _ = scripted_agent([Turn([message("x")])])
    judge = LLMJudge(max_attempts=2, backoff_s=0.001)

    async def body(t):
        await t.send("q")
        t.judge("anything")

    result = run_one(agent, define_eval(body, judge=config_for(fake_openai)), options=RunOptions(judge=judge))
    assert result.verdict == "passed" and len(fake_openai.chat_requests) == 2
    assert judge.retries == {"rate_limited": 1}


def test_an_out_of_range_judge_score_is_a_judge_error_that_errors_the_attempt_and_is_not_cached(fake_openai):
    fake_openai.enqueue(json_reply({"reasons": "very good", "score": 7}), json_reply({"reasons": "still", "score": 7}),
                        json_reply({"reasons": "good", "score": 0.8}))
    agent, _ = scripted_agent(lambda turn_input, ctx: Turn([message("x")]))

    async def body(t):
        await t.send("q")
        t.judge("anything")

    cache = MemoryCallCache()
    first = run_one(agent, define_eval(body, judge=config_for(fake_openai)), options=RunOptions(judge_cache=cache))
    assert statuses(first) == ["unavailable"] and first.verdict == "errored"
    assert first.assertions[0]["reason"] == (
        "judge-error: judge answer: score 7 is outside [0, 1]; after one repair request: judge answer: score 7 is outside "
        """[0, 1]; the judge answered: '{"reasons": "still", "score": 7}'"""  # what it wrote last, not only why not
    )
    again = run_one(agent, define_eval(body, judge=config_for(fake_openai)), options=RunOptions(judge_cache=cache))
    assert again.verdict == "passed" and len(fake_openai.chat_requests) == 3  # asked again, not read back


def test_an_unusable_judge_answer_gets_one_repair_request_that_shows_the_judge_its_error(fake_openai):
    fake_openai.enqueue(chat_reply("Looks fine to me."), json_reply({"reasons": "names Paris", "score": 0.9}),
                        json_reply({"reasons": "unused", "score": 0.1}))
    agent, _ = scripted_agent(lambda turn_input, ctx: Turn([message("Paris")]))
    cache = MemoryCallCache()
    judge = LLMJudge(cache=cache, max_attempts=2, backoff_s=0.001)

    async def body(t):
        await t.send("q")
        t.judge("names a city")

    result = run_one(agent, define_eval(body, judge=config_for(fake_openai)), options=RunOptions(judge=judge))
    assert result.verdict == "passed" and result.assertions[0]["value"] == 0.9
    assert result.assertions[0]["judge"]["repaired"] is True
    assert judge.retries == {"repair": 1} and len(fake_openai.chat_requests) == 2
    repair = fake_openai.chat_requests[1].body["messages"]
    assert repair[:2] == fake_openai.chat_requests[0].body["messages"]
    assert repair[2] == {"role": "assistant", "content": "Looks fine to me."}
    assert "could not be used: model output was not valid JSON" in repair[3]["content"]
    # The repaired answer is the judgement of the original request: read back, nothing sent.
    cached = run_one(agent, define_eval(body, judge=config_for(fake_openai)), options=RunOptions(judge_cache=cache))
    assert cached.assertions[0]["value"] == 0.9 and cached.assertions[0]["judge"]["cached"] is True
    assert len(fake_openai.chat_requests) == 2


def test_an_unparsable_judge_answer_is_not_cached_so_a_fixed_judge_is_asked_again(fake_openai, tmp_path):
    """Through the CLI with the project's on-disk cache: the judge answers prose once, then is fixed."""
    project = judged_project(
        tmp_path / "p", f'model = "judge-1"\nbase_url = "{fake_openai.base_url}"\napi_key_env = ""\n')
    fake_openai.enqueue(chat_reply("I think it is fine."), chat_reply("Still fine, I think."))
    broken = run_assay("agent", "run", "--quiet", cwd=project)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "judge-error" in broken.stdout and len(fake_openai.chat_requests) == 2  # the answer and its one repair
    assert "judge retries: repair 1" in broken.stdout  # the docs' "counted in the run's judge retries", shown
    fake_openai.respond_with(lambda request: json_reply({"reasons": "names Paris", "score": 1}))
    fixed = run_assay("agent", "run", "--quiet", "--rerun", "all", cwd=project)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert len(fake_openai.chat_requests) == 3  # the fixed judge was asked; nothing bad was read back
    cached = run_assay("agent", "run", "--quiet", "--rerun", "all", cwd=project)
    assert cached.returncode == 0 and len(fake_openai.chat_requests) == 3  # the good answer is cached


def judged_project(root, judge_table):
    """A project whose one eval is judged, with `judge_table` as its [tool.assay.judge]."""
    (root / "evals").mkdir(parents=True)
    (root / "agents").mkdir()
    (root / "experiments").mkdir()
    (root / "pyproject.toml").write_text(f"[tool.assay.judge]\n{judge_table}")
    (root / "agents" / "echo.py").write_text(
        "from assay.agent import Turn, complete_evidence_coverage, define_agent, message\n\n"
        "async def send(turn_input, ctx):\n    return Turn([message('Paris, 21 C')])\n\n"
        "echo = define_agent(name='echo', send=send, evidence_coverage=complete_evidence_coverage)\n"
    )
    (root / "experiments" / "main.py").write_text(
        "from agents.echo import echo\nfrom assay.agent import Experiment\n\nmain = Experiment(agent=echo)\n"
    )
    (root / "evals" / "judged_eval.py").write_text(
        "from assay.agent import define_eval\n\n"
        "@define_eval(judge=True)\nasync def test(t):\n    await t.send('weather?')\n    t.judge('names a city')\n"
    )
    return root


def test_a_misspelt_reasoning_effort_stops_the_run_before_any_judge_is_asked(fake_openai, tmp_path):
    """It was sent with every judge call, which a real server refuses: every judged attempt errored."""
    table = f'model = "judge-1"\nbase_url = "{fake_openai.base_url}"\napi_key_env = ""\nreasoning_effort = "hihg"\n'
    project = judged_project(tmp_path / "p", table)
    fake_openai.respond_with(lambda request: json_reply({"reasons": "names Paris", "score": 1}))
    result = run_assay("agent", "run", "--quiet", cwd=project)
    assert result.returncode == 2, result.stdout + result.stderr
    said = " ".join((result.stdout + result.stderr).split())
    assert "[tool.assay.judge]: reasoning_effort 'hihg' looks misspelt (did you mean 'high'?)" in said
    assert fake_openai.chat_requests == []
    # An effort that is near none of OpenAI's is another server's to judge: sent as it is.
    (project / "pyproject.toml").write_text(f"[tool.assay.judge]\n{table.replace('hihg', 'turbo')}")
    sent = run_assay("agent", "run", "--quiet", cwd=project)
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert fake_openai.chat_requests[0].body["reasoning_effort"] == "turbo"


def test_identical_judgements_are_cached_by_content(fake_openai):
    fake_openai.respond_with(lambda request: json_reply({"reasons": "fine", "score": 1}))
    agent, _ = scripted_agent(lambda turn_input, ctx: Turn([message("same answer")]))

    async def body(t):
        await t.send("same question")
        t.judge("is fine")

    cache = MemoryCallCache()
    tests = {f"e{i}": define_eval(body, judge=config_for(fake_openai)) for i in range(3)}
    outcome = run_evals(agent, tests, options=RunOptions(concurrency=1, judge_cache=cache))
    assert [r.verdict for r in outcome.results] == ["passed"] * 3
    assert len(fake_openai.chat_requests) == 1
    assert [r.assertions[0]["judge"]["cached"] for r in outcome.results] == [False, True, True]


def test_judge_config_precedence_is_eval_over_experiment_over_project(fake_openai):
    fake_openai.respond_with(lambda request: json_reply({"reasons": "ok", "score": 1}))
    agent, _ = scripted_agent(lambda turn_input, ctx: Turn([message("a")]))

    async def body(t):
        await t.send("q")
        t.judge("ok")

    project = {"model": "project-model", "base_url": fake_openai.base_url, "timeout": 5}
    tests = {"plain": define_eval(body, judge=True), "own": define_eval(body, judge={"model": "eval-model"})}
    run_evals(agent, tests, judge={"model": "experiment-model"}, options=RunOptions(concurrency=1, project_judge=project))
    assert [r.body["model"] for r in fake_openai.chat_requests] == ["experiment-model", "eval-model"]
    run_evals(agent, {"plain": define_eval(body, judge=True)}, options=RunOptions(project_judge=project))
    assert fake_openai.chat_requests[-1].body["model"] == "project-model"


def test_turn_judge_recipes_still_bind_the_turn_material(fake_openai):
    fake_openai.enqueue(json_reply({"reasons": "agrees", "score": 0.75}))
    agent, _ = scripted_agent([Turn([message("four")])])

    async def body(t):
        turn = await t.send("2+2?")
        turn.judge.factuality("4")

    result = run_one(agent, define_eval(body, judge=config_for(fake_openai)))
    assert result.assertions[0]["value"] == 0.75 and result.verdict == "passed"
    prompt = fake_openai.chat_requests[0].prompt
    assert "Reference: 4" in prompt and "2+2?" in prompt and "four" in prompt


def test_turn_judge_recipes_on_a_turn_without_a_reply_call_no_judge(fake_openai):
    """A tool-only turn: `t.judge(...)` said "there is no reply to judge", but `turn.judge.closed_qa/factuality/
    summarizes` paid for a call each that graded the empty string (and could pass it)."""
    from assay.agent import tool_call

    fake_openai.respond_with(lambda request: json_reply({"reasons": "fine", "score": 0.9}))
    agent, _ = scripted_agent([Turn([tool_call("call-1", "lookup", {"q": "x"})])])

    async def body(t):
        turn = await t.send("Look it up")
        turn.judge.closed_qa("Is the answer right?")
        turn.judge.factuality("42")
        turn.judge.summarizes("The source text.")

    result = run_one(agent, define_eval(body, judge=config_for(fake_openai)))
    assert statuses(result) == ["unavailable"] * 3 and result.verdict == "errored"
    assert {entry["reason"] for entry in result.assertions} == {"there is no reply to judge"}
    assert fake_openai.chat_requests == []  # (the run's preflight of the endpoint aside)


def test_resolve_judge_config_rejects_unknown_settings_and_allows_keyless_local_endpoints():
    with pytest.raises(JudgeUnavailable, match="judge-config-invalid: unknown judge setting"):
        resolve_judge_config({"model": "m", "temprature": 0}, {})
    settings = resolve_judge_config({"model": "m", "base_url": "http://127.0.0.1:1/v1", "api_key_env": ""}, {})
    assert settings["api_key"] is None and settings["timeout"] == 180.0


def test_agent_judge_endpoint_is_config_then_the_judge_variables_then_openai_and_a_named_key_variable_alone():
    env = {"OPENAI_BASE_URL": "http://env:1/v1", "OPENAI_API_KEY": "openai"}
    assert resolve_judge_config({"model": "m", "base_url": "http://own/v1"}, env)["base_url"] == "http://own/v1"
    assert resolve_judge_config({"model": "m"}, env)["base_url"] == "http://env:1/v1"
    assert resolve_judge_config({"model": "m"}, {"OPENAI_API_KEY": "k"})["base_url"] == "https://api.openai.com/v1"
    assert resolve_judge_config({"model": "m"}, env)["api_key"] == "openai"
    # A judge server named in ASSAY_JUDGE_BASE_URL (the variable document judges read) is where agent
    # transcripts go too, with ASSAY_JUDGE_API_KEY before OPENAI_API_KEY: not OPENAI_BASE_URL, not OpenAI's API.
    judged = {**env, "ASSAY_JUDGE_BASE_URL": "http://judge/v1"}
    assert resolve_judge_config({"model": "m"}, judged)["base_url"] == "http://judge/v1"
    assert resolve_judge_config({"model": "m"}, {**judged, "ASSAY_JUDGE_API_KEY": "j"})["api_key"] == "j"
    assert resolve_judge_config({"model": "m", "base_url": "http://own/v1"}, judged)["base_url"] == "http://own/v1"
    with pytest.raises(JudgeUnavailable, match="judge-key-unresolved: neither ASSAY_JUDGE_API_KEY nor OPENAI_API_KEY"):
        resolve_judge_config({"model": "m"}, {"ASSAY_JUDGE_BASE_URL": "http://judge/v1"})
    with pytest.raises(JudgeUnavailable, match="judge-key-unresolved: the judge key variable MINE"):
        resolve_judge_config({"model": "m", "api_key_env": "MINE"}, {**env, "ASSAY_JUDGE_API_KEY": "j"})


def test_llm_judge_parses_the_score_and_reasons(fake_openai):
    import asyncio

    fake_openai.enqueue(json_reply({"reasons": "half right", "score": 0.5}))

    async def go():
        judge = LLMJudge(cache=None, environ={"K": "x"})
        try:
            return await judge.grade(JudgeRequest("closed_qa", "Is it right?", "q", "a",
                                                  {"model": "j", "base_url": fake_openai.base_url, "api_key_env": "K"}))
        finally:
            await judge.aclose()

    score = asyncio.run(go())
    assert (score.score, score.explanation, score.model, score.cached) == (0.5, "half right", "j", False)
    assert json.loads(fake_openai.chat_requests[0].raw)["messages"][0]["role"] == "system"


def test_ctrl_c_while_an_attempts_judge_calls_are_answered_stops_at_once_and_offers_the_resume(fake_openai, tmp_path):
    """The eval's body is done and its judge calls are being answered (slowly) when Ctrl-C comes: the run
    stopped only once every call had its answer, each up to the judge's timeout (minutes for a few calls)."""
    import dataclasses
    import os
    import signal
    import time

    from agent_projects import replying_project

    project = replying_project(tmp_path / "judged", reply="Your order ships Monday.")
    (project / "evals" / "polite_eval.py").write_text(
        "from assay.agent import define_eval\n\n"
        "async def test(t):\n"
        "    await t.send('When does my order ship?')\n"
        "    t.judge('The answer gives a shipping day.', threshold=0.5)\n"
        "    t.judge('The answer is polite.', threshold=0.5)\n\n"
        f"polite = define_eval(test, judge={{'model': 'judge-1', 'base_url': {fake_openai.base_url!r}}})\n"
    )
    slow = {"reasons": "fine", "score": 0.9}
    fake_openai.enqueue(*[dataclasses.replace(json_reply(slow), delay_s=20) for _ in range(4)])
    run = subprocess.Popen([sys.executable, "-m", "assay", "agent", "run", "--project", str(project)],
                           cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True, env={**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")})
    try:
        deadline = time.monotonic() + 60
        while not fake_openai.chat_requests and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.05)
        assert fake_openai.chat_requests, run.communicate(timeout=30)
        asked = time.monotonic()
        os.killpg(run.pid, signal.SIGINT)
        stdout, stderr = run.communicate(timeout=60)
        stopped_after = time.monotonic() - asked
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    assert run.returncode == 130 and stopped_after < 10, (run.returncode, stopped_after, stdout, stderr)
    assert "Traceback" not in stderr
    # both calls were in flight at once (an attempt's judge calls are made together), and neither answer waited for
    assert "Resume with" in stdout and len(fake_openai.chat_requests) == 2


def test_a_run_says_what_its_judge_calls_cost_model_by_model(fake_openai, tmp_path):
    """Tokens as the endpoint reported them (its prompt cache apart), answers read from assay's cache
    counted as free, and a cost estimated from the project's price table, in the summary and the receipt."""
    table = f'model = "judge-1"\nbase_url = "{fake_openai.base_url}"\napi_key_env = ""\n'
    project = judged_project(tmp_path / "p", table)
    (project / "evals" / "second_eval.py").write_text(
        "from assay.agent import define_eval\n\n"
        "@define_eval(judge=True)\nasync def test(t):\n    await t.send('weather?')\n    t.judge('names a day')\n"
    )
    usage = {"prompt_tokens": 1200, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 200}}
    fake_openai.respond_with(lambda request: json_reply({"reasons": "yes", "score": 1}, usage=usage))
    with open(project / "pyproject.toml", "a") as pyproject:  # USD per million tokens
        pyproject.write("\n[tool.assay.pricing]\njudge-1 = { input = 2.0, output = 8.0, cache_read = 0.5 }\n")

    first = run_assay("agent", "run", "--json", cwd=project)
    assert first.returncode == 0, first.stdout + first.stderr
    receipt = json.loads(first.stdout.splitlines()[-1])["receipt"]
    # 2 calls: 2 x (1,000 x $2 + 200 x $0.5 + 30 x $8) / 1e6
    assert receipt["judge_usage"] == {"judge-1": {
        "calls": 2, "cached": 0, "no_usage": 0, "input_tokens": 2000, "output_tokens": 60, "cache_read_tokens": 400,
        "estimated_cost_usd": pytest.approx(0.00468),
    }}
    # Kept with the run: `runs show` says it later.
    kept = run_assay("runs", "show", "latest", cwd=project)
    assert ("judge judge-1: 2 call(s); 2,000 input (+400 from the provider's prompt cache) and 60 output tokens; "
            "est. $0.0047") in kept.stdout, kept.stdout + kept.stderr
    shown = run_assay("agent", "run", "--rerun", "all", cwd=project)
    assert shown.returncode == 0 and len(fake_openai.chat_requests) == 2  # both answers read from the cache
    assert "judge judge-1: 0 call(s), 2 read from the cache; est. $0" in shown.stdout

    # Shards each spend their own; their merge says what the whole cost.
    run_assay("judge", "cache", "clear", cwd=project)  # asked again, not read back
    shards = []
    for index in (1, 2):
        shard = run_assay("agent", "run", "--rerun", "all", "--shard", f"{index}/2", "--json", cwd=project)
        assert shard.returncode == 0, shard.stdout + shard.stderr
        shards.append(json.loads(run_assay("runs", "list", "--json", cwd=project).stdout)["runs"][0]["run_id"])
    merged = run_assay("runs", "merge", *shards, cwd=project)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "judge judge-1: 2 call(s); 2,000 input (+400 from the provider's prompt cache)" in merged.stdout

    # A server that reports no usage gets no estimate, rather than one too low.
    def without_usage(request):
        reply = json_reply({"reasons": "yes", "score": 1})
        del reply.completion["usage"]
        return reply

    fake_openai.respond_with(without_usage)
    (project / "pyproject.toml").write_text(f"[tool.assay.judge]\n{table.replace('judge-1', 'judge-2')}")
    unreported = run_assay("agent", "run", "--rerun", "all", cwd=project)
    assert unreported.returncode == 0, unreported.stdout + unreported.stderr
    assert "judge judge-2: 2 call(s); 2 call(s) reported no token usage" in unreported.stdout


def test_no_cost_estimate_says_what_the_price_table_lacks():
    """A judge whose provider reports prompt-cache reads, priced without a `cache_read` rate, was said to have
    "no price" in the table that has one; the line now names the missing rate (and a misspelt key)."""
    from assay.agent.judging import judge_spend
    from assay.agent.report import judge_spend_lines

    counts = {"calls": 2, "cached": 0, "no_usage": 0, "input_tokens": 2000, "output_tokens": 60, "cache_read_tokens": 400}
    pricing = {"judge-1": {"input": 2.0, "output": 8.0}}
    lines = judge_spend_lines(judge_spend({"judge-1": counts, "judge_2": counts}, pricing))
    assert lines == [
        "judge judge-1: 2 call(s); 2,000 input (+400 from the provider's prompt cache) and 60 output tokens; no cost "
        "estimate: the price of 'judge-1' in [tool.assay.pricing] has no cache_read rate, and cache_read tokens were used",
        "judge judge_2: 2 call(s); 2,000 input (+400 from the provider's prompt cache) and 60 output tokens; no cost "
        "estimate: [tool.assay.pricing] has no price for 'judge_2' (its table has 'judge-1': a misspelt key?)",
    ]
    priced = judge_spend({"judge-1": counts}, {"judge-1": {"input": 2.0, "output": 8.0, "cache_read": 0.5}})
    assert "unpriced" not in priced["judge-1"] and priced["judge-1"]["estimated_cost_usd"] == pytest.approx(0.00468)


def test_an_attempts_judge_calls_are_made_at_once_not_one_after_another(fake_openai):
    """Three judged criteria cost three model calls' time when each waited for the one before (4 slow calls of 3 s
    took 12 s); they are asked together, so the attempt waits about as long as its slowest call."""
    import dataclasses
    import threading
    import time

    arrived: list[float] = []
    lock = threading.Lock()

    def slow(request):
        with lock:
            arrived.append(time.monotonic())
        return dataclasses.replace(json_reply({"reasons": "ok", "score": 1}), delay_s=0.6)

    fake_openai.respond_with(slow)
    agent, _ = scripted_agent(lambda turn_input, ctx: Turn([message("It is sunny.")]))

    async def body(t):
        await t.send("weather?")
        for criterion in ("names the weather", "is polite", "is short"):
            t.judge(criterion)

    result = run_one(agent, define_eval(body, judge=config_for(fake_openai)))
    assert result.verdict == "passed" and statuses(result)[-3:] == ["matched"] * 3
    assert len(arrived) == 3
    assert max(arrived) - min(arrived) < 0.5, [round(at - arrived[0], 3) for at in arrived]  # one after another: >= 0.6 s apart
