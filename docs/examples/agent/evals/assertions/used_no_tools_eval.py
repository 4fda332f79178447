from assay.agent import define_eval


@define_eval(description="a greeting needs no tool")
async def test(t):
    turn = await t.send("Hello")
    turn.used_no_tools()
