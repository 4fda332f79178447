from assay.agent import define_eval, event_match, tool_match


@define_eval(description="event_match: select messages and operations")
async def test(t):
    await t.send("What is the weather in Paris?")
    t.event(event_match("message", role="user", text="Paris"))
    weather_in_paris = tool_match("get_weather", input={"city": "Paris"})
    t.event(event_match("operation.started", tool=weather_in_paris))
    t.event(event_match("operation.finished", tool=tool_match(output={"celsius": 21})))
