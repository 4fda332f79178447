from assay.agent import define_eval


@define_eval(description="a short answer stays within its token and cost budget")
async def test(t):
    await t.send("What is the weather in Paris?")
    t.max_tokens(200)  # input + output tokens the agent reported
    t.max_cost(0.01)  # USD, estimated from [tool.assay.pricing] for the experiment's model
