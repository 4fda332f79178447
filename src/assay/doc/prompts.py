"""Prompt templates for model runs: which template a suite uses, and the versions it declares.

Bundled prompts (our own words, eval-kit's variable names) unless the config names a suite file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from assay.doc.config import DocSuite
from assay.errors import ConfigError

__all__ = ["BUNDLED_PROMPTS", "PromptTemplate", "extract_version", "load_prompt_template"]

PROMPT_ROOT = Path(__file__).resolve().parent / "prompts"
BUNDLED_PROMPTS = {
    "generation": PROMPT_ROOT / "generation.md",
    "pointwise_judge": PROMPT_ROOT / "pointwise-judge.md",
    "pairwise_judge": PROMPT_ROOT / "pairwise-judge.md",
}
_METHOD_FOR_KEY = {"generation": "generate", "pointwise_judge": "judge_coverage", "pairwise_judge": "judge_pairwise"}
_ALIASES = {
    "@eval-kit/generation": "generation",
    "@eval-kit/pointwise": "pointwise_judge",
    "@eval-kit/pairwise": "pairwise_judge",
}

_ALIAS_NAMES = {target: alias.removeprefix("@eval-kit/") for alias, target in _ALIASES.items()}


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    key: str
    text: str
    source: str  # "bundled" or the suite-relative path


def load_prompt_template(suite: DocSuite, key: str) -> PromptTemplate:
    """`prompt_templates[key]`, then `methods.<method>.prompt`, then the bundled prompt.

    An `@eval-kit/...` alias must name the prompt of its own key: eval-kit silently used the key's
    prompt whatever the alias said, so `@eval-kit/pairwise` under `generation` meant generation.
    """
    method = suite.method(_METHOD_FOR_KEY[key]) or {}
    value = (suite.raw.get("prompt_templates") or {}).get(key) or method.get("prompt")
    setting = f"prompt_templates.{key}" if (suite.raw.get("prompt_templates") or {}).get(key) else (
        f"methods.{_METHOD_FOR_KEY[key]}.prompt"
    )
    if not value:
        return PromptTemplate(key, BUNDLED_PROMPTS[key].read_text(encoding="utf-8"), "bundled")
    if value.startswith("@eval-kit/"):
        if value not in _ALIASES:
            raise ConfigError(  # eval-kit's words, then which aliases exist
                f"unknown eval-kit prompt alias: {value} (an unknown alias; use one of {', '.join(_ALIASES)})"
            )
        if _ALIASES[value] != key:
            expected = next(alias for alias, target in _ALIASES.items() if target == key)
            raise ConfigError(f"prompt alias {value} does not fit the {key} prompt; use {expected}")
        return PromptTemplate(key, BUNDLED_PROMPTS[key].read_text(encoding="utf-8"), "bundled")
    path = suite.resolver.resolve_suite_path(value, f"{key} prompt template")
    try:
        return PromptTemplate(key, path.read_text(encoding="utf-8"), value)
    except (OSError, UnicodeDecodeError) as error:
        from assay.doc.paths import relative_posix

        reason = "not UTF-8 text" if isinstance(error, UnicodeDecodeError) else (error.strerror or str(error))
        root = relative_posix(suite.repo_root, suite.suite_root) or "."
        # eval-kit's words first; then which setting named the file, and what it is relative to.
        raise ConfigError(
            f"could not read {key} prompt template {value}: {reason} (fix {setting} in {suite.relative_config_path()};"
            f" it is relative to the suite root {root}, or use @eval-kit/{_ALIAS_NAMES[key]} for the bundled prompt)"
        ) from None


def extract_version(template: str, label: str, source: str | None = None) -> str:
    """The first ``<label>: `value` `` in the template whose value is not itself a placeholder.

    As in eval-kit, any whitespace (a line break too) may stand between the colon and the backtick, and the
    value may not be empty; a blank value is passed over too (no judge could echo it), so a template without a
    usable line is named as such, not the adapter's hook blamed for an empty `prompt_version`. `source`, a suite
    template's path, is named in the error with the line it needs (eval-kit's words first)."""
    for match in re.finditer(re.escape(label) + r":\s*`([^`]+)`", template):
        if "{{" not in match.group(1) and match.group(1).strip():
            return match.group(1)
    if source and source != "bundled":
        example = f"{label}: `my-{label.split()[0].lower()}-v1`"
        raise ConfigError(f"Could not find {label} in prompt template {source}; add a line like {example}")
    raise ConfigError(f"Could not find {label} in prompt")
