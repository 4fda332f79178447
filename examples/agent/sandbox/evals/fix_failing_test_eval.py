"""A SWE-style eval: a small repository with a failing test, fixed by the agent inside a sandbox; graded on
what it changed (the diff) and on the hidden check that the tests pass afterwards."""

from assay.agent import command_succeeded, define_eval, equals, includes, local_sandbox
from assay.agent.sandbox import shell, upload

TESTS = ("python3", "-m", "unittest", "-q")  # the sandbox's python3: the same eval runs in a container

repository = local_sandbox().prepare(
    upload("../fixtures/calculator"),
    # A real repository: the agent's own git is its business, assay's change ledger lives elsewhere.
    shell("git init -q && git add -A && git -c user.name=demo -c user.email=demo@example.com commit -qm 'a calculator'"),
)


@define_eval(description="fix the failing test without touching the tests", tags=["sandbox"], sandbox=repository)
async def fix_failing_test(t):
    before = await t.sandbox.run_command(*TESTS)
    t.check(before.exit_code, equals(1)).label("the test fails before the agent works")

    turn = await t.send("The unit tests fail. Fix the code, not the tests.")
    turn.called_tool("run_tests")
    t.sandbox.changed_paths(["calc.py"])
    t.sandbox.file_changed("calc.py", status="modified", before=includes("return a - b"), after=includes("return a + b"))
    t.sandbox.not_in_diff(r"unittest|assert", content="both")

    t.check(await t.sandbox.run_command(*TESTS), command_succeeded()).label("the tests pass afterwards")
