from assay.agent import at_least, define_eval, tool_match


@define_eval(description="the weather tool is called, once per city")
async def test(t):
    await t.send("What is the weather in Paris?")
    t.called_tool("get_weather")  # at least once
    t.called_tool(tool_match("get_weather", input={"city": "Paris"}), count=1)  # exactly once

    await t.send("Compare Paris and Oslo")
    t.called_tool("get_weather", count=at_least(3))  # over every turn so far: 1 + 2 calls
