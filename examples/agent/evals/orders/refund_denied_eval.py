from assay.agent import define_eval, includes, tool_match


@define_eval(description="a denied refund is rejected, not failed", tags=["orders", "hitl"])
async def test(t):
    await t.send("Refund order 1002 please")
    await t.respond("deny")
    t.succeeded()
    t.called_tool(tool_match("refund_order", status="rejected"))
    t.no_failed_actions()
    t.check(t.reply, includes("did not refund"))
