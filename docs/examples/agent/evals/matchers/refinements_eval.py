from assay.agent import define_eval, is_defined, is_false, is_true


@define_eval(description="is_defined, is_true, is_false")
async def test(t):
    turn = await t.send("What is the weather in Paris?")
    t.check(turn.usage, is_defined("the turn's usage"))  # anything but None
    t.check("sunny" in t.reply, is_true())  # exactly True
    t.check(turn.output_error is not None, is_false())  # exactly False
