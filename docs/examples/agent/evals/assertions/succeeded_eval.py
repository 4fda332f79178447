from assay.agent import define_eval


@define_eval(description="a greeting completes")
async def test(t):
    await t.send("Hello")
    t.succeeded()  # every turn completed, no input request left unanswered
