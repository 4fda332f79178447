from assay.agent import define_eval


# judge=True: the settings come from the experiment and [tool.assay.judge]
@define_eval(description="a model grades the reply", tags=["judge"], judge=True)
async def test(t):
    turn = await t.send("What is the weather in Paris?")
    t.judge("Names the city and gives a temperature.", threshold=0.7)  # over t.reply; a gate
    t.judge("Sounds friendly.", value=turn.message)  # over any value
    turn.judge.closed_qa("Does the answer say whether to take an umbrella?")  # recipes are soft
    turn.judge.factuality("Paris is sunny at 21 °C today.").gate(0.5)  # unless gated
