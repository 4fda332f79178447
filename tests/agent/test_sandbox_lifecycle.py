"""A sandbox attempt's lifecycle (spec §5.3): link planning, the end-to-end order, prepare steps, setups in
order and teardowns in reverse (all of them, even after a failing setup), failures as errors or diagnostics."""

from __future__ import annotations

import pytest
from agent_helpers import scripted_agent
from sandbox_helpers import (  # noqa: F401
    no_sandbox_left,
    run_linked,
    run_one_linked,
    sandbox_agent,
    sandbox_dir,
)

from assay.agent import (
    Experiment,
    Turn,
    define_eval,
    define_sandbox,
    local_sandbox,
    message,
    sandbox_layer,
)
from assay.agent.discovery import EvalEntry, ExperimentEntry
from assay.agent.plan import build_plan, link_plan
from assay.agent.sandbox import AgentEnsure, command, install_tool, shell, upload
from assay.agent.sandbox.local import LocalProvider
from assay.agent.sandbox.registry import list_entries
from assay.errors import ConfigError


def _plan(agent, definition, **experiment):
    entry = ExperimentEntry("exp", Experiment(agent=agent, **experiment))
    return link_plan(build_plan([entry], {"exp": [EvalEntry("e", definition)]}))


async def _noop(t):
    pass


def test_exactly_one_side_carries_the_template_or_planning_fails():
    agent = sandbox_agent()
    with pytest.raises(ConfigError, match="neither the eval nor the experiment carries a template"):
        _plan(agent, define_eval(_noop))
    with pytest.raises(ConfigError, match="neither.*template"):
        _plan(agent, define_eval(_noop, sandbox=sandbox_layer().prepare(shell("true"))))
    with pytest.raises(ConfigError, match="both the eval and the experiment carry a sandbox template"):
        _plan(agent, define_eval(_noop, sandbox=local_sandbox()), sandbox=local_sandbox())
    direct, _ = scripted_agent([])
    with pytest.raises(ConfigError, match="direct agent"):
        _plan(direct, define_eval(_noop, sandbox=local_sandbox()))
    linked = _plan(agent, define_eval(_noop, sandbox=sandbox_layer()), sandbox=local_sandbox())
    assert linked[0].sandbox.template_owner == "experiment"
    assert _plan(direct, define_eval(_noop))[0].sandbox is None  # direct pairs are left alone


def test_the_end_to_end_order_of_a_sandbox_attempt(sandbox_dir):
    order: list[str] = []

    def hook(name):
        async def record(sandbox, ctx):
            order.append(name)
        return record

    async def send(turn_input, ctx):
        order.append(f"send:{turn_input.text}")
        await ctx.sandbox.write_text("agent.txt", "mine")
        return Turn([message("ok")])

    async def setup(ctx):
        order.append("agent.setup")
        assert await ctx.sandbox.path_exists("from-prepare.txt")

    async def teardown(ctx):
        order.append("agent.teardown")

    agent = sandbox_agent(
        send, setup=setup, teardown=teardown,
        ensure=AgentEnsure(command("sh", "-c", "echo ensure >> ../ensure.log; true")),
        sandbox=sandbox_layer().setup(hook("agent-layer.setup")).teardown(hook("agent-layer.teardown")),
    )
    template = (local_sandbox().prepare(shell("echo prepared > from-prepare.txt"))
                .setup(hook("eval.setup1")).setup(hook("eval.setup2"))
                .teardown(hook("eval.teardown1")).teardown(hook("eval.teardown2")))
    other = sandbox_layer().prepare(command("touch", "from-experiment.txt")).setup(hook("experiment.setup")).teardown(
        hook("experiment.teardown"))

    async def test(t):
        order.append("test")
        await t.send("one")
        t.sandbox.changed_paths(["agent.txt"])
        order.append("test.end")

    result = run_one_linked(agent, define_eval(test, sandbox=template), sandbox=other,
                            setup=lambda ctx: order.append("experiment.hook.setup"),
                            teardown=lambda ctx: order.append("experiment.hook.teardown"))
    assert result.verdict == "passed", (result.error, result.assertions)
    assert order == [
        "experiment.hook.setup", "eval.setup1", "eval.setup2", "experiment.setup", "agent-layer.setup",
        "agent.setup", "test", "send:one", "test.end", "agent.teardown",
        "agent-layer.teardown", "experiment.teardown", "eval.teardown2", "eval.teardown1", "experiment.hook.teardown",
    ]
    phases = [(entry["phase"], entry["command"]) for entry in result.sandbox["commands"]]
    assert phases[0] == ("sandbox.prepare", "echo prepared > from-prepare.txt")
    assert phases[1] == ("sandbox.prepare", "touch from-experiment.txt")
    assert phases[2][0] == "agent.ensure"
    assert result.sandbox["template"] == "eval" and result.sandbox["agent_ensure"]["installed"] is False
    assert no_sandbox_left(sandbox_dir)


def test_a_failing_setup_skips_the_rest_but_runs_every_teardown_in_reverse(sandbox_dir):
    order: list[str] = []

    def hook(name, fail=False):
        def record(sandbox, ctx):
            order.append(name)
            if fail:
                raise RuntimeError(f"{name} broke")
        return record

    layer = (local_sandbox().setup(hook("setup1")).setup(hook("setup2", fail=True)).setup(hook("setup3"))
             .teardown(hook("teardown1")).teardown(hook("teardown2", fail=True)).teardown(hook("teardown3")))
    sent: list[str] = []

    async def send(turn_input, ctx):
        sent.append(turn_input.text)
        return Turn([message("no")])

    async def test(t):
        await t.send("never")

    result = run_one_linked(sandbox_agent(send), define_eval(test, sandbox=layer))
    assert result.verdict == "errored" and result.error["code"] == "sandbox-setup-failed"
    assert "setup2 broke" in result.error["message"] and sent == []
    assert order == ["setup1", "setup2", "teardown3", "teardown2", "teardown1"]
    assert [d["code"] for d in result.diagnostics] == ["sandbox-teardown-failed"]
    assert "teardown2 broke" in result.diagnostics[0]["message"]
    assert no_sandbox_left(sandbox_dir)


def test_a_failing_teardown_is_a_diagnostic_and_never_changes_the_verdict(sandbox_dir):
    def broken(sandbox, ctx):
        raise OSError("disk on fire")

    async def test(t):
        await t.send("hi")
        t.check(1, __import__("assay.agent", fromlist=["equals"]).equals(1))

    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=local_sandbox().teardown(broken)))
    assert result.verdict == "passed"
    assert result.diagnostics[0]["code"] == "sandbox-teardown-failed"
    assert result.diagnostics[0]["phase"] == "sandbox.teardown"
    assert no_sandbox_left(sandbox_dir)


def test_a_failing_prepare_step_errors_the_attempt_and_skips_teardowns(sandbox_dir):
    torn: list[str] = []
    layer = local_sandbox().prepare(shell("echo missing dependency >&2; exit 7")).teardown(
        lambda sandbox, ctx: torn.append("t"))
    result = run_one_linked(sandbox_agent(), define_eval(_noop, sandbox=layer))
    assert result.verdict == "errored" and result.error["code"] == "sandbox-prepare-failed"
    assert "missing dependency" in result.error["message"] and torn == []
    assert no_sandbox_left(sandbox_dir)


def test_a_provider_that_cannot_create_errors_the_attempt_and_nothing_else_runs():
    ran: list[str] = []

    def create(request):
        raise RuntimeError("quota exceeded")

    layer = define_sandbox(name="cloud", create=create).setup(lambda s, c: ran.append("setup")).teardown(
        lambda s, c: ran.append("teardown"))
    result = run_one_linked(sandbox_agent(), define_eval(_noop, sandbox=layer))
    assert result.verdict == "errored" and result.error["code"] == "sandbox-create-failed"
    assert "quota exceeded" in result.error["message"] and ran == []
    assert result.sandbox == {"provider": "cloud", "created": False, "template": "eval"}


def test_a_custom_provider_from_define_sandbox_gets_the_whole_interface(tmp_path):
    made = []

    async def create(request):
        backend = await LocalProvider(isolation="none", base_dir=tmp_path / "custom").create(request)
        made.append(backend)
        return backend

    async def send(turn_input, ctx):
        await ctx.sandbox.write_text("out.txt", turn_input.text)
        return Turn([message("written")])

    async def test(t):
        await t.send("hello")
        t.sandbox.file_changed("out.txt", status="added", after="hello")

    result = run_one_linked(sandbox_agent(send), define_eval(test, sandbox=define_sandbox(name="mine", create=create)))
    assert result.verdict == "passed", result.assertions
    assert result.sandbox["provider"] == "mine" and made and not made[0].root.exists()


def test_install_tool_probes_installs_and_probes_again():
    tool = install_tool("greeter", probe=command("sh", "-c", "test -x ../home/bin/greet"),
                        install=[shell("mkdir -p ../home/bin && printf '#!/bin/sh\\necho hi\\n' > ../home/bin/greet"
                                       " && chmod +x ../home/bin/greet")])
    never = install_tool("ghost", probe=command("false"), install=[command("true")])

    async def test(t):
        t.check((await t.sandbox.run_command("../home/bin/greet")).stdout, __import__("assay.agent", fromlist=["equals"]).equals("hi\n"))

    assert run_one_linked(sandbox_agent(), define_eval(test, sandbox=local_sandbox().prepare(tool))).verdict == "passed"
    failed = run_one_linked(sandbox_agent(), define_eval(test, sandbox=local_sandbox().prepare(never)))
    assert failed.error["code"] == "sandbox-prepare-failed" and "still missing" in failed.error["message"]


@pytest.mark.parametrize(("make", "said"), [
    (lambda: install_tool("zz", probe=["zz", "--version"]),
     "install_tool('zz') probe takes command(...) or shell(...), like command('zz', '--version'); got ['zz', '--version']"),
    (lambda: install_tool("zz", probe=command("zz"), install=["npm", "i", "zz"]),
     "install_tool('zz') install takes a list of command(...) or shell(...) steps, like [command('npm', 'i', 'zz')]"),
    (lambda: install_tool("zz", probe=command("zz"), install="npm i zz"), "got 'npm i zz'"),
    (lambda: AgentEnsure(["zz", "--version"]), "AgentEnsure probe takes command(...) or shell(...)"),
])
def test_steps_given_as_argv_lists_are_refused_where_they_are_written(make, said):
    """`install_tool(..., probe=[...])` loaded, then stopped the run with "internal error: AttributeError: 'list'
    object has no attribute 'describe'" once the plan described it."""
    with pytest.raises(ConfigError) as refused:
        make()
    assert said in str(refused.value)
    assert install_tool("zz", probe=command("zz"), install=shell("npm i zz")).install == (shell("npm i zz"),)


def test_agent_ensure_installs_a_missing_cli_and_records_it():
    agent = sandbox_agent(ensure=AgentEnsure(
        command("sh", "-c", "test -f ../home/cli-installed"), (shell("touch ../home/cli-installed"),),
        {"agent": "demo-cli", "version": "1.0"},
    ))
    result = run_one_linked(agent, define_eval(_noop, sandbox=local_sandbox()))
    assert result.verdict == "passed"
    assert result.sandbox["agent_ensure"] == {"agent": "demo-cli", "version": "1.0",
                                              "probe": "test -f ../home/cli-installed", "installed": True}
    broken = sandbox_agent(ensure=AgentEnsure(command("false")))
    failed = run_one_linked(broken, define_eval(_noop, sandbox=local_sandbox()))
    assert failed.error["code"] == "agent-ensure-failed"


def test_upload_resolves_relative_to_the_calling_file(tmp_path):
    fixture = upload("data/codex_fix_test.jsonl", "transcript.jsonl")
    assert fixture.source.name == "codex_fix_test.jsonl" and fixture.source.is_file()
    with pytest.raises(ConfigError, match="does not exist"):
        upload("no/such/folder")


def test_t_sandbox_is_a_capability_error_for_a_direct_agent():
    from agent_helpers import run_one

    async def test(t):
        t.sandbox.no_changes()

    direct, _ = scripted_agent([])
    result = run_one(direct, test)
    assert result.verdict == "errored" and "t.sandbox exists only for sandbox agents" in result.error["message"]


def test_a_sandbox_agent_in_an_unlinked_plan_errors_with_a_reason():
    from agent_helpers import run_one

    result = run_one(sandbox_agent(), _noop)
    assert result.error["code"] == "sandbox-not-linked"


def test_an_attempt_timeout_kills_the_agents_commands_and_still_tears_down(sandbox_dir):
    torn: list[str] = []

    async def send(turn_input, ctx):
        await ctx.sandbox.run_shell("sleep 60")
        return Turn([message("late")])

    async def test(t):
        await t.send("go")

    result = run_one_linked(sandbox_agent(send), define_eval(
        test, sandbox=local_sandbox().teardown(lambda s, c: torn.append("t")), timeout=0.5,
    ))
    assert result.verdict == "errored" and result.error["code"] == "timeout"
    assert torn == ["t"] and no_sandbox_left(sandbox_dir)


def test_keep_sandbox_failed_keeps_only_failing_attempts(sandbox_dir):
    from assay.agent import equals

    async def passing(t):
        await t.send("x")

    async def failing(t):
        await t.send("x")
        t.check(1, equals(2))

    layer = local_sandbox()
    outcome = run_linked(sandbox_agent(), {"ok": define_eval(passing, sandbox=layer),
                                           "bad": define_eval(failing, sandbox=layer)}, keep="failed")
    verdicts = {result.eval_id: (result.verdict, result.sandbox["kept"]) for result in outcome.results}
    assert verdicts == {"ok": ("passed", False), "bad": ("failed", True)}
    kept = list_entries(sandbox_dir)
    assert [(entry.state, entry.labels["eval"], entry.verdict) for entry in kept] == [("kept", "bad", "failed")]
    assert kept[0].windows and kept[0].windows[0]["window"] == "turn1"


def test_an_interrupted_run_tears_down_and_leaves_no_process_or_folder(sandbox_dir):
    import asyncio

    from sandbox_helpers import processes_carrying

    from assay.agent.run_options import RunOptions
    from assay.agent.runner import AgentRun

    started: list[str] = []

    async def send(turn_input, ctx):
        started.append(ctx.sandbox.sandbox_id)
        await ctx.sandbox.write_text("partial.txt", "half")
        await ctx.sandbox.run_shell("sleep 60 & sleep 60; wait")
        return Turn([message("never")])

    async def test(t):
        await t.send("go")

    plan = _plan(sandbox_agent(send), define_eval(test, sandbox=local_sandbox()))

    async def body():
        run = AgentRun(plan, RunOptions())
        task = asyncio.ensure_future(run.run())
        while not started:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
        run.interrupt()
        return await task

    outcome = asyncio.run(body())
    result = outcome.results[0]
    assert outcome.interrupted and result.outcome == "interrupted"
    assert processes_carrying(f"ASSAY_SANDBOX={started[0]}") == []
    assert no_sandbox_left(sandbox_dir)
    assert result.sandbox["file_changes"]["windows"][0]["changes"][0]["path"] == "partial.txt"


def test_what_the_agent_did_before_the_deadline_is_still_attributed_to_it(sandbox_dir):
    async def send(turn_input, ctx):
        await ctx.sandbox.write_text("started.txt", "yes")
        await ctx.sandbox.run_command("sleep", "60")
        return Turn([message("late")])

    async def test(t):
        await t.send("go")

    result = run_one_linked(sandbox_agent(send), define_eval(test, sandbox=local_sandbox(), timeout=0.6))
    assert result.error["code"] == "timeout"
    windows = result.sandbox["file_changes"]
    assert windows["complete"] and [c["path"] for c in windows["windows"][0]["changes"]] == ["started.txt"]
    assert no_sandbox_left(sandbox_dir)


def test_ctrl_c_the_moment_the_plan_line_is_out_is_the_runs_own_interruption(sandbox_dir):
    """`assay agent run | head -1` (the reader leaves after the PLAN line: a SIGINT to the run) or a Ctrl-C at that
    line reached asyncio's own handler, which cancelled the run: half the time a sandbox being made was left."""
    import asyncio
    import os
    import signal

    from assay.agent.run_options import RunOptions
    from assay.agent.runner import AgentRun
    from assay.core.run_events import RunEvents

    async def send(turn_input, ctx):
        return Turn([message("ok")])

    async def test(t):
        await t.send("go")

    plan = _plan(sandbox_agent(send), define_eval(test, sandbox=local_sandbox()))

    class PressesCtrlCAtThePlanLine:
        def run_started(self, event):
            os.kill(os.getpid(), signal.SIGINT)

    async def body():
        return await AgentRun(plan, RunOptions(handle_sigint=True), RunEvents([PressesCtrlCAtThePlanLine()])).run()

    try:
        outcome = asyncio.run(body())
    except KeyboardInterrupt:  # (caught: it would end the whole test session)
        pytest.fail("the SIGINT reached asyncio's own handler, which cancelled the run")
    assert outcome.interrupted and [result.outcome for result in outcome.results] == ["interrupted"]
    assert no_sandbox_left(sandbox_dir)


def test_a_cancelled_run_destroys_the_sandbox_an_attempt_was_making(sandbox_dir):
    """A run cancelled from outside (its task, as asyncio.run's own SIGINT handler does) stops each attempt where it
    is; a sandbox created before the cancellation reached it was left for `assay agent sandbox prune`."""
    import asyncio

    from assay.agent.run_options import RunOptions
    from assay.agent.runner import AgentRun

    entered: list[str] = []

    async def send(turn_input, ctx):
        entered.append(ctx.sandbox.sandbox_id)
        await asyncio.sleep(60)
        return Turn([message("never")])

    async def test(t):
        await t.send("go")

    plan = _plan(sandbox_agent(send), define_eval(test, sandbox=local_sandbox()))

    async def body():
        task = asyncio.ensure_future(AgentRun(plan, RunOptions()).run())
        while not entered:
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(body())
    assert no_sandbox_left(sandbox_dir)
