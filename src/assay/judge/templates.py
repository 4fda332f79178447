"""Render prompt templates: `{{ name }}` placeholders filled from a dict of variables.

The subset of Nunjucks/Jinja the bundled prompts use, printing values as promptfoo (Nunjucks in JavaScript) does,
so a suite moved from eval-kit sends its model the same prompt: an unknown name or null renders empty, a boolean
`true`/`false`, a number as JavaScript writes it (`1.0` is `1`, `1e-07` is `1e-7`), a list as its items joined by
commas (`["a", "b"]` is `a,b`; nested lists flattened, a null item empty), and a string without one trailing
newline. Two differences, on purpose: an object (a dict, also inside a list) is its JSON, where Nunjucks writes
`[object Object]`, and a value's own text is never rendered as a template (promptfoo renders `{{ … }}` inside a
string variable, so a source document that contains braces would reach the model altered).
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any, Mapping

__all__ = ["render_template"]

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def _js_number(value: float) -> str:
    """A float as JavaScript's `String(number)` writes it: integral values without `.0`, fixed notation from
    1e-6 up to 1e21, exponent notation (`1e-7`, `1.5e+21`) beyond."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    if 1e-6 <= abs(value) < 1e21:  # the shortest digits that read back as this float, in fixed notation
        text = format(Decimal(repr(value)), "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    digits, exponent = f"{Decimal(repr(value)):e}".split("e")
    digits = digits.rstrip("0").rstrip(".") if "." in digits else digits
    return f"{digits}e{'+' if int(exponent) >= 0 else '-'}{abs(int(exponent))}"


def _item(value: Any) -> str:
    """One list item as JavaScript's `Array.prototype.join` writes it: null empty, a nested list flattened."""
    if value is None:
        return ""
    return _as_text(value, strip_newline=False)


def _as_text(value: Any, *, strip_newline: bool = True) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value[:-1] if strip_newline and value.endswith("\n") else value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, (list, tuple)):
        return ",".join(_item(item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def render_template(template: str, variables: Mapping[str, Any]) -> str:
    """Replace each `{{ name }}` in one pass, so text inside a value is never rendered again."""
    return _PLACEHOLDER.sub(lambda match: _as_text(variables.get(match.group(1))), template)
