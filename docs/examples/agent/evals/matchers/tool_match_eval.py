from assay.agent import define_eval, includes, tool_match


@define_eval(description="tool_match: name, input, output and status of one call")
async def test(t):
    await t.send("What is the weather in Paris?")
    t.called_tool(tool_match(
        "get_weather", input={"city": "Paris"}, output={"sky": "sunny"}, status="completed",
    ))
    t.called_tool(tool_match(input={"city": includes("Par")}))  # any tool; a matcher as input
    await t.send("What time is it?")
    t.called_tool(tool_match("get_time", status="failed"))
