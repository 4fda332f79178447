"""Matchers: pure, immutable comparison rules that say matched, mismatched or unavailable, with a reason.

Each is a frozen value whose one `evaluate(value)` returns an `Outcome`: value matchers (`equals`, `includes`,
`json_match`, …) serve `t.check`, `tool_match` / `event_match` select evidence; `satisfies` may be async.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.agent.model import MISSING
from assay.agent.outcome import MATCHED, MATCHED_OUTCOME, MISMATCHED, UNAVAILABLE, Matcher, Outcome, Unavailable

TOOL_STATUSES = frozenset({"pending", "completed", "failed", "rejected"})
_REPR_LIMIT = 200

_show_encoder = json.JSONEncoder(ensure_ascii=False, default=repr).encode


def show(value: Any) -> str:
    """A short, safe rendering of a value for reasons and reports."""
    if value is MISSING:
        return "<missing>"
    try:
        text = _show_encoder(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 1] + "…"


def _unobserved(value: Any) -> Outcome | None:
    if isinstance(value, Unavailable):
        return Outcome(UNAVAILABLE, value.reason)
    if value is MISSING:
        return Outcome(UNAVAILABLE, "value was not reported")
    return None


def _as_jsonish(value: Any) -> Any:
    """A pydantic model as its JSON, anything else as it is. Not `core.jsonvalue.jsonable`: that
    converts deeply, so an `Unavailable` or MISSING inside the value would become text and read as
    mismatched instead of unavailable, and predicates would be handed text instead of their values."""
    dump = getattr(value, "model_dump", None)
    if dump is not None and callable(dump) and not isinstance(value, type):
        return dump(mode="json")
    return value


def deep_equal(expected: Any, actual: Any) -> bool:
    """Structural equality where booleans only equal booleans and tuples equal lists."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if isinstance(expected, Mapping):
        return (
            isinstance(actual, Mapping) and len(expected) == len(actual)
            and all(key in actual and deep_equal(value, actual[key]) for key, value in expected.items())
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, (list, tuple)) and len(expected) == len(actual)
            and all(deep_equal(item, other) for item, other in zip(expected, actual))
        )
    return expected == actual


@dataclass(frozen=True, slots=True)
class Equals(Matcher):
    expected: Any

    def evaluate(self, value: Any) -> Outcome:
        unobserved = _unobserved(value)
        if unobserved is not None:
            return unobserved
        expected = self.expected
        if type(value) is not type(expected) and not isinstance(expected, type):
            value = _as_jsonish(value)
            expected = _as_jsonish(expected)
        if deep_equal(expected, value):
            return MATCHED_OUTCOME
        return Outcome(MISMATCHED, f"expected {show(expected)}, got {show(value)}")

    def describe(self) -> str:
        return f"equals({show(self.expected)})"


_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*|#[^\n]*", re.DOTALL)


def _text_of(value: Any, strip_comments: bool) -> str | Outcome:
    unobserved = _unobserved(value)
    if unobserved is not None:
        return unobserved
    if not isinstance(value, str):
        return Outcome(MISMATCHED, f"expected text, got {show(value) if value is not None else 'nothing'}")
    return _COMMENTS.sub("", value) if strip_comments else value


@dataclass(frozen=True, slots=True)
class Includes(Matcher):
    text: str
    strip_comments: bool = False

    def evaluate(self, value: Any) -> Outcome:
        subject = _text_of(value, self.strip_comments)
        if isinstance(subject, Outcome):
            return subject
        if self.text in subject:
            return MATCHED_OUTCOME
        return Outcome(MISMATCHED, f"{show(subject)} does not include {show(self.text)}")

    def describe(self) -> str:
        return f"includes({show(self.text)})"


@dataclass(frozen=True, slots=True)
class Excludes(Matcher):
    text: str
    strip_comments: bool = False

    def evaluate(self, value: Any) -> Outcome:
        subject = _text_of(value, self.strip_comments)
        if isinstance(subject, Outcome):
            return subject
        if self.text not in subject:
            return MATCHED_OUTCOME
        return Outcome(MISMATCHED, f"{show(subject)} includes {show(self.text)}")

    def describe(self) -> str:
        return f"excludes({show(self.text)})"


@dataclass(frozen=True, slots=True)
class Pattern(Matcher):
    regex: re.Pattern[str]
    strip_comments: bool = False

    def evaluate(self, value: Any) -> Outcome:
        subject = _text_of(value, self.strip_comments)
        if isinstance(subject, Outcome):
            return subject
        if self.regex.search(subject):
            return MATCHED_OUTCOME
        return Outcome(MISMATCHED, f"{show(subject)} does not match /{self.regex.pattern}/")

    def describe(self) -> str:
        return f"pattern(/{self.regex.pattern}/)"


def _json_match(expected: Any, actual: Any, path: str) -> Outcome:
    unobserved = _unobserved(actual)
    if unobserved is not None:
        return Outcome(UNAVAILABLE, f"{path}: {unobserved.reason}")
    if isinstance(expected, Matcher):
        outcome = expected.evaluate(actual)
        if inspect.isawaitable(outcome):
            raise TypeError("json_match takes synchronous matchers only")
        if outcome.status == MATCHED:
            return outcome
        return Outcome(outcome.status, f"{path}: {outcome.reason}")
    if isinstance(expected, re.Pattern):
        if isinstance(actual, str) and expected.search(actual):
            return MATCHED_OUTCOME
        return Outcome(MISMATCHED, f"{path}: {show(actual)} does not match /{expected.pattern}/")
    if callable(expected) and not isinstance(expected, type):
        name = getattr(expected, "__name__", "predicate")
        result = expected(actual)
        if inspect.isawaitable(result):  # a coroutine is truthy: read as a result, every value would match
            getattr(result, "close", lambda: None)()
            raise TypeError(f"{path}: the predicate {name} is async, and json_match and tool_match call their "
                            f"predicates without awaiting them: make it a plain `def`, or check the value on its own "
                            f"with t.check(value, satisfies(\"{name}\", {name}))")
        if isinstance(result, Matcher):  # a matcher is truthy too: `{"city": is_defined}` would match None
            raise TypeError(f"{path}: the predicate {name} returned the matcher {result.describe()} instead of true "
                            f"or false: put the matcher itself at that place ({result.describe()}, called), not a "
                            "function that makes it")
        if result:
            return MATCHED_OUTCOME
        return Outcome(MISMATCHED, f"{path}: {show(actual)} does not satisfy {name}")
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return Outcome(MISMATCHED, f"{path}: expected an object, got {show(actual)}")
        for key, value in expected.items():
            child = f"{path}.{key}"
            if key not in actual:
                return Outcome(MISMATCHED, f"{child}: missing")
            outcome = _json_match(value, actual[key], child)
            if outcome.status != MATCHED:
                return outcome
        return MATCHED_OUTCOME
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)):
            return Outcome(MISMATCHED, f"{path}: expected an array, got {show(actual)}")
        if len(expected) != len(actual):
            return Outcome(MISMATCHED, f"{path}: expected {len(expected)} items, got {len(actual)}")
        for position, (item, other) in enumerate(zip(expected, actual)):
            outcome = _json_match(item, other, f"{path}[{position}]")
            if outcome.status != MATCHED:
                return outcome
        return MATCHED_OUTCOME
    if deep_equal(expected, actual):
        return MATCHED_OUTCOME
    return Outcome(MISMATCHED, f"{path}: expected {show(expected)}, got {show(actual)}")


@dataclass(frozen=True, slots=True)
class JsonMatch(Matcher):
    """Objects match partially (extra keys are fine), arrays element by element (same length);
    a compiled regex, a predicate or a matcher may stand at any level."""

    expected: Any

    def evaluate(self, value: Any) -> Outcome:
        return _json_match(self.expected, _as_jsonish(value), "$")

    def describe(self) -> str:
        return f"json_match({show(self.expected)})"


@dataclass(frozen=True, slots=True)
class Matches(Matcher):
    """Validates against a pydantic model, a TypeAdapter or a JSON Schema dict."""

    schema: Any

    def evaluate(self, value: Any) -> Outcome:
        unobserved = _unobserved(value)
        if unobserved is not None:
            return unobserved
        from assay.agent.structured import validate_against

        problems = validate_against(self.schema, value)[1]
        if not problems:
            return MATCHED_OUTCOME
        return Outcome(MISMATCHED, "; ".join(problems))

    def describe(self) -> str:
        name = getattr(self.schema, "__name__", None) or (self.schema.get("title") if isinstance(self.schema, dict) else None)
        return f"matches({name or 'schema'})"


@dataclass(frozen=True, slots=True)
class Satisfies(Matcher):
    label: str
    predicate: Callable[[Any], Any]

    def evaluate(self, value: Any) -> Outcome | Awaitable[Outcome]:
        unobserved = _unobserved(value)
        if unobserved is not None:
            return unobserved
        result = self.predicate(value)
        if inspect.isawaitable(result):
            return self._settle(result, value)
        return self._outcome(result, value)

    async def _settle(self, pending: Awaitable[Any], value: Any) -> Outcome:
        return self._outcome(await pending, value)

    def _outcome(self, result: Any, value: Any) -> Outcome:
        if isinstance(result, Outcome):
            return result
        if isinstance(result, Matcher):  # truthy, so it would match every value
            raise TypeError(f"{self.describe()}: its function returned the matcher {result.describe()} instead of "
                            f"true or false: check with the matcher itself, t.check(value, {result.describe()})")
        if result:
            return MATCHED_OUTCOME
        return Outcome(MISMATCHED, self._mismatch(value))

    def _mismatch(self, value: Any) -> str:
        return f"{show(value)} does not satisfy {self.label}"

    def describe(self) -> str:
        return f"satisfies({self.label!r})"


@dataclass(frozen=True, slots=True)
class Refinement(Matcher):
    name: str
    label: str | None = None

    def evaluate(self, value: Any) -> Outcome:
        unobserved = _unobserved(value)
        if unobserved is not None:
            return unobserved
        if self.name == "is_defined":
            ok = value is not None
        elif self.name == "is_true":
            ok = value is True
        else:
            ok = value is False
        if ok:
            return MATCHED_OUTCOME
        what = {"is_defined": "a defined value", "is_true": "true", "is_false": "false"}[self.name]
        return Outcome(MISMATCHED, f"expected {self.label or what}, got {show(value)}")

    def describe(self) -> str:
        return f"{self.name}()"


def _levenshtein(first: str, second: str) -> int:
    if len(first) < len(second):
        first, second = second, first
    previous = list(range(len(second) + 1))
    for row, left in enumerate(first, start=1):
        current = [row]
        for column, right in enumerate(second, start=1):
            current.append(min(previous[column] + 1, current[column - 1] + 1, previous[column - 1] + (left != right)))
        previous = current
    return previous[-1]


@dataclass(frozen=True, slots=True)
class Similarity(Matcher):
    """A measurement: 1 - normalized Levenshtein distance; use `.gate(n)` on the assertion to require it."""

    expected: str

    def evaluate(self, value: Any) -> Outcome:
        subject = _text_of(value, False)
        if isinstance(subject, Outcome):
            return subject
        longest = max(len(subject), len(self.expected))
        score = 1.0 if longest == 0 else 1.0 - _levenshtein(subject, self.expected) / longest
        return Outcome(MATCHED, f"similarity {score:.3f}", score)

    def describe(self) -> str:
        return f"similarity({show(self.expected)})"


_URL = re.compile(r"https?://[^\s<>\"'`)\]}]+", re.IGNORECASE)
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+\S.*|[ \t]*)$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


@dataclass(frozen=True, slots=True)
class IncludesUrl(Matcher):
    """At least `minimum` distinct http(s) URLs in the text."""

    minimum: int = 1

    def evaluate(self, value: Any) -> Outcome:
        subject = _text_of(value, False)
        if isinstance(subject, Outcome):
            return subject
        found = {url.rstrip(".,;:!?") for url in _URL.findall(subject)}
        if len(found) >= self.minimum:
            return MATCHED_OUTCOME
        return Outcome(MISMATCHED, f"expected at least {self.minimum} distinct http(s) URL(s), found {len(found)}")

    def describe(self) -> str:
        return "includes_url()" if self.minimum == 1 else f"includes_url({self.minimum})"


@dataclass(frozen=True, slots=True)
class HasSections(Matcher):
    """At least `minimum` Markdown headings (`#` … `######`), not counting lines inside fenced code."""

    minimum: int = 2

    def evaluate(self, value: Any) -> Outcome:
        subject = _text_of(value, False)
        if isinstance(subject, Outcome):
            return subject
        headings = 0
        fenced = False
        for line in subject.splitlines():
            if _FENCE.match(line):
                fenced = not fenced
            elif not fenced and _HEADING.match(line) and line.strip("# \t"):
                headings += 1
        if headings >= self.minimum:
            return MATCHED_OUTCOME
        return Outcome(MISMATCHED, f"expected at least {self.minimum} Markdown heading(s), found {headings}")

    def describe(self) -> str:
        return "has_sections()" if self.minimum == 2 else f"has_sections({self.minimum})"


def _glob_regex(glob: str) -> re.Pattern[str]:
    """`**` crosses folders, `*` and `?` stay within one; a pattern without a `/` matches a path's last part."""
    parts = []
    position = 0
    while position < len(glob):
        char = glob[position]
        if glob.startswith("**/", position):
            parts.append("(?:.*/)?")
            position += 3
            continue
        if glob.startswith("**", position):
            parts.append(".*")
            position += 2
            continue
        parts.append("[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char))
        position += 1
    body = "".join(parts)
    return re.compile(body if "/" in glob else f"(?:.*/)?{body}")


def _strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in _strings_in(item)]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _strings_in(item)]
    return []


def _path_candidates(text: str) -> list[str]:
    words = [text, *text.split()]
    candidates = []
    for word in words:
        word = word.strip("\"'`,;()[]{}")
        while word.startswith("./"):
            word = word[2:]
        if word:
            candidates.append(word)
    return candidates


@dataclass(frozen=True, slots=True)
class ReferencesAnyPath(Matcher):
    """Some string in a (JSON) value, or a word of one, is a path matching one of the globs."""

    globs: tuple[str, ...]

    def evaluate(self, value: Any) -> Outcome:
        unobserved = _unobserved(value)
        if unobserved is not None:
            return unobserved
        patterns = [_glob_regex(glob[2:] if glob.startswith("./") else glob) for glob in self.globs]
        for text in _strings_in(_as_jsonish(value)):
            for candidate in _path_candidates(text):
                if any(pattern.fullmatch(candidate) for pattern in patterns):
                    return MATCHED_OUTCOME
        return Outcome(MISMATCHED, f"{show(value)} mentions no path matching {', '.join(self.globs)}")

    def describe(self) -> str:
        return f"references_any_path({show(list(self.globs))})"


@dataclass(frozen=True, slots=True)
class ValueMatch(Satisfies):
    """`define_value_match(name, evaluate)`: a `satisfies` under the author's name (`label`); `evaluate` may be async
    and may return an `Outcome` itself."""

    def _mismatch(self, value: Any) -> str:
        return f"{show(value)} does not match {self.label}"

    def describe(self) -> str:
        return f"{self.label}()"


@dataclass(frozen=True, slots=True)
class ScoreMatch(Satisfies):
    """`define_score_match(name, score)`: `score(value)` (may be async) is a number in [0, 1], the measurement; a
    score outside [0, 1] or not finite errors the assertion, it is never clamped."""

    def _outcome(self, result: Any, value: Any) -> Outcome:
        if isinstance(result, Outcome):
            return result
        if isinstance(result, bool) or not isinstance(result, (int, float)):
            raise TypeError(f"{self.label}: a score match returns a number in [0, 1], got {result!r}")
        return Outcome(MATCHED, f"{self.label} {float(result):.3f}", float(result))

    def describe(self) -> str:
        return f"{self.label}()"


def _combine_and(outcomes: Sequence[Outcome]) -> Outcome:
    for outcome in outcomes:
        if outcome.status == MISMATCHED:
            return outcome
    for outcome in outcomes:
        if outcome.status == UNAVAILABLE:
            return outcome
    return MATCHED_OUTCOME


def _combine_or(outcomes: Sequence[Outcome]) -> Outcome:
    if any(outcome.status == MATCHED for outcome in outcomes):
        return MATCHED_OUTCOME
    unavailable = [outcome for outcome in outcomes if outcome.status == UNAVAILABLE]
    if unavailable:
        return unavailable[0]
    return Outcome(MISMATCHED, " and ".join(outcome.reason for outcome in outcomes if outcome.reason) or "no branch matched")


def _combine_not(outcomes: Sequence[Outcome], inner: Matcher) -> Outcome:
    outcome = outcomes[0]
    if outcome.status == MATCHED:
        return Outcome(MISMATCHED, f"expected not {inner.describe()}")
    if outcome.status == MISMATCHED:
        return MATCHED_OUTCOME
    return outcome


def _evaluate_all(children: Sequence[Matcher], value: Any, combine: Callable[[list[Outcome]], Outcome]) -> Any:
    outcomes = [child.evaluate(value) for child in children]
    if not any(inspect.isawaitable(outcome) for outcome in outcomes):
        return combine(outcomes)  # type: ignore[arg-type]

    async def settle() -> Outcome:
        return combine([await outcome if inspect.isawaitable(outcome) else outcome for outcome in outcomes])

    return settle()


@dataclass(frozen=True, slots=True)
class AllOf(Matcher):
    children: tuple[Matcher, ...]

    def evaluate(self, value: Any) -> Any:
        return _evaluate_all(self.children, value, _combine_and)

    def describe(self) -> str:
        return "and(" + ", ".join(child.describe() for child in self.children) + ")"


@dataclass(frozen=True, slots=True)
class AnyOf(Matcher):
    """Unavailable only if no child matched and at least one child was unavailable."""

    children: tuple[Matcher, ...]

    def evaluate(self, value: Any) -> Any:
        return _evaluate_all(self.children, value, _combine_or)

    def describe(self) -> str:
        return "or(" + ", ".join(child.describe() for child in self.children) + ")"


@dataclass(frozen=True, slots=True)
class Not(Matcher):
    child: Matcher

    def evaluate(self, value: Any) -> Any:
        return _evaluate_all((self.child,), value, lambda outcomes: _combine_not(outcomes, self.child))

    def describe(self) -> str:
        return f"not({self.child.describe()})"


# ---------------------------------------------------------------------------------------------
# Tool and event selection


def _field_outcome(expected: Any, actual: Any, label: str) -> Outcome:
    if isinstance(expected, Matcher):
        outcome = expected.evaluate(actual)
        if inspect.isawaitable(outcome):
            raise TypeError("tool_match takes synchronous matchers only")
    else:
        outcome = _json_match(expected, actual, "$")
    if outcome.status == MATCHED:
        return outcome
    return Outcome(outcome.status, f"{label} {outcome.reason}")


@dataclass(frozen=True, slots=True)
class ToolMatch(Matcher):
    """One logical tool occurrence: name (original or canonical), input, output and status, ANDed."""

    name: str | None = None
    input: Any = MISSING
    output: Any = MISSING
    status: str | None = None

    def evaluate(self, occurrence: Any) -> Outcome:
        if getattr(occurrence, "kind", None) != "tool":
            return Outcome(MISMATCHED, "not a tool call")
        if self.name is not None and self.name != occurrence.name and self.name != occurrence.canonical:
            return Outcome(MISMATCHED, f"tool {occurrence.name!r} is not {self.name!r}")
        if self.input is not MISSING:
            outcome = _field_outcome(self.input, occurrence.input, "input")
            if outcome.status != MATCHED:
                return outcome
        pending = occurrence.status == "pending"
        if self.status is not None and self.status != occurrence.status:
            return _status_outcome(occurrence, self.status)
        if self.output is not MISSING:
            if pending:
                return Outcome(UNAVAILABLE, f"tool {occurrence.name!r} has not finished; its output is unavailable")
            if occurrence.output is MISSING:
                return Outcome(UNAVAILABLE, f"tool {occurrence.name!r} output was not reported")
            outcome = _field_outcome(self.output, occurrence.output, "output")
            if outcome.status != MATCHED:
                return outcome
        return MATCHED_OUTCOME

    def describe(self) -> str:
        if self.input is MISSING and self.output is MISSING and self.status is None and self.name is not None:
            return repr(self.name)
        parts = [repr(self.name)] if self.name is not None else []
        if self.input is not MISSING:
            parts.append(f"input={show(self.input)}")
        if self.output is not MISSING:
            parts.append(f"output={show(self.output)}")
        if self.status is not None:
            parts.append(f"status={self.status!r}")
        return f"tool_match({', '.join(parts)})"


def _status_outcome(occurrence: Any, wanted: str) -> Outcome:
    """A call whose status is not `wanted`: undecided while it is pending, else not matched."""
    if occurrence.status == "pending":
        return Outcome(UNAVAILABLE, f"tool {occurrence.name!r} has not finished")
    return Outcome(MISMATCHED, f"tool {occurrence.name!r} finished {occurrence.status}, not {wanted}")


@dataclass(frozen=True, slots=True)
class CommandMatch(ToolMatch):
    """One tool call that ran a command: its logical program (`npx vitest` is `vitest`), the arguments it
    starts with, arguments it must not have, and its status. A call whose command is opaque or was not
    projected by its agent is undecided (unavailable), never "not matched"."""

    executable: str = ""
    args_start: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()

    def evaluate(self, occurrence: Any) -> Outcome:
        from assay.agent.logical_command import read_command

        if getattr(occurrence, "kind", None) != "tool":
            return Outcome(MISMATCHED, "not a tool call")
        state, read = read_command(getattr(occurrence, "command", None))
        if state == "unknown":
            return Outcome(UNAVAILABLE, f"tool {occurrence.name!r} has no command projection: its agent did not say "
                                        "whether it ran a command (a tool that runs none says so with "
                                        "tool_call(..., command=not_command_projection()))")
        if state == "not-command":
            return Outcome(MISMATCHED, f"tool {occurrence.name!r} runs no command")
        if state == "opaque":
            return Outcome(UNAVAILABLE, f"tool {occurrence.name!r} ran a command that cannot be read ({read})")
        program, args = read
        shown = " ".join([program, *args])
        if program != self.executable:
            return Outcome(MISMATCHED, f"command {shown!r} runs {program}, not {self.executable}")
        if args[:len(self.args_start)] != self.args_start:
            return Outcome(MISMATCHED, f"command {shown!r} does not start {' '.join([program, *self.args_start])!r}")
        present = [arg for arg in self.excluded if arg in args or any(given.startswith(arg + "=") for given in args)]
        if present:
            return Outcome(MISMATCHED, f"command {shown!r} has {present[0]}")
        if self.status is not None and self.status != occurrence.status:
            return _status_outcome(occurrence, self.status)
        return MATCHED_OUTCOME

    def describe(self) -> str:
        parts = [repr(self.executable)]
        if self.args_start:
            parts.append(f"args_start={list(self.args_start)!r}")
        if self.excluded:
            parts.append(f"excludes={list(self.excluded)!r}")
        if self.status is not None:
            parts.append(f"status={self.status!r}")
        return f"command_match({', '.join(parts)})"


EVENT_MATCH_TYPES = ("message", "operation.started", "operation.finished")


@dataclass(frozen=True, slots=True)
class EventMatch(Matcher):
    """Selects `message` (role, text) or `operation.started` / `operation.finished` (tool) events."""

    type: str
    role: str | None = None
    text: Matcher | None = None
    tool: ToolMatch | None = None

    def evaluate(self, value: Any) -> Outcome:
        """`value` is (event, occurrence-or-None)."""
        event, occurrence = value
        if event.type != self.type:
            return Outcome(MISMATCHED, f"event {event.type} is not {self.type}")
        if self.type == "message":
            if self.role is not None and event.role != self.role:
                return Outcome(MISMATCHED, f"message role {event.role} is not {self.role}")
            if self.text is not None:
                outcome = self.text.evaluate(event.text)
                if inspect.isawaitable(outcome):
                    raise TypeError("event_match takes synchronous matchers only")
                return outcome
            return MATCHED_OUTCOME
        if self.tool is None:
            return MATCHED_OUTCOME
        if occurrence is None:
            return Outcome(MISMATCHED, "event has no tool call")
        return self.tool.evaluate(occurrence)

    def describe(self) -> str:
        parts = [repr(self.type)]
        if self.role is not None:
            parts.append(f"role={self.role!r}")
        if self.text is not None:
            parts.append(f"text={self.text.describe()}")
        if self.tool is not None:
            parts.append(f"tool={self.tool.describe()}")
        return f"event_match({', '.join(parts)})"


# ---------------------------------------------------------------------------------------------
# Factories (the public vocabulary)


def equals(expected: Any) -> Equals:
    return Equals(expected)


def _require_text(name: str, text: Any) -> None:
    if not isinstance(text, str):
        if isinstance(text, (list, tuple)) and text and all(isinstance(item, str) for item in text):
            # Several texts: one matcher each, combined (stringifying the list would look for "['a', 'b']").
            if len(text) == 1:
                raise TypeError(f"{name} takes one text (a str), got {type(text).__name__}: {name}({text[0]!r})")
            each = ", ".join(f"{name}({item!r})" for item in text)
            raise TypeError(f"{name} takes one text (a str), got {type(text).__name__}: for several, combine "
                            f"them: and_({each})")
        raise TypeError(f"{name} takes text (a str), got {type(text).__name__}: {name}({str(text)!r})")


def includes(text: str, *, strip_comments: bool = False) -> Includes:
    _require_text("includes", text)
    return Includes(text, strip_comments)


def excludes(text: str, *, strip_comments: bool = False) -> Excludes:
    _require_text("excludes", text)
    return Excludes(text, strip_comments)


def pattern(regex: str | re.Pattern[str], *, strip_comments: bool = False) -> Pattern:
    if isinstance(regex, re.Pattern):
        return Pattern(regex, strip_comments)
    _require_text("pattern", regex)
    try:
        return Pattern(re.compile(regex), strip_comments)
    except re.error as error:
        raise ValueError(f"pattern: {regex!r} is not a valid regular expression: {error}") from None


def _makes_matcher(value: Any) -> bool:
    """Whether `value` is one of this module's public matcher functions (`is_defined`, `includes`): its return
    annotation names a Matcher class of this module."""
    if not inspect.isfunction(value) or value.__module__ != __name__ or value.__name__ not in __all__:
        return False
    made = globals().get(value.__annotations__.get("return", ""))
    return isinstance(made, type) and issubclass(made, Matcher)


def uncalled_matcher(value: Any) -> str:
    """`: call it, is_defined()` when `value` is one of the matcher factories passed without calling it
    (`is_defined`), or `: …` for a matcher class (`Matcher`) given where a matcher belongs, else ""."""
    if _makes_matcher(value):
        return f": {value.__name__} makes a matcher, so call it: {value.__name__}(…) with its arguments"
    if isinstance(value, type) and issubclass(value, Matcher):
        return (f": {value.__name__} is a class, not a matcher; make one with a matcher function such as "
                "equals(…), includes(…) or is_defined()")
    return ""


def not_a_matcher(value: Any, call: str) -> str:
    """What to write instead of `value`, which was given to `call` where a matcher belongs."""
    fix = uncalled_matcher(value)
    if fix:
        return fix
    if isinstance(value, str):
        return f": a text is not a matcher; write {call.replace('…', f'includes({value!r})')} or equals({value!r})"
    if isinstance(value, bool) or value is None:
        meant = {True: "is_true()", False: "is_false()"}.get(value, "is_defined()")
        return f": write {call.replace('…', meant)}"
    return f": write {call.replace('…', 'equals(…)')}, includes(…) or another matcher"


def _uncalled_in(expected: Any, path: str, name: str) -> None:
    """A matcher function left uncalled inside json_match's or tool_match's expected value would be called as a
    predicate, and the matcher it returns is truthy: it would match anything. Refuse it where it is written."""
    fix = uncalled_matcher(expected)
    if fix:
        raise TypeError(f"{name} got {expected.__name__} at {path}, not a matcher{fix}")
    if isinstance(expected, Mapping):
        for key, value in expected.items():
            _uncalled_in(value, f"{path}.{key}", name)
    elif isinstance(expected, (list, tuple)):
        for index, value in enumerate(expected):
            _uncalled_in(value, f"{path}[{index}]", name)


def json_match(expected: Any) -> JsonMatch:
    _uncalled_in(expected, "$", "json_match")
    return JsonMatch(expected)


def matches(schema: Any) -> Matches:
    from assay.agent.structured import OutputSchemaError, lower_schema

    try:
        lower_schema(schema)  # a bad schema is an authoring error at the call site
    except OutputSchemaError as error:
        raise OutputSchemaError(str(error).replace("output must be", "matches(schema) takes", 1)) from None
    return Matches(schema)


def satisfies(label: str, predicate: Callable[[Any], Any]) -> Satisfies:
    if not isinstance(label, str) or not callable(predicate):
        hint = " (the label comes first)" if callable(label) and isinstance(predicate, str) else ""
        raise TypeError(f"satisfies takes a label and a predicate: satisfies(\"is positive\", lambda v: v > 0){hint}")
    return Satisfies(label, predicate)


def is_defined(label: str | None = None) -> Refinement:
    return Refinement("is_defined", label)


def is_true() -> Refinement:
    return Refinement("is_true")


def is_false() -> Refinement:
    return Refinement("is_false")


def similarity(expected: str) -> Similarity:
    _require_text("similarity", expected)
    return Similarity(expected)


def _minimum(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} takes a whole number >= 1, got {value!r}")
    return value


def includes_url(min: int = 1) -> IncludesUrl:  # noqa: A002 - NiceEval's name for it
    """At least `min` distinct http(s) URLs in the text."""
    return IncludesUrl(_minimum("includes_url", min))


def has_sections(min: int = 2) -> HasSections:  # noqa: A002 - NiceEval's name for it
    """At least `min` Markdown headings in the text."""
    return HasSections(_minimum("has_sections", min))


def references_any_path(globs: str | Sequence[str]) -> ReferencesAnyPath:
    """Whether a value (typically a tool's JSON input) mentions a path matching any of the globs."""
    given = (globs,) if isinstance(globs, str) else tuple(globs) if isinstance(globs, (list, tuple)) else None
    if not given or any(not isinstance(glob, str) or not glob for glob in given):
        raise ValueError(f"references_any_path takes a glob or a list of globs (non-empty strings), got {globs!r}: "
                         "references_any_path([\"src/**/*.py\", \".env\"])")
    return ReferencesAnyPath(given)


def _match_name(factory: str, name: Any, function: Any, argument: str) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError(f"{factory} needs a name (a non-empty str), got {name!r}")
    if not callable(function):
        raise TypeError(f"{factory}({name!r}, {argument}) needs {argument} to be a function of the value, "
                        f"got {function!r}")


def define_value_match(name: str, evaluate: Callable[[Any], Any]) -> ValueMatch:
    """A custom boolean matcher: `evaluate(value)` returns truthy (matched), falsy (mismatched) or an Outcome."""
    _match_name("define_value_match", name, evaluate, "evaluate")
    return ValueMatch(name, evaluate)


def define_score_match(name: str, score: Callable[[Any], Any]) -> ScoreMatch:
    """A custom measurement: `score(value)` returns a number in [0, 1]; soft unless the assertion is gated."""
    _match_name("define_score_match", name, score, "score")
    return ScoreMatch(name, score)


def _matcher(name: str, value: Any) -> Matcher:
    if isinstance(value, Matcher):
        return value
    if name != "not_" and isinstance(value, (list, tuple)):
        fix = f"pass them one by one, not in a {type(value).__name__}: {name}(*matchers) or {name}(includes(\"a\"), includes(\"b\"))"
    elif isinstance(value, str):
        fix = f"a text is not a matcher: write {name}(includes({value!r}))" if name == "not_" else (
            f"a text is not a matcher: wrap each, {name}(includes({value!r}), …)")
    elif uncalled_matcher(value):
        fix = uncalled_matcher(value)[2:]
    else:
        fix = f"write {name}(equals(…)), {name}(includes(…)) or another matcher"
    raise TypeError(f"{name} takes matchers, got {type(value).__name__}: {fix}")


def and_(*children: Matcher) -> AllOf:
    if not children:
        raise TypeError("and_ needs at least one matcher")
    return AllOf(tuple(_matcher("and_", child) for child in children))


def or_(*children: Matcher) -> AnyOf:
    if not children:
        raise TypeError("or_ needs at least one matcher")
    return AnyOf(tuple(_matcher("or_", child) for child in children))


def not_(child: Matcher) -> Not:
    return Not(_matcher("not_", child))


def tool_match(name: str | None = None, *, input: Any = MISSING, output: Any = MISSING, status: str | None = None) -> ToolMatch:
    if status is not None and status not in TOOL_STATUSES:
        from assay.core.format import did_you_mean

        raise ValueError(f"tool_match status must be one of {', '.join(sorted(TOOL_STATUSES))}, got {status!r}"
                         f"{did_you_mean(status, sorted(TOOL_STATUSES))}")
    if name is not None and (not isinstance(name, str) or not name):
        # A list or a number would never equal a tool's name: every call would quietly be "not matched".
        hint = (" (one tool per tool_match: for several, assert each, or use tool_order([...]) for their order)"
                if isinstance(name, (list, tuple)) else "")
        raise TypeError(f"tool_match takes a tool's name (a non-empty str) or None, got {name!r}{hint}: "
                        "tool_match(\"get_weather\", input={...})")
    for label, given in (("input", input), ("output", output)):
        _uncalled_in(given, label, "tool_match")
    return ToolMatch(name, input, output, status)


def command_match(
    executable: str, *, args_start: Sequence[str] = (), excludes: Sequence[str] = (), status: str | None = None,
) -> CommandMatch:
    """A tool call that ran `executable` (its logical program: `npx vitest run` runs vitest), its arguments
    starting with `args_start`, none of `excludes` among them (`--force` also refuses `--force=yes`), and
    finished with `status` when given. For `called_tool`, `not_called_tool`, `tool_order`, `event_match`."""
    import os

    if not isinstance(executable, str) or not executable:
        raise TypeError(f"command_match takes the program's name (a non-empty str), got {executable!r}: "
                        "command_match(\"pytest\", args_start=[\"-x\"])")
    for label, given in (("args_start", args_start), ("excludes", excludes)):
        if isinstance(given, str) or not isinstance(given, Sequence) or any(not isinstance(arg, str) for arg in given):
            raise TypeError(f"command_match {label} takes a list of str, got {given!r}"
                            + (f" ({label}=[{given!r}] for one)" if isinstance(given, str) else ""))
    if status is not None and status not in TOOL_STATUSES:
        from assay.core.format import did_you_mean

        raise ValueError(f"command_match status must be one of {', '.join(sorted(TOOL_STATUSES))}, got {status!r}"
                         f"{did_you_mean(str(status), sorted(TOOL_STATUSES))}")
    return CommandMatch(status=status, executable=os.path.basename(executable) or executable,
                        args_start=tuple(args_start), excluded=tuple(excludes))


def as_tool_match(value: str | ToolMatch) -> ToolMatch:
    if isinstance(value, ToolMatch):
        return value
    if isinstance(value, str) and value:
        return ToolMatch(value)
    raise TypeError(f"expected a tool name or tool_match(...), got {value!r}{uncalled_matcher(value)}")


def event_match(
    type: str, *, role: str | None = None, text: str | Matcher | None = None, tool: str | ToolMatch | None = None
) -> EventMatch:
    if type not in EVENT_MATCH_TYPES:
        from assay.core.format import did_you_mean

        raise ValueError(f"event_match type must be one of {', '.join(EVENT_MATCH_TYPES)}, got {type!r}"
                         f"{did_you_mean(type, EVENT_MATCH_TYPES)}")
    if type == "message" and tool is not None:
        raise ValueError("event_match('message') takes role and text, not tool")
    if type != "message" and (role is not None or text is not None):
        raise ValueError(f"event_match({type!r}) takes tool, not role or text")
    if role is not None and role not in ("assistant", "user"):
        raise ValueError(f"event_match role must be 'assistant' or 'user', got {role!r}")
    if text is not None and not isinstance(text, (str, Matcher)):
        raise TypeError(f"event_match text takes a str (contained in the message) or a matcher, got "
                        f"{text.__class__.__name__}: event_match(\"message\", text=\"sunny\") or text=pattern(...)")
    text_matcher = includes(text) if isinstance(text, str) else text
    return EventMatch(type, role, text_matcher, as_tool_match(tool) if tool is not None else None)


__all__ = [
    "MATCHED", "MISMATCHED", "UNAVAILABLE", "CommandMatch", "EventMatch", "Matcher", "Outcome", "ToolMatch", "Unavailable",
    "and_", "as_tool_match", "command_match", "deep_equal", "define_score_match", "define_value_match", "equals", "event_match", "excludes",
    "has_sections", "includes", "includes_url", "is_defined", "is_false", "is_true", "json_match", "matches", "not_",
    "or_", "pattern", "references_any_path", "satisfies", "show", "similarity", "tool_match",
]
