from assay.agent import define_eval, includes, similarity, tool_match


@define_eval(description="what the handle an assertion returns can do")
async def test(t):
    turn = await t.send("What is the weather in Paris?")
    t.succeeded().key("completed").label("the turn completed")  # a stable key, a label
    t.check(t.reply, includes("°C")).group("reply")  # shown under a heading
    t.check(t.reply, similarity("Sunny, 21 °C in Paris")).at_least(0.3)  # shown, met or not
    t.check(t.reply, similarity("It is sunny in Paris")).gate(0.6)  # now it counts
    turn.called_tool("get_weather").gate()  # booleans are gates already: this is the same
    # optional: if the output were not reported (unavailable), the attempt would not error
    t.called_tool(tool_match("get_weather", output={"sky": "sunny"})).optional()
