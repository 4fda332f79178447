"""Estimated cost of a turn from its model and token usage, using a price table (USD per million tokens).

assay ships no built-in prices (they change too often to hard-code); projects set them in
`[tool.assay.pricing]`. Keys are exact model names or `provider/*` wildcards; exact keys win.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from assay.agent.model import Usage

PRICE_FIELDS = ("input", "output", "cache_read", "cache_creation")
# USD per million tokens. Far above any real price, and low enough that a cost (tokens x price) stays a
# finite float: an infinite estimate cannot be gated on or written to a JSON receipt.
MAX_PRICE = 1_000_000


def find_price(model: str | None, pricing: Mapping[str, Mapping[str, float]]) -> Mapping[str, float] | None:
    if not model:
        return None
    if model in pricing:
        return pricing[model]
    provider, slash, _ = model.partition("/")
    if slash and f"{provider}/*" in pricing:
        return pricing[f"{provider}/*"]
    return None


def estimate_cost(model: str | None, usage: Usage | None, pricing: Mapping[str, Mapping[str, float]]) -> float | None:
    """USD, or None when no estimate can be formed (no model, usage or price); a zero price is valid.

    Token counts come from the agent: a count too large to price (overflowing a float) gives no estimate
    rather than an infinite or crashing one.
    """
    if usage is None or usage.total_tokens is None:
        return None
    price = find_price(model, pricing)
    if price is None:
        return None
    total = 0.0
    for tokens, rate_name in (
        (usage.input_tokens, "input"), (usage.output_tokens, "output"),
        (usage.cache_read_tokens, "cache_read"), (usage.cache_creation_tokens, "cache_creation"),
    ):
        if not tokens:
            continue
        rate = price.get(rate_name)
        if rate is None:
            return None
        try:
            total += tokens * rate / 1_000_000
        except OverflowError:
            return None
    return total if math.isfinite(total) else None


def unpriced_reason(model: str | None, usage: Mapping[str, Any] | None, pricing: Mapping[str, Mapping[str, float]]) -> str:
    """Why `estimate_cost` gave no estimate for an attempt of `model` that reported `usage` (its token
    counts as a result holds them), said so a person knows what to add."""
    if not model:
        return "its experiment names no model"
    if not usage or (usage.get("input_tokens") is None and usage.get("output_tokens") is None):
        return "its agent reports no token usage (Turn(usage=...))"
    price = find_price(model, pricing)
    if price is None:
        from assay.core.format import did_you_mean

        # A table keyed `scripted_1` for the model `scripted-1` is the likeliest reason: name the key meant.
        near = did_you_mean(model, [str(key) for key in pricing], form=" (its table has {}: a misspelt key?)")
        return f"[tool.assay.pricing] has no price for {model!r}" + (near if pricing else " (the table is empty or missing)")
    for name in PRICE_FIELDS:
        if usage.get(f"{name}_tokens") and price.get(name) is None:
            return f"the price of {model!r} in [tool.assay.pricing] has no {name} rate, and {name} tokens were used"
    return "its token counts are too large to price"


def _price_problem(rate: Any) -> str | None:
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or (isinstance(rate, float) and math.isnan(rate)) or rate < 0:
        return "must be a non-negative number (USD per million tokens)"
    if rate > MAX_PRICE:  # also infinity, and ints too large for a float
        return f"must be at most {MAX_PRICE:,} (USD per million tokens)"
    return None


def check_pricing(value: Any, where: str) -> dict[str, dict[str, float]]:
    from assay.errors import ConfigError

    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a table of model name -> prices")
    table: dict[str, dict[str, float]] = {}
    for model, prices in value.items():
        if not isinstance(prices, Mapping):
            raise ConfigError(f"{where}.{model} must be a table like {{input = 2.5, output = 10.0}}")
        entry: dict[str, float] = {}
        for name, rate in prices.items():
            if name not in PRICE_FIELDS:
                from assay.core.format import did_you_mean

                # `inptu = 0.4` for `input`: the rate meant, as the rest of [tool.assay] names its misspelt keys.
                meant = did_you_mean(name, PRICE_FIELDS, form=" (did you mean {}?)")
                raise ConfigError(f"{where}.{model}.{name} is unknown{meant}; use {', '.join(PRICE_FIELDS)}")
            problem = _price_problem(rate)
            if problem is not None:
                raise ConfigError(f"{where}.{model}.{name} {problem}")
            entry[name] = float(rate)
        table[str(model)] = entry
    return table


__all__ = ["MAX_PRICE", "PRICE_FIELDS", "check_pricing", "estimate_cost", "find_price"]
