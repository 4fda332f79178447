"""A dict fans out into one eval per key: greetings/english, greetings/casual."""

from assay.agent import define_eval, includes


def greeting(text):
    async def test(t):
        await t.send(text)
        t.succeeded()
        t.used_no_tools()
        t.check(t.reply, includes("Hello"))

    return define_eval(test, description=f"answers {text!r} with a greeting", tags=["smalltalk"])


EVALS = {"english": greeting("Good morning"), "casual": greeting("hey there")}
