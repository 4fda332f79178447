"""A deterministic local "coding agent": it runs the tests, fixes the operator in the failing function, and
runs them again, all inside the attempt's sandbox (a stand-in for a coding CLI such as `codex_agent()`)."""

import re

from assay.agent import (
    Turn,
    Usage,
    complete_evidence_coverage,
    define_sandbox_agent,
    message,
    tool_call,
    tool_result,
)

# `python3` from the sandbox's PATH, never this process's interpreter: the sandbox may be a container.
TESTS = ("python3", "-m", "unittest", "-q")


async def send(turn_input, ctx):
    sandbox = ctx.sandbox
    events = [tool_call("t1", "run_tests", {"command": " ".join(TESTS[1:])})]
    first = await sandbox.run_command(*TESTS)
    events.append(tool_result("t1", {"exit_code": first.exit_code, "tail": first.tail(300)}))
    if first.ok:
        return Turn(events + [message("The tests already pass; nothing to fix.")], usage=Usage(200, 20))
    failing = re.search(r"FAIL: test_(\w+)", first.stderr)
    name = failing.group(1) if failing else None
    source = await sandbox.read_text("calc.py")
    # The failing test names the function; its `return a ? b` line gets the operator the test expects.
    fixed = re.sub(rf"(def {name}\(a, b\):\n    return a) [-*/] (b)", r"\1 + \2", source) if name else source
    if fixed == source:
        return Turn(events + [message(f"I could not find what breaks test_{name}.")], "failed", usage=Usage(300, 30))
    events.append(tool_call("t2", "edit_file", {"path": "calc.py", "function": name}))
    await sandbox.write_text("calc.py", fixed)
    events.append(tool_result("t2", {"written": True}))
    events.append(tool_call("t3", "run_tests", {"command": " ".join(TESTS[1:])}))
    second = await sandbox.run_command(*TESTS)
    events.append(tool_result("t3", {"exit_code": second.exit_code}, "completed" if second.ok else "failed"))
    return Turn(events + [message(f"Fixed `{name}` in calc.py; the tests pass now.")], usage=Usage(900, 120))


def fixer_agent():
    return define_sandbox_agent(name="calculator-fixer", send=send, evidence_coverage=complete_evidence_coverage)
