"""Where a model call goes, and with which key, when the caller does not say: one precedence for all.

An explicit value wins, then the caller's own environment variables in order, then OPENAI_BASE_URL
for the URL, then a default URL (or none, where a caller must be told); an empty value counts as unset.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "AGENT_JUDGE_DEFAULTS",
    "AGENT_MODEL_DEFAULTS",
    "JUDGE_CLIENT_DEFAULTS",
    "OPENAI_API_KEY_VARIABLE",
    "OPENAI_BASE_URL",
    "OPENAI_BASE_URL_VARIABLE",
    "PLACEHOLDER_API_KEY",
    "EndpointDefaults",
]

OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENAI_BASE_URL_VARIABLE = "OPENAI_BASE_URL"
OPENAI_API_KEY_VARIABLE = "OPENAI_API_KEY"
PLACEHOLDER_API_KEY = "not-needed"  # local servers (vLLM, Ollama, llama.cpp) accept any key, the SDK wants one


@dataclass(frozen=True, slots=True)
class EndpointDefaults:
    """One caller's defaults: its own variables come before OPENAI_BASE_URL; the key variables are
    all there is for a key (a caller naming its own key variable does not fall back to another)."""

    base_url_variables: tuple[str, ...] = ()
    api_key_variables: tuple[str, ...] = (OPENAI_API_KEY_VARIABLE,)
    default_base_url: str | None = OPENAI_BASE_URL  # None: no default, the caller must name an endpoint

    def base_url(self, explicit: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
        if explicit:  # the common case, on every model request: answer before building anything
            return explicit
        found = _first_set(None, (*self.base_url_variables, OPENAI_BASE_URL_VARIABLE), environ)
        return found or self.default_base_url

    def api_key(self, explicit: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
        return _first_set(explicit, self.api_key_variables, environ)

    def with_api_key_variable(self, name: str | None) -> EndpointDefaults:
        """The same defaults with the key read from `name` alone (None or "": no key at all)."""
        return EndpointDefaults(self.base_url_variables, (name,) if name else (), self.default_base_url)


def _first_set(explicit: str | None, names: tuple[str, ...], environ: Mapping[str, str] | None) -> str | None:
    if explicit:
        return explicit
    env = os.environ if environ is None else environ
    for name in names:
        value = env.get(name)
        if value:
            return value
    return None


# Agent model endpoints (openai_chat_agent, openai_responses_agent).
AGENT_MODEL_DEFAULTS = EndpointDefaults()
# Agent LLM judges: the judge variables the document kind reads come first, so a user who named a judge
# server there does not send agent transcripts to OPENAI_BASE_URL or OpenAI's API instead.
AGENT_JUDGE_DEFAULTS = EndpointDefaults(
    base_url_variables=("ASSAY_JUDGE_BASE_URL",),
    api_key_variables=("ASSAY_JUDGE_API_KEY", OPENAI_API_KEY_VARIABLE),
)
# `assay.judge` clients configured from the environment (the doc kind's judges). No default URL on
# purpose: a judge run must say which server receives the documents.
JUDGE_CLIENT_DEFAULTS = EndpointDefaults(
    base_url_variables=("ASSAY_JUDGE_BASE_URL",),
    api_key_variables=("ASSAY_JUDGE_API_KEY", OPENAI_API_KEY_VARIABLE),
    default_base_url=None,
)
