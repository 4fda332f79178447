"""An agent that is a local process speaking the shared NDJSON protocol (method `send`), e.g. a node script.

One process per attempt (started in the agent's setup, closed in its teardown), so a TypeScript or
JavaScript agent plugs in without a server; each request carries the turn input and context, each
result is a turn in NiceEval's JSON shape.
"""

from __future__ import annotations

import uuid
from typing import Any

from assay.adapters.ndjson import NdjsonProcess, ProcessTimeouts, start_ndjson_process
from assay.agent.adapter import DefinedAgent, SendFailure, define_agent, turn_from_reply
from assay.agent.context import AgentContext
from assay.agent.model import EvidenceCoverage, Turn, TurnInput
from assay.agent.session import create_session_slot
from assay.errors import AdapterRuntimeError

_LINE = create_session_slot("process-agent-line")


def send_params(turn_input: TurnInput, ctx: AgentContext) -> dict[str, Any]:
    """The `send` request's params: `{input, context}` with NiceEval's camelCase field names."""
    line = ctx.session.get(_LINE)
    if line is None:
        line = uuid.uuid4().hex[:12]
        ctx.session.set(_LINE, line)
    turn: dict[str, Any] = {"text": turn_input.text}
    if turn_input.files:
        turn["files"] = [file.to_json() for file in turn_input.files]
    if turn_input.responses:
        turn["responses"] = [response.to_json() for response in turn_input.responses]
    if turn_input.output_schema is not None:
        turn["outputSchema"] = turn_input.output_schema
    context = {
        "model": ctx.model, "reasoningEffort": ctx.reasoning_effort, "flags": dict(ctx.flags),
        "experimentId": ctx.experiment_id, "evalId": ctx.eval_id, "attempt": ctx.attempt,
        "session": {"line": line, "id": ctx.session.id},
    }
    return {"input": turn, "context": context}


def process_agent(
    command: str,
    *,
    evidence_coverage: EvidenceCoverage,
    name: str | None = None,
    close_timeout: float = 5.0,
) -> DefinedAgent:
    """`command` is run without a shell (e.g. `node agents/agent.mjs`); `evidence_coverage` is required."""
    processes: dict[tuple[Any, ...], NdjsonProcess] = {}
    agent_name = name or command.split()[-1].rsplit("/", 1)[-1]

    def key(ctx: AgentContext) -> tuple[Any, ...]:
        return (ctx.experiment_id, ctx.eval_id, ctx.attempt)

    async def setup(ctx: AgentContext) -> None:
        processes[key(ctx)] = await start_ndjson_process(
            command, stderr_sink=lambda chunk: None, timeouts=ProcessTimeouts(close_s=close_timeout)
        )

    async def teardown(ctx: AgentContext) -> None:
        process = processes.pop(key(ctx), None)
        if process is not None:
            await process.close()

    async def send(turn_input: TurnInput, ctx: AgentContext) -> Turn:
        process = processes.get(key(ctx))
        if process is None:
            raise SendFailure(f"agent {agent_name!r}: its process is not running", acceptance="rejected")
        try:
            result = await process.request("send", send_params(turn_input, ctx))
        except AdapterRuntimeError as error:
            raise SendFailure(str(error), acceptance="unknown") from None
        return turn_from_reply(
            result, ctx, wrong_shape=f"agent {agent_name!r} answered send with {{}}, not a turn object",
            invalid_turn=f"agent {agent_name!r} returned an invalid turn",
        )

    return define_agent(name=agent_name, send=send, evidence_coverage=evidence_coverage, setup=setup, teardown=teardown)


__all__ = ["process_agent", "send_params"]
