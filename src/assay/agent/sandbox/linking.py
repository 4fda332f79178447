"""Link planning: which sandbox each (experiment, eval) pair gets, decided before anything is created.

Exactly one side carries the template; a sandbox agent without one, a template on both sides, or a
sandbox layer with a direct agent is a configuration error naming the pair. The plan
(`assay.agent.plan.link_plan`) puts each pair's `SandboxBinding` on its planned attempts, where the
attempt engine, carry and the execution identity read it.
`assay agent run --sandbox docker:IMAGE` (or `local`) swaps the provider of every linked pair's template,
keeping its prepare steps and hooks; the swap is part of the binding, so the pair's execution identity
(and so carry) sees it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.agent.sandbox.diff_rules import DiffRules
from assay.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from assay.agent.sandbox.layers import SandboxLayer

KEEP_CHOICES = ("failed", "all")
SANDBOX_CHOICES = "local, local:bubblewrap, local:none or docker:IMAGE"


class SandboxStageError(Exception):
    """A lifecycle step failed; `code` becomes the attempt's error code (the attempt is errored)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def is_sandbox_agent(agent: Any) -> bool:
    return getattr(agent, "kind", "direct") == "sandbox"


@dataclass(frozen=True, slots=True)
class SandboxBinding:
    """One pair's sandbox: its layers (the template owner's first, the agent's own last), diff rules, keep."""

    layers: tuple[SandboxLayer, ...]
    template_owner: str  # eval | experiment
    diff: DiffRules = DiffRules()
    keep: str | None = None  # --keep-sandbox: failed | all

    @property
    def provider(self) -> Any:
        return self.layers[0].provider


def sandbox_override(text: str | None) -> Any | None:
    """The provider `--sandbox` names (None when not given); UsageError for anything else."""
    if text is None:
        return None
    kind, colon, rest = text.strip().partition(":")
    if kind == "local" and (not colon or rest in ("auto", "bubblewrap", "none")):
        from assay.agent.sandbox.local import LocalProvider

        return LocalProvider(isolation=rest or "auto")
    if kind == "docker" and rest.strip():
        from assay.agent.sandbox.docker import DockerProvider

        return DockerProvider(image=rest.strip())
    if kind == "docker":
        hint = " (name the image: docker:python:3.12)"
    elif kind == "local" and not rest.strip():  # `local:` is not `local`: what came after the colon went missing
        hint = " (nothing after the colon: give local alone, local:bubblewrap or local:none)"
    else:  # a misspelt local form (`local:bubblwrap`, `locl`); `dokcer:img` is docker:img meant
        from assay.core.format import did_you_mean

        hint = did_you_mean(text.strip(), ("local", "local:bubblewrap", "local:none")) or did_you_mean(
            kind, ("docker",), shown=lambda _: repr(f"docker:{rest}") if rest else "'docker:IMAGE'")
    raise UsageError(f"--sandbox takes {SANDBOX_CHOICES}, got {text!r}{hint}", "--sandbox")


def link_pair(experiment_id: str, experiment: Any, eval_id: str, definition: Any, keep: str | None = None,
              override: Any = None) -> SandboxBinding | None:
    """The binding of one pair, None when it needs no sandbox; ConfigError when it cannot be linked.
    `override` (a provider, from `--sandbox`) replaces the template-bearing layer's provider."""
    agent = experiment.agent
    eval_layer: SandboxLayer | None = getattr(definition, "sandbox", None)
    experiment_layer: SandboxLayer | None = getattr(experiment, "sandbox", None)
    pair = f"eval {eval_id} with experiment {experiment_id}"
    if not is_sandbox_agent(agent):
        if eval_layer is not None or experiment_layer is not None:
            side = "eval" if eval_layer is not None else "experiment"
            raise ConfigError(
                f"{pair}: the {side} has a sandbox, but agent {agent.name!r} is a direct agent; sandboxes are for "
                f"define_sandbox_agent(...) agents. Leave this eval out of the experiment (e.g. tag it and use "
                f"`evals=lambda e: 'sandbox' not in e.tags`)"
            )
        return None
    owners = [
        side for side, layer in (("eval", eval_layer), ("experiment", experiment_layer))
        if layer is not None and layer.has_template
    ]
    if not owners:
        raise ConfigError(
            f"{pair}: agent {agent.name!r} needs a sandbox, but neither the eval nor the experiment carries a "
            "template; give one of them sandbox=local_sandbox() (or docker_sandbox(...), define_sandbox(...))"
        )
    if len(owners) == 2:
        raise ConfigError(
            f"{pair}: both the eval and the experiment carry a sandbox template; exactly one side chooses the "
            "provider (make the other a command-only sandbox_layer())"
        )
    owner = owners[0]
    first, second = (eval_layer, experiment_layer) if owner == "eval" else (experiment_layer, eval_layer)
    layers = [layer for layer in (first, second, getattr(agent, "sandbox", None)) if layer is not None]
    if override is not None:
        layers[0] = dataclasses.replace(layers[0], provider=override)
    return SandboxBinding(tuple(layers), owner, DiffRules.from_config(getattr(definition, "diff", None)), keep)


def check_keep(keep: str | None) -> str | None:
    if keep is not None and keep not in KEEP_CHOICES:
        from assay.core.format import did_you_mean

        hint = did_you_mean(keep, KEEP_CHOICES)
        raise UsageError(f"--keep-sandbox takes failed or all (--keep-sandbox=all), got {keep!r}{hint}", "--keep-sandbox")
    return keep


__all__ = [
    "KEEP_CHOICES", "SANDBOX_CHOICES", "SandboxBinding", "SandboxStageError", "check_keep", "is_sandbox_agent", "link_pair",
    "sandbox_override",
]
