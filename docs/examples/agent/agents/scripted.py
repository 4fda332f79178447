"""An offline agent that plays scripted answers, so every example of the guide runs without a model.

It knows a few questions (weather, orders, refunds) and answers them with the events a real agent
adapter reports: tool calls and their results, messages, input requests, data and usage.
"""

from __future__ import annotations

import re

from assay.agent import (
    InputOption, InputRequest, InputRequested, Turn, Usage, command_projection, complete_evidence_coverage,
    create_session_slot, define_agent, message, tool_call, tool_result,
)

FORECASTS = {"paris": {"sky": "sunny", "celsius": 21}, "oslo": {"sky": "snowing", "celsius": -3}}
ORDER = {"status": "shipped", "carrier": "DHL", "total": 42.5}
PENDING_REFUND = create_session_slot("refund waiting for approval")
NAME = create_session_slot("customer name")
APPROVAL = InputRequest(
    id="approve-refund-1", prompt="Refund order 1001 ($42.50)?", action="refund_order",
    input={"order_id": "1001"},
    options=(InputOption("approve", "Approve"), InputOption("deny", "Deny")),
)


def _turn(text, events, status="completed", data=None):
    said = [event.text for event in events if getattr(event, "type", "") == "message"]
    words = len(" ".join(said).split())
    usage = Usage(input_tokens=len(text.split()) + 20, output_tokens=words + 5)
    if data is None:
        return Turn(events, status, usage=usage)
    return Turn(events, status, data=data, usage=usage)


def _weather(city, call_id):
    forecast = FORECASTS.get(city.lower(), {"sky": "cloudy", "celsius": 15})
    calls = [tool_call(call_id, "get_weather", {"city": city}), tool_result(call_id, forecast)]
    return forecast, calls


async def send(turn_input, ctx):
    text = turn_input.text
    session = ctx.session
    lookup = [tool_call("lookup-1", "lookup_order", {"order_id": "1001"}),
              tool_result("lookup-1", ORDER)]

    if session.take(PENDING_REFUND) is not None:  # this turn answers the approval request
        answers = {response.request_id: response.option_id for response in turn_input.responses}
        if answers.get(APPROVAL.id) == "approve":
            return _turn(text, [tool_result("refund-1", {"refunded": 42.5}),
                                message("Refund of $42.50 for order 1001 issued.")])
        return _turn(text, [tool_result("refund-1", status="rejected"),
                            message("Understood, order 1001 was not refunded.")])

    if match := re.search(r"my name is (\w+)", text, re.IGNORECASE):
        session.set(NAME, match.group(1))
        return _turn(text, [message(f"Nice to meet you, {match.group(1)}!")])
    if "my name" in text.lower():
        name = session.get(NAME)
        reply = f"Your name is {name}." if name else "I don't know your name yet."
        return _turn(text, [message(reply)])

    if text.lower().startswith("run the tests"):  # a shell tool that says which command it ran
        command = command_projection("npx", ["vitest", "run", "--reporter", "dot"])
        return _turn(text, [tool_call("shell-1", "bash", {"command": "npx vitest run --reporter dot"}, command=command),
                            tool_result("shell-1", {"exit_code": 0, "stdout": "12 passed"}),
                            message("All 12 tests passed.")])

    if "refund" in text.lower():  # a refund needs a person's approval: the turn waits
        session.set(PENDING_REFUND, True)
        return _turn(text, [*lookup, tool_call("refund-1", "refund_order", {"order_id": "1001"}),
                            InputRequested(APPROVAL)], status="waiting")

    if "order" in text.lower():
        if turn_input.output_schema is not None:  # the eval asked for structured output
            data = {"order_id": "1001", "status": "shipped", "total": 42.5}
            return _turn(text, [*lookup, message("Order 1001 is shipped.")], data=data)
        reply = "Order 1001 has shipped with DHL. // tracking follows by mail"
        return _turn(text, [*lookup, message(reply)])

    if "forecast" in text.lower() and turn_input.files:
        names = ", ".join(file.filename or "a file" for file in turn_input.files)
        return _turn(text, [message(f"I read {names}: rain is expected tomorrow.")])

    cities = [city for city in ("Paris", "Oslo") if city in text]
    if cities:
        events, skies = [], []
        for number, city in enumerate(cities, start=1):
            forecast, calls = _weather(city, f"weather-{number}")
            events += calls
            skies.append(f"{forecast['sky']} in {city}, {forecast['celsius']} °C")
        return _turn(text, events + [message("It is " + " and ".join(skies) + ".")])

    if "time" in text.lower():
        return _turn(text, [tool_call("clock-1", "get_time", {}),
                            tool_result("clock-1", {"error": "clock unavailable"}, status="failed"),
                            message("Sorry, I cannot tell the time right now.")])

    return _turn(text, [message("Hello! Ask me about the weather or your order.")])


def scripted_agent():
    # Complete coverage: this agent reports everything it does, so "not called" means not called.
    return define_agent(name="scripted", send=send, evidence_coverage=complete_evidence_coverage)
