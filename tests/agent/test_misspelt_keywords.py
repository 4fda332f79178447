"""A misspelt keyword of assay's own calls inside an eval (`t.send(ouptut=…)`, `turn.called_tool(cuont=…)`,
`tool_match(stauts=…)`) or inside an agent's `send` (`Turn(usag=…)`), and a misspelt method of its objects
(`handle.or_stp()`), name the word meant, as a misspelt keyword of a file's top level already does."""

import pytest

from agent_helpers import run_one, scripted_agent
from assay.agent import Turn, equals, message, tool_call, tool_match, tool_result


def _turn():
    return Turn([tool_call("c1", "get_weather", {"city": "Paris"}), tool_result("c1", {"sky": "sunny"}),
                 message("sunny")])


async def _send_with_misspelt_output(t):
    await t.send("hi", ouptut={"type": "object"})


async def _called_tool_with_misspelt_count(t):
    turn = await t.send("hi")
    turn.called_tool("get_weather", cuont=1)


async def _tool_match_with_misspelt_status(t):
    await t.send("hi")
    t.called_tool(tool_match("get_weather", stauts="completed"))


async def _misspelt_or_stop(t):
    await t.send("hi")
    await t.check(t.reply, equals("sunny")).or_stp()


@pytest.mark.parametrize(("test", "hint"), [
    (_send_with_misspelt_output, "got an unexpected keyword argument 'ouptut'; did you mean 'output'?"),
    (_called_tool_with_misspelt_count, "got an unexpected keyword argument 'cuont'; did you mean 'count'?"),
    (_tool_match_with_misspelt_status, "got an unexpected keyword argument 'stauts'; did you mean 'status'?"),
    (_misspelt_or_stop, "has no attribute 'or_stp'; did you mean 'or_stop'?"),
])
def test_a_misspelt_keyword_or_method_in_an_eval_names_the_one_meant(test, hint):
    agent, _ = scripted_agent([_turn()])
    result = run_one(agent, test)
    assert result.verdict == "errored" and result.error["code"] == "eval-exception"
    assert hint in result.error["message"]


def test_a_required_argument_given_by_position_is_not_offered_for_a_misspelt_option():
    agent, _ = scripted_agent([_turn()])

    async def test(t):
        await t.send("hi")
        t.check(t.reply, equals("sunny"), lable="x")  # `.label(...)` was meant, not `value=`

    result = run_one(agent, test)
    assert "unexpected keyword argument 'lable'" in result.error["message"]
    assert "did you mean" not in result.error["message"]


def test_a_misspelt_keyword_in_the_agents_send_names_the_one_meant():
    async def send(turn_input, ctx):
        return Turn([message("sunny")], usag=None)

    agent, _ = scripted_agent(send)
    result = run_one(agent, lambda t: t.send("hi"))
    assert result.verdict == "errored" and result.error["code"] == "agent-send-failed"
    assert "unexpected keyword argument 'usag'; did you mean 'usage'?" in result.error["message"]
