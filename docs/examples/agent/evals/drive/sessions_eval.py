from assay.agent import define_eval, includes


@define_eval(description="each session remembers only its own conversation", tags=["drive"])
async def test(t):
    await t.send("Hi, my name is Ada")
    await t.send("What is my name?")
    t.check(t.reply, includes("Ada"))

    other = t.new_session()  # a fresh conversation with the same agent
    await other.send("What is my name?")
    t.check(other.reply, includes("don't know"))
    other.used_no_tools()  # session scope: only that conversation
