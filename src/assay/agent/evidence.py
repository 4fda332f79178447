"""Evidence derived from the event stream: logical tool occurrences, scopes of turns, usage and coverage.

Started/finished operations are paired by operation id within a session line (a HITL pause can
finish a call a turn later); coverage folds to the worst value over the turns of a scope.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.agent.model import (
    MISSING, EvidenceCoverage, InputRequest, Message, StreamEvent, Usage,
    USAGE_FIELDS,
)

CANONICAL_TOOL_NAMES = frozenset({
    "file_read", "file_write", "file_edit", "shell", "web_fetch", "web_search", "glob", "grep", "list_dir",
    "agent_task", "unknown",
})
# Conservative on purpose: bare verbs such as `search` or `run` stay app tools, never hijacked.
_TOOL_ALIASES = {
    "read_file": "file_read", "readfile": "file_read", "read": "file_read", "view_file": "file_read",
    "write_file": "file_write", "write": "file_write", "create_file": "file_write",
    "edit_file": "file_edit", "edit": "file_edit", "multiedit": "file_edit", "apply_patch": "file_edit",
    "str_replace_editor": "file_edit", "str_replace_based_edit_tool": "file_edit",
    "bash": "shell", "shell": "shell", "run_shell_command": "shell", "exec_command": "shell",
    "local_shell": "shell", "terminal": "shell",
    "web_fetch": "web_fetch", "webfetch": "web_fetch", "fetch_url": "web_fetch",
    "web_search": "web_search", "websearch": "web_search",
    "glob": "glob", "grep": "grep", "list_dir": "list_dir", "ls": "list_dir", "list_directory": "list_dir",
    "task": "agent_task", "agent_task": "agent_task",
}


def canonical_tool_name(name: str, declared: str | None = None) -> str:
    if declared in CANONICAL_TOOL_NAMES:
        return declared  # type: ignore[return-value]
    return _TOOL_ALIASES.get(name.lower(), "unknown")


@dataclass(slots=True)
class ToolOccurrence:
    """One logical call: made per started event; `status` stays `pending` until its finish is seen."""

    id: str  # `<session>.<turn>.<event>`: where it started, never the operation id
    session: int
    turn: int
    event: int
    operation_id: str
    kind: str  # tool | subagent
    name: str
    canonical: str
    input: Any
    status: str = "pending"
    output: Any = MISSING
    finish_turn: int | None = None
    command: Any = None  # the agent's command projection (assay.agent.logical_command), when it gave one

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "id": self.id, "kind": self.kind, "name": self.name, "canonical": self.canonical,
            "input": self.input, "status": self.status,
        }
        if self.output is not MISSING:
            document["output"] = self.output
        if self.command is not None:
            document["command"] = self.command
        return document


@dataclass(slots=True)
class TurnRecord:
    """One settled turn as the runner keeps it (the agent's events plus the runner's own facts)."""

    session: int
    ordinal: int  # 1-based within its session line
    input_text: str
    events: Sequence[StreamEvent]
    status: str
    coverage: EvidenceCoverage
    data: Any = MISSING
    usage: Usage | None = None
    output_error: str | None = None
    requests: tuple[InputRequest, ...] = ()
    user_message: Message | None = None
    _occurrences: list[ToolOccurrence] | None = None

    @property
    def label(self) -> str:
        return f"turn {self.ordinal}" if self.session == 0 else f"session {self.session} turn {self.ordinal}"

    def occurrences(self) -> list[ToolOccurrence]:
        """This turn's own occurrences: a call finished only in a later turn is pending here."""
        if self._occurrences is None:
            line = OccurrenceLedger(self.session)
            line.add_turn(self)
            self._occurrences = line.occurrences
        return self._occurrences


class OccurrenceLedger:
    """Pairs operation events of one session line, turn after turn."""

    __slots__ = ("session", "occurrences", "_open", "orphans")

    def __init__(self, session: int) -> None:
        self.session = session
        self.occurrences: list[ToolOccurrence] = []
        self._open: dict[tuple[str, str], ToolOccurrence] = {}
        self.orphans: list[str] = []

    def add_turn(self, turn: TurnRecord) -> None:
        for position, event in enumerate(turn.events):
            kind = event.type
            if kind == "operation.started":
                operation = event.operation
                is_tool = operation.kind == "tool"
                occurrence = ToolOccurrence(
                    id=f"{self.session}.{turn.ordinal}.{position}",
                    session=self.session, turn=turn.ordinal, event=position,
                    operation_id=event.operation_id, kind=operation.kind, name=operation.name,
                    canonical=canonical_tool_name(operation.name, operation.tool) if is_tool else "agent_task",
                    input=operation.input if is_tool else MISSING,
                    command=operation.command if is_tool else None,
                )
                self.occurrences.append(occurrence)
                self._open[(operation.kind, event.operation_id)] = occurrence
            elif kind == "operation.finished":
                occurrence = self._open.pop((event.kind, event.operation_id), None)
                if occurrence is None:
                    self.orphans.append(event.operation_id)
                    continue
                occurrence.status = event.status
                occurrence.output = event.output
                occurrence.finish_turn = turn.ordinal


@dataclass(slots=True)
class ScopeView:
    """The turns an assertion sees (a turn, a session prefix, or a cut across session lines)."""

    name: str
    turns: Sequence[TurnRecord]
    default_coverage: EvidenceCoverage
    ledgers: Sequence[OccurrenceLedger] | None = None  # None: derive from the turns alone
    _coverage: EvidenceCoverage | None = field(default=None)

    @property
    def coverage(self) -> EvidenceCoverage:
        if self._coverage is None:
            coverage = self.default_coverage
            for turn in self.turns:
                coverage = coverage.combined(turn.coverage)
            self._coverage = coverage
        return self._coverage

    def occurrences(self) -> list[ToolOccurrence]:
        if self.ledgers is None:
            return [occurrence for turn in self.turns for occurrence in turn.occurrences()]
        if len(self.ledgers) == 1:
            return self.ledgers[0].occurrences
        return [occurrence for ledger in self.ledgers for occurrence in ledger.occurrences]

    def events(self, *, with_user_messages: bool = True) -> list[tuple[TurnRecord, int, StreamEvent]]:
        """(turn, position, event) in order; user messages (recorded by the runner) get position -1."""
        rows: list[tuple[TurnRecord, int, StreamEvent]] = []
        for turn in self.turns:
            if with_user_messages and turn.user_message is not None:
                rows.append((turn, -1, turn.user_message))
            rows.extend((turn, position, event) for position, event in enumerate(turn.events))
        return rows


def sum_usage(turns: Sequence[TurnRecord]) -> tuple[Usage, bool]:
    """Field-wise sums over turns, and whether every turn reported usage."""
    if len(turns) == 1 and turns[0].usage is not None:
        return turns[0].usage, True
    totals: dict[str, Any] = {}
    complete = True
    for turn in turns:
        usage = turn.usage
        if usage is None:
            complete = False
            continue
        for name in USAGE_FIELDS:
            value = getattr(usage, name)
            if value is not None:
                totals[name] = totals.get(name, 0) + value
    return Usage(**totals), complete


def sum_counts(counts: Iterable[Mapping[str, Any] | None]) -> dict[str, Any]:
    """Key-wise sums of numeric values (usage fields, retries by reason); None, bools and text are skipped."""
    totals: dict[str, Any] = {}
    for mapping in counts:
        for name, value in (mapping or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                totals[name] = totals.get(name, 0) + value
    return totals


def last_assistant_text(turns: Sequence[TurnRecord]) -> str | None:
    for turn in reversed(turns):
        for event in reversed(turn.events):
            if event.type == "message" and event.role == "assistant":
                return event.text
    return None


__all__ = [
    "CANONICAL_TOOL_NAMES", "OccurrenceLedger", "ScopeView", "ToolOccurrence", "TurnRecord", "canonical_tool_name",
    "last_assistant_text", "sum_counts", "sum_usage",
]
