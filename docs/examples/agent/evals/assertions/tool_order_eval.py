from assay.agent import define_eval


@define_eval(description="the order is looked up before it is refunded")
async def test(t):
    await t.send("Please refund order 1001")
    await t.respond("approve")
    t.tool_order(["lookup_order", "refund_order"])  # in this order; other calls may come between
