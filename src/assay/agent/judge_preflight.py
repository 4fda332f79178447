"""The judge preflight: before dispatch, one cheap probe per judge endpoint the attempts to run will call.

An endpoint that fails it is never waited on again: its judge assertions come out unavailable at once
(`judge-precheck-failed`, never passed) and the run warns once, naming the endpoint, with the planned
attempts and the affected attempts and assertions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.agent.judging import Judge, JudgeRequest, JudgeScore, JudgeUnavailable, resolve_judge_config
from assay.agent.run_options import PREFLIGHT_TIMEOUT_S

__all__ = [
    "EndpointUse", "PRECHECK_FAILED", "PREFLIGHT_TIMEOUT_S", "PreflightedJudge", "affected_counts",
    "planned_endpoints", "unreachable_endpoints",
]

PRECHECK_FAILED = "judge-precheck-failed"


@dataclass
class EndpointUse:
    """One judge endpoint and how many of the attempts to run declare a judge that calls it."""

    base_url: str
    api_key: str | None
    timeout: float
    attempts: int = 0


def planned_endpoints(configs: Iterable[Mapping[str, Any] | None], environ: Mapping[str, str] | None = None
                      ) -> dict[str, EndpointUse]:
    """The endpoints of these attempts' merged judge configs (None: no judge declared). A config that
    cannot resolve (no model, no key) makes no call at all, so it needs no probe."""
    endpoints: dict[str, EndpointUse] = {}
    for config in configs:
        settings = _resolve(config, environ) if config is not None else None
        if settings is None:
            continue
        use = endpoints.get(settings["base_url"])
        if use is None:
            use = endpoints[settings["base_url"]] = EndpointUse(settings["base_url"], settings["api_key"], settings["timeout"])
        use.attempts += 1
    return endpoints


def _resolve(config: Mapping[str, Any], environ: Mapping[str, str] | None) -> dict[str, Any] | None:
    try:
        return resolve_judge_config(config, environ)
    except JudgeUnavailable:
        return None


async def unreachable_endpoints(endpoints: Mapping[str, EndpointUse], timeout: float = PREFLIGHT_TIMEOUT_S
                                ) -> dict[str, str]:
    """`{base_url: why}` for each endpoint that failed its probe; all are probed at once."""
    from assay.judge.openai_http import probe_endpoint

    uses = list(endpoints.values())
    answers = await asyncio.gather(*(
        probe_endpoint(use.base_url, api_key=use.api_key, timeout=min(timeout, use.timeout)) for use in uses
    ))
    return {use.base_url: reason for use, reason in zip(uses, answers) if reason is not None}


class PreflightedJudge:
    """A judge whose calls to an endpoint that failed the preflight are unavailable at once."""

    def __init__(self, inner: Judge, unreachable: Mapping[str, str], environ: Mapping[str, str] | None = None) -> None:
        self.inner = inner
        self.unreachable = dict(unreachable)
        self.environ = environ

    async def grade(self, request: JudgeRequest) -> JudgeScore:
        settings = resolve_judge_config(request.config, self.environ)  # unresolved: unavailable, as before
        why = self.unreachable.get(settings["base_url"])
        if why is not None:
            raise JudgeUnavailable(PRECHECK_FAILED, f"judge endpoint {settings['base_url']} failed the preflight ({why})")
        return await self.inner.grade(request)


def affected_counts(results: Sequence[Any], base_url: str) -> tuple[int, int]:
    """(attempts, judge assertions) made unavailable by this endpoint's failed preflight."""
    marker = f"{PRECHECK_FAILED}: judge endpoint {base_url} "
    attempts = assertions = 0
    for result in results:
        found = sum(1 for assertion in result.assertions if str(assertion.get("reason") or "").startswith(marker))
        if found:
            attempts += 1
            assertions += found
    return attempts, assertions


def unreachable_warnings(results: Sequence[Any], endpoints: Mapping[str, EndpointUse], unreachable: Mapping[str, str],
                         ) -> Iterator[tuple[str, dict[str, Any]]]:
    """One warning per endpoint that failed the preflight, once its attempts are over: (message, its fields), as
    `assay agent run` and the pytest plugin both say it."""
    for base_url, why in unreachable.items():
        attempts, assertions = affected_counts(results, base_url)
        errored = sum(1 for result in results if result.verdict == "errored" and affected_counts([result], base_url)[0])
        planned = endpoints[base_url].attempts if base_url in endpoints else 0
        yield (f"judge endpoint {base_url} failed the preflight ({why}): {assertions} judge assertion(s) in "
               f"{attempts} of {planned} planned attempt(s) are unavailable, not passed ({errored} errored)",
               {"endpoint": base_url, "planned": planned, "affected": attempts, "assertions": assertions,
                "errored": errored})
