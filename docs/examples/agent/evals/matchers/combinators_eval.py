from assay.agent import and_, define_eval, excludes, includes, not_, or_


@define_eval(description="and_, or_, not_: combine matchers")
async def test(t):
    await t.send("What is the weather in Oslo?")
    t.check(t.reply, and_(includes("Oslo"), excludes("Paris")))
    t.check(t.reply, or_(includes("snowing"), includes("raining")))
    t.check(t.reply, not_(includes("sunny")))
