from agents.shop import shop

from assay.agent import Experiment

main = Experiment(agent=shop, description="the shop assistant")
