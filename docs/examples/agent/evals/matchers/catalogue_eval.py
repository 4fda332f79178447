from assay.agent import (
    define_eval, define_score_match, define_value_match, has_sections, includes_url, references_any_path,
)

NOTES = """# Weather in Paris

Sunny, 21 °C: https://weather.example/paris

## Sources

https://forecasts.example/europe
"""

short = define_value_match("short", lambda text: len(text) < 80)
brevity = define_score_match("brevity", lambda text: max(0.0, 1 - len(text) / 200))


@define_eval(description="the catalogue matchers: URLs, Markdown sections, paths, and matchers of your own")
async def test(t):
    turn = await t.send("What is the weather in Paris?")
    t.check(NOTES, includes_url(min=2))
    t.check(NOTES, has_sections(min=2))
    t.check({"command": "pytest tests/unit/test_weather.py -q"}, references_any_path(["tests/**/*.py"]))
    t.check(t.reply, short)
    t.check(t.reply, brevity).gate(0.5)
    turn.called_tool("get_weather")
