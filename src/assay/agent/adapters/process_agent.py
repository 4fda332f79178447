"""An agent that is a local process speaking the shared NDJSON protocol (method `send`), e.g. a node script.

One process per attempt (started in the agent's setup, closed in its teardown, with the run's OTEL_*
variables when telemetry is on), so a TypeScript or JavaScript agent plugs in without a server; each
request carries the turn input and context (with the turn's traceparent), each result is a turn in
NiceEval's JSON shape.
"""

from __future__ import annotations

import shlex
import uuid
from typing import Any

from assay.adapters.ndjson import (
    NO_TIMEOUT,
    NdjsonProcess,
    ProcessTimeouts,
    RequestTimedOut,
    RequestTimeout,
    start_ndjson_process,
)
from assay.agent.adapter import DefinedAgent, SendFailure, define_agent, turn_from_reply
from assay.agent.context import AgentContext
from assay.agent.model import EvidenceCoverage, Turn, TurnInput
from assay.agent.session import create_session_slot
from assay.errors import AdapterRuntimeError

_LINE = create_session_slot("process-agent-line")
# An agent that answered close has nothing left to do; one still running a second after its
# input ended holds an open handle (a timer, a keep-alive pool) and is stopped.
EXIT_AFTER_CLOSE_S = 1.0


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
    telemetry = ctx.telemetry
    if telemetry is not None:
        # The turn's traceparent travels with the request: the process was started before this turn.
        context["telemetry"] = {"endpoint": telemetry.endpoint, "headers": dict(telemetry.headers)}
    return {"input": turn, "context": context}


def process_agent(
    command: str,
    *,
    evidence_coverage: EvidenceCoverage,
    name: str | None = None,
    timeout: float | None = None,
    close_timeout: float = 2.0,
    kill_grace: float = 1.0,
) -> DefinedAgent:
    """`command` is run without a shell (e.g. `node agents/agent.mjs`), in the project folder when an experiment
    file of a project makes it (else the current folder); `evidence_coverage` is required.

    `timeout` (seconds; default none, the attempt's deadline governs) limits each `send`. At the
    end of an attempt the agent is sent `close` and its stdin is closed; it gets `close_timeout`
    to answer and 1 s more to exit, then SIGTERM, then SIGKILL after `kill_grace`. So an agent
    that lingers and ignores SIGTERM costs about 2 s (3 s if it never answers close) instead of
    holding the attempt, and the teardown failure is reported as a diagnostic. After a timeout
    or an interrupt it is stopped at once."""
    from assay.agent.adapters.endpoint import check_options
    from assay.agent.discovery import loading_project

    example = "'node agents/agent.mjs'"
    if isinstance(command, (list, tuple)) and command and all(isinstance(part, str) for part in command):
        example = repr(shlex.join(command))  # a subprocess-style list: the one command line it means
    check_options("process_agent", {
        "command": (command, "text", example), "name": (name, "text?", "'my-agent'"),
        "timeout": (timeout, "seconds?", "60"), "close_timeout": (close_timeout, "seconds>=0", "2"),
        "kill_grace": (kill_grace, "seconds>=0", "1"),
    })

    folder = loading_project()  # a relative script path is the project's, wherever assay was started
    processes: dict[tuple[Any, ...], NdjsonProcess] = {}
    reported_broken: set[tuple[Any, ...]] = set()  # attempts whose failed send told why the process broke
    agent_name = name or command.split()[-1].rsplit("/", 1)[-1]
    send_timeout = RequestTimeout(timeout, f"set by process_agent(timeout={timeout:g})") if timeout else NO_TIMEOUT
    stop_timeouts = ProcessTimeouts(
        close_s=close_timeout, exit_after_close_s=EXIT_AFTER_CLOSE_S, terminate_grace_s=kill_grace, kill_grace_s=kill_grace
    )

    def key(ctx: AgentContext) -> tuple[Any, ...]:
        return (ctx.experiment_id, ctx.eval_id, ctx.attempt)

    async def setup(ctx: AgentContext) -> None:
        # OTEL_* variables (where to export), so an SDK in the process configures itself at start.
        telemetry_env = dict(ctx.telemetry.env) if ctx.telemetry is not None else None
        processes[key(ctx)] = await start_ndjson_process(
            command, stderr_sink=lambda chunk: None, timeouts=stop_timeouts, call_timeout=send_timeout,
            extra_env=telemetry_env, cwd=folder,
        )

    async def teardown(ctx: AgentContext) -> None:
        process = processes.pop(key(ctx), None)
        if process is None:
            return
        # Timed out or interrupted, whatever it is doing is not wanted; if a send failed, the
        # attempt has its reason already and a close would only report it again.
        reported = key(ctx) in reported_broken
        reported_broken.discard(key(ctx))
        if ctx.signal.cancelled or reported:
            await process.force_stop()
            return
        await process.close()

    async def send(turn_input: TurnInput, ctx: AgentContext) -> Turn:
        process = processes.get(key(ctx))
        if process is None:
            raise SendFailure(f"agent {agent_name!r}: its process is not running", acceptance="rejected")
        try:
            result = await process.request("send", send_params(turn_input, ctx))
        except RequestTimedOut as error:
            # It got the request and is still at it: stop it now rather than wait in teardown
            # for a close it is too busy to answer.
            reported_broken.add(key(ctx))
            await process.force_stop()
            raise SendFailure(str(error), acceptance="started") from None
        except AdapterRuntimeError as error:
            if process.failure is not None:
                reported_broken.add(key(ctx))
            raise SendFailure(str(error), acceptance="unknown") from None
        return turn_from_reply(
            result, ctx, wrong_shape=f"agent {agent_name!r} answered send with {{}}, not a turn object",
            invalid_turn=f"agent {agent_name!r} returned an invalid turn",
        )

    # What carry hashes besides the experiment's modules: the project files the command names (its script).
    send.agent_command = command  # type: ignore[attr-defined]
    send.agent_folder = folder  # type: ignore[attr-defined]
    return define_agent(name=agent_name, send=send, evidence_coverage=evidence_coverage, setup=setup, teardown=teardown)


__all__ = ["process_agent", "send_params"]
