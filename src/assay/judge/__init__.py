"""Model judges for every kind: an OpenAI-compatible client, JSON extraction, schema checks and a cache.

Import from here; the submodules are the implementation.
"""

from assay.judge.cache import CallCache, DirectoryCallCache, MemoryCallCache, call_cache_key
from assay.judge.errors import JudgeError
from assay.judge.extract import parse_json_output
from assay.judge.templates import render_template
from assay.judge.validation import schema_errors, strip_all_of, validation_message

__all__ = [
    "CallCache",
    "ChatRequest",
    "Completion",
    "DirectoryCallCache",
    "JsonCompletion",
    "JudgeClient",
    "JudgeEndpoint",
    "JudgeError",
    "MemoryCallCache",
    "call_cache_key",
    "parse_json_output",
    "render_template",
    "schema_errors",
    "strip_all_of",
    "validation_message",
]


def __getattr__(name: str):  # the client pulls in the openai SDK; load it only when asked for
    if name in {"ChatRequest", "Completion", "JsonCompletion", "JudgeClient", "JudgeEndpoint"}:
        from assay.judge import client

        return getattr(client, name)
    raise AttributeError(name)
