from assay.agent import define_eval, includes, tool_match


@define_eval(description="looks up a shipped order and says who carries it", tags=["orders"])
async def test(t):
    turn = await t.send("Where is my order 1001?")
    t.succeeded()
    turn.called_tool(tool_match("lookup_order", input={"order_id": "1001"}, status="completed"), count=1)
    t.no_failed_actions()
    t.check(t.reply, includes("DHL"))
    t.max_tokens(500)
    t.max_cost(0.01)
