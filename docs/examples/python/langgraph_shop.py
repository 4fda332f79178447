"""A LangGraph graph evaluated as it is (docs/agent/agents.md): LangGraph's ToolNode runs the tools and an
`interrupt` asks a person. The model node is scripted so this runs offline; yours calls a chat model."""

import sys

# --8<-- [start:langgraph]
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt

from assay.agent import Experiment, equals, tool_match
from assay.agent.adapters import langgraph_agent
from assay.agent.api import run_evals


@tool
def refund(order_id: str) -> str:
    """Refund an order, once a person agrees."""
    answer = interrupt({"question": f"Refund order {order_id}?", "action": "refund", "options": ["approve", "deny"]})
    return "refunded" if answer == "approve" else "not refunded"


def assistant(state: MessagesState) -> dict:  # your app calls its chat model here
    if isinstance(state["messages"][-1], ToolMessage):
        return {"messages": [AIMessage(f"Done: {state['messages'][-1].content}.")]}
    return {"messages": [AIMessage("", tool_calls=[{"name": "refund", "args": {"order_id": "1001"}, "id": "r1"}])]}


graph = StateGraph(MessagesState)
graph.add_node("assistant", assistant)
graph.add_node("tools", ToolNode([refund]))
graph.add_edge(START, "assistant")
graph.add_conditional_edges("assistant", lambda state: "tools" if state["messages"][-1].tool_calls else END)
graph.add_edge("tools", "assistant")
shop = graph.compile(checkpointer=InMemorySaver())  # an interrupt needs a checkpointer


async def refund_needs_approval(t):
    turn = await t.send("Please refund order 1001")
    t.check(turn.status, equals("waiting"))
    t.require_input_request(action="refund", option_ids=["approve", "deny"])
    await t.respond("approve")
    t.called_tool(tool_match("refund", input={"order_id": "1001"}, output="refunded"))
    t.check(t.reply, equals("Done: refunded."))


results = run_evals({"refund": refund_needs_approval}, Experiment(agent=langgraph_agent(shop), model="scripted"))
print([attempt.verdict for attempt in results.attempts])  # ['passed']
# --8<-- [end:langgraph]
sys.exit(results.exit_code)
