from assay.agent import define_eval, equals, includes


@define_eval(description="remembers a name within a session, not across sessions", tags=["memory"])
async def test(t):
    await t.send("Hi, my name is Ada")
    await t.send("What is my name?")
    t.check(t.reply, includes("Ada"))
    t.check(t.session_id, equals("shop-session-ada"))
    other = t.new_session()
    await other.send("What is my name?")
    t.check(other.reply, includes("don't know"))
    t.used_no_tools()
