from assay.agent import define_eval, equals, includes, tool_match


@define_eval(description="a refund waits for a person's approval", tags=["drive", "hitl"])
async def test(t):
    turn = await t.send("Please refund order 1001")
    t.check(turn.status, equals("waiting"))
    request = t.require_input_request(action="refund_order", option_ids=["approve", "deny"])
    t.check(request.input, equals({"order_id": "1001"}))
    await t.respond("approve")  # an option id; any other text is sent as a free-text answer
    t.succeeded()
    t.called_tool(tool_match("refund_order", status="completed", output={"refunded": 42.5}))
    t.check(t.reply, includes("issued"))
