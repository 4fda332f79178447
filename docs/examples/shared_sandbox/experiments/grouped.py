"""The eval group: one sandbox for its members (made once, prepared once)."""

from agents.note_taker import note_taker

from assay.agent import Experiment, local_sandbox
from assay.agent.sandbox import shell

grouped = Experiment(
    agent=note_taker(), evals=["flow/"],
    sandbox=local_sandbox().prepare(shell("echo prepared > README.md")),
)
