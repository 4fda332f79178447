from assay.agent import define_score_eval, includes, similarity


@define_score_eval(description="points for a good weather answer instead of pass or fail")
async def test(t):
    await t.send("What is the weather in Paris?")
    t.called_tool("get_weather").score(2)  # a boolean earns its points or 0
    t.check(t.reply, includes("°C")).score(1)
    # a measurement m earns m × 3 points
    t.check(t.reply, similarity("It is sunny in Paris, 21 °C.")).score(3)
    t.score(0.5)  # a direct contribution
