"""One attempt's sandbox from creation to stop: the steps of spec §5.3 that belong to the sandbox.

`open` creates it, runs every layer's prepare steps and setups in order, takes the ledger's baseline and
ensures the agent's CLI; send windows bracket each `t.send`; `finish` fixes the File Changes the sandbox
assertions read; `close` runs every teardown in reverse (even after a failed setup) and stops or keeps it.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Mapping
from typing import Any

from assay.agent.context import HookContext
from assay.agent.sandbox.changes import FileChangesView, changes_json
from assay.agent.sandbox.commands import Redactor, SandboxError
from assay.agent.sandbox.handle import Sandbox, SandboxCore
from assay.agent.sandbox.interface import CreateRequest
from assay.agent.sandbox.layers import ensure_installed
from assay.agent.sandbox.ledger import ChangeLedger, ExecGit
from assay.agent.sandbox.linking import SandboxBinding
from assay.agent.sandbox.registry import read_entry, write_entry
from assay.core.asyncutil import call_user_code
from assay.core.jsonvalue import check_json_like

TEARDOWN_SECONDS = 60.0  # each teardown hook, and the provider's stop: they run after the deadline
_REQUIRED = ("workdir", "exec", "read_bytes", "write_bytes", "stop")
_CONTAINER_LEDGER = "/tmp/.assay-ledger"  # outside the workdir; a dot folder nobody mistakes for theirs


class SandboxStageError(Exception):
    """A lifecycle step failed; `code` becomes the attempt's error code (the attempt is errored)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _redacted_json(value: Any, redact: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {str(key): _redacted_json(item, redact) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redacted_json(item, redact) for item in value]
    return value


class SandboxStage:
    """The sandbox side of one attempt; `run_attempt` calls its steps in the spec's order."""

    def __init__(self, binding: SandboxBinding, settings: Any, tracing: Any = None) -> None:
        self.binding = binding
        self.settings = settings  # the contexts' settings: `telemetry` becomes the in-sandbox receiver's
        self.tracing = tracing  # the attempt's AttemptTracing, when the run receives spans
        self.spooled_spans = False  # spans come through a receiver inside the sandbox (telemetry.py)
        self.redactor = Redactor()
        self.sandbox_id = uuid.uuid4().hex[:12]  # short, and any few leading characters name it
        self.backend: Any = None
        self.core: SandboxCore | None = None
        self.handle: Sandbox | None = None
        self.ledger: ChangeLedger | None = None
        self.view: FileChangesView | None = None
        self.setup_reached = False
        self.kept = False
        self.stopped: bool | None = None
        self.artifacts: dict[str, Any] = {}
        self.ensured: dict[str, Any] | None = None
        self._lock: asyncio.Lock | None = None
        self._settled: asyncio.Event | None = None

    # -- steps 2 to 6 -------------------------------------------------------------------------------
    def _hook_context(self, phase: str) -> HookContext:
        settings = self.settings
        return HookContext(settings.experiment_id or "", settings.signal, settings.feedback, phase)

    async def open(self, deadline: float | None) -> None:
        settings = self.settings
        provider = self.binding.provider
        labels = {
            name: str(value) for name, value in (
                ("experiment", settings.experiment_id), ("eval", settings.eval_id), ("attempt", settings.attempt_id),
            ) if value
        }
        try:
            backend = await provider.create(CreateRequest(self.sandbox_id, labels))
        except Exception as error:  # noqa: BLE001 - the provider's failure is this attempt's environment error
            raise SandboxStageError(
                "sandbox-create-failed", f"{provider.name} sandbox could not be created: {type(error).__name__}: {error}"
            ) from error
        self.backend = backend
        missing = [name for name in _REQUIRED if not hasattr(backend, name)]
        if missing:
            raise SandboxStageError(
                "sandbox-create-failed", f"{provider.name} sandbox lacks {', '.join(missing)} (see define_sandbox)"
            )
        self.sandbox_id = getattr(backend, "sandbox_id", self.sandbox_id)
        core = self.core = SandboxCore(
            backend, redactor=self.redactor, signal=settings.signal, progress=settings.feedback.progress,
        )
        core.deadline = deadline
        handle = self.handle = Sandbox(core)
        core.phase = "sandbox.prepare"
        for layer in self.binding.layers:
            for step in layer.prepares:
                try:
                    await step.run(handle)
                except Exception as error:  # noqa: BLE001
                    raise SandboxStageError(
                        "sandbox-prepare-failed", f"sandbox prepare `{step.describe()}` failed: {error}"
                    ) from error
        core.phase = "sandbox.setup"
        self.setup_reached = True  # from here on every teardown runs, even if a setup throws
        for layer in self.binding.layers:
            for function in layer.setups:
                try:
                    await call_user_code(function, handle, self._hook_context("sandbox.setup"))
                except Exception as error:  # noqa: BLE001
                    raise SandboxStageError(
                        "sandbox-setup-failed", f"sandbox setup failed: {type(error).__name__}: {error}"
                    ) from error
        core.phase = "sandbox.baseline"
        make_git = getattr(backend, "ledger_git", None)
        git = make_git() if make_git is not None else ExecGit(backend, getattr(backend, "ledger_dir", _CONTAINER_LEDGER))
        # A container's workdir changes only through the sandbox: a window opening with nothing done
        # since the last snapshot reuses it (see ChangeLedger); a local one the host can write directly.
        touches = (lambda: core.touches) if getattr(backend, "workdir_private", False) else None
        self.ledger = ChangeLedger(git, self.binding.diff, touches)
        await self.ledger.start()
        if self.ledger.failure is not None:
            settings.feedback.diagnostic(
                "sandbox-ledger-unavailable", "warning",
                f"file changes cannot be attributed: {self.ledger.failure}", phase="sandbox.baseline",
            )
        await self._ensure_agent(handle)
        await self._connect_telemetry()
        core.phase = "agent.setup"

    async def _connect_telemetry(self) -> None:
        """A sandbox that cannot reach the run's receiver (a container without the host's network) gets
        one of its own, and `ctx.telemetry` points there; its spool is collected after every send."""
        tracing = self.tracing
        if tracing is None or getattr(self.backend, "host_loopback", True):
            return
        from assay.agent.sandbox.telemetry import start_receiver

        try:
            base = await start_receiver(self.backend)
        except Exception as error:  # noqa: BLE001 - spans never decide anything: a diagnostic, not an error
            self.settings.feedback.diagnostic(
                "telemetry-sandbox-unavailable", "warning",
                f"spans from inside this sandbox are not received: {self.redactor(str(error))}", phase="sandbox.open",
            )
            return
        tracing.rebase(base)
        self.settings = self.settings._replace(telemetry=tracing.telemetry)
        self.spooled_spans = True

    async def collect_spans(self) -> None:
        """Hand what the in-sandbox receiver spooled to the run's traces (a diagnostic when it cannot)."""
        if not self.spooled_spans or self.backend is None or getattr(self.backend, "retired", None):
            return
        from assay.agent.sandbox.telemetry import collect_exports

        try:
            problems = self.tracing.ingest_exports(await collect_exports(self.backend))
        except Exception as error:  # noqa: BLE001
            problems = [str(error)]
        for problem in problems:
            self.settings.feedback.diagnostic(
                "telemetry-sandbox-export-refused", "warning",
                f"an export from inside the sandbox was left out: {self.redactor(problem)}",
                dedupe_key=f"telemetry-sandbox:{problem[:80]}",
            )

    async def _ensure_agent(self, handle: Sandbox) -> None:
        agent = self.settings.agent
        ensure = getattr(agent, "ensure", None)
        if ensure is None:
            return
        assert self.core is not None
        self.core.phase = "agent.ensure"
        try:
            installed = await ensure_installed(handle, agent.name, ensure.probe, ensure.install)
        except Exception as error:  # noqa: BLE001
            raise SandboxStageError("agent-ensure-failed", f"agent {agent.name!r} ensure failed: {error}") from error
        self.ensured = {**dict(ensure.identity), "probe": ensure.probe.describe(), "installed": installed}

    def enter(self, phase: str) -> None:
        if self.core is not None:
            self.core.phase = phase

    # -- step 8: send windows ----------------------------------------------------------------------
    async def open_window(self, label: str, session: int, turn: int) -> None:
        # One window at a time: attribution compares snapshots, so two open windows could not be told apart.
        if self._lock is None:
            self._lock = asyncio.Lock()
        await self._lock.acquire()
        if self.core is not None:
            self.core.phase, self.core.window = "agent.run", label
        if self.ledger is not None:
            await self.ledger.open_window(label, session, turn)

    async def close_window(self) -> None:
        try:
            if self.ledger is not None:
                failed_before = self.ledger.failure is not None
                closing = asyncio.ensure_future(self.ledger.close_window())
                try:
                    await asyncio.shield(closing)
                except asyncio.CancelledError:
                    # The deadline struck while the window closed: its snapshot takes milliseconds, so
                    # finish it (what the agent did before the deadline is still its work), then go on.
                    await closing
                    raise
                if not failed_before and self.ledger.failure is not None:
                    self.settings.feedback.diagnostic(
                        "sandbox-ledger-failed", "warning", f"file changes are incomplete: {self.ledger.failure}",
                        phase="agent.run",
                    )
            await self.collect_spans()
        finally:
            if self.core is not None:
                self.core.phase, self.core.window = "eval.run", None
            if self._lock is not None and self._lock.locked():
                self._lock.release()

    # -- steps 9 and 10 ----------------------------------------------------------------------------
    def finish(self) -> FileChangesView:
        """Fix the File Changes (`workspace.diff`) and release the sandbox assertions waiting for them."""
        if self.view is None:
            if self.ledger is not None:
                self.view = self.ledger.view()
            else:
                self.view = FileChangesView((), False, "the sandbox was never ready, so nothing was recorded")
        if self._settled is not None:
            self._settled.set()
        return self.view

    async def evaluate_later(self, assertion: Any) -> Any:
        """An assertion decided once the run is over (the sandbox assertions have no `or_stop`)."""
        if self.view is None:
            if self._settled is None:
                self._settled = asyncio.Event()
            await self._settled.wait()
        assert self.view is not None
        return assertion.evaluate(self.view)

    def store_artifact(self, name: str, document: Any) -> None:
        """Keep a JSON document (e.g. `agent-setup.json`) with the attempt; strings are redacted."""
        if not isinstance(name, str) or not name or "/" in name:
            raise SandboxError("an artifact name is one non-empty file name")
        check_json_like(document, f"artifact {name}")
        self.artifacts[name] = _redacted_json(document, self.redactor)

    # -- steps 11 to 13 ----------------------------------------------------------------------------
    def begin_teardown(self) -> None:
        """Teardowns run after the deadline or an interrupt: their commands get fresh time and no cancel signal."""
        if self.core is not None:
            self.core.signal = None
            self.core.deadline = asyncio.get_running_loop().time() + TEARDOWN_SECONDS

    async def close(self, keep: bool, verdict: str | None = None) -> None:
        """Every teardown (LIFO, across layers) once setup was reached; then stop, or keep when asked."""
        backend = self.backend
        if backend is None:
            return
        core = self.core
        feedback = self.settings.feedback
        self.begin_teardown()
        await self.collect_spans()  # what the agent exported after its last send, or in its teardown
        if core is not None:
            core.phase = "sandbox.teardown"
        if self.setup_reached and self.handle is not None:
            for layer in reversed(self.binding.layers):
                for function in reversed(layer.teardowns):
                    try:
                        await asyncio.wait_for(
                            call_user_code(function, self.handle, self._hook_context("sandbox.teardown")),
                            TEARDOWN_SECONDS,
                        )
                    except Exception as error:  # noqa: BLE001 - a diagnostic, never a verdict change
                        feedback.diagnostic(
                            "sandbox-teardown-failed", "warning",
                            f"sandbox teardown failed: {type(error).__name__}: {self.redactor(str(error))}",
                            phase="sandbox.teardown",
                        )
        keeper = getattr(backend, "keep", None)
        try:
            if keep and keeper is not None:
                self.stopped = await asyncio.wait_for(keeper(), TEARDOWN_SECONDS)
                self.kept = True
                self._register_kept(verdict)
            else:
                self.stopped = await asyncio.wait_for(backend.stop(), TEARDOWN_SECONDS)
        except Exception as error:  # noqa: BLE001
            self.stopped = False
            feedback.diagnostic(
                "sandbox-stop-failed", "error", f"the sandbox could not be stopped: {type(error).__name__}: {error}",
                phase="sandbox.stop",
            )
            return
        if not self.stopped:
            feedback.diagnostic(
                "sandbox-stop-unconfirmed", "error",
                "the sandbox's processes could not all be confirmed gone", phase="sandbox.stop",
            )

    async def abandon(self) -> None:
        """Stop the sandbox without its teardowns (the attempt's task is being torn down itself)."""
        if self.backend is not None and self.stopped is None:
            self.stopped = False
            try:
                self.stopped = await self.backend.stop()
            except Exception:  # noqa: BLE001 - best effort; `assay agent sandbox prune` removes what is left
                pass

    def _register_kept(self, verdict: str | None) -> None:
        root = getattr(self.backend, "registry_root", None) or getattr(self.backend, "root", None)
        if root is None:
            return
        entry = read_entry(root)
        if entry is None:
            return
        entry.state = "kept"
        entry.verdict = verdict
        entry.owner_pid = os.getpid()
        entry.windows = [
            {"window": window.label, "start": window.start, "end": window.end}
            for window in (self.view.windows if self.view is not None else ())
        ]
        if self.ledger is not None and self.ledger.baseline:
            # What `sandbox diff` needs to show changes made after the run (in `sandbox enter`) as the run did.
            rules = self.binding.diff
            entry.diff = {"baseline": [self.ledger.baseline], "include": list(rules.include), "ignore": list(rules.ignore)}
        write_entry(root, entry)

    # -- the record --------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any] | None:
        if self.backend is None:
            return {"provider": self.binding.provider.name, "created": False, "template": self.binding.template_owner}
        view = self.view if self.view is not None else self.finish()
        document: dict[str, Any] = {
            "provider": self.binding.provider.name, "sandbox_id": self.sandbox_id,
            "isolation": getattr(self.backend, "isolation", "unknown"), "workdir": self.backend.workdir,
            "template": self.binding.template_owner, "kept": self.kept,
            "file_changes": changes_json(view, self.redactor),
        }
        placement = getattr(self.backend, "placement", None)
        if placement is not None:
            document["workspace"] = placement.to_json()  # where a container's workdir was, and why
        if self.ledger is not None and self.ledger.baseline:
            document["baseline"] = self.ledger.baseline
        if self.core is not None:
            document["commands"] = self.core.log
            if self.core.omitted_commands:
                document["omitted_commands"] = self.core.omitted_commands
        if self.ensured is not None:
            document["agent_ensure"] = self.ensured
        if self.artifacts:
            document["artifacts"] = self.artifacts
        return document


__all__ = ["SandboxStage", "SandboxStageError", "TEARDOWN_SECONDS"]
