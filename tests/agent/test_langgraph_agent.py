"""`langgraph_agent`: a real compiled LangGraph graph (a model node, LangGraph's own `ToolNode` running LangChain tools,
an `interrupt` for a person's approval, a checkpointer) driven by evals. The model node is scripted, so no provider is
called; everything else is LangGraph's."""

from __future__ import annotations

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
