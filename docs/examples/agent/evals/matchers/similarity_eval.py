from assay.agent import define_eval, similarity


@define_eval(description="similarity: a measurement in [0, 1], gated here at 0.8")
async def test(t):
    await t.send("What is the weather in Paris?")
    t.check(t.reply, similarity("It is sunny in Paris, 22 °C.")).gate(0.8)
