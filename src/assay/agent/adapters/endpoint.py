"""Calling an OpenAI-compatible endpoint from an agent adapter: client, retries and failure mapping.

Every call goes through the endpoint's shared adaptive limiter and `core/retry.py`'s rules: only what
provably never reached the model is resent (a 429, honouring Retry-After, and failures to connect),
with backoff and counted in the attempt's record; anything else is at once a `SendFailure` saying what
happened.
"""

from __future__ import annotations

import asyncio
import functools
import json
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from assay.agent.adapter import SendFailure
from assay.agent.context import AgentContext
from assay.core.endpoint_defaults import AGENT_MODEL_DEFAULTS, PLACEHOLDER_API_KEY
from assay.core.ratelimit import DEFAULT_MAXIMUM, limiter_for
from assay.core.retry import CONNECTION, RATE_LIMITED, Resend, RetriesExhausted, RetryPolicy, call_with_retries
from assay.core.transport_failure import transport_failure

T = TypeVar("T")


@dataclass(frozen=True)
class OpenAIEndpoint:
    """Where the model lives. `base_url` / `api_key` default to OPENAI_BASE_URL / `api_key_env`."""

    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 120.0  # seconds per request
    max_attempts: int = 4
    backoff: float = 0.5  # seconds before the first retry; doubles each time
    max_backoff: float = 30.0
    max_concurrency: int = DEFAULT_MAXIMUM  # the adaptive limiter's ceiling for this endpoint
    _clients: Any = field(default_factory=weakref.WeakKeyDictionary, repr=False, compare=False)

    @property
    def resolved_base_url(self) -> str:
        return AGENT_MODEL_DEFAULTS.base_url(self.base_url)  # type: ignore[return-value]  # it has a default

    @functools.cached_property
    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(self.max_attempts, self.backoff, self.max_backoff, max_retry_after=self.max_backoff)

    def client(self) -> Any:
        """This event loop's SDK client (a connection pool cannot cross loops)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            from assay.judge.client import openai_sdk_client

            key = AGENT_MODEL_DEFAULTS.with_api_key_variable(self.api_key_env).api_key(self.api_key)
            client = self._clients[loop] = openai_sdk_client(
                base_url=self.resolved_base_url, api_key=key or PLACEHOLDER_API_KEY, timeout=self.timeout
            )
        return client

    async def aclose(self) -> None:
        """Close this loop's clients (call before the loop ends)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()


class BrokenReply(Exception):
    """A reply that arrived but ended before the protocol says it is complete (e.g. a cut-off stream)."""


async def call_endpoint(
    endpoint: OpenAIEndpoint, ctx: AgentContext, call: Callable[[Any], Awaitable[T]], *, started: bool
) -> T:
    """`call(client)` with retries; `started` says whether this turn already ran tools (no safe resend)."""
    import openai

    from assay.judge.client import describe_status_error

    base_url = endpoint.resolved_base_url
    policy = endpoint.retry_policy
    # once tools ran, resending the turn would run them again, whatever happened to this request
    seen = "started" if started else "unknown"

    async def once(attempt: int) -> T | Resend:
        try:
            return await call(endpoint.client())
        except openai.RateLimitError as error:
            # an admission refusal: the model did not process the request
            retry_after = policy.retry_after(getattr(error.response, "headers", None))
            return Resend(RATE_LIMITED, describe_status_error(error), retry_after)
        except openai.APIStatusError as error:
            # The server received the request and answered; it may have done the work, so the
            # answer is reported as it is rather than resent.
            raise SendFailure(
                f"{base_url} answered {describe_status_error(error)}", acceptance=seen, code="agent-http-error",
            ) from None
        except BrokenReply as error:
            raise SendFailure(f"{base_url}: {error}", acceptance=seen, code="agent-stream-broken") from None
        except (openai.APIResponseValidationError, ValueError) as error:
            raise SendFailure(
                f"{base_url} returned an invalid response: {error}", acceptance="started",
                code="agent-invalid-response",
            ) from None
        except Exception as error:
            failure = transport_failure(error, timeout=endpoint.timeout)
            if failure is None:
                raise
            if not failure.never_sent:
                raise SendFailure(f"{base_url}: {failure.detail}", acceptance=seen, code="network") from None
            return Resend(CONNECTION, failure.detail)

    def report(attempt: int, resend: Resend, delay: float) -> None:
        ctx.record_retry(resend.reason)
        ctx.progress(f"model request retry {attempt + 1}/{policy.attempts} ({resend.reason}: {resend.detail})")

    try:
        return await call_with_retries(
            policy, once, limiter=limiter_for(base_url, endpoint.max_concurrency),
            before_attempt=ctx.signal.raise_if_cancelled, on_retry=report,
        )
    except RetriesExhausted as exhausted:
        raise SendFailure(
            f"{base_url} failed after {exhausted.attempts} attempt(s): {exhausted.last.detail}",
            acceptance="started" if started else "rejected",
            code="rate_limit" if exhausted.last.rate_limited else "network",
        ) from None


async def post_json(client: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST a JSON body through the SDK client (its auth, timeout and status errors) and parse the reply.

    The typed `create()` methods transform every parameter and build response models, several
    milliseconds of CPU per call; plain JSON keeps a harness at high concurrency near wire speed."""
    import httpx

    raw = await client.post(_absolute_url(client, path), body=body, cast_to=httpx.Response)
    document = json.loads(raw.content)
    if not isinstance(document, dict):
        raise ValueError(f"the reply is {type(document).__name__}, not a JSON object")
    return document


_ABSOLUTE_URLS: weakref.WeakKeyDictionary[Any, dict[str, tuple[Any, str]]] = weakref.WeakKeyDictionary()


def _absolute_url(client: Any, path: str) -> str:
    """`path` under the client's base URL, resolved the way the SDK resolves it, once per client
    (again if its `base_url` is replaced).

    The SDK parses and joins a relative path on every request (~80 µs of CPU); an absolute URL it
    takes as it is (docs/benchmarks.md, agent endpoints)."""
    base = client.base_url
    by_path = _ABSOLUTE_URLS.get(client)
    if by_path is None:
        by_path = _ABSOLUTE_URLS[client] = {}
    resolved = by_path.get(path)
    if resolved is None or resolved[0] is not base:
        resolved = by_path[path] = (base, str(base.copy_with(raw_path=base.raw_path + path.lstrip("/").encode("ascii"))))
    return resolved[1]


def as_plain(value: Any) -> Any:
    """An SDK object as plain JSON-shaped data (dicts pass through)."""
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", exclude_unset=False) if callable(dump) else value


__all__ = ["BrokenReply", "OpenAIEndpoint", "as_plain", "call_endpoint", "post_json"]
