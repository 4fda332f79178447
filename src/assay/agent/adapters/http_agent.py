"""An agent behind an HTTP endpoint in the shape of NiceEval's web agent: POST JSON, get a turn back.

Request: `{message, files, responses, output_schema, model, reasoning_effort, flags, session_id}`
with bearer auth and the turn's telemetry headers; reply: `{events, data, usage, status?, session_id?}`.
A non-2xx reply is a diagnostic plus a failed turn (a 429 is first retried, honouring Retry-After).
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from assay.agent.adapter import DefinedAgent, SendFailure, define_agent, turn_from_reply
from assay.agent.adapters.endpoint import check_options, checked_base_url
from assay.agent.adapters.resends import send_with_resends
from assay.agent.context import AgentContext
from assay.agent.model import ErrorEvent, EvidenceCoverage, Turn, TurnInput
from assay.core.ratelimit import DEFAULT_MAXIMUM, limiter_for
from assay.core.retry import CONNECTION, RATE_LIMITED, Resend, RetriesExhausted, RetryPolicy
from assay.core.transport_failure import transport_failure

T = TypeVar("T")


def _request_body(turn_input: TurnInput, ctx: AgentContext) -> dict[str, Any]:
    body: dict[str, Any] = {
        "message": turn_input.text,
        "files": [file.to_json() for file in turn_input.files],
        "model": ctx.model,
        "flags": dict(ctx.flags),
    }
    if ctx.reasoning_effort is not None:
        body["reasoning_effort"] = ctx.reasoning_effort
    if turn_input.responses:
        body["responses"] = [response.to_json() for response in turn_input.responses]
    if turn_input.output_schema is not None:
        body["output_schema"] = turn_input.output_schema
    if ctx.session.id is not None:
        body["session_id"] = ctx.session.id
    return body


def http_agent(
    base_url: str,
    *,
    evidence_coverage: EvidenceCoverage,
    name: str = "web-agent",
    path: str = "/api/turn",
    api_key: str | None = None,
    api_key_env: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 300.0,
    max_attempts: int = 4,
    backoff: float = 0.5,
    max_concurrency: int = DEFAULT_MAXIMUM,
) -> DefinedAgent:
    """`evidence_coverage` is required: only the service knows whether its events are complete.

    Requests go over assay's one pooled HTTP transport (aiohttp, `judge/openai_http.py`), loaded when
    the first attempt sends, not when the project's agents are discovered."""
    checked_base_url(base_url, "http_agent base_url")
    check_options("http_agent", {
        "name": (name, "text", "'web-agent'"), "path": (path, "text", "'/api/turn'"),
        "api_key": (api_key, "text?", "'…'"), "api_key_env": (api_key_env, "text?", "'MY_APP_KEY'"),
        "headers": (headers, "mapping?", "{'X-Tenant': 'demo'}"), "timeout": (timeout, "seconds", "300"),
        "max_attempts": (max_attempts, "count", "4"), "backoff": (backoff, "seconds>=0", "0.5"),
        "max_concurrency": (max_concurrency, "count", "16"),
    })
    url = base_url.rstrip("/") + "/" + path.lstrip("/")
    calls = ServiceCalls(url, base_url, accept="application/json", timeout=timeout, max_attempts=max_attempts,
                         backoff=backoff, max_concurrency=max_concurrency, named_url=base_url)

    async def send(turn_input: TurnInput, ctx: AgentContext) -> Turn:
        key = api_key or (os.environ.get(api_key_env) if api_key_env else None)
        request_headers = {"content-type": "application/json", **dict(headers or {})}
        if key:
            request_headers["authorization"] = f"Bearer {key}"
        if ctx.telemetry is not None:
            request_headers.update(ctx.telemetry.headers)
        body = _request_body(turn_input, ctx)

        async def once(attempt: int) -> Turn | Resend:
            from assay.judge.openai_http import HTTPStatusError, InvalidReply

            try:
                document = await calls.client().post_json(path, body, headers=request_headers)
            except HTTPStatusError as error:
                if error.status == 429:
                    return calls.rate_limited(error)
                return _http_error_turn(ctx, name, error.status)
            except InvalidReply as error:
                raise SendFailure(f"{name} replied with invalid JSON: {error}", acceptance="started",
                                  code="agent-invalid-response") from None
            except Exception as error:
                resend = calls.unsent(error)
                if resend is None:
                    raise
                return resend
            return turn_from_reply(document, ctx, wrong_shape=f"{name} replied with {{}}, not a JSON object",
                                   invalid_turn=f"{name} replied with an invalid turn")

        ctx.progress(f"waiting for {name}")
        return await calls.send(once, ctx, when_rate_limited=lambda: _http_error_turn(ctx, name, 429))

    return define_agent(name=name, send=send, evidence_coverage=evidence_coverage, close=calls.aclose)


class ServiceCalls:
    """An agent's requests to a web service (`http_agent`, `ui_message_stream_agent`): one pooled transport per
    event loop (a connection pool cannot cross loops), the service's limiter, and `core/retry.py`'s rules. Only
    what provably never reached the service is resent (a 429, honouring Retry-After, and a failure to connect);
    anything the service may have started work on never is. No backoff cap: four attempts by default."""

    def __init__(self, url: str, origin: str, *, accept: str, timeout: float, max_attempts: int, backoff: float,
                 max_concurrency: int, named_url: str | None = None) -> None:
        self.url, self.origin, self.accept, self.timeout = url, origin, accept, timeout
        self.max_concurrency = max_concurrency
        self.named_url = named_url or url  # the address a transport failure names (what to fix)
        self.policy = RetryPolicy(max_attempts, backoff, max_backoff=None)
        self._clients: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    def client(self) -> Any:
        """This event loop's transport to the service, made on first use (assay's one pooled aiohttp transport)."""
        loop = asyncio.get_running_loop()
        found = self._clients.get(loop)
        if found is None:
            from assay.judge.openai_http import OpenAIHTTP

            found = self._clients[loop] = OpenAIHTTP(self.origin, api_key=None, timeout=self.timeout,
                                                     max_connections=self.max_concurrency, headers={"Accept": self.accept})
        return found

    async def aclose(self) -> None:
        found = self._clients.pop(asyncio.get_running_loop(), None)
        if found is not None:
            await found.aclose()

    def rate_limited(self, error: Any) -> Resend:
        return Resend(RATE_LIMITED, "HTTP 429", self.policy.retry_after(error.headers))

    def unsent(self, error: BaseException) -> Resend | None:
        """A request the transport failed: a resend when it never reached the service, else a `SendFailure`;
        None when `error` is no transport failure (the caller raises it)."""
        failure = transport_failure(error, timeout=self.timeout, url=self.named_url)
        if failure is None:
            return None
        if not failure.worth_resending:  # it never got in, but every resend would fail alike
            raise SendFailure(failure.detail, acceptance="rejected", code="network", retried=True) from None
        if not failure.never_sent:  # the service may have started work: never resent (side effects)
            raise SendFailure(f"{self.url}: {failure.detail}", acceptance="unknown", code="network") from None
        return Resend(CONNECTION, failure.detail)

    async def send(self, once: Callable[[int], Awaitable[T | Resend]], ctx: AgentContext, *,
                   when_rate_limited: Callable[[], T] | None = None) -> T:
        """`once(attempt)` with resends; a round that ends rate-limited is `when_rate_limited()` if given."""
        try:
            return await send_with_resends(
                self.url, self.policy, once, ctx, limiter=limiter_for(self.url, self.max_concurrency),
                on_retry=lambda attempt, resend, delay: ctx.record_retry(resend.reason),
            )
        except RetriesExhausted as exhausted:
            if exhausted.last.rate_limited and when_rate_limited is not None:
                return when_rate_limited()
            raise SendFailure(
                f"{self.url}: {exhausted.last.detail} (after {exhausted.attempts} attempts)", acceptance="rejected",
                code="rate_limit" if exhausted.last.rate_limited else "network", retried=True,
            ) from None


def _http_error_turn(ctx: AgentContext, name: str, status: int) -> Turn:
    ctx.diagnostic("agent-http-error", "error", f"{name} returned HTTP {status}", {"status": status})
    return Turn([ErrorEvent(f"HTTP {status}")], "failed")


__all__ = ["ServiceCalls", "http_agent"]
