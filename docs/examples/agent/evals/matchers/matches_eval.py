from pydantic import BaseModel

from assay.agent import define_eval, matches


class Forecast(BaseModel):
    sky: str
    celsius: int


@define_eval(description="matches: a value fits a schema")
async def test(t):
    turn = await t.send("What is the weather in Paris?")
    t.check(turn.tool_calls[0].output, matches(Forecast))  # a pydantic model
    t.check(turn.tool_calls[0].input, matches({  # or a JSON Schema
        "type": "object", "required": ["city"], "properties": {"city": {"type": "string"}},
    }))
