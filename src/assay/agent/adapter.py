"""The adapter contract: an `Agent` has a name, a required evidence-coverage proof and `async send`.

`define_agent` builds one from functions; `SendFailure` is how an adapter says it could not get a
trustworthy turn (an infrastructure problem, never a graded failure).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from assay.agent.context import AgentContext
from assay.agent.model import EvidenceCoverage, Turn, TurnFormatError, TurnInput, turn_from_json
from assay.errors import ConfigError


@runtime_checkable
class Agent(Protocol):
    """`setup(ctx)` / `teardown(ctx)` are optional and run once per attempt around its sends."""

    name: str
    evidence_coverage: EvidenceCoverage

    async def send(self, input: TurnInput, ctx: AgentContext) -> Turn: ...


@dataclass(frozen=True, slots=True)
class DefinedAgent:
    name: str
    evidence_coverage: EvidenceCoverage
    send: Callable[[TurnInput, AgentContext], Awaitable[Turn]]
    setup: Callable[[AgentContext], Any] | None = None
    teardown: Callable[[AgentContext], Any] | None = None
    close: Callable[[], Awaitable[Any]] | None = None  # once, when the run ends (e.g. close HTTP pools)
    span_mapper: Callable[[list[dict[str, Any]]], Any] | None = None  # tags its spans for the waterfall


def define_agent(
    *,
    name: str,
    send: Callable[[TurnInput, AgentContext], Awaitable[Turn]],
    evidence_coverage: EvidenceCoverage,
    setup: Callable[[AgentContext], Any] | None = None,
    teardown: Callable[[AgentContext], Any] | None = None,
    close: Callable[[], Awaitable[Any]] | None = None,
    span_mapper: Callable[[list[dict[str, Any]]], Any] | None = None,
) -> DefinedAgent:
    """A direct agent from an async `send`; `evidence_coverage` is required (declare only what is true).
    `span_mapper(spans) -> spans` tags the spans of each turn for the waterfall (`tag_span`, `heuristic_spans`:
    assay.agent.traces.mapping); it can only add attributes, and spans never decide a verdict."""
    from assay.agent.traces.mapping import MappedSend, check_span_mapper

    mapper = check_span_mapper(span_mapper, f"define_agent({name!r})")
    agent = DefinedAgent(name, evidence_coverage, MappedSend(send, mapper, name) if mapper else send, setup, teardown,
                         close, mapper)
    check_agent(agent, "define_agent")
    return agent


def check_agent(agent: Any, where: str) -> None:
    name = getattr(agent, "name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}: {_not_an_agent(agent)}")
    coverage = getattr(agent, "evidence_coverage", None)
    if not isinstance(coverage, EvidenceCoverage):
        given = "" if coverage is None else f", got {type(coverage).__name__} {str(coverage)[:40]!r}"
        hint = (": write evidence_coverage=complete_evidence_coverage (from assay.agent)"
                if isinstance(coverage, str) and coverage.strip().lower() == "complete" else "")
        raise ConfigError(
            f"{where}: agent {name!r} must declare `evidence_coverage` (an EvidenceCoverage; "
            f"use complete_evidence_coverage only if every channel really is complete){given}{hint}"
        )
    if not callable(getattr(agent, "send", None)):
        raise ConfigError(f"{where}: agent {name!r} must have an async `send(input, ctx)`")
    for hook in ("setup", "teardown", "close"):
        # A hook that is no function would only fail inside every attempt, as "the first argument must be callable".
        value = getattr(agent, hook, None)
        if value is not None and not callable(value):
            raise ConfigError(f"{where}: agent {name!r} {hook} must be a function (or None), got {type(value).__name__}")


def _not_an_agent(agent: Any) -> str:
    """Why `agent` is no agent, saying what to write: a factory passed uncalled is the likeliest slip."""
    if inspect.iscoroutinefunction(agent):
        # An `async def` is never a factory (those are plain functions): it is the agent's own `send`, and calling it
        # as told would hand the experiment a coroutine.
        label = getattr(agent, "__qualname__", None) or getattr(agent, "__name__", "send")
        return (f"agent={label} is an async function (an agent's send), not an agent: wrap it, "
                f"agent=define_agent(name=..., send={label}, evidence_coverage=...)")
    if inspect.isfunction(agent) or inspect.ismethod(agent) or inspect.isclass(agent):
        label = getattr(agent, "__qualname__", None) or getattr(agent, "__name__", "it")
        kind = "class" if inspect.isclass(agent) else "function"
        return f"agent={label} is the {kind}, not an agent: call it (agent={label}(...))"
    if callable(getattr(agent, "send", None)):
        return "the agent must have a non-empty string `name`"
    given = "None" if agent is None else f"{type(agent).__name__} {agent!r:.60}"
    return ("the agent must be one made by define_agent(...) or an official factory (openai_chat_agent(...), "
            f"http_agent(...), process_agent(...)), got {given}")


def send_location(agent: Any) -> str | None:
    """`file:line` where the agent's `send` is defined, to point at the author's code when what it
    returned is wrong (by then its frame is gone, and the error would otherwise name assay's code)."""
    target: Any = getattr(agent, "send", None)
    for _ in range(8):  # bound methods, partials and decorators each wrap the author's function
        target = inspect.unwrap(getattr(target, "__func__", target))
        if isinstance(target, functools.partial):
            target = target.func
            continue
        break
    code = getattr(target, "__code__", None)
    if code is None:
        code = getattr(getattr(type(target), "__call__", None), "__code__", None)  # a callable object
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else None


class SendFailure(Exception):
    """The agent could not produce a trustworthy turn; `acceptance` says whether the request got in.

    `rejected` means it provably never reached the agent (safe to resend, and the runner does);
    `started` or `unknown` means side effects may have happened. `retried=True` says the adapter
    already resent it as far as its own policy allows, so the runner does not resend it again."""

    def __init__(
        self, message: str, *, acceptance: str = "unknown", code: str = "agent-send-failed", retried: bool = False,
    ) -> None:
        super().__init__(message)
        if acceptance not in ("rejected", "started", "unknown"):
            raise ValueError("acceptance must be rejected, started or unknown")
        self.acceptance = acceptance
        self.code = code
        self.retried = retried


APPROVALS_TOGETHER = 't.respond("approve", "deny", …) in the order they were asked, or t.respond_all("approve")'


def partly_answered(total: int, left: Sequence[str], what: str, why: str, how: str = APPROVALS_TOGETHER) -> SendFailure:
    """A turn that answered only some of the `total` requests the last one made, to an agent that takes the answers
    all at once (`why`): which were `left`, and `how` to answer them together. Nothing was sent."""
    return SendFailure(f"respond answered {total - len(left)} of the {total} {what} (unanswered: {', '.join(left)}): "
                       f"{why}, so answer them together: {how}", acceptance="rejected", retried=True)


def turn_from_reply(document: Any, ctx: AgentContext, *, wrong_shape: str, invalid_turn: str) -> Turn:
    """An out-of-process agent's reply (a turn in NiceEval's JSON) as a Turn, its session id captured.

    A reply that is not an object, or not a valid turn, is a `SendFailure` the agent may have acted
    on: `wrong_shape` is formatted with the reply's type name, `invalid_turn` precedes the reason."""
    if not isinstance(document, Mapping):
        raise SendFailure(wrong_shape.format(type(document).__name__), acceptance="started",
                          code="agent-invalid-response")
    if "events" not in document:  # an error page's or a proxy's own JSON is no turn, not an empty one
        import json

        shown = json.dumps(document, ensure_ascii=False, default=str)
        raise SendFailure(f"{invalid_turn}: it has no events: {shown if len(shown) <= 200 else shown[:200] + '…'}",
                          acceptance="started", code="agent-invalid-response")
    session_id = document.get("session_id", document.get("sessionId"))
    if isinstance(session_id, str):
        ctx.session.capture(session_id)
    try:
        return turn_from_json(document)
    except TurnFormatError as error:
        raise SendFailure(f"{invalid_turn}: {error}", acceptance="started", code="agent-invalid-response") from None


__all__ = [
    "Agent", "DefinedAgent", "SendFailure", "check_agent", "define_agent", "send_location", "turn_from_reply",
]
