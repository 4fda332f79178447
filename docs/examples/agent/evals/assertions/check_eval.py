from assay.agent import define_eval, equals, includes


@define_eval(description="t.check applies a matcher to any value")
async def test(t):
    turn = await t.send("What is the weather in Paris?")
    t.check(t.reply, includes("sunny"))  # t.reply: the last assistant message
    t.check(turn.status, equals("completed"))
    t.check(turn.tool_calls[0].output, equals({"sky": "sunny", "celsius": 21}))
