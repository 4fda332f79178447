from assay.agent import define_eval, equals


@define_eval(description="equals: deep equality")
async def test(t):
    turn = await t.send("What is the weather in Paris?")
    t.check(turn.status, equals("completed"))
    # key order does not matter
    t.check(turn.tool_calls[0].output, equals({"celsius": 21, "sky": "sunny"}))
