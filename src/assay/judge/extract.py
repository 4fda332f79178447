"""Read a JSON value out of model text: bare JSON, fenced blocks, or JSON wrapped in prose.

Models add fences and sentences around the JSON they were asked for; this accepts those and nothing looser.
"""

from __future__ import annotations

import json
import re
from typing import Any

from assay.judge.errors import JudgeError

__all__ = ["parse_json_output"]

_LEADING_FENCE = re.compile(r"\A```(?:json)?[ \t]*\r?\n?", re.IGNORECASE)
_TRAILING_FENCE = re.compile(r"\r?\n?```\s*\Z")
_FENCED_BLOCK = re.compile(r"```(?:json)?[ \t]*\r?\n(.*?)\r?\n?```", re.IGNORECASE | re.DOTALL)


def _strict_loads(text: str) -> Any:
    return json.loads(text, parse_constant=_reject_constant)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _first_object_in(text: str) -> Any:
    """The first `{...}` that decodes as a JSON object, scanning left to right."""
    decoder = json.JSONDecoder(parse_constant=_reject_constant)
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    raise ValueError("no JSON object found")


def parse_json_output(text: str | None) -> Any:
    """Parse the JSON a model was asked to return; raise `JudgeError` when there is none.

    Order: the whole text (leading/trailing fence removed), each fenced block, the span from the first
    `{` to the last `}`, then the first decodable object inside surrounding prose.
    """
    stripped = (text or "").strip()
    if not stripped:
        raise JudgeError("model output was empty")
    unfenced = _TRAILING_FENCE.sub("", _LEADING_FENCE.sub("", stripped)).strip()
    attempts = [unfenced]
    attempts += [block.strip() for block in _FENCED_BLOCK.findall(stripped)]
    first, last = stripped.find("{"), stripped.rfind("}")
    if first != -1 and last > first:
        attempts.append(stripped[first : last + 1])
    for attempt in attempts:
        try:
            return _strict_loads(attempt)
        except ValueError:
            continue
    try:
        return _first_object_in(stripped)
    except ValueError:
        raise JudgeError("model output was not valid JSON") from None
