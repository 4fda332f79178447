"""Independent evals sharing sandboxes: one lane (concurrency=1), each sandbox serving tasks for up to 10 minutes."""

from agents.note_taker import note_taker

from assay.agent import Experiment, local_sandbox
from assay.agent.sandbox import shell

reused = Experiment(
    agent=note_taker(), evals=["tasks/"], concurrency=1, sandbox_reuse=True, lifetime=600,
    sandbox=local_sandbox().prepare(shell("echo prepared > README.md")),
)
