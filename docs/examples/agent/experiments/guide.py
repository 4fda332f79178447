"""The experiment the guide's examples run against, with every field of an Experiment in use."""

from agents.scripted import scripted_agent

from assay.agent import Experiment


async def setup(ctx):  # once, before this experiment's first attempt (ctx: HookContext)
    ctx.progress("warming up the scripted agent")


async def teardown(ctx):  # once, after its last attempt, also when setup raised
    ctx.progress(f"{ctx.experiment_id} finished")


guide = Experiment(
    agent=scripted_agent(),
    model="scripted-1",                   # ctx.model; priced in pyproject.toml
    reasoning_effort="low",               # ctx.reasoning_effort
    flags={"units": "celsius"},           # ctx.flags and t.flags: A/B switches for your app
    attempts=1,                           # runs per eval
    timeout=30,                           # seconds per attempt
    concurrency=4,                        # this experiment's own cap, under the project's
    budget=1.00,                          # USD of estimated cost; dispatch stops when it is spent
    evals=lambda e: "judge" not in e.tags,  # "*", a list of id prefixes, or a predicate
    description="the guide's offline agent",
    labels=["docs", "offline"],
    setup=setup,
    teardown=teardown,
    judge=None,                           # judge settings (see experiments/judged.py)
)
