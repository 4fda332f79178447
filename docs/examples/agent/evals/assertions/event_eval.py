from assay.agent import define_eval, event_match, pattern, tool_match


@define_eval(description="events: what was said and which operations ran, in order")
async def test(t):
    await t.send("What is the weather in Paris?")
    t.event(event_match("message", role="assistant", text="sunny"))  # text: a string means includes
    t.event(event_match("operation.started", tool="get_weather"), count=1)
    t.not_event(event_match("operation.finished", tool=tool_match(status="failed")))
    t.event_order([
        event_match("operation.finished", tool="get_weather"),
        event_match("message", text=pattern(r"\d+ °C")),
    ])
