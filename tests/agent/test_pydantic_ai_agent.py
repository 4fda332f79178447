"""`pydantic_ai_agent`: a real pydantic-ai `Agent` (its tools, its history, its approvals) driven by evals, with a
scripted `FunctionModel` in place of a provider, so the agent, the tool loop and the messages are pydantic-ai's own."""

from __future__ import annotations

import pytest
from agent_helpers import run_one
from pydantic import BaseModel
from pydantic_ai import Agent, DeferredToolRequests, ModelRetry, RunContext
from pydantic_ai.messages import ModelResponse, TextPart, ThinkingPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from assay.agent import MISSING, equals, includes, tool_match
from assay.agent.adapters import pydantic_ai_agent, turn_from_pydantic_ai


class Order(BaseModel):
    order_id: str
    status: str


def shop_model(messages, info: AgentInfo) -> ModelResponse:
    """The model: calls a tool for what it is asked, then says what the tool returned; remembers the conversation."""
    last = messages[-1]
    returned = [part for part in last.parts if isinstance(part, ToolReturnPart)]
    if returned:
        return ModelResponse(parts=[TextPart(f"{returned[0].tool_name} said: {returned[0].content}")])
    asked = " ".join(str(part.content) for part in last.parts if hasattr(part, "content"))
    if "weather" in asked:
        return ModelResponse(parts=[ThinkingPart("I should look it up."),
                                    ToolCallPart("get_weather", {"city": "Paris"}, tool_call_id="w1")])
    if "both" in asked:
        return ModelResponse(parts=[ToolCallPart("delete_repo", {"name": "shop"}, tool_call_id="d1"),
                                    ToolCallPart("delete_repo", {"name": "blog"}, tool_call_id="d2")])
    if "delete" in asked:
        return ModelResponse(parts=[ToolCallPart("delete_repo", {"name": "shop"}, tool_call_id="d1")])
    if "stock" in asked:
        return ModelResponse(parts=[ToolCallPart("stock", {"sku": "A1"}, tool_call_id="s1")])
    if "order" in asked and info.output_tools:
        tool = info.output_tools[0]
        return ModelResponse(parts=[ToolCallPart(tool.name, {"order_id": "1001", "status": "shipped"}, tool_call_id="o1")])
    users = sum(1 for message in messages for part in message.parts if type(part).__name__ == "UserPromptPart")
    return ModelResponse(parts=[TextPart(f"You wrote {users} message(s) to {info.model_settings or {}}.")])


def shop_agent(**options) -> Agent:
    agent = Agent(FunctionModel(shop_model), output_type=[str, DeferredToolRequests], name="shop", deps_type=str, **options)

    @agent.tool
    def get_weather(ctx: RunContext[str], city: str) -> dict:
        """The weather in a city."""
        return {"city": city, "sky": "sunny", "asked_by": ctx.deps}

    @agent.tool_plain(requires_approval=True)
    def delete_repo(name: str) -> str:
        """Delete a repository."""
        return f"deleted {name}"

    @agent.tool_plain
    def stock(sku: str) -> int:
        """Units in stock."""
        raise ModelRetry("the stock service is down")

    return agent


def test_a_turn_is_the_runs_messages_tools_thinking_and_usage_and_the_history_is_kept_per_session_line():
    agent = pydantic_ai_agent(shop_agent(), deps=lambda ctx: f"{ctx.experiment_id}/{ctx.eval_id}")

    async def body(t):
        turn = await t.send("What is the weather in Paris?")
        t.succeeded()
        turn.called_tool(tool_match("get_weather", input={"city": "Paris"}, status="completed",
                                    output={"city": "Paris", "sky": "sunny", "asked_by": "exp/e"}))
        t.check(t.reply, includes("get_weather said"))
        again = await t.send("and how many messages?")
        t.check(again.message, includes("You wrote 2 message(s)"))  # the history went with it
        other = t.new_session()
        await other.send("how many?")
        t.check(other.reply, includes("You wrote 1 message(s)"))
        t.max_tokens(10_000)

    result = run_one(agent, body)
    assert result.verdict == "passed", [a for a in result.assertions if a["status"] != "matched"] or result.error
    assert [event["type"] for event in result.turns[0]["events"]] == [
        "thinking", "operation.started", "operation.finished", "message"]
    assert result.usage["requests"] == 4 and result.usage["output_tokens"] > 0  # pydantic-ai's own count


@pytest.mark.parametrize("answer", ["approve", "deny"])
def test_a_tool_that_needs_approval_waits_and_the_answer_runs_the_agent_again(answer):
    agent = pydantic_ai_agent(shop_agent(), deps="me")

    async def body(t):
        turn = await t.send("Please delete the shop repo")
        t.check(turn.status, equals("waiting"))
        request = t.require_input_request(action="delete_repo", option_ids=["approve", "deny"])
        t.check(request.input, equals({"name": "shop"}))
        await t.respond(answer)
        t.succeeded()
        if answer == "approve":
            t.called_tool(tool_match("delete_repo", status="completed", output="deleted shop"))
            t.check(t.reply, equals("delete_repo said: deleted shop"))
        else:  # the model reads why
            t.called_tool(tool_match("delete_repo", status="rejected"))
            t.check(t.reply, includes("Do not retry it"))

    result = run_one(agent, body)
    assert result.verdict == "passed", [a for a in result.assertions if a["status"] != "matched"] or result.error


def test_a_tool_that_asks_for_a_retry_is_a_failed_call_and_a_structured_output_is_the_data():
    structured = Agent(FunctionModel(shop_model), output_type=Order, name="orders")
    agent = pydantic_ai_agent(shop_agent(), deps="me")

    async def failing(t):
        turn = await t.send("check the stock")
        turn.called_tool(tool_match("stock", status="failed"))
        t.check(t.reply, includes("the stock service is down"))

    assert run_one(agent, failing).verdict == "passed"

    async def ordered(t):
        turn = await t.send("where is my order?", output=Order)
        t.check(turn.data, equals({"order_id": "1001", "status": "shipped"}))
        turn.used_no_tools()  # the output tool is how the answer came, not a call the agent made

    for answering in (structured, shop_agent()):  # its own output type; a text agent asked for the eval's schema
        result = run_one(pydantic_ai_agent(answering, deps="me"), ordered)
        assert result.verdict == "passed", [a for a in result.assertions if a["status"] != "matched"] or result.error


def test_the_converter_alone_and_a_model_chosen_from_the_experiment():
    seen = []

    async def body(t):
        await t.send("hello")

    def choose(ctx):
        seen.append(ctx.model)
        return FunctionModel(shop_model, model_name=ctx.model)

    result = run_one(pydantic_ai_agent(shop_agent(), deps="me", model=choose, model_settings={"temperature": 0}), body,
                     model="scripted-2")
    assert result.verdict == "passed" and seen == ["scripted-2"]
    assert "'temperature': 0" in result.turns[0]["events"][-1]["text"]
    run = shop_agent().run_sync("What is the weather?", deps="me")
    turn = turn_from_pydantic_ai(run.new_messages(), output=run.output, usage=run.usage)
    assert [type(event).__name__ for event in turn.events] == ["Thinking", "OperationStarted", "OperationFinished", "Message"]
    assert turn.usage.requests == 2 and turn.data is MISSING  # plain text is the reply, not data
    with pytest.raises(TypeError, match="takes a pydantic_ai.Agent, got str"):
        pydantic_ai_agent("shop")


def test_an_agent_whose_tools_need_deps_is_refused_without_them():
    # pydantic-ai would run it with deps=None, and the first tool to read ctx.deps fail far from the cause.
    with pytest.raises(TypeError, match=r"pydantic_ai_agent: the agent 'shop' has deps_type=str but no deps were given: "
                                        r"pydantic_ai_agent\(agent, deps=…\)"):
        pydantic_ai_agent(shop_agent())
    pydantic_ai_agent(shop_agent(), deps=None)  # said so: its tools do without
    pydantic_ai_agent(Agent(FunctionModel(shop_model), deps_type=str | None))


def test_several_approvals_are_answered_together_and_one_left_out_is_said():
    agent = pydantic_ai_agent(shop_agent(), deps="me")

    async def both(t):
        await t.send("delete both repos")
        await t.respond("approve", "deny")
        t.succeeded()
        t.called_tool(tool_match("delete_repo", input={"name": "shop"}, status="completed"))
        t.called_tool(tool_match("delete_repo", input={"name": "blog"}, status="rejected"))

    result = run_one(agent, both)
    assert result.verdict == "passed", [a for a in result.assertions if a["status"] != "matched"] or result.error

    async def one(t):
        await t.send("delete both repos")
        await t.respond("approve")

    result = run_one(agent, one)  # (not pydantic-ai's UserError "Tool call results need to be provided for all …")
    assert result.error["code"] == "agent-send-failed"
    assert result.error["message"].endswith(
        "respond answered 1 of the 2 tool approvals the last turn waits for (unanswered: d2): pydantic-ai runs the "
        'agent again only with an answer for each, so answer them together: t.respond("approve", "deny", …) in the '
        'order they were asked, or t.respond_all("approve")')
