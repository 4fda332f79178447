from assay.agent import define_eval, includes


@define_eval(description="send a file with the turn", tags=["drive"])
async def test(t):
    await t.send_file("forecast.txt", "Read this forecast")  # relative to this eval file
    t.check(t.reply, includes("forecast.txt"))
