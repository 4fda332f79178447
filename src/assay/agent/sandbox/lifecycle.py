"""One attempt's sandbox from creation to stop: the steps of spec §5.3 that belong to the sandbox.

`open` creates it, runs every layer's prepare steps and setups in order, takes the ledger's baseline and
ensures the agent's CLI; send windows bracket each `t.send`; `finish` fixes the File Changes the sandbox
assertions read; `close` runs every teardown in reverse (even after a failed setup) and stops or keeps it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from assay.agent.context import CancelSignal, Feedback, HookContext
from assay.agent.sandbox.changes import FileChangesView, changes_json
from assay.agent.sandbox.commands import Redactor, SandboxError
from assay.agent.sandbox.handle import Sandbox, SandboxCore
from assay.agent.sandbox.interface import CreateRequest
from assay.agent.sandbox.layers import ensure_installed
from assay.agent.sandbox.ledger import ChangeLedger, DiffRules, ExecGit, LedgerError
from assay.agent.sandbox.linking import SandboxBinding, SandboxStageError
from assay.agent.sandbox.reuse import SandboxPool, WarmSandbox
from assay.agent.sandbox.registry import read_entry, write_entry
from assay.core.asyncutil import call_user_code
from assay.core.jsonvalue import check_json_like

TEARDOWN_SECONDS = 60.0  # each teardown hook, and the provider's stop: they run after the deadline
_REQUIRED = ("workdir", "exec", "read_bytes", "write_bytes", "stop")
_CONTAINER_LEDGER = "/tmp/.assay-ledger"  # outside the workdir; a dot folder nobody mistakes for theirs


def _redacted_json(value: Any, redact: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {str(key): _redacted_json(item, redact) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redacted_json(item, redact) for item in value]
    return value


def _hook_name(function: Any) -> str:
    """A hook as its author finds it: `name (file:line)`."""
    name = getattr(function, "__qualname__", None) or type(function).__name__
    code = getattr(inspect.unwrap(function), "__code__", None)
    return f"{name} ({code.co_filename}:{code.co_firstlineno})" if code is not None else name


class SandboxStage:
    """The sandbox side of one attempt; `run_attempt` calls its steps in the spec's order."""

    def __init__(self, binding: SandboxBinding, settings: Any, tracing: Any = None, pool: SandboxPool | None = None) -> None:
        self.binding = binding
        self.pool = pool  # sandboxes shared serially (an eval group, sandbox_reuse): taken from and given back
        self.warm: WarmSandbox | None = None  # this attempt's sandbox as the pool keeps it
        self.opened = False  # every open step succeeded: only such a sandbox is given back
        self._git: Any = None  # the ledger's git, once a shared sandbox's ledger repository exists
        self.settings = settings  # the contexts' settings: `telemetry` becomes the in-sandbox receiver's
        self.tracing = tracing  # the attempt's AttemptTracing, when the run receives spans
        self.spooled_spans = False  # spans come through a receiver inside the sandbox (telemetry.py)
        self.redactor = Redactor()
        self.sandbox_id = uuid.uuid4().hex[:12]  # short, and any few leading characters name it
        self.backend: Any = None
        self.core: SandboxCore | None = None
        self.handle: Sandbox | None = None
        self.setup_handle: Sandbox | None = None  # the handle the setups ran with (teardowns get it too)
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
        if self.pool is not None:
            warm, retiring = self.pool.take(self.binding.layers)
            for old in retiring:
                await retire_sandbox(old, self.settings.feedback.diagnostic)
            if warm is not None and await self._adopt(warm, deadline):
                return
        await self._create(deadline)
        if self.pool is not None:
            await self._keep_for_reuse()
        await self._start_attempt()

    async def _adopt(self, warm: WarmSandbox, deadline: float | None) -> bool:
        """Take over a pooled sandbox, its workdir reset to the post-preparation tree; False (and the
        sandbox retired) when it cannot be reset or was retired by its provider."""
        problem = getattr(warm.backend, "retired", None)
        if not problem:
            try:
                await warm.reset.restore(warm.baseline)
            except LedgerError as error:
                problem = f"its workdir could not be reset: {error}"
        if problem:
            self.settings.feedback.diagnostic(
                "sandbox-reuse-retired", "warning", f"a shared sandbox was replaced by a fresh one: {problem}",
                phase="sandbox.open",
            )
            await retire_sandbox(warm, self.settings.feedback.diagnostic)
            return False
        self.warm = warm
        self._git = warm.git
        self.backend = warm.backend
        self.sandbox_id = getattr(warm.backend, "sandbox_id", self.sandbox_id)
        self._new_core(deadline)
        self.setup_handle = warm.handle
        self.setup_reached = True
        await self._start_attempt()
        return True

    def _new_core(self, deadline: float | None) -> Sandbox:
        settings = self.settings
        core = self.core = SandboxCore(
            self.backend, redactor=self.redactor, signal=settings.signal, progress=settings.feedback.progress,
        )
        core.deadline = deadline
        self.handle = Sandbox(core)
        return self.handle

    async def _keep_for_reuse(self) -> None:
        """Take the post-preparation tree the next tasks start from (the default diff rules: paths no eval
        counts, like dependency folders, are not reset)."""
        git = self._git = self._ledger_git()
        reset = ChangeLedger(git, DiffRules())
        baseline = await reset.start()
        if baseline is None:
            self.settings.feedback.diagnostic(
                "sandbox-reuse-unavailable", "warning",
                f"this sandbox cannot be shared (its workdir cannot be reset): {reset.failure}", phase="sandbox.baseline",
            )
            return
        assert self.setup_handle is not None
        left_running = getattr(self.backend, "left_running", None)
        self.warm = WarmSandbox(
            self.backend, self.setup_handle, self.core, self.binding.layers, git, reset, baseline, time.monotonic(),
            self.settings.experiment_id or "", prepared_processes=left_running() if left_running is not None else (),
        )

    def _ledger_git(self) -> Any:
        make_git = getattr(self.backend, "ledger_git", None)
        if make_git is not None:
            return make_git()
        return ExecGit(self.backend, getattr(self.backend, "ledger_dir", _CONTAINER_LEDGER))

    async def _create(self, deadline: float | None) -> None:
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
            said = str(error) if isinstance(error, SandboxError) else f"{type(error).__name__}: {error}"  # ours say it all
            raise SandboxStageError("sandbox-create-failed", f"{provider.name} sandbox could not be created: {said}") from error
        missing = [name for name in _REQUIRED if not hasattr(backend, name)]
        if not missing and not isinstance(backend.workdir, (str, os.PathLike)):
            missing = [f"workdir (a path; it is {type(backend.workdir).__name__})"]
        if missing:
            # Not kept as the attempt's backend: its record (workdir, isolation) and its stop would need what it lacks.
            stop = getattr(backend, "stop", None)
            if callable(stop):
                with contextlib.suppress(Exception):
                    stopping = stop()
                    if inspect.isawaitable(stopping):
                        await asyncio.wait_for(stopping, TEARDOWN_SECONDS)
            raise SandboxStageError(
                "sandbox-create-failed",
                f"{provider.name} sandbox lacks {', '.join(missing)}: its create() must return an object with workdir, "
                f"exec, read_bytes, write_bytes and stop; it returned a value of type {type(backend).__name__} (see define_sandbox)"
            )
        self.backend = backend
        self.sandbox_id = getattr(backend, "sandbox_id", self.sandbox_id)
        handle = self.setup_handle = self._new_core(deadline)
        core = self.core
        assert core is not None
        core.phase = "sandbox.prepare"
        for layer in self.binding.layers:
            for step in layer.prepares:
                try:
                    await step.run(handle)
                except Exception as error:  # noqa: BLE001
                    await self._check_started()  # a container that could not start is not the step's failure
                    raise SandboxStageError(
                        "sandbox-prepare-failed", f"sandbox prepare `{step.describe()}` failed: {error}"
                    ) from error
        core.phase = "sandbox.setup"
        self.setup_reached = True  # from here on every teardown runs, even if a setup throws
        for layer in self.binding.layers:
            for function in layer.setups:
                try:
                    await call_user_code(function, handle, self._hook_context("sandbox.setup"))
                except asyncio.CancelledError:
                    if settings.signal.reason == "timeout":  # the attempt's error says which hook hung
                        settings.feedback.progress(f"sandbox setup {_hook_name(function)} was running")
                    raise
                except Exception as error:  # noqa: BLE001
                    await self._check_started()
                    raise SandboxStageError(
                        "sandbox-setup-failed", f"sandbox setup failed: {type(error).__name__}: {error}"
                    ) from error

    async def _check_started(self) -> None:
        """A backend started in the background (a container) that could not start is `sandbox-create-failed`,
        wherever its first use finds out (a prepare step, a setup hook, the ledger's baseline), not the
        failure of that step or of the eval."""
        ready = getattr(self.backend, "ready", None)
        if ready is None:
            return
        try:
            await ready()
        except SandboxError as error:
            raise SandboxStageError(
                "sandbox-create-failed", f"{self.binding.provider.name} sandbox could not be created: {error}"
            ) from error

    async def _start_attempt(self) -> None:
        """Steps 5 to 7 for this attempt: the ledger's baseline, agent.ensure, the telemetry receiver."""
        core, backend, handle = self.core, self.backend, self.handle
        assert core is not None and handle is not None
        await self._check_started()
        core.phase = "sandbox.baseline"
        git = self._git if self._git is not None else self._ledger_git()
        # A container's workdir changes only through the sandbox: a window opening with nothing done
        # since the last snapshot reuses it (see ChangeLedger); a local one the host can write directly.
        touches = (lambda: core.touches) if getattr(backend, "workdir_private", False) else None
        self.ledger = ChangeLedger(git, self.binding.diff, touches)
        settings = self.settings
        await self.ledger.start(prepared=self._git is not None)  # a shared sandbox's ledger exists already
        if self.ledger.failure is not None:
            settings.feedback.diagnostic(
                "sandbox-ledger-unavailable", "warning",
                f"file changes cannot be attributed: {self.ledger.failure}", phase="sandbox.baseline",
            )
        await self._ensure_agent(handle)
        await self._connect_telemetry()
        core.phase = "agent.setup"
        self.opened = True

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
            said = self.redactor(str(error))
            self.settings.feedback.diagnostic(
                "telemetry-sandbox-unavailable", "warning",
                f"spans from inside this sandbox are not received: {said}", phase="sandbox.open",
            )
            tracing.run.sandbox_receivers_failed.append(said)  # the run's "no span" warning names this cause
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
        if await self._give_back():
            return
        if self.setup_reached and self.setup_handle is not None:
            await _teardowns(
                self.setup_handle, self.binding.layers, self._hook_context("sandbox.teardown"), feedback.diagnostic,
                self.redactor,
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

    async def _give_back(self) -> bool:
        """A shared sandbox whose attempt opened it fully goes back to its pool (no teardowns, no stop)
        once nothing the attempt started still runs in it; True when it did."""
        if self.pool is None or self.warm is None or not self.opened or getattr(self.backend, "retired", None):
            return False
        stop_processes = getattr(self.backend, "stop_processes", None)
        if stop_processes is not None:
            # What the attempt left running is stopped; what the sandbox's setups started (a server) stays.
            spare = self.warm.prepared_processes
            stopping = stop_processes(spare=spare) if spare else stop_processes()
            if not await asyncio.wait_for(stopping, TEARDOWN_SECONDS):
                return False
        self.pool.give_back(self.warm)
        self.stopped = None
        return True

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
        if self.warm is not None and self.pool is not None:
            # Which task of its shared sandbox this attempt was (1: it made the sandbox), and whose pool.
            document["shared"] = {"pool": self.pool.name, "task": self.warm.tasks}
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


async def _teardowns(
    handle: Sandbox, layers: tuple[Any, ...], context: HookContext, diagnostic: Callable[..., None], redactor: Redactor,
) -> None:
    """Every layer's teardowns, last layer first and each in reverse; a failure is a diagnostic."""
    for layer in reversed(layers):
        for function in reversed(layer.teardowns):
            limit = asyncio.timeout(TEARDOWN_SECONDS)
            try:
                async with limit:
                    await call_user_code(function, handle, context)
            except Exception as error:  # noqa: BLE001 - a diagnostic, never a verdict change
                if isinstance(error, TimeoutError) and limit.expired():  # its own message is empty
                    said = f"did not finish within {TEARDOWN_SECONDS:g}s and was stopped"
                else:
                    said = f"failed: {type(error).__name__}: {redactor(str(error))}"
                diagnostic("sandbox-teardown-failed", "warning", f"sandbox teardown {_hook_name(function)} {said}",
                           phase="sandbox.teardown")


async def retire_sandbox(warm: WarmSandbox, diagnostic: Callable[..., None]) -> None:
    """A shared sandbox's end: its teardowns (with the handle its setups had, fresh time, no cancel
    signal), then its stop. Failures go to `diagnostic(code, level, message, phase=...)`."""
    core = warm.core
    core.log, core.omitted_commands = [], 0  # the log it had is the sealed record of its first task
    core.signal = None
    core.deadline = asyncio.get_running_loop().time() + TEARDOWN_SECONDS
    core.phase = "sandbox.teardown"
    feedback = Feedback()
    context = HookContext(warm.experiment_id, CancelSignal(), feedback, "sandbox.teardown")
    await _teardowns(warm.handle, warm.layers, context, diagnostic, core.redactor)
    for note in feedback.diagnostics:  # what the teardown hooks reported themselves
        diagnostic(note.code, note.level, note.message, phase=note.phase)
    try:
        stopped = await asyncio.wait_for(warm.backend.stop(), TEARDOWN_SECONDS)
    except Exception as error:  # noqa: BLE001
        diagnostic("sandbox-stop-failed", "error", f"a shared sandbox could not be stopped: {type(error).__name__}: "
                   f"{error}", phase="sandbox.stop")
        return
    if not stopped:
        diagnostic("sandbox-stop-unconfirmed", "error",
                   "a shared sandbox's processes could not all be confirmed gone", phase="sandbox.stop")


__all__ = ["SandboxStage", "SandboxStageError", "TEARDOWN_SECONDS", "retire_sandbox"]
