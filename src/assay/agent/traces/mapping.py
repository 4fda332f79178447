"""The agent-level span mapper (spec §6, normalisation): an agent tags its own span shapes as model calls,
tool executions or subagents for the waterfall, where no GenAI convention says what they are.

`define_agent(..., span_mapper=fn)` gets `fn(spans) -> spans` called once per turn, on copies of the spans
the turn received, when the attempt's spans are collected; `tag_span(span, op=…, kind=…)` adds
`gen_ai.operation.name` and `assay.span.kind` where the span has none, `heuristic_tag(span)` guesses them
from a span's name and attribute keys, and `heuristic_spans` is that guess as a ready mapper. Whatever a
mapper returns, only the attributes a span did not have are taken from it: no mapper can change or drop
what the app sent, and one that raises leaves the spans as they came (the spans document says why).
Spans only shape the waterfall; no assertion, verdict or error ever reads them.
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from assay.agent.traces.active import ACTIVE
from assay.view.waterfall import KIND_ATTRIBUTE, MODEL, OTHER, SUBAGENT, TOOL, span_category

SpanMapper = Callable[[list[dict[str, Any]]], Any]
OPERATION_ATTRIBUTE = "gen_ai.operation.name"
KINDS = (MODEL, TOOL, SUBAGENT, OTHER)
# Words of a span's name, and prefixes of its attribute keys, that say what it is; tool first (an agent's
# "tool_call" or an "llm.tool" is a tool), then model, then subagent ("agent.chat" is a model call).
_TOOL_WORDS = frozenset({"tool", "tools", "function", "functions", "mcp"})
_MODEL_WORDS = frozenset({"chat", "completion", "completions", "llm", "generate", "generation", "embedding",
                          "embeddings", "inference", "model", "prompt"})
_AGENT_WORDS = frozenset({"agent", "agents", "subagent", "delegate"})
_MODEL_KEYS = ("gen_ai.", "llm.", "openai.", "anthropic.")


def tag_span(span: Mapping[str, Any], *, op: str | None = None, kind: str | None = None) -> dict[str, Any]:
    """`span` with `gen_ai.operation.name` = `op` and `assay.span.kind` = `kind` (model, tool, subagent,
    other) added where it has no such attribute yet; nothing it has is changed. Returns a new span."""
    if kind is not None and kind not in KINDS:
        from assay.core.format import did_you_mean

        hint = did_you_mean(str(kind), KINDS, form=" (did you mean {}?)")
        raise ValueError(f"tag_span: kind must be one of {', '.join(KINDS)}, got {kind!r}{hint}")
    if op is not None and (not isinstance(op, str) or not op):
        raise ValueError(f"tag_span: op must be an operation name such as 'chat' or 'execute_tool', got {op!r}")
    attributes = dict(span.get("attributes") or {})
    for key, value in ((OPERATION_ATTRIBUTE, op), (KIND_ATTRIBUTE, kind)):
        if value is not None:
            attributes.setdefault(key, value)
    return {**span, "attributes": attributes}


def heuristic_kind(span: Mapping[str, Any]) -> str | None:
    """What a span that follows no convention most likely is (model, tool or subagent), from its name and
    attribute keys; None when nothing says, or when a convention already places it."""
    if span_category(span) != OTHER:
        return None
    keys = [str(key).lower() for key in span.get("attributes") or {}]
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(span.get("name") or ""))  # callLLM -> call LLM
    words = set(re.split(r"[^a-z0-9]+", name.lower())) - {""}
    if any("tool" in key for key in keys) or words & _TOOL_WORDS:
        return TOOL
    if any(key.startswith(_MODEL_KEYS) for key in keys) or words & _MODEL_WORDS:
        return MODEL
    if words & _AGENT_WORDS:
        return SUBAGENT
    return None


def heuristic_tag(span: Mapping[str, Any]) -> dict[str, Any]:
    """`span` tagged with its `heuristic_kind`, or unchanged (a copy) when nothing says what it is."""
    return tag_span(span, kind=heuristic_kind(span))


def heuristic_spans(spans: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A span mapper that tags every span it can guess: `define_agent(..., span_mapper=heuristic_spans)`."""
    return [heuristic_tag(span) for span in spans]


def check_span_mapper(mapper: Any, where: str) -> SpanMapper | None:
    """The mapper an agent definition names, refused at definition when it could never tag a span: no
    function, an `async def` (it is called, not awaited, when the attempt's spans are collected), or the
    one-span `heuristic_tag` where the turn's list goes."""
    from assay.errors import ConfigError

    if mapper is not None and not callable(mapper):
        raise ConfigError(f"{where}: span_mapper must be a function spans -> spans (e.g. heuristic_spans), "
                          f"got {type(mapper).__name__}")
    if mapper is heuristic_tag or mapper is tag_span:
        raise ConfigError(f"{where}: span_mapper={mapper.__name__} tags one span, and the mapper is given the "
                          "turn's list of spans: use span_mapper=heuristic_spans, or a function that maps the list")
    if mapper is not None and _is_async(mapper):
        raise ConfigError(f"{where}: span_mapper must be a plain function (def), not async def: it is called, "
                          "not awaited, when the attempt's spans are collected")
    if mapper is not None:
        try:
            inspect.signature(mapper).bind(None)
        except ValueError:  # no signature to read (a builtin): it is found out when called
            pass
        except TypeError:  # `def mapper(spans, ctx)`, `def mapper()`: it failed in every turn, a warning at most
            name = getattr(mapper, "__name__", type(mapper).__name__)
            raise ConfigError(f"{where}: span_mapper is called with one argument, the turn's list of spans, but "
                              f"{name}{inspect.signature(mapper)} cannot be called so; write it as "
                              f"def {name if name.isidentifier() else 'mapper'}(spans)") from None
    return mapper


def _is_async(function: Any) -> bool:
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(getattr(function, "__call__", None))


def map_document(document: Mapping[str, Any] | None, mapper: SpanMapper | None) -> Mapping[str, Any] | None:
    """An attempt's spans document with each turn's spans as `mapper` tagged them (attributes added only);
    a mapper that fails leaves its turn's spans as they were and names the failure in the document."""
    if document is None or mapper is None:
        return document
    turns = []
    failure = None
    for trace in document.get("turns") or ():
        spans = list(trace.get("spans") or ())
        try:
            # Deep copies: a mapper that edits what it is given (clears a span's events, appends to a list value)
            # must not change what the app sent, which the record keeps as it came.
            given = [{**span, "attributes": dict(span.get("attributes") or {})} for span in copy.deepcopy(spans)]
            spans = _merged(spans, mapper(given))
        # The author's code: the waterfall goes on without it. A `sys.exit()` in it is a failure too: raised
        # while the attempt's spans are collected, it ended the whole run with no result and no word of why.
        except (Exception, SystemExit) as error:  # noqa: BLE001
            if failure is None:
                from assay.agent.misspelt import keyword_meant

                # `tag_span(span, knd="tool")`: Python 3.11 names the keyword but not the one meant
                failure = f"{type(error).__name__}: {error}{keyword_meant(error)}"
        turns.append({**trace, "spans": spans})
    mapped = {**document, "turns": turns}
    if failure is not None:
        mapped["span_mapper_error"] = failure[:500]
    return mapped


def _merged(spans: list[Mapping[str, Any]], returned: Any) -> list[Mapping[str, Any]]:
    """The received spans, each with the attributes the mapper's span of the same id added (and no other change)."""
    if inspect.isawaitable(returned):
        getattr(returned, "close", lambda: None)()  # never awaited: without this Python warns on stderr
        raise TypeError("the span mapper returned an awaitable (an async function?), not a list of spans")
    if returned is None:  # tagged in place (or no `return` at all): nothing came back to take tags from
        raise TypeError("the span mapper returned None, not a list of spans; it must return the spans "
                        "(`return spans` after tagging them in place)")
    if isinstance(returned, (str, bytes, Mapping)) or not isinstance(returned, Iterable):
        raise TypeError(f"the span mapper returned {type(returned).__name__}, not a list of spans")
    received = {span.get("span_id"): span.get("attributes") or {} for span in spans}
    added: dict[Any, dict[str, Any]] = {}
    for span in returned:  # a list, or any iterable of spans (a generator expression)
        if not isinstance(span, Mapping):
            raise TypeError(f"the span mapper returned a {type(span).__name__} among its spans, not a span")
        if span.get("span_id") not in received:
            # A span made anew (`{"name": …, "attributes": …}`) tags nothing: its tags were silently dropped.
            which = ("no span_id" if span.get("span_id") is None
                     else f"span_id {span.get('span_id')!r}, which is none of the turn's spans")
            raise ValueError(f"the span mapper returned a span ({str(span.get('name'))[:60]!r}) with {which}; "
                             "return the spans it is given, tagged (tag_span(span, kind=…) keeps a span's id)")
        attributes = span.get("attributes") or {}
        kind = attributes.get(KIND_ATTRIBUTE)
        if kind is not None and kind not in KINDS and KIND_ATTRIBUTE not in received[span.get("span_id")]:
            # Set by hand, not by tag_span: the waterfall drew the span as `other` whatever it said.
            from assay.core.format import did_you_mean

            hint = did_you_mean(str(kind), KINDS, form=" (did you mean {}?)")
            raise ValueError(f"the span mapper set {KIND_ATTRIBUTE} to {kind!r} on span "
                             f"{str(span.get('name'))[:60]!r}; it must be one of {', '.join(KINDS)}{hint}")
        added.setdefault(span.get("span_id"), {}).update(
            (str(key), value) for key, value in attributes.items() if _attribute_value(value))
    merged = []
    for span in spans:
        original = span.get("attributes") or {}
        new = {key: value for key, value in added.get(span.get("span_id"), {}).items() if key not in original}
        merged.append({**span, "attributes": {**original, **new}} if new else span)
    return merged


def _attribute_value(value: Any) -> bool:
    """What an OpenTelemetry attribute may hold (and the record can store as JSON)."""
    if isinstance(value, (list, tuple)):
        return all(isinstance(item, (str, bool, int, float)) for item in value)
    return isinstance(value, (str, bool, int, float))


class MappedSend:
    """The `send` of an agent with a span mapper: it tells the run's tracing which mapper this attempt's spans
    get, then calls the author's `send` (`body`, which carry identity and error locations read)."""

    __slots__ = ("body", "mapper", "agent", "__wrapped__")

    def __init__(self, body: Callable[..., Any], mapper: SpanMapper, agent: str = "") -> None:
        self.body = body
        self.mapper = mapper
        self.agent = agent  # its name, for what a failing mapper's warning says
        self.__wrapped__ = body

    async def __call__(self, input: Any, ctx: Any) -> Any:
        tracing = ACTIVE.get()
        attempt_id = getattr(getattr(ctx, "settings", None), "attempt_id", None)
        if tracing is not None and attempt_id:
            tracing.map_spans_with(attempt_id, self.mapper, self.agent)
        return await self.body(input, ctx)


__all__ = [
    "KINDS", "KIND_ATTRIBUTE", "MappedSend", "OPERATION_ATTRIBUTE", "SpanMapper", "check_span_mapper", "heuristic_kind",
    "heuristic_spans", "heuristic_tag", "map_document", "tag_span",
]
