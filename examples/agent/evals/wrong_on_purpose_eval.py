from assay.agent import define_eval, includes


@define_eval(description="FAILS ON PURPOSE: expects a cancel tool this agent does not have", tags=["orders"])
async def test(t):
    await t.send("Where is my order 1002?")
    t.succeeded()
    t.called_tool("cancel_order")
    t.check(t.reply, includes("cancelled"))
