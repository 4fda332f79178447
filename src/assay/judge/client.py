"""An async client for OpenAI-compatible chat completions, shared by every kind's model judges.

Requests go over assay's pooled HTTP transport (`judge/openai_http.py`), or a caller's own openai
client. Temperature 0, structured output when the endpoint supports it, the shared resend rules of
`core/retry.py` (a 429 after its Retry-After, a request that never reached the server, with backoff,
through the endpoint's shared adaptive limiter; a 5xx or a reply cut off is reported at once), an
optional content-addressed cache, and JSON answers checked against a schema.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Literal, Mapping

from assay.core.endpoint_defaults import JUDGE_CLIENT_DEFAULTS, PLACEHOLDER_API_KEY
from assay.core.ratelimit import DEFAULT_MAXIMUM, AdaptiveLimiter, limiter_for
from assay.core.retry import CONNECTION, RATE_LIMITED, Resend, RetriesExhausted, RetryPolicy, call_with_retries
from assay.core.transport_failure import transport_failure
from assay.judge.cache import CallCache, call_cache_key
from assay.judge.errors import JudgeAnswerError, JudgeCacheError, JudgeError
from assay.judge.extract import parse_json_output
from assay.judge.openai_http import HTTPStatusError, OpenAIHTTP, SDKTransport, excerpt, url_problem
from assay.judge.validation import schema_errors, strip_all_of, validation_message
from assay.judge.usage import count_usage

__all__ = [
    "ChatRequest",
    "Completion",
    "JsonCompletion",
    "JudgeClient",
    "JudgeEndpoint",
    "ResponseFormat",
    "openai_sdk_client",
    "json_answer",
    "parse_json_answer",
    "text_answer",
]

ResponseFormat = Literal["json_schema", "json_object", "none"]
RESPONSE_FORMATS: tuple[str, ...] = ("json_schema", "json_object", "none")


def openai_sdk_client(*, base_url: str | None, api_key: str, timeout: float) -> Any:
    """An `AsyncOpenAI` set up the way assay would use one, for callers who want to pass their own
    client: the SDK's retries off (ours go through a shared limiter and count every attempt), HTTP
    through aiohttp, which costs about half the CPU per request of the SDK's httpx transport.
    Needs the `openai` extra."""
    import openai  # the optional extra: imported only by whoever asks for an SDK client

    options: dict[str, Any] = {}
    transport = getattr(openai, "DefaultAioHttpClient", None)  # openai >= 1.80 with aiohttp
    if transport is not None:
        try:
            options["http_client"] = transport(timeout=timeout)
        except RuntimeError:  # the SDK says aiohttp is missing: stay on httpx
            pass
    return openai.AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0, **options)


@dataclass(frozen=True, slots=True)
class JudgeEndpoint:
    """Where and how to call the model; `from_environment` reads the ASSAY_JUDGE_* variables."""

    base_url: str
    api_key: str | None = None
    timeout_s: float = 120.0
    max_attempts: int = 4
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    response_format: ResponseFormat = "json_schema"
    send_reasoning_effort: bool = True

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str] | None = None, *, base_url: str | None = None, api_key: str | None = None
    ) -> "JudgeEndpoint":
        env = os.environ if environ is None else environ
        _check_variable_names(env)
        url = JUDGE_CLIENT_DEFAULTS.base_url(base_url, env)
        if url is None:
            # No default endpoint on purpose: a judge run must say which server receives the documents.
            raise JudgeError(
                "no judge endpoint configured: set ASSAY_JUDGE_BASE_URL (or OPENAI_BASE_URL) or pass --base-url"
            )
        _check_base_url(url, _base_url_source(base_url, env))
        response_format = env.get("ASSAY_JUDGE_RESPONSE_FORMAT", "json_schema")
        if response_format not in RESPONSE_FORMATS:
            raise JudgeError(
                f"ASSAY_JUDGE_RESPONSE_FORMAT must be one of {', '.join(RESPONSE_FORMATS)}, got {response_format!r}"
            )
        effort_switch = env.get("ASSAY_JUDGE_REASONING_EFFORT", "").strip().lower()
        if effort_switch not in _EFFORT_ON | _EFFORT_OFF:  # a typo of `off` must not quietly keep sending it
            raise JudgeError(
                f"ASSAY_JUDGE_REASONING_EFFORT must be on or off, got {env['ASSAY_JUDGE_REASONING_EFFORT']!r}"
            )
        return cls(
            base_url=url,
            api_key=JUDGE_CLIENT_DEFAULTS.api_key(api_key, env),
            timeout_s=_positive_float(env, "ASSAY_JUDGE_TIMEOUT", 120.0),
            max_attempts=_positive_int(env, "ASSAY_JUDGE_MAX_ATTEMPTS", 4),
            response_format=response_format,  # type: ignore[arg-type]
            send_reasoning_effort=effort_switch not in _EFFORT_OFF,
        )

    @property
    def auth_mode(self) -> str:
        return "api-key" if self.api_key else "none"


_PREFIX = "ASSAY_JUDGE_"
# Every ASSAY_JUDGE_* variable a judge reads, without the prefix.
_SETTINGS = ("BASE_URL", "API_KEY", "RESPONSE_FORMAT", "REASONING_EFFORT", "TIMEOUT", "MAX_ATTEMPTS")


def _check_variable_names(env: Mapping[str, str]) -> None:
    """A misspelt ASSAY_JUDGE_* variable is refused, naming the one meant (a 120 s timeout, four attempts,
    structured output would otherwise run as if it were not set)."""
    from assay.core.format import misspelt_variable

    problem = misspelt_variable(env, _PREFIX, [_PREFIX + setting for setting in _SETTINGS], "judge")
    if problem:
        raise JudgeError(problem)


_EFFORT_ON = frozenset({"", "on", "1", "true", "yes"})
_EFFORT_OFF = frozenset({"off", "0", "false", "no"})


def _base_url_source(explicit: str | None, env: Mapping[str, str]) -> str:
    """Where the base URL came from, as the person set it: the flag or the first variable that is set."""
    if explicit:
        return "--base-url"
    return next((name for name in ("ASSAY_JUDGE_BASE_URL", "OPENAI_BASE_URL") if env.get(name)), "the base URL")


def _check_base_url(url: str, source: str) -> None:
    """An http(s) URL with a host and a valid port: anything else would fail later as a misleading
    "invalid response" or "connection failed once it was open" from a request that never left."""
    problem = url_problem(url)
    if problem is not None:
        raise JudgeError(f"{source} {url} {problem}")


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise JudgeError(f"{name} must be a whole number of at least 1, got {text!r}")
    return value


def _positive_float(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name)
    if text is None or text == "":
        return default
    try:
        value = float(text)
    except ValueError:
        raise JudgeError(f"{name} must be a positive number, got {text!r}") from None
    if not 0 < value < math.inf:  # `inf` (meaning no limit) reached the socket as an OverflowError: an internal error
        raise JudgeError(f"{name} must be a positive number, got {text!r}")
    return value


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One chat completion: messages plus the knobs that change the answer (all part of the cache key)."""

    model: str
    messages: tuple[Mapping[str, str], ...]
    json_schema: Mapping[str, Any] | None = None
    schema_name: str = "result"
    reasoning_effort: str | None = None
    temperature: float = 0.0

    @classmethod
    def from_prompt(cls, model: str, prompt: str, **options: Any) -> "ChatRequest":
        return cls(model=model, messages=({"role": "user", "content": prompt},), **options)


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    response: Mapping[str, Any]  # the endpoint's JSON body, kept as raw evidence
    cached: bool = False
    attempts: int = 1
    repaired: bool = False  # the answer came from the one repair request (see `complete_checked`)


@dataclass(frozen=True, slots=True)
class JsonCompletion:
    value: Any
    completion: Completion


class JudgeClient:
    """Call an OpenAI-compatible endpoint; use as `async with`. `client`, an `openai.AsyncOpenAI` of the
    caller's, carries the requests instead of assay's transport (and stays open: its owner closes it)."""

    def __init__(
        self,
        endpoint: JudgeEndpoint,
        *,
        cache: CallCache | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        limiter: AdaptiveLimiter | None = None,
        client: Any = None,
    ) -> None:
        self.endpoint = endpoint
        self.cache = cache
        self._sleep = sleep
        # A client with its own sleep (tests) gets a private limiter on the same virtual clock.
        if limiter is None and sleep is not asyncio.sleep:
            clock = _VirtualClock(sleep)
            self._sleep = clock.sleep
            limiter = AdaptiveLimiter(clock=clock.now, sleep=clock.sleep)
        self._limiter = limiter
        self._policy = RetryPolicy(
            endpoint.max_attempts, endpoint.backoff_s, endpoint.max_backoff_s, max_retry_after=endpoint.max_backoff_s
        )
        self.retries: dict[str, int] = {}  # reason (rate_limited, connection) -> count, over this client's life
        # model -> what its calls cost, over this client's life (see `count_usage`): what a run says it spent
        self.usage: dict[str, dict[str, int]] = {}
        self.cache_unwritable: JudgeCacheError | None = None  # the first answer the cache could not keep
        self._transport: OpenAIHTTP | SDKTransport
        if client is not None:
            self._transport = SDKTransport(client)
        else:
            self._transport = OpenAIHTTP(
                endpoint.base_url, api_key=endpoint.api_key or PLACEHOLDER_API_KEY, timeout=endpoint.timeout_s,
                max_connections=getattr(limiter, "maximum", DEFAULT_MAXIMUM),
            )

    async def __aenter__(self) -> "JudgeClient":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._transport.aclose()

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The exact JSON body sent (and hashed for the cache)."""
        body: dict[str, Any] = {
            "model": request.model,
            "messages": [dict(message) for message in request.messages],
            "temperature": request.temperature,
        }
        if request.json_schema is not None and self.endpoint.response_format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema_name, "schema": strip_all_of(dict(request.json_schema))},
            }
        elif request.json_schema is not None and self.endpoint.response_format == "json_object":
            body["response_format"] = {"type": "json_object"}
        if request.reasoning_effort and self.endpoint.send_reasoning_effort:
            body["reasoning_effort"] = request.reasoning_effort
        return body

    async def complete(self, request: ChatRequest) -> Completion:
        """The first choice's text; raises `JudgeError` when every attempt failed or the text is empty."""
        completion, _ = await self.complete_checked(request, _non_empty)
        return completion

    async def complete_checked(
        self, request: ChatRequest, check: Callable[[str], Any], *, repair: bool = False
    ) -> tuple[Completion, Any]:
        """The answer and `check(text)` (which raises `JudgeError` for an answer the caller cannot use).

        Only an answer that passes `check` is cached, and a cached answer is checked again when read:
        one that no longer passes (an invalid answer cached by an older assay, a stricter schema) is
        dropped and the model is asked again, so a fixed endpoint is never hidden behind a bad entry.
        A fresh answer that fails `check` raises `JudgeAnswerError`, which carries the completion.

        With `repair`, an answer that fails `check` gets one more request: the conversation with the
        model's answer and what was wrong with it (counted in `retries` as `repair`). Its answer, if
        usable, is cached under the original request; if not, `JudgeAnswerError` names both problems.
        """
        body = self.request_body(request)
        call_input = {name: value for name, value in body.items() if name not in {"model", "messages"}}
        key = call_cache_key(request.model, body["messages"], call_input)
        if self.cache is not None:
            hit = self._cached(key, check)
            if hit is not None:
                count_usage(self.usage, request.model, None)
                return hit
        completion = await self._call_with_retries(body)
        try:
            value = check(completion.text)
        except JudgeError as error:
            if not repair:
                raise JudgeAnswerError(str(error), completion) from None
            completion, value = await self._repaired(body, completion, error, check)
        if self.cache is not None:
            record = {"text": completion.text, "response": completion.response}
            try:
                self.cache.put(key, json.dumps(record, ensure_ascii=False).encode("utf-8"))
            except JudgeCacheError as error:  # the answer is paid for: used, not lost with the cache; said once
                if self.cache_unwritable is None:
                    self.cache_unwritable = error
                    with contextlib.suppress(OSError):
                        print(f"Warning: {error}; judge answers are used but not kept for the next run",
                              file=sys.stderr, flush=True)
        return completion, value

    async def _repaired(
        self, body: dict[str, Any], first: Completion, problem: JudgeError, check: Callable[[str], Any]
    ) -> tuple[Completion, Any]:
        """The one repair request: the model sees its answer and the problem, and answers again."""
        self.retries["repair"] = self.retries.get("repair", 0) + 1
        repair_body = {**body, "messages": [
            *body["messages"],
            {"role": "assistant", "content": first.text},
            {"role": "user", "content": (
                f"Your answer could not be used: {problem}. Answer again with only the JSON object asked for, "
                "nothing before or after it."
            )},
        ]}
        second = await self._call_with_retries(repair_body)
        completion = Completion(second.text, second.response, attempts=first.attempts + second.attempts, repaired=True)
        try:
            return completion, check(second.text)
        except JudgeError as error:
            raise JudgeAnswerError(f"{problem}; after one repair request: {error}", completion) from None

    def _cached(self, key: str, check: Callable[[str], Any]) -> tuple[Completion, Any] | None:
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is None:
            return None
        try:
            stored = json.loads(hit)
            text, response = stored["text"], stored["response"]
            # An entry this client did not write (edited, or of another shape) is not read as an answer either.
            if not isinstance(text, str) or not isinstance(response, dict):
                raise TypeError("not a cached answer")
            completion = Completion(text=text, response=response, cached=True, attempts=0)
            return completion, check(completion.text)
        except (JudgeError, ValueError, TypeError, KeyError):
            self.cache.delete(key)  # type: ignore[union-attr]
            return None

    async def complete_json(
        self, request: ChatRequest, *, schema: Mapping[str, Any] | None = None, label: str = "model output"
    ) -> JsonCompletion:
        """Parse the answer as JSON (fences and prose tolerated) and validate it against `schema`.

        `schema` defaults to the request's schema; validation uses it in full, `allOf` included.
        """
        full_schema = schema if schema is not None else request.json_schema
        completion, value = await self.complete_checked(request, json_answer(full_schema, label))
        return JsonCompletion(value=value, completion=completion)

    @property
    def limiter(self) -> AdaptiveLimiter:
        if self._limiter is None:
            self._limiter = limiter_for(self.endpoint.base_url)
        return self._limiter

    async def _call_with_retries(self, body: dict[str, Any]) -> Completion:
        def count(attempt: int, resend: Resend, delay: float) -> None:
            self.retries[resend.reason] = self.retries.get(resend.reason, 0) + 1

        try:
            # The limiter holds this endpoint's other callers for a Retry-After; this call waits in the loop.
            return await call_with_retries(
                self._policy, functools.partial(self._call_once, body), limiter=self.limiter, on_retry=count,
                sleep=self._sleep,
            )
        except RetriesExhausted as exhausted:
            raise JudgeError(
                f"judge endpoint failed after {exhausted.attempts} attempt(s): {exhausted.last.detail}"
            ) from None

    async def _call_once(self, body: dict[str, Any], attempt: int) -> Completion | Resend:
        try:
            raw = await self._transport.post_json("/chat/completions", body)
        except HTTPStatusError as error:
            if error.status == 429:
                return Resend(RATE_LIMITED, error.detail, self._policy.retry_after(error.headers))
            # A 5xx means the server took the request and may have worked on it: reported, not resent.
            verb = "failed" if error.status >= 500 else "rejected the request"
            # A 404 is a model name or a base URL the server does not have: the message names both settings.
            hint = (f" (the judge's model {body.get('model')!r} or its base URL {self.endpoint.base_url} is not one this "
                    "server has)") if error.status == 404 else ""
            raise JudgeError(f"judge endpoint {verb}: {error.detail}{hint}") from None
        except ValueError as error:
            raise JudgeError(f"judge endpoint returned an invalid response: {error}") from None
        except Exception as error:
            failure = transport_failure(error, timeout=self.endpoint.timeout_s, url=self.endpoint.base_url)
            if failure is None:
                raise
            if not failure.worth_resending:  # an https:// URL for an http:// server: every try would fail alike
                raise JudgeError(f"judge endpoint failed: {failure.detail}") from None
            where = f"{self.endpoint.base_url}: {failure.detail}"
            if not failure.never_sent:
                if failure.detail.startswith("no complete reply"):  # the wait that ran out is a setting: name it
                    where += (" (a slower judge needs a longer timeout: `timeout` in the judge's settings, or "
                              "ASSAY_JUDGE_TIMEOUT for document judges)")
                raise JudgeError(f"judge endpoint failed: {where}") from None
            return Resend(CONNECTION, where)
        # Counted once answered, before the answer is read: a reply that is no use was paid for too.
        count_usage(self.usage, str(body.get("model")), raw)
        return Completion(text=_first_choice_text(raw), response=raw, attempts=attempt)


class _VirtualClock:
    """Monotonic time plus every injected sleep, so a fake sleep also ends a limiter pause."""

    def __init__(self, sleep: Callable[[float], Awaitable[Any]]) -> None:
        self._inner = sleep
        self._slept = 0.0

    def now(self) -> float:
        return time.monotonic() + self._slept

    async def sleep(self, seconds: float) -> None:
        self._slept += seconds
        await self._inner(seconds)


def parse_json_answer(text: str, schema: Mapping[str, Any] | None, label: str = "model output") -> Any:
    """The JSON in a model's text (fences and prose tolerated), validated against the full `schema`."""
    value = parse_json_output(text)
    if schema is not None:
        errors = schema_errors(value, dict(schema))
        if errors:
            raise JudgeError(validation_message(label, errors))
    return value


def json_answer(schema: Mapping[str, Any] | None, label: str = "model output") -> Callable[[str], Any]:
    """The check for an answer that must be non-empty JSON valid against `schema`."""
    return lambda text: parse_json_answer(_non_empty(text), schema, label)


def text_answer() -> Callable[[str], str]:
    """The check for an answer that must be non-empty text (what `complete` asks of one)."""
    return _non_empty


def _non_empty(text: str) -> str:
    if not text.strip():
        raise JudgeError("model output was empty")
    return text


def _first_choice_text(raw: Mapping[str, Any]) -> str:
    choices = raw.get("choices")
    if not isinstance(choices, list) or not choices:
        raise JudgeError("judge endpoint returned an invalid response: no choices")
    # A choice or message that is no object is the server's fault, not an empty answer: asking the model
    # to repair it would pay for another call that cannot help.
    if not isinstance(choices[0], dict):
        raise JudgeError(
            f"judge endpoint returned an invalid response: its first choice is {_json_type(choices[0])}, not an object"
        )
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise JudgeError(
            f"judge endpoint returned an invalid response: its first choice's message is {_json_type(message)}, "
            "not an object"
        )
    content = message.get("content")
    if content is None:
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal.strip():  # OpenAI's structured-output refusal
            raise JudgeError(f"the judge model refused to answer: {excerpt(refusal)}")
        return ""
    if isinstance(content, list):  # some servers return content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _json_type(value: Any) -> str:
    """What a JSON value is, as a person says it: null, a string, a list, …"""
    if value is None:
        return "null"
    names = {bool: "a boolean", str: "a string", list: "a list", int: "a number", float: "a number"}
    return names.get(type(value), type(value).__name__)
