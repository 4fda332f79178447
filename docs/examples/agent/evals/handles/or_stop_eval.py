from assay.agent import define_eval, is_defined


@define_eval(description="or_stop: stop the test unless the assertion held")
async def test(t):
    turn = await t.send("What is the weather in Paris?")
    # returns the checked value, or ends the test here
    output = await t.check(turn.tool_calls[0].output, is_defined()).or_stop()
    await t.send(f"And tomorrow, if it is {output['sky']} today?")
    t.succeeded()
