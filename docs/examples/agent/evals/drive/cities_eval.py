from assay.agent import define_eval, includes


def city(name, sky):
    async def test(t):
        await t.send(f"What is the weather in {name}?")
        t.check(t.reply, includes(sky))

    return define_eval(test, description=f"the weather in {name}", tags=["drive"])


# ids: drive/cities/oslo and drive/cities/paris
EVALS = {"paris": city("Paris", "sunny"), "oslo": city("Oslo", "snowing")}
