from assay.agent import command_succeeded, define_eval, includes, local_sandbox
from assay.agent.sandbox import shell, upload

repository = local_sandbox().prepare(
    upload("../fixtures/calculator"),  # relative to this file: the project's fixtures/, outside evals/
    shell("git init -q && git add -A && git -c user.name=demo -c user.email=demo@example.com commit -qm start"),
)


@define_eval(sandbox=repository, tags=["sandbox"])
async def fix_failing_test(t):
    await t.send("The unit tests fail. Fix the code, not the tests.")
    t.sandbox.changed_paths(["calc.py"])
    t.sandbox.file_changed("calc.py", status="modified", before=includes("a - b"), after=includes("a + b"))
    t.sandbox.not_in_diff(r"unittest|assert")
    # python3 from the sandbox's PATH: the same eval runs in a local folder and in a container.
    t.check(await t.sandbox.run_command("python3", "-m", "unittest", "-q"), command_succeeded())
