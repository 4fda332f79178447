from assay.agent import Experiment, Turn, complete_evidence_coverage, define_sandbox_agent, message, tool_call, tool_result


async def send(input, ctx):
    tests = await ctx.sandbox.run_command("python3", "-m", "unittest", "-q")  # the sandbox's own python3
    source = await ctx.sandbox.read_text("calc.py")
    await ctx.sandbox.write_text("calc.py", source.replace("return a - b", "return a + b"))
    return Turn([tool_call("t1", "run_tests"), tool_result("t1", {"exit_code": tests.exit_code}),
                 message("Fixed add().")])


fixer = Experiment(agent=define_sandbox_agent(name="fixer", send=send, evidence_coverage=complete_evidence_coverage))
