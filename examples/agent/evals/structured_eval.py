from pydantic import BaseModel

from assay.agent import define_eval, equals


class OrderSummary(BaseModel):
    order_id: str
    status: str
    total: float


@define_eval(description="structured output is validated and typed", tags=["orders"])
async def test(t):
    turn = await t.send("Summarize order 1002", output=OrderSummary)
    t.succeeded()
    summary = await t.check(turn.data, equals(OrderSummary(order_id="1002", status="processing", total=18.0))).or_stop()
    t.check(summary.total < 20, equals(True))
