from assay.agent import define_eval, tool_match


@define_eval(description="a refund a person denies is rejected, which is not a failure")
async def test(t):
    await t.send("Please refund order 1001")
    await t.respond("deny")
    t.called_tool(tool_match("refund_order", status="rejected"))
    t.no_failed_actions()
