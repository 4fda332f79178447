"""A deterministic local shop assistant: order lookups, refunds that need a person's approval, memory.

It stands in for a real agent behind `send`: tool calls are emitted as paired operation events, a
refund pauses the turn (`waiting`) until the eval answers, and conversation state lives in the session.
With the OpenTelemetry SDK installed it also exports each turn's spans (`shop_tracing.py`).
"""

from __future__ import annotations

import re

from assay.agent import (
    InputOption, InputRequest, InputRequested, Turn, Usage, complete_evidence_coverage, create_session_slot,
    define_agent, message, tool_call, tool_result,
)

from agents.shop_tracing import record_turn

ORDERS = {
    "1001": {"status": "shipped", "carrier": "DHL", "total": 42.5},
    "1002": {"status": "processing", "carrier": None, "total": 18.0},
}
NAME = create_session_slot("customer name")
PAUSED_REFUND = create_session_slot("refund awaiting approval")


def _usage(text: str, reply: str) -> Usage:
    return Usage(input_tokens=len(text.split()) + 20, output_tokens=len(reply.split()))


def _turn(text: str, events: list, *, status: str = "completed", data=None) -> Turn:
    reply = next((event.text for event in reversed(events) if getattr(event, "type", "") == "message"), "")
    if data is None:
        return Turn(events, status, usage=_usage(text, reply))
    return Turn(events, status, data=data, usage=_usage(text, reply))


async def send(turn_input, ctx):
    turn = _answer(turn_input, ctx)
    await record_turn(ctx, turn.events, turn.usage)  # spans for the waterfall; nothing without the OTel SDK
    return turn


def _answer(turn_input, ctx):
    text = turn_input.text
    session = ctx.session
    call_number = len(session.get(NAME) or "") + 1  # deterministic, per session line

    paused = session.take(PAUSED_REFUND)
    if paused is not None:
        decision = {response.request_id: response for response in turn_input.responses}.get(paused["request_id"])
        if decision is not None and decision.option_id == "approve":
            return _turn(text, [
                tool_result(paused["call_id"], {"refunded": ORDERS[paused["order"]]["total"]}),
                message(f"Refund of ${ORDERS[paused['order']]['total']:.2f} for order {paused['order']} issued."),
            ])
        return _turn(text, [
            tool_result(paused["call_id"], status="rejected"),
            message(f"Understood, I did not refund order {paused['order']}."),
        ])

    if match := re.search(r"my name is (\w+)", text, re.IGNORECASE):
        session.set(NAME, match.group(1))
        session.capture(f"shop-session-{match.group(1).lower()}")
        return _turn(text, [message(f"Nice to meet you, {match.group(1)}!")])
    if "my name" in text.lower():
        name = session.get(NAME)
        return _turn(text, [message(f"Your name is {name}." if name else "I don't know your name yet.")])

    order = re.search(r"\b(\d{4})\b", text)
    if order and "refund" in text.lower():
        order_id = order.group(1)
        call_id = f"refund-{order_id}-{call_number}"
        session.set(PAUSED_REFUND, {"order": order_id, "call_id": call_id, "request_id": f"approve-{call_id}"})
        return _turn(text, [
            tool_call(f"lookup-{order_id}", "lookup_order", {"order_id": order_id}),
            tool_result(f"lookup-{order_id}", ORDERS.get(order_id)),
            tool_call(call_id, "refund_order", {"order_id": order_id}),
            InputRequested(InputRequest(
                id=f"approve-{call_id}", prompt=f"Refund order {order_id}?", action="refund_order",
                input={"order_id": order_id}, options=(InputOption("approve", "Approve"), InputOption("deny", "Deny")),
            )),
        ], status="waiting")
    if order:
        order_id = order.group(1)
        found = ORDERS.get(order_id)
        events = [tool_call(f"lookup-{order_id}", "lookup_order", {"order_id": order_id})]
        if found is None:
            events += [tool_result(f"lookup-{order_id}", {"error": "not found"}, status="failed"),
                       message(f"I could not find order {order_id}.")]
            return _turn(text, events)
        events.append(tool_result(f"lookup-{order_id}", found))
        if turn_input.output_schema is not None:
            data = {"order_id": order_id, "status": found["status"], "total": found["total"]}
            return _turn(text, events + [message(f"Order {order_id}: {found['status']}.")], data=data)
        carrier = f" with {found['carrier']}" if found["carrier"] else ""
        return _turn(text, events + [message(f"Order {order_id} is {found['status']}{carrier}.")])
    return _turn(text, [message("Hello! I can look up orders and issue refunds.")])


def shop_agent():
    return define_agent(name="shop-assistant", send=send, evidence_coverage=complete_evidence_coverage)
