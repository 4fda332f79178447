"""What the viewer draws for an agent attempt's spans and phases: per turn, a waterfall of the app's
spans normalised to the GenAI semantic conventions, and the attempt's phase tree.

Normalisation only shapes the picture (spec §6): a span is a model call, a tool execution, a subagent
or other (what the agent's span mapper tagged it, `assay.span.kind`, else the GenAI conventions); a tool
span gets the input and output of the send events' operation with its call id; an error status is red;
past 150 spans a trace folds its `other` noise. Attributes are never changed.
"""

from __future__ import annotations

import math

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "FOLD_ABOVE", "KIND_ATTRIBUTE", "operations_of", "span_category", "timing_view", "trace_rows", "waterfall_view",
]

FOLD_ABOVE = 150
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "embeddings", "generate_content"})
SUBAGENT_OPERATIONS = frozenset({"invoke_agent", "create_agent"})
TOOL_NAME_KEYS = ("gen_ai.tool.name", "tool_name", "tool.name")
CALL_ID_KEYS = ("gen_ai.tool.call.id", "call_id", "tool_call_id", "tool.call.id")
MODEL, TOOL, SUBAGENT, OTHER = "model", "tool", "subagent", "other"
KIND_ATTRIBUTE = "assay.span.kind"  # what an agent's span mapper tagged a span (agent/traces/mapping.py)


def span_category(span: Mapping[str, Any]) -> str:
    attributes = span.get("attributes") or {}
    tagged = attributes.get(KIND_ATTRIBUTE)
    if tagged in (MODEL, TOOL, SUBAGENT, OTHER):
        return tagged
    operation = attributes.get("gen_ai.operation.name")
    operation = operation if isinstance(operation, str) else None  # a list in a damaged record: no operation
    name = str(span.get("name") or "")
    if operation in MODEL_OPERATIONS:
        return MODEL
    if operation == "execute_tool" or name.startswith("execute_tool") or any(key in attributes for key in TOOL_NAME_KEYS):
        return TOOL
    if operation in SUBAGENT_OPERATIONS or name.startswith(("invoke_agent", "create_agent")):
        return SUBAGENT
    return OTHER


def _call_id(attributes: Mapping[str, Any]) -> str | None:
    for key in CALL_ID_KEYS:
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def operations_of(turns: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """The operations of a session's turns by id: what went in and what came out (for the tool spans'
    io). Over every turn, since a call paused for a person's approval finishes in a later turn."""
    found: dict[str, dict[str, Any]] = {}
    for turn in turns:
        for event in (turn or {}).get("events") or ():
            if not isinstance(event, Mapping):
                continue
            operation_id = event.get("operation_id")
            if not isinstance(operation_id, str):
                continue
            entry = found.setdefault(operation_id, {})
            if event.get("type") == "operation.started":
                operation = event.get("operation")
                operation = operation if isinstance(operation, Mapping) else {}
                entry["name"] = operation.get("name")
                if "input" in operation:
                    entry["input"] = operation.get("input")
            elif event.get("type") == "operation.finished":
                entry["status"] = event.get("status")
                if "output" in event:
                    entry["output"] = event.get("output")
    return found


def _ms(nanoseconds: int) -> float:
    return round(nanoseconds / 1e6, 3)


def _number(value: Any) -> float:
    """A number of a stored record (a span's time in ns, a phase's offset in ms), 0 for what is no finite number (a
    record damaged by hand or by another tool: "abc", null, a list). The viewer draws what it can of such a record,
    never fails on it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return 0
    return value


def _nanos(value: Any) -> int:
    """A span's time or a count as an int (`_number`; a decimal text, as some exporters write times, too)."""
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return 0
    return int(_number(value))


def _clean_spans(trace: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The spans of one stored turn that can be drawn: a mapping with a text `span_id`; its times as ints, its
    attributes a mapping (else none), its parent id text (else none)."""
    spans = trace.get("spans")
    if not isinstance(spans, (list, tuple)):
        return []
    clean = []
    for span in spans:
        if not isinstance(span, Mapping) or not isinstance(span.get("span_id"), str) or not span["span_id"]:
            continue
        attributes = span.get("attributes")
        parent = span.get("parent_span_id")
        events = span.get("events")
        clean.append({
            **span, "start": _nanos(span.get("start")), "end": _nanos(span.get("end")),
            "attributes": attributes if isinstance(attributes, Mapping) else {},
            "parent_span_id": parent if isinstance(parent, str) else "",
            "events": [event for event in events if isinstance(event, Mapping)] if isinstance(events, (list, tuple)) else [],
        })
    return clean


def trace_rows(trace: Mapping[str, Any], operations: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """One turn's spans as waterfall rows in tree order (children by start), offsets from the turn's start;
    `operations` (from `operations_of`) back-fills each tool span's io by its call id."""
    spans = _clean_spans(trace)
    trace = {**trace, "start": _nanos(trace.get("start")), "end": _nanos(trace.get("end"))}
    by_id = {span["span_id"]: span for span in spans}
    children: dict[str, list[Mapping[str, Any]]] = {}
    roots = []
    for span in spans:
        parent = span.get("parent_span_id") or ""
        if parent and parent in by_id and parent != span["span_id"]:
            children.setdefault(parent, []).append(span)
        else:
            roots.append(span)
    start = min([int(trace.get("start") or 0)] + [int(span.get("start") or 0) for span in spans if span.get("start")])
    end = max([int(trace.get("end") or 0)] + [int(span.get("end") or 0) for span in spans])
    operations = operations or {}
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()

    def visit(span: Mapping[str, Any], depth: int) -> None:
        if span["span_id"] in seen:  # a cycle of parent ids (a broken exporter) is drawn once
            return
        seen.add(span["span_id"])
        attributes = span.get("attributes") or {}
        category = span_category(span)
        begun, ended = int(span.get("start") or start), int(span.get("end") or span.get("start") or start)
        row: dict[str, Any] = {
            "span_id": span["span_id"], "name": str(span.get("name") or "(unnamed)"), "category": category,
            "kind": span.get("kind"), "depth": depth, "offset_ms": _ms(begun - start),
            "duration_ms": _ms(max(0, ended - begun)), "error": span.get("status") == "error",
            "attributes": dict(attributes), "service": span.get("service"),
        }
        parent = span.get("parent_span_id") or ""
        if parent and parent not in by_id and parent != trace.get("span_id"):
            row["parent_missing"] = True  # its parent was never received: drawn at the top
        if span.get("status_message"):
            row["status_message"] = span["status_message"]
        if span.get("events"):
            row["events"] = [
                {"name": event.get("name"), "offset_ms": _ms((_nanos(event.get("time")) or begun) - start),
                 "attributes": event.get("attributes") if isinstance(event.get("attributes"), Mapping) else {}}
                for event in span["events"]
            ]
        if category == TOOL:
            call_id = _call_id(attributes)
            operation = operations.get(call_id) if call_id else None
            if operation is not None:
                row["io"] = {name: operation[name] for name in ("input", "output", "status") if name in operation}
        rows.append(row)
        for child in sorted(children.get(span["span_id"], ()), key=lambda item: int(item.get("start") or 0)):
            visit(child, depth + 1)

    for root in sorted(roots, key=lambda item: int(item.get("start") or 0)):
        visit(root, 0)
    for span in sorted(spans, key=lambda item: int(item.get("start") or 0)):
        if span["span_id"] not in seen:  # spans whose parents form a cycle: no root reaches them
            visit(span, 0)
    folded = _fold(rows) if len(rows) > FOLD_ABOVE else 0
    counts = {MODEL: 0, TOOL: 0, SUBAGENT: 0, OTHER: 0}
    for row in rows:
        counts[row["category"]] += 1
    session, number = trace.get("session") or 0, trace.get("turn")
    return {
        "session": session, "turn": number, "label": f"turn {number}" if not session else f"session {session} turn {number}",
        "trace_id": trace.get("trace_id"), "duration_ms": _ms(max(0, end - start)),
        "send_offset_ms": _ms(int(trace.get("start") or start) - start),
        "send_duration_ms": _ms(max(0, int(trace.get("end") or end) - int(trace.get("start") or start))),
        "span_count": len(rows), "folded": folded, "errors": sum(1 for row in rows if row["error"]),
        "counts": counts, "attributed_by_window": _nanos(trace.get("attributed_by_window")), "rows": rows,
    }


def _fold(rows: list[dict[str, Any]]) -> int:
    """Mark `other` spans with nothing but `other` below them (and no error) as folded; returns how many.
    Rows are in tree order (a parent before its children), so one pass from the end carries "keep" upwards."""
    keep = [row["category"] != OTHER or row["error"] for row in rows]
    parents: list[int] = []
    stack: list[int] = []  # the open ancestors of the current row, by depth
    for position, row in enumerate(rows):
        del stack[row["depth"]:]
        parents.append(stack[-1] if stack else -1)
        stack.append(position)
    for position in range(len(rows) - 1, -1, -1):
        if keep[position] and parents[position] >= 0:
            keep[parents[position]] = True
    folded = 0
    for row, kept in zip(rows, keep):
        if not kept:
            row["folded"] = True
            folded += 1
    return folded


def _session(turn: Mapping[str, Any]) -> Any:
    session = turn.get("session") or 0
    return session if isinstance(session, (int, str)) else 0  # a key: a list in a damaged record is none


def waterfall_view(detail: Mapping[str, Any]) -> dict[str, Any] | None:
    """Every turn's waterfall of an attempt's record (`detail` is its JSON), or None without spans."""
    document = detail.get("spans")
    if not isinstance(document, Mapping):
        return None
    sessions: dict[int, list[Mapping[str, Any]]] = {}
    turns = detail.get("turns")
    for turn in turns if isinstance(turns, (list, tuple)) else ():
        if isinstance(turn, Mapping):
            sessions.setdefault(_session(turn), []).append(turn)
    operations = {session: operations_of(turns) for session, turns in sessions.items()}
    traced = document.get("turns")
    traces = [
        trace_rows(trace, operations.get(_session(trace)))
        for trace in (traced if isinstance(traced, (list, tuple)) else ()) if isinstance(trace, Mapping)
    ]
    return {"turns": traces, "dropped": _nanos(document.get("dropped"))}


def timing_view(timing: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    """The phase tree with each row's depth, for drawing it as indented bars."""
    if not timing or not isinstance(timing, (list, tuple)):
        return None
    depths: list[int] = []
    rows = []
    for row in timing:
        if not isinstance(row, Mapping):
            continue
        parent = row.get("parent")
        depth = depths[parent] + 1 if isinstance(parent, int) and 0 <= parent < len(depths) else 0
        depths.append(depth)
        rows.append({
            "phase": row.get("phase"), "label": row.get("label"), "depth": depth,
            "start_offset_ms": _number(row.get("start_offset_ms")), "duration_ms": _number(row.get("duration_ms")),
            "open": bool(row.get("open")),
        })
    return rows
