import re

from assay.agent import define_eval, is_defined, json_match


@define_eval(description="json_match: partial objects, arrays item by item, rules at any level")
async def test(t):
    turn = await t.send("Compare Paris and Oslo")
    outputs = [call.output for call in turn.tool_calls]
    t.check(outputs, json_match([
        {"sky": "sunny"},  # extra keys (celsius) are fine
        {"sky": re.compile("snow"), "celsius": lambda degrees: degrees < 0},  # a regex, a predicate
    ]))
    t.check(outputs[0], json_match({"celsius": is_defined()}))  # or a matcher
