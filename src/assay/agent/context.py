"""One attempt's fixed settings and the contexts built from them, with cancellation and feedback.

`AttemptSettings` is made once per attempt; `AgentContext` (what `send`, `setup` and `teardown` get) and `t`
read it instead of copying its fields. `CancelSignal` is the soft cancellation adapters forward (the runner
also cancels the task as a hard backstop); `progress` is ephemeral, `diagnostic` is stored with the attempt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from assay.agent.session import AgentSession


class Cancelled(Exception):
    """Raised by `CancelSignal.raise_if_cancelled` inside adapter or eval code."""


class CancelSignal:
    """Set once, with a reason (`timeout`, `interrupted`), when the attempt must stop."""

    __slots__ = ("_reason", "_callbacks", "_event")

    def __init__(self) -> None:
        self._reason: str | None = None
        self._callbacks: list[Callable[[str], Any]] | None = None
        self._event: asyncio.Event | None = None

    @property
    def cancelled(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        return self._reason

    def cancel(self, reason: str) -> None:
        if self._reason is not None:
            return
        self._reason = reason
        if self._event is not None:
            self._event.set()
        for callback in self._callbacks or ():
            try:
                callback(reason)
            except Exception:  # noqa: BLE001 - a listener must not stop the others
                pass

    def add_callback(self, callback: Callable[[str], Any]) -> None:
        """Call `callback(reason)` on cancellation (at once if already cancelled), e.g. to close a stream."""
        if self._reason is not None:
            callback(self._reason)
            return
        if self._callbacks is None:
            self._callbacks = []
        self._callbacks.append(callback)

    async def wait(self) -> str:
        if self._reason is None:
            if self._event is None:
                self._event = asyncio.Event()
            await self._event.wait()
        return self._reason or ""

    def raise_if_cancelled(self) -> None:
        if self._reason is not None:
            raise Cancelled(self._reason)


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """Durable feedback stored with the attempt; it never changes the verdict, even at level error."""

    code: str
    level: str
    message: str
    data: Mapping[str, Any] | None = None
    phase: str | None = None

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"code": self.code, "level": self.level, "message": self.message}
        if self.data is not None:
            document["data"] = dict(self.data)
        if self.phase is not None:
            document["phase"] = self.phase
        return document


class Feedback:
    """Progress lines and diagnostics of one attempt; diagnostics with one dedupe key are kept once."""

    __slots__ = ("diagnostics", "recent_progress", "retries", "_dedupe", "_listener")

    def __init__(self, listener: Callable[[str], Any] | None = None) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.retries: dict[str, int] = {}  # reason (rate_limited, server_error, timeout, …) -> count
        self.recent_progress: list[str] = []
        self._dedupe: set[str] = set()
        self._listener = listener

    def progress(self, message: str, current: int | None = None, total: int | None = None) -> None:
        # `t.log(5)`, `ctx.progress(step)` of a non-text: shown as printed. Kept as it came, it ended the whole run
        # with an internal error once a timeout joined the recent lines into the attempt's error.
        message = message if isinstance(message, str) else str(message)
        line = message if current is None else f"{message} ({current}/{total})" if total else f"{message} ({current})"
        self.recent_progress.append(line)
        if len(self.recent_progress) > 5:
            del self.recent_progress[0]
        if self._listener is not None:
            self._listener(line)

    def count_retry(self, reason: str) -> None:
        self.retries[reason] = self.retries.get(reason, 0) + 1

    def diagnostic(
        self,
        code: str,
        level: str,
        message: str,
        data: Mapping[str, Any] | None = None,
        dedupe_key: str | None = None,
        *,
        phase: str | None = None,
    ) -> None:
        if level not in ("warning", "error"):
            raise ValueError("diagnostic level must be 'warning' or 'error'")
        # Checked at the call, in the eval or agent that made it: a `data=5` went into the record as it came, and
        # the whole run ended with an internal error when the attempt was written.
        if not isinstance(code, str) or not code:
            raise TypeError(f"diagnostic code must be a non-empty text, like \"slow-tool\"; got {code!r:.60}")
        if data is not None and not isinstance(data, Mapping):
            raise TypeError(f"diagnostic data must be a mapping (a dict) or None; got {type(data).__name__} {data!r:.60}")
        message = message if isinstance(message, str) else str(message)
        if dedupe_key is not None:
            if dedupe_key in self._dedupe:
                return
            self._dedupe.add(dedupe_key)
        self.diagnostics.append(Diagnostic(code, level, message, data, phase))


@dataclass(frozen=True, slots=True)
class Telemetry:
    """OpenTelemetry wiring, present when the project configures `[tool.assay.telemetry]`: the run's
    OTLP/HTTP traces `endpoint`, `env` (OTEL_* variables for a child process) and `headers` to spread
    into the turn's request. During a send, `headers` holds that turn's fresh W3C `traceparent` (and
    `env` its TRACEPARENT); in setup and teardown there is no turn, so neither has one."""

    endpoint: str
    env: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def traceparent(self) -> str | None:
        return self.headers.get("traceparent")


_EMPTY: Mapping[str, Any] = MappingProxyType({})

# Diagnostic codes the run says again once (on the console and in --json, with how many attempts had them and where
# to read the first): code -> what it may mean. Each is declared where it is made (`say_once_a_run`), so an
# adapter's own codes need no entry in the runner.
SAID_ONCE_A_RUN: dict[str, str] = {}


def say_once_a_run(code: str, meaning: str) -> None:
    """Declare that attempts' `code` diagnostics change no verdict but may mean something was missed (a teardown
    that failed, an option not passed on): the run then says them once, with `meaning`, not only `agent show`."""
    SAID_ONCE_A_RUN[code] = meaning


class AttemptSettings(NamedTuple):
    """Everything fixed about one attempt: who it is, what its agent is told, how it runs and is graded.

    A NamedTuple rather than a frozen dataclass: one is built per attempt on the runner's hot path, and a
    frozen dataclass's `__init__` of this width costs a few microseconds there, several percent per eval."""

    signal: CancelSignal
    feedback: Feedback
    model: str | None = None
    reasoning_effort: str | None = None
    flags: Mapping[str, Any] = _EMPTY
    experiment_id: str | None = None
    eval_id: str | None = None
    attempt: int = 0  # the attempt's ordinal within its slot
    telemetry: Telemetry | None = None  # the attempt's (no traceparent); each send gets its own turn's
    agent: Any = None  # the experiment's agent (an `Agent`)
    kind: str = "pass"  # pass | score
    eval_dir: Path | None = None  # where `send_file` resolves relative paths
    attempt_id: str = ""
    tags: tuple[str, ...] = ()
    timeout: float | None = None  # seconds; None: no deadline
    pricing: Mapping[str, Any] = _EMPTY
    judge: Any = None  # a `Judge`
    judge_config: Mapping[str, Any] | None = None  # eval > experiment > project, merged
    judge_declared: bool = False
    retry_base_seconds: float = 5.0  # backoff before resending a send the agent provably rejected
    silence: Any = None  # the run's `SilenceWatch` (a warning when a send with no deadline stays silent)
    eval_group: Any = None  # the eval's `GroupRef` (id, definition_hash) when it runs in an eval group


class AgentContext:
    """The single context every `send`, `setup` and `teardown` call gets: one session line of an attempt."""

    __slots__ = ("settings", "session", "_phase", "turn_telemetry")

    def __init__(
        self, settings: AttemptSettings | None = None, *, session: AgentSession, phase: str = "agent.run",
        **standalone: Any,
    ) -> None:
        """From the attempt's settings; an adapter's own tests may pass them as keywords instead
        (`signal=`, `feedback=`, `model=`, `flags=`, `telemetry=`, …)."""
        if settings is None:
            if standalone.get("flags") is None:
                standalone["flags"] = {}  # a plain dict, as adapters may serialise it
            settings = AttemptSettings(**standalone)
        elif standalone:
            raise TypeError("AgentContext takes settings or keyword settings, not both")
        self.settings = settings
        self.session = session
        self._phase = phase
        self.turn_telemetry: Telemetry | None = None  # set by the attempt engine for the send in progress

    # Read through to the attempt's settings (C-level getters: adapters read these on every send).
    signal = property(attrgetter("settings.signal"), doc="The attempt's `CancelSignal`.")
    model = property(attrgetter("settings.model"))
    reasoning_effort = property(attrgetter("settings.reasoning_effort"))
    flags = property(attrgetter("settings.flags"))
    experiment_id = property(attrgetter("settings.experiment_id"))
    eval_id = property(attrgetter("settings.eval_id"))
    attempt = property(attrgetter("settings.attempt"))
    eval_group = property(
        attrgetter("settings.eval_group"), doc="The eval group (`.id`, `.definition_hash`) the eval runs in, or None.",
    )

    @property
    def telemetry(self) -> Telemetry | None:
        """The turn's telemetry during a send, the attempt's otherwise; None without `[tool.assay.telemetry]`."""
        turn = self.turn_telemetry
        return turn if turn is not None else self.settings.telemetry

    def progress(self, message: str, current: int | None = None, total: int | None = None) -> None:
        self.settings.feedback.progress(message, current, total)

    def log(self, message: str) -> None:
        self.settings.feedback.progress(message)

    def record_retry(self, reason: str) -> None:
        """Count one retried request (e.g. `rate_limited`, `server_error`, `timeout`) in the attempt's record."""
        self.settings.feedback.count_retry(reason)

    def diagnostic(
        self,
        code: str,
        level: str,
        message: str,
        data: Mapping[str, Any] | None = None,
        dedupe_key: str | None = None,
    ) -> None:
        self.settings.feedback.diagnostic(code, level, message, data, dedupe_key, phase=self._phase)


class SandboxAgentContext(AgentContext):
    """What a sandbox agent's `send`, `setup` and `teardown` get: the context plus a real `sandbox`."""

    __slots__ = ("sandbox", "_artifacts")

    def __init__(
        self, settings: AttemptSettings | None = None, *, session: AgentSession, sandbox: Any,
        phase: str = "agent.run", artifacts: Callable[[str, Any], None] | None = None, **standalone: Any,
    ) -> None:
        super().__init__(settings, session=session, phase=phase, **standalone)
        self.sandbox = sandbox
        self._artifacts = artifacts

    def store_artifact(self, name: str, document: Any) -> None:
        """Keep a JSON document with the attempt (e.g. `agent-setup.json`); the sandbox's secrets are redacted."""
        if self._artifacts is None:
            raise RuntimeError("this context keeps no artifacts (it was made outside an attempt)")
        self._artifacts(name, document)


@dataclass(frozen=True, slots=True)
class HookContext:
    """What experiment `setup` / `teardown` hooks get (and sandbox layer hooks, with their phase)."""

    experiment_id: str
    signal: CancelSignal
    feedback: Feedback
    phase: str = "experiment"

    def progress(self, message: str, current: int | None = None, total: int | None = None) -> None:
        self.feedback.progress(message, current, total)

    def diagnostic(self, code: str, level: str, message: str, data: Mapping[str, Any] | None = None) -> None:
        self.feedback.diagnostic(code, level, message, data, phase=self.phase)


__all__ = [
    "AgentContext", "AttemptSettings", "CancelSignal", "Cancelled", "Diagnostic", "Feedback", "HookContext",
    "SandboxAgentContext", "Telemetry", "say_once_a_run",
]
