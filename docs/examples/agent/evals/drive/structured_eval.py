from pydantic import BaseModel

from assay.agent import define_eval, equals


class OrderStatus(BaseModel):
    order_id: str
    status: str
    total: float


@define_eval(description="ask for structured output and check the typed value", tags=["drive"])
async def test(t):
    turn = await t.send("What is the status of my order?", output=OrderStatus)
    await t.check(turn.output_error, equals(None)).or_stop()  # the data matched the schema (else stop: no data)
    t.check(turn.data.status, equals("shipped"))  # turn.data is an OrderStatus
