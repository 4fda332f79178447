"""A pydantic-ai agent evaluated as it is (docs/agent/agents.md): its tools, its history and its approvals are
pydantic-ai's own. A scripted `FunctionModel` stands in for the provider so this runs offline."""

import sys

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel


def scripted(messages, info):  # the provider: asks for the weather tool, then says what it returned
    returned = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
    if returned:
        return ModelResponse(parts=[TextPart(f"It is {returned[0].content['sky']} in Paris.")])
    return ModelResponse(parts=[ToolCallPart("get_weather", {"city": "Paris"})])


# --8<-- [start:pydantic-ai]
from pydantic_ai import Agent

from assay.agent import Experiment, includes, tool_match
from assay.agent.adapters import pydantic_ai_agent
from assay.agent.api import run_evals

weather = Agent(FunctionModel(scripted), instructions="You answer weather questions.")  # your app's agent


@weather.tool_plain
def get_weather(city: str) -> dict:
    """The forecast for a city."""
    return {"city": city, "sky": "sunny"}


async def paris(t):
    turn = await t.send("What is the weather in Paris?")
    t.succeeded()
    turn.called_tool(tool_match("get_weather", input={"city": "Paris"}, output={"sky": "sunny"}))
    t.check(t.reply, includes("sunny"))


results = run_evals({"paris": paris}, Experiment(agent=pydantic_ai_agent(weather), model="scripted"))
print([attempt.verdict for attempt in results.attempts])  # ['passed']
# --8<-- [end:pydantic-ai]
sys.exit(results.exit_code)
