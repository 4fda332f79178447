"""`langgraph_agent`: a real compiled LangGraph graph (a model node, LangGraph's own `ToolNode` running LangChain tools,
an `interrupt` for a person's approval, a checkpointer) driven by evals. The model node is scripted, so no provider is
called; everything else is LangGraph's."""

from __future__ import annotations

import asyncio

import pytest
from agent_helpers import run_one
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt

from assay.agent import equals, includes, tool_match
from assay.agent.adapters import langgraph_agent, turn_from_langchain_messages


@tool
def get_weather(city: str) -> dict:
    """The weather in a city."""
    return {"city": city, "sky": "sunny"}


@tool
def delete_repo(name: str) -> str:
    """Delete a repository, once a person agrees."""
    answer = interrupt({"question": f"Delete {name}?", "action": "delete_repo", "options": ["approve", "deny"]})
    return f"deleted {name}" if answer == "approve" else f"not deleted: {answer}"


@tool
def stock(sku: str) -> int:
    """Units in stock."""
    raise RuntimeError("the stock service is down")


USAGE = {"input_tokens": 30, "output_tokens": 5, "total_tokens": 35,
         "input_token_details": {"cache_read": 10}, "output_token_details": {"reasoning": 2}}


def model(state: MessagesState) -> dict:
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        return {"messages": [AIMessage(content=f"The tool said {last.content}", usage_metadata=USAGE)]}
    asked = last.content
    calls = {"weather": ("get_weather", {"city": "Paris"}), "delete": ("delete_repo", {"name": "shop"}),
             "stock": ("stock", {"sku": "A1"})}
    for word, (name, args) in calls.items():
        if word in asked:
            thinking = [{"type": "reasoning", "reasoning": f"I will call {name}."}, {"type": "text", "text": ""}]
            return {"messages": [AIMessage(content=thinking, tool_calls=[{"name": name, "args": args, "id": f"{name}-1"}],
                                           usage_metadata=USAGE)]}
    humans = sum(1 for message in state["messages"] if isinstance(message, HumanMessage))
    return {"messages": [AIMessage(content=f"You wrote {humans} message(s).", usage_metadata=USAGE)]}


def build(checkpointer=True):
    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tools", ToolNode([get_weather, delete_repo, stock], handle_tool_errors=True))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", lambda state: "tools" if state["messages"][-1].tool_calls else END, ["tools", END])
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=InMemorySaver() if checkpointer else None)


@pytest.mark.parametrize("checkpointer", [True, False], ids=["with a checkpointer", "without one"])
def test_tool_calls_reasoning_usage_and_the_history_of_each_session_line(checkpointer):
    agent = langgraph_agent(build(checkpointer))

    async def body(t):
        turn = await t.send("What is the weather in Paris?")
        t.succeeded()
        turn.called_tool(tool_match("get_weather", input={"city": "Paris"}, status="completed",
                                    output={"city": "Paris", "sky": "sunny"}))
        t.check(t.reply, includes("sunny"))
        again = await t.send("How many did I write?")
        t.check(again.message, equals("You wrote 2 message(s)."))
        other = t.new_session()
        await other.send("and here?")
        t.check(other.reply, equals("You wrote 1 message(s)."))

    result = run_one(agent, body)
    assert result.verdict == "passed", [a for a in result.assertions if a["status"] != "matched"] or result.error
    assert [event["type"] for event in result.turns[0]["events"]] == [
        "thinking", "operation.started", "operation.finished", "message"]
    assert result.turns[0]["usage"] == {"input_tokens": 40, "output_tokens": 10, "cache_read_tokens": 20,
                                        "cache_creation_tokens": 0, "reasoning_tokens": 4, "requests": 2}


@pytest.mark.parametrize("answer", ["approve", "deny"])
def test_an_interrupt_waits_for_a_person_and_the_answer_resumes_the_graph(answer):
    agent = langgraph_agent(build())

    async def body(t):
        turn = await t.send("Please delete the shop repo")
        t.check(turn.status, equals("waiting"))
        request = t.require_input_request(action="delete_repo", option_ids=["approve", "deny"])
        t.check(request.prompt, equals("Delete shop?"))
        turn.called_tool(tool_match("delete_repo", status="pending"))
        await t.respond(answer)
        t.succeeded()
        t.called_tool(tool_match("delete_repo", status="completed",
                                 output="deleted shop" if answer == "approve" else "not deleted: deny"))

    result = run_one(agent, body)
    assert result.verdict == "passed", [a for a in result.assertions if a["status"] != "matched"] or result.error


def test_a_tool_error_is_a_failed_call_and_the_converter_reads_messages_alone():
    async def body(t):
        turn = await t.send("check the stock")
        turn.called_tool(tool_match("stock", status="failed"))
        t.check(t.reply, includes("the stock service is down"))

    result = run_one(langgraph_agent(build()), body)
    assert result.verdict == "passed", [a for a in result.assertions if a["status"] != "matched"] or result.error
    state = build(checkpointer=False).invoke({"messages": [HumanMessage("weather")]})
    turn = turn_from_langchain_messages(state["messages"][1:])
    assert [type(event).__name__ for event in turn.events] == ["Thinking", "OperationStarted", "OperationFinished", "Message"]
    broken = AIMessage(content="", invalid_tool_calls=[{"name": "stock", "args": "{sku:", "id": "x1", "error": "bad JSON"}])
    [started, finished] = turn_from_langchain_messages([broken]).events
    assert started.operation.name == "stock" and (finished.status, finished.output) == ("failed", {"error": "bad JSON"})


def test_a_misspelt_messages_key_or_a_graph_not_compiled_is_named():
    with pytest.raises(ValueError, match=r"messages_key='mesages' is not in the graph's input state \(its keys: "
                                         r"messages\); did you mean 'messages'\?"):
        langgraph_agent(build(), messages_key="mesages")
    with pytest.raises(TypeError, match="takes a compiled graph"):
        langgraph_agent(StateGraph(MessagesState))


def _one_node(node, checkpointer=None):
    graph = StateGraph(MessagesState)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    return graph.compile(checkpointer=checkpointer)


@pytest.mark.parametrize("checkpointer", [InMemorySaver(), None, False], ids=["with a checkpointer", "without one",
                                                                            "checkpointer=False"])
def test_a_graph_that_trims_its_history_still_shows_each_turns_reply(checkpointer):
    from langchain_core.messages import RemoveMessage

    def trimming(state: MessagesState) -> dict:  # keeps only the question it answers, as summarising graphs do
        kept = state["messages"][-1]
        gone = [RemoveMessage(id=message.id) for message in state["messages"][:-1]]
        return {"messages": [*gone, AIMessage(f"reply to {kept.content} ({len(state['messages'])} seen)")]}

    async def body(t):
        await t.send("one")
        second = await t.send("two")
        t.check(second.message, equals("reply to two (3 seen)"))  # the history reached the graph, with or without memory
        third = await t.send("three")
        t.check(third.message, equals("reply to three (3 seen)"))

    result = run_one(langgraph_agent(_one_node(trimming, checkpointer)), body)
    assert result.verdict == "passed", [a for a in result.assertions if a["status"] != "matched"] or result.error


def test_an_interrupt_in_a_graph_without_a_checkpointer_says_to_compile_it_with_one():
    def asks(state: MessagesState) -> dict:
        return {"messages": [AIMessage(str(interrupt("Go on?")))]}

    async def body(t):
        await t.send("hi")
        t.require_input_request()
        await t.respond("yes")

    result = run_one(langgraph_agent(_one_node(asks)), body)
    assert result.verdict == "errored"
    assert "compiled without a checkpointer" in result.error["message"]
    assert "graph.compile(checkpointer=InMemorySaver())" in result.error["message"]


def test_interrupts_asked_together_are_answered_together_and_one_left_is_named():
    from langgraph.types import Send

    @tool
    async def ship(order: str) -> str:
        """Ship an order, once a person agrees."""
        await asyncio.sleep(0.05)  # asked first, stops last: the requests still come in the order the calls were made
        return f"ship:{interrupt({'question': 'Ship it?', 'options': [{'id': 'yes', 'label': 'Yes, ship'}, 'no']})}"

    @tool
    def note(order: str) -> str:
        """Ask for a note."""
        return f"note:{interrupt('Which note?')}"

    def assistant(state: MessagesState) -> dict:
        if isinstance(state["messages"][-1], ToolMessage):
            done = sorted(message.content for message in state["messages"] if isinstance(message, ToolMessage))
            return {"messages": [AIMessage(" ".join(done))]}
        return {"messages": [AIMessage("", tool_calls=[{"name": "ship", "args": {"order": "1"}, "id": "s1"},
                                                       {"name": "note", "args": {"order": "1"}, "id": "n1"}])]}

    def each_call(state: MessagesState):  # one task per call, as create_agent routes them: both interrupt at once
        calls = state["messages"][-1].tool_calls
        return [Send("tools", {"__type": "tool_call_with_context", "tool_call": call, "state": state})
                for call in calls] if calls else END

    graph = StateGraph(MessagesState)
    graph.add_node("assistant", assistant)
    graph.add_node("tools", ToolNode([ship, note]))
    graph.add_edge(START, "assistant")
    graph.add_conditional_edges("assistant", each_call, ["tools", END])
    graph.add_edge("tools", "assistant")
    agent = langgraph_agent(graph.compile(checkpointer=InMemorySaver()))

    async def together(t):
        await t.send("ship order 1")
        t.require_input_request(option_ids=["yes", "no"])
        await t.respond("yes", "fragile")
        t.check(t.reply, equals("note:fragile ship:yes"))

    result = run_one(agent, together)
    assert result.verdict == "passed", [a for a in result.assertions if a["status"] != "matched"] or result.error
    [ship_request] = [event["request"] for event in result.turns[0]["events"] if event["type"] == "input.requested"
                      and event["request"]["prompt"] == "Ship it?"]
    assert ship_request["options"] == [{"id": "yes", "label": "Yes, ship"}, {"id": "no"}]

    async def one_left(t):
        await t.send("ship order 1")
        await t.respond("yes")

    result = run_one(agent, one_left)
    assert result.verdict == "errored" and "unanswered: 'Which note?'" in result.error["message"], result.error


def test_reasoning_as_providers_write_it_and_a_reply_cut_short():
    openai_summary = AIMessage(content=[
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Check the order first."}]},
        {"type": "text", "text": "Checked.", "annotations": []}], response_metadata={"model_provider": "openai"})
    reasoning_content = AIMessage("Hello", additional_kwargs={"reasoning_content": "Greet them."})
    anthropic = AIMessage(content=[{"type": "thinking", "thinking": "Look it up.", "signature": "s"},
                                   {"type": "text", "text": "Looking."},
                                   {"type": "tool_use", "id": "toolu_1", "name": "stock", "input": {"sku": "A1"}}],
                          tool_calls=[{"name": "stock", "args": {"sku": "A1"}, "id": "toolu_1"}])
    turn = turn_from_langchain_messages([openai_summary, reasoning_content, anthropic])
    assert [(type(event).__name__, getattr(event, "text", None)) for event in turn.events] == [
        ("Thinking", "Check the order first."), ("Message", "Checked."), ("Thinking", "Greet them."),
        ("Message", "Hello"), ("Thinking", "Look it up."), ("Message", "Looking."), ("OperationStarted", None)]
    assert turn.status == "completed"
    for stopped in ({"stop_reason": "max_tokens"}, {"finish_reason": "MAX_TOKENS"}, {"finish_reason": "length"}):
        assert turn_from_langchain_messages([AIMessage("cut", response_metadata=stopped)]).status == "failed", stopped


def test_files_reach_the_graph_as_content_blocks(tmp_path):
    def describes(state: MessagesState) -> dict:
        content = state["messages"][-1].content
        return {"messages": [AIMessage(repr([(block["type"], block.get("mime_type")) for block in content]))]}

    picture = tmp_path / "pic.png"
    picture.write_bytes(b"\x89PNG")

    async def body(t):
        await t.send_file(picture, "what is this?")
        t.check(t.reply, equals("[('text', None), ('image', 'image/png')]"))

    result = run_one(langgraph_agent(_one_node(describes, InMemorySaver())), body)
    assert result.verdict == "passed", [a for a in result.assertions if a["status"] != "matched"] or result.error


def test_a_misspelt_or_misshapen_config_is_named():
    with pytest.raises(ValueError, match=r"config key 'recursion_limt' is not a LangGraph config key; did you mean "
                                         r"'recursion_limit'\?"):
        langgraph_agent(build(), config={"recursion_limt": 5})
    with pytest.raises(TypeError, match=r"config\['recursion_limit'\] must be a whole number of steps, got 'ten'"):
        langgraph_agent(build(), config={"recursion_limit": "ten"})
    with pytest.raises(TypeError, match="messages_key takes the name of the state key"):
        langgraph_agent(build(), messages_key=["messages"])
    langgraph_agent(build(), config={"user_id": "u1", "thread": "t"})  # LangGraph reads a key of its own as configurable

    async def body(t):
        await t.send("hi")

    result = run_one(langgraph_agent(build(), config=lambda ctx: {"configurable": "u1"}), body)
    assert result.verdict == "errored"
    assert "config['configurable'] must be a dict of the values your nodes read, got str" in result.error["message"]


def test_a_call_without_an_id_is_still_a_call_and_usage_on_only_some_replies_is_partial():
    """LangChain lets a tool call's id be None: it became an operation with no id. Usage summed over only the replies
    that reported it was given as the turn's whole usage."""
    unnamed = AIMessage(content="", tool_calls=[{"name": "get_weather", "args": {"city": "Oslo"}, "id": None}])
    [started] = turn_from_langchain_messages([unnamed]).events
    assert isinstance(started.operation_id, str) and started.operation_id and started.operation.name == "get_weather"

    counted = AIMessage("first", usage_metadata=USAGE)
    uncounted = AIMessage("second")
    turn = turn_from_langchain_messages([counted, uncounted])
    assert turn.usage.output_tokens == USAGE["output_tokens"]
    assert turn.evidence_coverage["usage"].state == "partial"
    assert "1 of the turn's 2 AI messages" in turn.evidence_coverage["usage"].reason
    assert turn_from_langchain_messages([uncounted]).evidence_coverage["usage"].state == "unavailable"
    assert turn_from_langchain_messages([counted, counted]).evidence_coverage is None
