"""Calling an OpenAI-compatible endpoint from an agent adapter: client, retries and failure mapping.

Every call goes through the endpoint's shared adaptive limiter. Only what provably never reached the
model is retried (a 429, honouring Retry-After, and failures to connect), with backoff and counted in
the attempt's record; anything else is at once a `SendFailure` saying what happened.
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from assay.agent.adapter import SendFailure
from assay.agent.adapters.transport import transport_failure
from assay.agent.context import AgentContext
from assay.core.ratelimit import DEFAULT_MAXIMUM, limiter_for, retry_after_seconds

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
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"

    def client(self) -> Any:
        """This event loop's SDK client (a connection pool cannot cross loops)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            from assay.judge.client import PLACEHOLDER_API_KEY, openai_sdk_client

            key = self.api_key or os.environ.get(self.api_key_env) or PLACEHOLDER_API_KEY
            client = self._clients[loop] = openai_sdk_client(
                base_url=self.resolved_base_url, api_key=key, timeout=self.timeout
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
    limiter = limiter_for(base_url, endpoint.max_concurrency)
    attempts = max(1, endpoint.max_attempts)
    # once tools ran, resending the turn would run them again, whatever happened to this request
    seen = "started" if started else "unknown"
    for attempt in range(1, attempts + 1):
        ctx.signal.raise_if_cancelled()
        retry_after: float | None = None
        async with limiter.slot() as slot:
            try:
                return await call(endpoint.client())
            except openai.RateLimitError as error:
                # an admission refusal: the model did not process the request
                retry_after = retry_after_seconds(getattr(error.response, "headers", None), endpoint.max_backoff)
                slot.rate_limited(retry_after)
                reason, detail = "rate_limited", describe_status_error(error)
            except openai.APIStatusError as error:
                # The server received the request and answered; it may have done the work, so the
                # answer is reported as it is rather than resent.
                if error.status_code >= 500:
                    slot.failed()
                raise SendFailure(
                    f"{base_url} answered {describe_status_error(error)}", acceptance=seen, code="agent-http-error",
                ) from None
            except BrokenReply as error:
                slot.failed()
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
                slot.failed()
                if not failure.never_sent:
                    raise SendFailure(f"{base_url}: {failure.detail}", acceptance=seen, code="network") from None
                reason, detail = "connection", failure.detail
        if attempt == attempts:
            raise SendFailure(
                f"{base_url} failed after {attempts} attempt(s): {detail}",
                acceptance="started" if started else "rejected",
                code="rate_limit" if reason == "rate_limited" else "network",
            )
        ctx.record_retry(reason)
        ctx.progress(f"model request retry {attempt + 1}/{attempts} ({reason}: {detail})")
        delay = retry_after if retry_after is not None else min(
            endpoint.max_backoff, endpoint.backoff * 2 ** (attempt - 1)
        )
        await asyncio.sleep(delay)
    raise AssertionError("unreachable")


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
