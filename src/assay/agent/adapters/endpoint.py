"""Calling an OpenAI-compatible endpoint from an agent adapter: transport, retries and failure mapping.

Requests go over assay's own pooled HTTP transport (`judge/openai_http.py`), or through the caller's
openai client when one was given. Every call goes through the endpoint's shared adaptive limiter and
`core/retry.py`'s rules: only what provably never reached the model is resent (a 429, honouring
Retry-After, and failures to connect), with backoff and counted in the attempt's record; an endpoint
that refused a whole round is tried once for the rest of the run (`adapters/resends.py`); anything
else is at once a `SendFailure` saying what happened. An https:// base URL whose server speaks plain
HTTP is no failure to connect worth resending: it fails at once, saying to use http://. A base URL that
is no http(s) URL at all (`htp://…`) is refused before any request, with the URL it probably meant.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

from assay.agent.adapter import SendFailure
from assay.agent.adapters.resends import send_with_resends
from assay.agent.context import AgentContext
from assay.core.endpoint_defaults import AGENT_MODEL_DEFAULTS, OPENAI_BASE_URL_VARIABLE, PLACEHOLDER_API_KEY
from assay.core.endpoint_defaults import OPENAI_BASE_URL as OPENAI_DEFAULT_BASE_URL
from assay.core.ratelimit import DEFAULT_MAXIMUM, limiter_for
from assay.core.retry import CONNECTION, RATE_LIMITED, Resend, RetriesExhausted, RetryPolicy
from assay.core.transport_failure import transport_failure

T = TypeVar("T")


@dataclass(frozen=True)
class OpenAIEndpoint:
    """Where the model lives. `base_url` / `api_key` default to OPENAI_BASE_URL / `api_key_env`;
    `sdk_client`, an `openai.AsyncOpenAI` of the caller's, carries requests instead of assay's transport."""

    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 120.0  # seconds per request
    max_attempts: int = 4
    backoff: float = 0.5  # seconds before the first retry; doubles each time
    max_backoff: float = 30.0
    max_concurrency: int = DEFAULT_MAXIMUM  # the adaptive limiter's ceiling for this endpoint
    sdk_client: Any = field(default=None, repr=False, compare=False)
    _clients: Any = field(default_factory=weakref.WeakKeyDictionary, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.base_url:  # a typo in the factory's base_url is reported when the experiment loads
            checked_base_url(self.base_url, "base_url")

    @property
    def resolved_base_url(self) -> str:
        if self.sdk_client is not None and not self.base_url:
            return str(self.sdk_client.base_url).rstrip("/")
        return AGENT_MODEL_DEFAULTS.base_url(self.base_url)  # type: ignore[return-value]  # it has a default

    @functools.cached_property
    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(self.max_attempts, self.backoff, self.max_backoff, max_retry_after=self.max_backoff)

    @functools.cached_property
    def _sdk_transport(self) -> Any:
        from assay.judge.openai_http import SDKTransport

        return SDKTransport(self.sdk_client)

    def client(self) -> Any:
        """What requests go through: the caller's SDK client, else this event loop's pooled transport
        (a connection pool cannot cross loops)."""
        if self.sdk_client is not None:
            return self._sdk_transport
        loop = asyncio.get_running_loop()
        transport = self._clients.get(loop)
        if transport is None:
            from assay.judge.openai_http import OpenAIHTTP

            key = AGENT_MODEL_DEFAULTS.with_api_key_variable(self.api_key_env).api_key(self.api_key)
            transport = self._clients[loop] = OpenAIHTTP(
                self.resolved_base_url, api_key=key or PLACEHOLDER_API_KEY, timeout=self.timeout,
                max_connections=self.max_concurrency,
            )
        return transport

    async def aclose(self) -> None:
        """Close this loop's transport (call before the loop ends); a caller's SDK client stays open."""
        transport = self._clients.pop(asyncio.get_running_loop(), None)
        if transport is not None:
            await transport.aclose()


def checked_base_url(url: str, source: str) -> str:
    """`url` if it is an http:// or https:// URL with a host, else a ValueError naming `source` and the URL
    it probably meant (without this, a mistyped scheme fails every send as a broken connection)."""
    if not isinstance(url, str):  # base_url=8000: say what it takes, not that an int has no .strip
        raise ValueError(f"{source} takes a URL string like 'http://127.0.0.1:8000/v1', got {url!r}")
    parts = urlsplit(url.strip())
    if parts.scheme.lower() in ("http", "https") and parts.netloc:
        return url
    rest = url.strip().split("://", 1)[-1].lstrip("/")
    meant = rest if "://" in rest else f"http://{rest}"
    raise ValueError(f"{source} {url!r} is not an http:// or https:// URL: did you mean {meant}?")


def _path_hint(base_url: str, status: int) -> str:
    """For a 404 from a base URL without /v1 (`http://127.0.0.1:8000` for a vLLM server): the URL to try."""
    if status != 404 or urlsplit(base_url).path.rstrip("/").endswith("/v1"):
        return ""
    return f" (OpenAI-compatible servers answer under /v1: is the base URL {base_url.rstrip('/')}/v1?)"


def check_options(factory: str, checks: dict[str, tuple[Any, str, str]]) -> None:
    """Refuse a factory keyword of the wrong type when the agent is made (exit 2, naming the keyword and
    an example), instead of a TypeError deep in the first send of every attempt. `checks` maps each keyword
    to (value, kind, example): kind `text`, `text?` (or None), `seconds` (above 0), `seconds?`,
    `seconds>=0`, `count` (a whole number, 1 or more), `count?`, `mapping?`."""
    from collections.abc import Mapping

    from assay.errors import ConfigError

    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    for keyword, (value, kind, example) in checks.items():
        if kind.endswith("?"):
            if value is None:
                continue
            kind = kind[:-1]
        if kind == "text":
            ok, wants = isinstance(value, str) and bool(value.strip()), "a non-empty string"
        elif kind == "seconds":
            ok, wants = number(value) and value > 0, "seconds (a number above 0)"
        elif kind == "seconds>=0":
            ok, wants = number(value) and value >= 0, "seconds (a number, 0 or more)"
        elif kind == "count":
            ok, wants = isinstance(value, int) and not isinstance(value, bool) and value >= 1, \
                "a whole number of at least 1"
        else:  # mapping
            ok, wants = isinstance(value, Mapping), "a dict"
        if not ok:
            raise ConfigError(f"{factory} {keyword} takes {wants}, like {keyword}={example}; got {value!r}")


class BrokenReply(Exception):
    """A reply that arrived but ended before the protocol says it is complete (e.g. a cut-off stream)."""


async def call_endpoint(
    endpoint: OpenAIEndpoint, ctx: AgentContext, call: Callable[[Any], Awaitable[T]], *, started: bool
) -> T:
    """`call(transport)` with retries; `started` says whether this turn already ran tools (no safe resend)."""
    from assay.judge.openai_http import HTTPStatusError

    base_url = endpoint.resolved_base_url
    if not endpoint.base_url and endpoint.sdk_client is None:
        try:  # from OPENAI_BASE_URL: every send would fail alike, so it is not resent
            checked_base_url(base_url, OPENAI_BASE_URL_VARIABLE)
        except ValueError as error:
            raise SendFailure(str(error), acceptance="rejected", code="network", retried=True) from None
    if endpoint.sdk_client is None and base_url.rstrip("/") == OPENAI_DEFAULT_BASE_URL and not (
        AGENT_MODEL_DEFAULTS.with_api_key_variable(endpoint.api_key_env).api_key(endpoint.api_key)
    ):
        # OpenAI's own API without a key: every request would be a 401 (or, offline, a host that does not
        # resolve, tried four times); say which variable is empty instead, before any request.
        variable = endpoint.api_key_env or "the api_key_env variable"
        raise SendFailure(
            f"no API key for {base_url}: {variable} is not set; export {variable}, pass api_key=…, or give "
            f"base_url= (or {OPENAI_BASE_URL_VARIABLE}) for a server that needs no key",
            acceptance="rejected", code="network", retried=True,
        )
    policy = endpoint.retry_policy
    # once tools ran, resending the turn would run them again, whatever happened to this request
    seen = "started" if started else "unknown"

    async def once(attempt: int) -> T | Resend:
        try:
            return await call(endpoint.client())
        except HTTPStatusError as error:
            if error.status == 429:  # an admission refusal: the model did not process the request
                return Resend(RATE_LIMITED, error.detail, policy.retry_after(error.headers))
            # The server received the request and answered; it may have done the work, so the
            # answer is reported as it is rather than resent.
            raise SendFailure(f"{base_url} answered {error.detail}{_path_hint(base_url, error.status)}",
                              acceptance=seen, code="agent-http-error") from None
        except BrokenReply as error:
            raise SendFailure(f"{base_url}: {error}", acceptance=seen, code="agent-stream-broken") from None
        except ValueError as error:
            raise SendFailure(
                f"{base_url} returned an invalid response: {error}", acceptance="started",
                code="agent-invalid-response",
            ) from None
        except Exception as error:
            failure = transport_failure(error, timeout=endpoint.timeout, url=base_url)
            if failure is None:
                raise
            if not failure.worth_resending:  # it never got in, but every resend (the runner's too) fails alike
                raise SendFailure(failure.detail, acceptance="started" if started else "rejected", code="network",
                                  retried=True) from None
            if not failure.never_sent:
                raise SendFailure(f"{base_url}: {failure.detail}", acceptance=seen, code="network") from None
            return Resend(CONNECTION, failure.detail)

    def report(attempt: int, resend: Resend, delay: float) -> None:
        ctx.record_retry(resend.reason)
        ctx.progress(f"model request retry {attempt + 1}/{policy.attempts} ({resend.reason}: {resend.detail})")

    try:
        return await send_with_resends(
            base_url, policy, once, ctx, limiter=limiter_for(base_url, endpoint.max_concurrency), on_retry=report,
            started=started,
        )
    except RetriesExhausted as exhausted:
        raise SendFailure(
            f"{base_url} failed after {exhausted.attempts} attempt(s): {exhausted.last.detail}",
            acceptance="started" if started else "rejected",
            code="rate_limit" if exhausted.last.rate_limited else "network",
        ) from None


async def post_json(client: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST a JSON body through a transport (`OpenAIEndpoint.client()`) or an openai SDK client and
    return the reply's JSON object."""
    if not hasattr(client, "post_stream"):
        from assay.judge.openai_http import SDKTransport

        client = SDKTransport(client)
    return await client.post_json(path, body)


def as_plain(value: Any) -> Any:
    """An SDK object as plain JSON-shaped data (dicts pass through)."""
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", exclude_unset=False) if callable(dump) else value


__all__ = [
    "BrokenReply", "OpenAIEndpoint", "as_plain", "call_endpoint", "check_options", "checked_base_url", "post_json",
]
