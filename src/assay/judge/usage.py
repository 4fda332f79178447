"""What a judge's calls cost, as the endpoint reported it: one tally per model (`count_usage`), added up
across clients, processes and runs (`merged_usage`, `usage_since`). Plain dicts of counts, so a run's
record, its receipt and a Ray worker's reply carry them as they are; no import of the judge's client.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

USAGE_FIELDS = ("calls", "cached", "no_usage", "input_tokens", "output_tokens", "cache_read_tokens")


def count_usage(tally: dict[str, dict[str, int]], model: str, reply: Any) -> None:
    """Add one answer to `tally[model]`: a call the endpoint answered (`reply`, its JSON body) or, with
    `reply=None`, an answer read from the cache, which cost nothing.

    Tokens are read as OpenAI's chat completions report them (`prompt_tokens`, of which
    `prompt_tokens_details.cached_tokens` were read from the provider's prompt cache, and
    `completion_tokens`), or as its Responses API does (`input_tokens`, `output_tokens`); a count
    that is no whole number is not guessed at. A reply without usage is counted in `no_usage`, so a
    total is never shown as complete when it is not.
    """
    entry = tally.setdefault(model, dict.fromkeys(USAGE_FIELDS, 0))
    if reply is None:
        entry["cached"] += 1
        return
    entry["calls"] += 1
    usage = reply.get("usage") if isinstance(reply, Mapping) else None
    if not isinstance(usage, Mapping):
        entry["no_usage"] += 1
        return
    prompt = _token_count(usage, "prompt_tokens", "input_tokens")
    output = _token_count(usage, "completion_tokens", "output_tokens")
    if prompt is None and output is None:
        entry["no_usage"] += 1
        return
    details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details")
    cached = _token_count(details, "cached_tokens") if isinstance(details, Mapping) else None
    cached = min(cached or 0, prompt or 0)
    entry["input_tokens"] += (prompt or 0) - cached
    entry["cache_read_tokens"] += cached
    entry["output_tokens"] += output or 0


def merged_usage(tallies: Iterable[Mapping[str, Mapping[str, int]]]) -> dict[str, dict[str, int]]:
    """Several `usage` tallies as one (model by model)."""
    merged: dict[str, dict[str, int]] = {}
    for tally in tallies:
        for model, counts in tally.items():
            entry = merged.setdefault(model, dict.fromkeys(USAGE_FIELDS, 0))
            for name in USAGE_FIELDS:
                entry[name] += counts.get(name, 0)
    return merged


def _token_count(usage: Mapping[str, Any], *names: str) -> int | None:
    for name in names:
        value = usage.get(name)
        if type(value) is int and value >= 0:
            return value
    return None


def usage_since(now: Mapping[str, Mapping[str, int]], before: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    """What `now` added to `before` (a tally taken earlier from the same client): a worker's calls since it
    last said, so that the calls of many replies add up to the worker's once each."""
    added: dict[str, dict[str, int]] = {}
    for model, counts in now.items():
        earlier = before.get(model, {})
        delta = {name: counts.get(name, 0) - earlier.get(name, 0) for name in USAGE_FIELDS}
        if any(delta.values()):
            added[model] = delta
    return added


__all__ = ["USAGE_FIELDS", "count_usage", "merged_usage", "usage_since"]
