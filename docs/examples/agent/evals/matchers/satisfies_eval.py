import asyncio

from assay.agent import define_eval, satisfies


async def mentions_a_temperature(text):
    await asyncio.sleep(0)  # a predicate may be async, e.g. to call a checker service
    return "°C" in text


@define_eval(description="satisfies: your own predicate, sync or async")
async def test(t):
    await t.send("What is the weather in Paris?")
    t.check(t.reply, satisfies("is short", lambda text: len(text) < 80))
    t.check(t.reply, satisfies("mentions a temperature", mentions_a_temperature))
