"""One eval per question: the reply must contain the fact the shop's policy states."""

from assay.agent import define_eval, includes

FACTS = {
    "hours": "close at 18", "returns": "30 days", "shipping": "two days", "payment": "cards", "warranty": "two-year",
    "size": "true to fit", "stock": "in stock", "gift": "3 euros", "contact": "help@", "delivery": "over 50",
    "discount": "10%", "loyalty": "one point",
}


def question(topic, fact):
    async def test(t):
        await t.send(f"Tell me about {topic}?")
        t.check(t.reply, includes(fact))

    return define_eval(test, description=f"answers about {topic}")


evals = {topic: question(topic, fact) for topic, fact in FACTS.items()}
