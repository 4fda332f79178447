from assay.agent import define_eval, excludes, includes, pattern


@define_eval(description="includes, excludes, pattern: text checks")
async def test(t):
    await t.send("Where is my order?")
    t.check(t.reply, includes("DHL"))
    t.check(t.reply, excludes("refund"))
    t.check(t.reply, pattern(r"[Oo]rder \d{4}"))
    # the reply ends in a // comment, dropped before the check
    t.check(t.reply, excludes("tracking", strip_comments=True))
