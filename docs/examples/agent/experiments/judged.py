"""The judge examples, against any OpenAI-compatible server.

Set ASSAY_JUDGE_BASE_URL or OPENAI_BASE_URL (and a key, if the server needs one).
"""

from agents.scripted import scripted_agent

from assay.agent import Experiment

judged = Experiment(
    agent=scripted_agent(),
    model="scripted-1",
    evals=["judges/"],                    # only evals whose id starts with judges/
    # merged over [tool.assay.judge]; an eval's own judge= is merged over this
    judge={"model": "judge-model", "timeout": 60},
    description="model-graded examples",
)
