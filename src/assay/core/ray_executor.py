"""The Ray executor: unit groups run on a pool of warm actors; results stream back to the driver.

`ray` is imported only here and only when this executor is used (assay's `ray` extra).
A worker that dies is replaced and only the group's unfinished units are sent again.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from assay.core.ratelimit import LimiterSlots
from assay.errors import AssayError, UsageError

__all__ = ["RayExecutor", "RemoteLimiter", "WorkerLost", "shared_limiter"]

DEFAULT_RESCHEDULES = 3


class WorkerLost(AssayError):
    """A unit group's workers kept dying; its remaining units could not be run."""


def _ray() -> Any:
    try:
        import ray
    except ImportError as error:  # pragma: no cover - depends on the install
        raise AssayError("--executor ray needs Ray: pip install 'ray[default]' (assay's `ray` extra)") from error
    return ray


def ensure_ray(address: str | None = None) -> Any:
    """Join `address` (or `RAY_ADDRESS`), else start a local cluster; reuse one this process already joined."""
    ray = _ray()
    if not ray.is_initialized():
        if address is None and not os.environ.get("RAY_ADDRESS"):
            _quiet_init(ray, include_dashboard=False)
            return ray
        given = address if address is not None else os.environ["RAY_ADDRESS"]
        where = "--ray-address" if address is not None else "RAY_ADDRESS"
        if not given.strip():
            raise UsageError(
                f"{where} needs an address, and the value given is empty (an unset variable in a script?)", where
            )
        try:
            _check_answers(given)
            _quiet_init(ray, address=given)
        except (ValueError, ConnectionError, RuntimeError, TimeoutError, OSError) as error:
            # Ray says "Invalid address format" or that nothing answers; a person needs the fix too.
            advice = _token_advice(error) or (
                f"{_reason(error, given)}. Give the head node of a running cluster as host:port "
                "(`ray start --head` prints it), `auto` for the cluster on this machine, or leave it out "
                "to start a local cluster"
            )
            raise UsageError(f"{where} {given!r}: {advice}", where) from None
    return ray


def _quiet_init(ray: Any, **options: Any) -> None:
    """`ray.init` without Ray's chatter on the driver's stderr, and with the driver's SIGTERM handling kept.

    Ray's log lines ("Started a local Ray instance", "Connecting to existing Ray cluster") and its
    client's warnings would land between the run's own lines; its errors reach the person as our one
    line. `ray.init` also takes SIGTERM over (a stack dump, then exit 15): assay's handler, which stops
    the run as Ctrl-C does with its progress kept, is put back."""
    import logging
    import signal
    import threading
    import warnings

    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main_thread else None
    # Joining a cluster, Ray's core writes its retries straight to the process's stderr ("Failed to get cluster
    # ID from GCS server", once a second): they are held back too, and a failure is told in our one line.
    held = _stderr_held() if "address" in options else contextlib.nullcontext()
    # Starting a local cluster takes seconds, and a SIGTERM in them met Ray's handlers, not assay's: the command
    # exited 15 with nothing said (no checkpoint line), leaving the agents its raylet had started running. While
    # the process has a handler of its own, Ray installs none during `init`: the SIGTERM stops it as Ctrl-C does.
    kept = _sigterm_handler_kept(ray) if callable(previous) else contextlib.nullcontext()
    try:
        with warnings.catch_warnings(), held, kept:
            warnings.simplefilter("ignore")
            ray.init(log_to_driver=False, logging_level=logging.ERROR, **options)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _sigterm_handler_kept(ray: Any) -> Any:
    """Ray's `set_sigterm_handler` (what `ray.init` and its node call) made a no-op for the block."""
    utils = getattr(getattr(ray, "_private", None), "utils", None)
    own = getattr(utils, "set_sigterm_handler", None)
    if own is None:  # another Ray: its handlers stay until `init` returns
        yield
        return
    utils.set_sigterm_handler = lambda handler: None
    try:
        yield
    finally:
        utils.set_sigterm_handler = own


@contextlib.contextmanager
def _stderr_held() -> Any:
    """File descriptor 2 pointed at a scratch file for the block (what native code writes goes there), then back."""
    import sys
    import tempfile

    with contextlib.suppress(Exception):
        sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to hold back
        yield
        return
    try:
        with tempfile.TemporaryFile() as scratch:
            os.dup2(scratch.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)


# The port `ray start --head` gives the Ray client (`ray://host`) when none is written.
_CLIENT_PORT = 10001
_CONNECT_TIMEOUT_S = 10.0


def _check_answers(address: str) -> None:
    """Refuse at once a host:port where nothing listens: Ray itself keeps retrying such an address for
    minutes (GCS) or half a minute (client), printing a warning every few seconds."""
    import socket

    if address in ("auto", "local"):
        return
    if address.lower().startswith(("http://", "https://")):
        # Ray's own words for this blame RAY_ADDRESS, whichever of the two gave it.
        raise ValueError("that is an HTTP address (the dashboard's or the job API's, port 8265), not the cluster's")
    client = address.startswith("ray://")
    rest = address.removeprefix("ray://").split("/", 1)[0]
    host, colon, port_text = rest.rpartition(":")
    if not colon:
        host, port_text = rest, str(_CLIENT_PORT) if client else ""
    host = host.strip("[]")
    if not host or not port_text.isdigit() or "://" in address.removeprefix("ray://"):
        return  # not host:port: Ray's own parser says what is wrong with it
    try:
        connection = socket.create_connection((host, int(port_text)), timeout=_CONNECT_TIMEOUT_S)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        if isinstance(error, socket.gaierror):
            reason = f"no such host ({reason})"
        elif isinstance(error, TimeoutError):
            reason = f"no answer within {_CONNECT_TIMEOUT_S:.0f} s"
        raise ConnectionError(f"nothing answers at {host}:{port_text}: {reason}") from None
    with connection:
        if not _speaks_grpc(connection) and not _tls_configured():
            default = "10001, the Ray client's" if client else "6379, the head node's GCS"
            raise ConnectionError(
                f"{host}:{port_text} answers, but not as a Ray cluster (Ray's default port is {default}; the dashboard's "
                f"8265 is not it)"
            )


# What an HTTP/2 server (gRPC: Ray's GCS and its client server) answers first: a SETTINGS frame. Another
# service (a web server, the dashboard, a database) answers otherwise or not at all, and Ray would keep
# retrying it for minutes, printing a warning every few seconds.
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_SETTINGS_FRAME = 4
_PROBE_TIMEOUT_S = 5.0


def _speaks_grpc(connection: Any) -> bool:
    try:
        connection.settimeout(_PROBE_TIMEOUT_S)
        connection.sendall(_HTTP2_PREFACE)
        head = b""
        while len(head) < 9:
            piece = connection.recv(9 - len(head))
            if not piece:
                break
            head += piece
    except OSError:
        return False
    return len(head) == 9 and head[3] == _SETTINGS_FRAME


def _tls_configured() -> bool:
    """Ray with TLS (`RAY_USE_TLS`) answers a plain HTTP/2 preface with nothing: the probe cannot tell then."""
    return os.environ.get("RAY_USE_TLS", "").strip().lower() in ("1", "true", "yes")


def _reason(error: BaseException, address: str) -> str:
    text = str(error).strip()
    if address == "auto" and "Could not find any running Ray instance" in text:
        # Ray's own text points at its `--address` flag, which assay does not have.
        return "no Ray cluster is running on this machine (start one with `ray start --head`)"
    return " ".join(text.split()).rstrip(".:") if text else type(error).__name__


_TOKEN = "with the cluster's token in ~/.ray/auth_token or RAY_AUTH_TOKEN"


def _token_advice(error: BaseException) -> str | None:
    """What to do when a cluster with token authentication (what `ray start` starts) was joined without a token:
    Ray sends none to an address it is given unless RAY_AUTH_MODE=token, and says so only deep in its error."""
    said = []
    cause: BaseException | None = error
    while cause is not None and len(said) < 10:
        said.append(str(cause))
        cause = cause.__cause__ or cause.__context__
    if any("InvalidAuthToken" in text or "Unauthenticated" in text for text in said):
        return (f"the cluster wants an authentication token, and Ray sends one to an address it is given only with "
                f"RAY_AUTH_MODE=token: set it, {_TOKEN}")
    if "client connection timeout" in said[0] and os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
        # A cluster waiting for a token the client does not send makes it time out, with nothing more said.
        return (f"the Ray client got no answer. A cluster that `ray start` started wants an authentication token: "
                f"set RAY_AUTH_MODE=token, {_TOKEN}; else check that its client port is reachable from here")
    return None


def _through_client(ray: Any) -> bool:
    """Whether this process joined its cluster through the Ray client (`ray://host:10001`)."""
    try:
        return bool(ray.util.client.ray.is_connected())
    except AttributeError:  # pragma: no cover - a Ray without the client
        return False


async def _taken(actor: Any, group: Any) -> AsyncIterator[Any]:
    """A group's results from `actor`, taken in batches as they arrive (the Ray client's way to stream)."""
    key = await _uncancelled(actor.open_stream.remote(group))
    done = False
    try:
        while not done:
            items, done = await _uncancelled(actor.take.remote(key))
            for item in items:
                yield item
    finally:
        if not done:  # the reader stopped early, or the worker failed: stop what still runs there
            with contextlib.suppress(Exception):
                actor.drop_stream.remote(key)


async def _uncancelled(reference: Any) -> Any:
    """`await reference`, except that a cancelled wait (Ctrl-C) leaves the reference's future alone: the Ray client
    sets the result of the future it made even when it was cancelled, and logs a traceback for each."""
    future = asyncio.wrap_future(reference.future())
    future.add_done_callback(lambda done: done.cancelled() or done.exception())  # read, so never "never retrieved"
    return await asyncio.shield(future)


def _death_errors(ray: Any) -> tuple[type[BaseException], ...]:
    exceptions = ray.exceptions
    names = ("RayActorError", "ActorDiedError", "ActorUnavailableError", "WorkerCrashedError", "NodeDiedError")
    return tuple(getattr(exceptions, name) for name in names if hasattr(exceptions, name))


def _unwrapped(ray: Any, error: BaseException) -> BaseException:
    """The worker's own exception rather than Ray's wrapper, so messages read as in a local run."""
    if isinstance(error, ray.exceptions.RayTaskError):
        cause = getattr(error, "cause", None)
        if isinstance(cause, BaseException):
            return cause
    return error


def _worker_actor_class(ray: Any) -> Any:
    class UnitWorkerActor:
        """Holds one kind-specific worker (adapter, pools, decoders) for its whole life."""

        def __init__(self, factory: Callable[..., Any], arguments: Sequence[Any], driver_cwd: str) -> None:
            from assay.core.ratelimit import set_limiter_factory

            # Relative paths a user typed (`--eval-dir eval`, an adapter file, an adapter command)
            # mean what they mean where the driver runs; on a node without that folder they stay as
            # they are. The actor owns its process, so changing its directory touches nothing else.
            if os.path.isdir(driver_cwd):
                os.chdir(driver_cwd)

            # Every worker of the cluster shares one limiter per endpoint (429s slow them all).
            set_limiter_factory(lambda endpoint, maximum: shared_limiter(endpoint, maximum))
            self._worker = factory(*arguments)
            self._pumps: dict[int, _Pump] = {}  # the streams the driver takes in batches (`open_stream`)
            self._opened = 0

        async def stream(self, group: Any) -> AsyncIterator[Any]:
            async for item in self._worker.stream(group):
                yield item

        # The Ray client (`ray://`) cannot stream an actor method's results: through it the driver starts the
        # stream here and takes what has arrived, as often as it needs to.
        async def open_stream(self, group: Any) -> int:
            self._opened += 1
            self._pumps[self._opened] = _Pump(self._worker.stream(group))
            return self._opened

        async def take(self, key: int) -> tuple[list[Any], bool]:
            pump = self._pumps[key]
            try:
                items, done = await pump.take()
            except BaseException:
                self._pumps.pop(key, None)
                raise
            if done:
                self._pumps.pop(key, None)  # (or dropped meanwhile)
            return items, done

        def drop_stream(self, key: int) -> None:
            pump = self._pumps.pop(key, None)
            if pump is not None:
                pump.task.cancel()

        async def call(self, group: Any) -> Any:
            return await self._worker.call(group)

        async def close(self) -> None:
            await self._worker.close()

        def pid(self) -> int:
            return os.getpid()

    return ray.remote(num_cpus=1, max_restarts=0)(UnitWorkerActor)


class _Pump:
    """A worker's stream read ahead into a buffer, so the driver can take its items in batches."""

    def __init__(self, items: AsyncIterator[Any]) -> None:
        self.buffer: list[Any] = []
        self.finished = False
        self.error: BaseException | None = None
        self.changed = asyncio.Event()
        self.task = asyncio.ensure_future(self._run(items))

    async def _run(self, items: AsyncIterator[Any]) -> None:
        try:
            async for item in items:
                self.buffer.append(item)
                self.changed.set()
        except Exception as error:
            self.error = error
        finally:
            self.finished = True
            self.changed.set()

    async def take(self) -> tuple[list[Any], bool]:
        """What arrived since the last take (waiting for one item at least), and whether the stream ended.

        The items before an error are taken first; the take after them raises it."""
        while not self.buffer and not self.finished:
            self.changed.clear()
            await self.changed.wait()
        items, self.buffer = self.buffer, []
        if not items and self.error is not None:
            raise self.error
        return items, self.finished and self.error is None


class _Pool:
    """Actors with a cap on groups in flight each; a group goes to the least loaded live actor."""

    def __init__(self, make: Callable[[], Any], size: int, per_actor: int) -> None:
        self._make = make
        self.actors = [make() for _ in range(size)]
        self._load = [0] * size
        self._per_actor = per_actor
        self._changed: asyncio.Condition | None = None

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def acquire(self) -> tuple[int, Any]:
        changed = self._condition()
        async with changed:
            while True:
                slot = min(range(len(self.actors)), key=lambda index: (self._load[index], index))
                if self._load[slot] < self._per_actor:
                    self._load[slot] += 1
                    return slot, self.actors[slot]
                await changed.wait()

    async def release(self, slot: int) -> None:
        changed = self._condition()
        async with changed:
            self._load[slot] -= 1
            changed.notify_all()

    def replace(self, slot: int, dead: Any, ray: Any) -> None:
        """A fresh actor in a dead one's place (once, however many of its groups noticed)."""
        if self.actors[slot] is dead:
            with contextlib.suppress(Exception):
                ray.kill(dead, no_restart=True)
            self.actors[slot] = self._make()


class RayExecutor:
    """An `assay.core.executor.Executor` over Ray actors built by `worker_factory(*factory_arguments)`.

    The worker object must offer `async stream(group)` (an async generator) and/or
    `async call(group)`, and `async close()`. `remainder(group, received)` says what of a group is
    left after a worker died having yielded `received` (None: nothing).
    """

    def __init__(
        self,
        ray: Any,
        worker_factory: Callable[..., Any],
        factory_arguments: Sequence[Any],
        *,
        workers: int,
        groups_per_worker: int = 1,
        remainder: Callable[[Any, list[Any]], Any] | None = None,
        reschedules: int = DEFAULT_RESCHEDULES,
        polled: bool | None = None,
    ) -> None:
        self._ray = ray
        # Through the Ray client a group's results are taken in batches: it has no streaming actor calls.
        self._polled = _through_client(ray) if polled is None else polled
        actor_class = _worker_actor_class(ray)
        arguments = list(factory_arguments)
        driver_cwd = os.getcwd()
        self._pool = _Pool(
            lambda: actor_class.remote(worker_factory, arguments, driver_cwd), workers, groups_per_worker
        )
        self._remainder = remainder or (lambda group, received: group)
        self._reschedules = reschedules
        self._deaths = _death_errors(ray)
        self.replaced_workers = 0

    @classmethod
    def connect(
        cls,
        worker_factory: Callable[..., Any],
        factory_arguments: Sequence[Any],
        *,
        address: str | None = None,
        workers: int | None = None,
        concurrency: int = 1,
        remainder: Callable[[Any, list[Any]], Any] | None = None,
    ) -> RayExecutor:
        """One worker per CPU of the cluster (or `workers`); `concurrency` groups in flight overall."""
        ray = ensure_ray(address)
        if workers is None:
            workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        per_worker = max(1, math.ceil(concurrency / workers))
        return cls(
            ray, worker_factory, factory_arguments, workers=workers, groups_per_worker=per_worker, remainder=remainder
        )

    @property
    def actors(self) -> list[Any]:
        return list(self._pool.actors)

    async def stream(self, group: Any) -> AsyncIterator[Any]:
        ray = self._ray
        lost = 0
        while group is not None:
            slot, actor = await self._pool.acquire()
            received: list[Any] = []
            generator = None
            polled: AsyncIterator[Any] | None = None
            settled = False  # ran to its end or its worker died: nothing left to cancel
            try:
                if self._polled:
                    polled = _taken(actor, group)
                    async for item in polled:
                        received.append(item)
                        yield item
                else:
                    generator = actor.stream.options(num_returns="streaming").remote(group)
                    async for reference in generator:
                        item = await reference
                        received.append(item)
                        yield item
                settled = True
                return
            except self._deaths as error:
                settled = True
                lost += 1
                self._pool.replace(slot, actor, ray)
                self.replaced_workers += 1
                if lost > self._reschedules:
                    raise WorkerLost(f"a worker died {lost} times running one unit group: {error}") from error
                group = self._remainder(group, received)
            except ray.exceptions.RayTaskError as error:
                settled = True
                raise _unwrapped(ray, error) from None
            finally:
                if generator is not None and not settled:
                    # The reader stopped early (an abort elsewhere): stop the worker's calls too.
                    with contextlib.suppress(Exception):
                        ray.cancel(generator)
                if polled is not None and not settled:
                    with contextlib.suppress(Exception):
                        await polled.aclose()
                await self._pool.release(slot)

    async def call(self, group: Any) -> Any:
        ray = self._ray
        lost = 0
        while True:
            slot, actor = await self._pool.acquire()
            try:
                return await actor.call.remote(group)
            except self._deaths as error:
                lost += 1
                self._pool.replace(slot, actor, ray)
                self.replaced_workers += 1
                if lost > self._reschedules:
                    raise WorkerLost(f"a worker died {lost} times running one unit: {error}") from error
            except ray.exceptions.RayTaskError as error:
                raise _unwrapped(ray, error) from None
            finally:
                await self._pool.release(slot)

    async def close(self) -> None:
        """Close every worker's adapter (the first failure is raised after all were asked), then stop them."""
        ray = self._ray
        failures: list[BaseException] = []
        for actor in self._pool.actors:
            try:
                await actor.close.remote()
            except self._deaths:
                pass
            except ray.exceptions.RayTaskError as error:
                failures.append(_unwrapped(ray, error))
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        if failures:
            raise failures[0]


# ---------------------------------------------------------------------------------------------
# One rate limiter per endpoint for the whole cluster


def _limiter_actor_class(ray: Any) -> Any:
    class LimiterActor:
        """The same AdaptiveLimiter every local run uses, shared by every worker through one actor."""

        def __init__(self, maximum: int) -> None:
            from assay.core.ratelimit import AdaptiveLimiter

            self._limiter = AdaptiveLimiter(maximum)

        async def acquire(self) -> None:
            await self._limiter.acquire()

        def release(self, outcome: str = "ok", retry_after: float | None = None) -> None:
            self._limiter.release(outcome, retry_after)

        def state(self) -> dict[str, Any]:
            limiter = self._limiter
            return {
                "limit": limiter.limit, "in_flight": limiter.in_flight, "rate_limited": limiter.rate_limited,
                "paused_until": limiter.paused_until,
            }

    # Acquires wait inside the actor; a high cap lets every worker's callers queue there.
    return ray.remote(num_cpus=0, max_concurrency=10_000)(LimiterActor)


class RemoteLimiter(LimiterSlots):
    """`AdaptiveLimiter`'s interface (acquire, release, slot) backed by a cluster-wide actor."""

    def __init__(self, actor: Any) -> None:
        self._actor = actor

    async def acquire(self) -> None:
        await self._actor.acquire.remote()

    def release(self, outcome: str = "ok", retry_after: float | None = None) -> Any:
        return self._actor.release.remote(outcome, retry_after)  # awaited by a slot (`_Slot.__aexit__`)

    async def state(self) -> dict[str, Any]:
        return await self._actor.state.remote()


def shared_limiter(endpoint: str, maximum: int = 256, *, address: str | None = None) -> RemoteLimiter:
    """The cluster's limiter of `endpoint`: created by the first caller, found by name by the rest.

    Detached, so it outlives the worker that happened to create it and every run on the cluster
    (and concurrent runs) shares one view of the endpoint's congestion; it holds no CPU."""
    ray = ensure_ray(address)
    actor = _limiter_actor_class(ray).options(
        name=f"assay-limiter:{endpoint}", namespace="assay", get_if_exists=True, lifetime="detached"
    ).remote(maximum)
    return RemoteLimiter(actor)
