"""The one configuration this demo runs: the local shop assistant on its (pretend) demo model."""

from agents.shop import shop_agent

from assay.agent import Experiment

baseline = Experiment(
    agent=shop_agent(),
    model="demo-model",
    description="local deterministic shop assistant",
    flags={"tone": "friendly"},
)
