from assay.agent import define_eval


@define_eval(description="two cities, at most two calls")
async def test(t):
    await t.send("Compare Paris and Oslo")
    t.max_tool_calls(2)
