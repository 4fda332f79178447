"""Run a project's agent evals from Python and look at the results (docs/agent/python.md)."""

import sys

from assay.agent.api import run

project = sys.argv[1] if len(sys.argv) > 1 else "."

# --8<-- [start:run]
results = run(project, tags=["orders"], journal=False)  # as `assay agent run --tag orders`, nothing to resume
if results.error:  # the run could not start: no such folder, a misspelt experiment, a broken config
    print(f"error: {results.error}")
print(f"exit code {results.exit_code}: {len(results.attempts)} attempts")
for attempt in results.attempts:
    print(f"  {attempt.eval_id} [{attempt.experiment_id}] #{attempt.ordinal + 1}: {attempt.verdict}")
for attempt in results.failures():
    print("failed:", attempt.eval_id, attempt.failing)
# --8<-- [end:run]
sys.exit(results.exit_code)
