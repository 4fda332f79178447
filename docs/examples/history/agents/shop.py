"""A stand-in shop assistant for docs/results.md: most answers are steady, two questions get a right
answer only some of the time (as a model at temperature > 0 would), and `SHOP_BREAK` breaks one topic.

Which runs are unlucky is fixed by `SHOP_RUN` (the run's number), so the page's output is reproducible.
"""

import os
import random

from assay.agent import Turn, complete_evidence_coverage, define_agent, message

ANSWERS = {
    "hours": "We open at 9 and close at 18.",
    "returns": "Returns are free within 30 days.",
    "shipping": "Orders ship within two days.",
    "payment": "We take cards and bank transfers.",
    "warranty": "Every product has a two-year warranty.",
    "size": "Our sizes run true to fit.",
    "stock": "That item is in stock.",
    "gift": "Gift wrapping costs 3 euros.",
    "contact": "Write to help@example.com.",
    "delivery": "Delivery is free over 50 euros.",
}
MOODY = {"discount": "There is a 10% discount this week.", "loyalty": "Members earn one point per euro."}


async def send(turn_input, ctx):
    topic = turn_input.text.split()[-1].rstrip("?")
    if topic == os.environ.get("SHOP_BREAK"):
        return Turn([message("Sorry, I cannot help with that.")])
    if topic in MOODY:
        lucky = random.Random(f"{os.environ.get('SHOP_RUN', '0')}/{topic}").random() < 0.6
        return Turn([message(MOODY[topic] if lucky else "I am not sure.")])
    return Turn([message(ANSWERS.get(topic, "I do not know."))])


shop = define_agent(name="shop", send=send, evidence_coverage=complete_evidence_coverage)
