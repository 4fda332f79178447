"""Experiments: one checked-in run configuration that binds an agent (and model, flags, limits) to evals.

Comparing two configurations means two experiment files; the CLI never overrides agent or model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.agent.adapter import check_agent
from assay.agent.definition import EvalDescriptor
from assay.agent.project import MAX_ATTEMPTS, MAX_CONCURRENCY, is_finite_number
from assay.core.bounded_input import check_values
from assay.core.jsonvalue import check_json_like
from assay.errors import ConfigError, JsonValueError

EvalSelection = str | Sequence[str] | Callable[[EvalDescriptor], bool]
MAX_TEXT_CHARS = 10_000  # model, reasoning_effort, description, each label
MAX_SHARED_STATE_CHARS = 200  # a lease key: named in file names, messages and the recover command


# What each number field counts, with an example: `lifetime="10m"` is refused saying the unit it is in.
_NUMBER_EXAMPLES = {"timeout": "of seconds, like timeout=120", "budget": "of US dollars, like budget=5.0",
                    "lifetime": "of seconds, like lifetime=1800"}


def _positive_number(value: Any, name: str, *, allow_zero: bool = False) -> float | None:
    if value is None:
        return None
    if not is_finite_number(value):
        example = _NUMBER_EXAMPLES.get(name)
        raise ConfigError(f"Experiment {name} must be a number" + (f" {example}; got {value!r:.40}" if example else ""))
    if value < 0 or (value == 0 and not allow_zero):
        raise ConfigError(f"Experiment {name} must be {'>= 0' if allow_zero else '> 0'}; got {value!r:.40}")
    return float(value)


def _takes_one(function: Callable[..., Any], name: str, example: str) -> None:
    """A hook or predicate that cannot be called with its one argument is said when the file loads: it failed at
    run time instead, as a TypeError in every attempt (`def setup():` errored each one `experiment-setup-failed`)."""
    import inspect

    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin or C callable without a signature: left to the run
        return
    try:
        signature.bind(None)
    except TypeError:
        raise ConfigError(f"Experiment {name} must take one argument, like {example}; it takes {signature}") from None


def _positive_int(value: Any, name: str, maximum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"Experiment {name} must be an integer >= 1; got {value!r:.40}")
    if value > maximum:
        raise ConfigError(f"Experiment {name} must be at most {maximum:,}; got {value:,}")


def _check_text(value: Any, name: str) -> None:
    if not isinstance(value, str):
        raise ConfigError(f"Experiment {name} must be a string")
    if len(value) > MAX_TEXT_CHARS:
        # Names and descriptions are printed in tables and receipts; megabytes would stall every listing.
        raise ConfigError(f"Experiment {name} must be at most {MAX_TEXT_CHARS:,} characters long")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate cannot be printed, journaled or sent to an endpoint.
        raise ConfigError(f"Experiment {name} must be valid Unicode text (it holds a lone surrogate)") from None


def _check_shared_state(value: Any) -> None:
    """One key, a line of text (NiceEval's `sharedState: {key}` is written as the key itself)."""
    if value is None:
        return
    if isinstance(value, Mapping):
        raise ConfigError(f'Experiment shared_state takes the key itself: write shared_state="{value.get("key", "…")}" '
                          "(NiceEval's sharedState: {key: …})")
    if not isinstance(value, str) or not value.strip():
        raise ConfigError("Experiment shared_state must be a non-empty string naming the external state (a key)")
    if len(value) > MAX_SHARED_STATE_CHARS or any(ord(character) < 32 or ord(character) == 127 for character in value):
        raise ConfigError(f"Experiment shared_state must be one line of at most {MAX_SHARED_STATE_CHARS} characters")


@dataclass(frozen=True)
class Experiment:
    agent: Any
    model: str | None = None
    reasoning_effort: str | None = None
    flags: Mapping[str, Any] = field(default_factory=dict)
    attempts: int = 1
    timeout: float | None = None  # seconds per attempt
    concurrency: int | None = None  # this experiment's own cap
    budget: float | None = None  # USD of estimated cost
    evals: EvalSelection = "*"
    description: str | None = None
    labels: Sequence[str] = ()
    setup: Callable[[Any], Any] | None = None
    teardown: Callable[[Any], Any] | None = None
    judge: Mapping[str, Any] | None = None
    sandbox: Any = None  # a SandboxLayer: the template (or command-only steps) this experiment contributes
    early_exit: bool | None = None  # stop an eval's undispatched attempts once one passes (None: the eval's own)
    shared_state: str | None = None  # a lease key: runs naming it never overlap (agent.shared_state)
    sandbox_reuse: bool = False  # attempts share sandboxes serially, the workdir reset between them
    lifetime: float | None = None  # seconds a reused sandbox may serve attempts; required with sandbox_reuse

    def __post_init__(self) -> None:
        check_agent(self.agent, "Experiment")
        self._check_reuse()
        if self.sandbox is not None:
            from assay.agent.sandbox.layers import check_layer

            check_layer(self.sandbox, "Experiment")
        for name in ("model", "reasoning_effort", "description"):
            value = getattr(self, name)
            if value is not None:
                _check_text(value, name)
        if not isinstance(self.flags, Mapping):
            raise ConfigError("Experiment flags must be a mapping of JSON values")
        # Bounded first (iterative: depth, integer size), so the recursive JSON check below cannot
        # overflow the stack and the flags can always be written to the checkpoint.
        check_values(dict(self.flags), source="Experiment flags", error=ConfigError)
        try:
            check_json_like(dict(self.flags), "Experiment flags")
        except JsonValueError as error:
            raise ConfigError(str(error)) from None
        _positive_int(self.attempts, "attempts", MAX_ATTEMPTS)
        _check_shared_state(self.shared_state)
        if self.early_exit is not None and not isinstance(self.early_exit, bool):
            raise ConfigError(f"Experiment early_exit must be True or False; got {self.early_exit!r:.40}")
        if self.concurrency is not None:
            _positive_int(self.concurrency, "concurrency", MAX_CONCURRENCY)
        _positive_number(self.timeout, "timeout")
        _positive_number(self.budget, "budget", allow_zero=True)
        evals = self.evals
        if isinstance(evals, str) and evals != "*":  # one prefix where the list goes
            raise ConfigError(f'Experiment evals must be "*", a list of eval id prefixes, or a predicate, got the '
                              f'string {evals!r}: for one prefix write evals=[{evals!r}]')
        if not (evals == "*" or callable(evals) or (
            isinstance(evals, Sequence) and not isinstance(evals, str) and all(isinstance(p, str) for p in evals)
        )):
            raise ConfigError('Experiment evals must be "*", a list of eval id prefixes, or a predicate')
        if isinstance(self.labels, str) or not all(isinstance(label, str) for label in self.labels):
            raise ConfigError("Experiment labels must be a list of strings")
        for label in self.labels:
            _check_text(label, "labels")
        for name in ("setup", "teardown"):
            hook = getattr(self, name)
            if hook is not None and not callable(hook):
                raise ConfigError(f"Experiment {name} must be callable")
            if hook is not None:
                _takes_one(hook, name, f"def {name}(ctx): ...")
        if callable(evals):
            _takes_one(evals, "evals", 'evals=lambda e: "smoke" in e.tags')
        if self.judge is not None:
            from assay.agent.judging import check_judge_settings

            check_judge_settings(self.judge, "Experiment judge")

    def _check_reuse(self) -> None:
        if not isinstance(self.sandbox_reuse, bool):
            raise ConfigError(f"Experiment sandbox_reuse must be True or False; got {self.sandbox_reuse!r:.40}")
        _positive_number(self.lifetime, "lifetime")
        if self.sandbox_reuse and self.lifetime is None:
            raise ConfigError(
                "Experiment sandbox_reuse=True needs lifetime=<seconds>: how long one sandbox may serve attempts "
                "before a fresh one is made (e.g. lifetime=1800)"
            )
        if self.lifetime is not None and not self.sandbox_reuse:
            raise ConfigError("Experiment lifetime is the life of a reused sandbox: set it with sandbox_reuse=True")

    def selects(self, descriptor: EvalDescriptor) -> bool:
        evals = self.evals
        if evals == "*":
            return True
        if callable(evals):
            return bool(evals(descriptor))
        return any(descriptor.id == prefix or descriptor.id.startswith(prefix) for prefix in evals)

    def identity(self) -> dict[str, Any]:
        """What makes two runs of this experiment comparable (and a checkpoint resumable)."""
        return {
            "agent": self.agent.name,
            "model": self.model,
            "reasoning_effort": self.reasoning_effort,
            "flags": dict(self.flags),
            "attempts": self.attempts,
            # Only when set, so experiments without a sandbox keep the identity their checkpoints recorded;
            # the template only (prepare steps name host paths, which differ between machines).
            **({"sandbox": self.sandbox.provider.describe() if self.sandbox.has_template else "command-only"}
               if self.sandbox is not None else {}),
            **({"shared_state": self.shared_state} if self.shared_state is not None else {}),
        }


__all__ = ["Experiment"]
