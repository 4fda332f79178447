from assay.agent import define_eval, equals


@define_eval(description="send a turn and read what came back", tags=["drive"], timeout=20)
async def test(t):
    turn = await t.send("What is the weather in Paris?")
    t.check(turn.status, equals("completed"))  # completed, failed or waiting
    t.check([call.name for call in turn.tool_calls], equals(["get_weather"]))
    t.check(turn.message, equals("It is sunny in Paris, 21 °C."))  # its last assistant message
    t.check(turn.usage.input_tokens, equals(26))
    t.check(t.model, equals("scripted-1"))  # from the experiment
    t.check(t.flags, equals({"units": "celsius"}))
