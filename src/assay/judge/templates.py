"""Render prompt templates: `{{ name }}` placeholders filled from a dict of variables.

The subset of Nunjucks/Jinja the bundled prompts use; an unknown name renders empty, as in promptfoo.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

__all__ = ["render_template"]

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def render_template(template: str, variables: Mapping[str, Any]) -> str:
    """Replace each `{{ name }}` in one pass, so text inside a value is never rendered again."""
    return _PLACEHOLDER.sub(lambda match: _as_text(variables.get(match.group(1))), template)

