"""Model judges for every kind: an OpenAI-compatible client, JSON extraction, schema checks and a cache.

Import from here; the submodules are the implementation. Each name is imported from its module when first
read (`core/lazy_names.py`): an agent that only talks to an endpoint through `judge.openai_http` does not
import the schema checks (jsonschema) nor the openai SDK the client pulls in.
"""

from typing import TYPE_CHECKING

from assay.core.lazy_names import lazy_names

if TYPE_CHECKING:  # what type checkers see; at run time each name is imported from its module on first use
    from assay.judge.cache import CallCache, DirectoryCallCache, MemoryCallCache, call_cache_key
    from assay.judge.client import ChatRequest, Completion, JsonCompletion, JudgeClient, JudgeEndpoint
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

__getattr__, __dir__ = lazy_names(globals(), {
    "assay.judge.cache": ("CallCache", "DirectoryCallCache", "MemoryCallCache", "call_cache_key"),
    "assay.judge.client": ("ChatRequest", "Completion", "JsonCompletion", "JudgeClient", "JudgeEndpoint"),
    "assay.judge.errors": ("JudgeError",),
    "assay.judge.extract": ("parse_json_output",),
    "assay.judge.templates": ("render_template",),
    "assay.judge.validation": ("schema_errors", "strip_all_of", "validation_message"),
})
