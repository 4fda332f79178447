from assay.agent import define_eval, tool_match


@define_eval(description="a weather question touches no order")
async def test(t):
    await t.send("What is the weather in Oslo?")
    t.not_called_tool("refund_order")
    t.not_called_tool(tool_match("get_weather", input={"city": "Paris"}))
