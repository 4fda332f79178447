"""Round-trip reading and surgical rewriting of case files: only rewritten `samples` lists or blocks change.

Everything outside the replaced `samples` sequences or `expect` entries stays byte-identical (comments, key order,
quoting, anchors).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, Collection, Iterable, Mapping, Sequence

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.resolver import BaseResolver

from assay.core.bounded_input import MAX_DEPTH, check_yaml_bounds, load_yaml
from assay.errors import CaseError
from assay.video.reconstruct import strictly_equal

_STR_TAG = "tag:yaml.org,2002:str"


class _PyYamlResolver(BaseResolver):
    """ruamel's resolver fed with PyYAML's implicit rules, so both loaders type scalars alike.

    ruamel's YAML 1.1 mode still differs from PyYAML (e.g. `1e3` is a float there, a string here).
    """

    yaml_implicit_resolvers = copy.deepcopy(yaml.resolver.Resolver.yaml_implicit_resolvers)

    def __init__(self, version: Any = None, loader: Any = None, loadumper: Any = None) -> None:
        super().__init__(loadumper if loadumper is not None else loader)

    @property
    def processing_version(self) -> Any:
        return (1, 1)


def load_roundtrip(text: str) -> CommentedMap:
    """Parse a case file keeping comments and layout; values read exactly as PyYAML's safe_load reads them.

    Raises ValueError when the two readings would differ (duplicate keys: ruamel keeps the first,
    PyYAML the last) and for a non-mapping top level; `CaseError` past the input bounds (nesting,
    aliases, huge integers), which are checked before ruamel's recursive composer runs.
    """
    check_yaml_bounds(text, source="case file", error=CaseError)
    reader = YAML(typ="rt")
    reader.Resolver = _PyYamlResolver
    reader.allow_duplicate_keys = True
    try:
        document = reader.load(text)
    except RecursionError:
        raise CaseError(f"case file: nested more than {MAX_DEPTH} levels deep") from None
    if document is None:
        document = CommentedMap()
    if not isinstance(document, CommentedMap):
        raise ValueError("expected a YAML object")
    if not _same_reading(document, load_yaml(text, source="case file", error=CaseError) or {}):
        raise ValueError("the case file reads differently under round-trip parsing (duplicate keys?)")
    return document


def _same_reading(roundtrip: Any, plain: Any) -> bool:
    if isinstance(plain, dict):
        return (
            isinstance(roundtrip, dict)
            and len(roundtrip) == len(plain)
            and all(key in roundtrip and _same_reading(roundtrip[key], value) for key, value in plain.items())
        )
    if isinstance(plain, list):
        return (
            isinstance(roundtrip, list)
            and len(roundtrip) == len(plain)
            and all(_same_reading(left, right) for left, right in zip(roundtrip, plain))
        )
    if isinstance(plain, bool) != (isinstance(roundtrip, bool) or type(roundtrip).__name__ == "ScalarBoolean"):
        return False
    if isinstance(plain, float) and math.isnan(plain):
        return isinstance(roundtrip, float) and math.isnan(roundtrip)
    return bool(roundtrip == plain) and isinstance(roundtrip, str) == isinstance(plain, str)


# ---------------------------------------------------------------------------------------------
# Emitting new blocks


class _FlowList(list):
    """A `range`/`at` list: written in flow style, `[3.0, 5.0]`."""


class _BlockDumper(yaml.SafeDumper):
    # Nested block sequences indented under their key read better than PyYAML's indentless default.
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> Any:
        return super().increase_indent(flow, False)


def _represent_flow_list(dumper: yaml.SafeDumper, data: _FlowList) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


def _represent_text(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    # Multi-line comments stay readable as literal blocks; PyYAML falls back to quotes when it must.
    style = "|" if "\n" in data else None
    return dumper.represent_scalar(_STR_TAG, data, style=style)


_BlockDumper.add_representer(_FlowList, _represent_flow_list)
_BlockDumper.add_representer(str, _represent_text)


def _dumpable_block(block: Mapping[str, Any]) -> dict[str, Any]:
    dumpable = dict(block)
    for key in ("range", "at"):
        if isinstance(dumpable.get(key), (list, tuple)):
            dumpable[key] = _FlowList(dumpable[key])
    return dumpable


def _dump_block_sequence(blocks: Sequence[Mapping[str, Any]]) -> str:
    return yaml.dump(
        [_dumpable_block(block) for block in blocks],
        Dumper=_BlockDumper,
        default_flow_style=False,
        sort_keys=False,
        allow_unicode=True,
        width=1 << 30,
    )


def _dump_flow_sequence(blocks: Sequence[Mapping[str, Any]]) -> str:
    return yaml.dump(
        [dict(block) for block in blocks],
        Dumper=yaml.SafeDumper,
        default_flow_style=True,
        sort_keys=False,
        allow_unicode=True,
        width=1 << 30,
    ).strip()


def format_block(block: Mapping[str, Any], indent: int, newline: str = "\n") -> list[str]:
    """One block as block-style sequence-item lines (each ending in `newline`), its dash at `indent`."""
    lines = _dump_block_sequence([block]).splitlines()
    prefix = " " * indent
    return [(prefix + line if line else line) + newline for line in lines]


# ---------------------------------------------------------------------------------------------
# Locating nodes


@dataclass(frozen=True, slots=True)
class _OriginalItem:
    """One original sample block: its text chunk (leading comments included) and what it meant."""

    chunk: str  # the lines this item owns, from its leading comments to just before the next item's
    leading_comments: str  # full-line comments right above its dash ("" for the first item)
    first_line_comment: str  # an inline `# ...` after the item's first line, or ""
    value: Any  # as PyYAML reads it


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    return starts


def _mapping_entry(node: yaml.MappingNode, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    found = None
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag == _STR_TAG and key_node.value == key:
            found = (key_node, value_node)  # PyYAML keeps the last duplicate; so do we
    return found


def _content_end(text: str, node: yaml.Node) -> int | None:
    """Just past the last character of a node's own text; None when it has none (an empty scalar).

    A block scalar's marks run past its trailing line breaks and a block collection's past the
    comment lines after it, so neither mark says where the text ends.
    """
    if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
        start, end = node.start_mark.index, node.end_mark.index
        while end > start and text[end - 1] in " \t\r\n":
            end -= 1
        return end if end > start else None
    children: list[yaml.Node] = []
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            children.extend((key_node, value_node))
    elif isinstance(node, yaml.SequenceNode):
        children.extend(node.value)
    ends = [end for end in (_content_end(text, child) for child in children) if end is not None]
    return max(ends) if ends else None


def _last_content_line(text: str, line_starts: list[int], node: yaml.Node, fallback_line: int) -> int:
    end = _content_end(text, node)
    return fallback_line if end is None else _line_of(line_starts, end - 1)


def _line_of(line_starts: list[int], index: int) -> int:
    low, high = 0, len(line_starts) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if line_starts[middle] <= index:
            low = middle
        else:
            high = middle - 1
    return low


def _line_text(text: str, line_starts: list[int], line: int) -> str:
    start = line_starts[line]
    end = line_starts[line + 1] if line + 1 < len(line_starts) else len(text)
    return text[start:end]


def _line_span(text: str, line_starts: list[int], first_line: int, last_line: int) -> tuple[int, int]:
    end = line_starts[last_line + 1] if last_line + 1 < len(line_starts) else len(text)
    return line_starts[first_line], end


def _line_end(text: str, index: int) -> int:
    """The index of the newline ending the line of `index` (or the end of the text)."""
    newline = text.find("\n", index)
    return len(text) if newline < 0 else newline


def _inline_comment_start(text: str, index: int) -> int | None:
    """Where the `# ...` that follows `index` on its line starts, if only a comment follows it."""
    rest = text[index : _line_end(text, index)]
    stripped = rest.lstrip()
    return index + len(rest) - len(stripped) if stripped.startswith("#") else None


def _inline_comment_after(text: str, index: int) -> str:
    """The `# ...` that follows `index` on its line, if only a comment follows it."""
    start = _inline_comment_start(text, index)
    return "" if start is None else text[start : _line_end(text, start)].strip()


def _newline_style(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


# ---------------------------------------------------------------------------------------------
# Rewriting


@dataclass(frozen=True, slots=True)
class _Edit:
    start: int
    end: int
    replacement: str


def rewrite_target_samples(text: str, new_blocks: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """Replace the `samples` lists of the given targets; every other byte of `text` is kept.

    Blocks are plain dicts as `assay.video.reconstruct` makes them. An original block that
    survives unchanged keeps its exact text (comments, quoting and all); a changed block is
    written fresh and inherits the comment lines above, and the inline comment on the first
    line of, the original block its first time falls in. Raises ValueError when a target or
    its `samples` list cannot be found or rewritten safely (e.g. it is an alias or its anchors
    are referenced elsewhere).
    """
    if not new_blocks:
        return text
    root = yaml.compose(text)
    line_starts = _line_starts(text)
    newline = _newline_style(text)
    plain_targets = (yaml.safe_load(text) or {}).get("targets") or {}
    edits: list[_Edit] = []
    for target_id, blocks in new_blocks.items():
        target_node, key_node, samples_node = _target_samples(root, target_id)
        original_values = plain_targets.get(target_id, {}).get("samples") or []
        edits.extend(
            _samples_edits(text, line_starts, newline, target_id, target_node, key_node, samples_node, original_values, blocks)
        )
    _refuse_dangling_aliases(text, edits)
    return _apply_edits(text, edits)


def _target_samples(root: yaml.Node | None, target_id: str) -> tuple[yaml.MappingNode, yaml.Node, yaml.SequenceNode]:
    """A target's node, its `samples` key and the list under it; ValueError when they cannot be edited."""
    if not isinstance(root, yaml.MappingNode):
        raise ValueError("expected a YAML object")
    targets_entry = _mapping_entry(root, "targets")
    if targets_entry is None or not isinstance(targets_entry[1], yaml.MappingNode):
        raise ValueError("the case file has no `targets` mapping")
    entry = _mapping_entry(targets_entry[1], target_id)
    if entry is None or not isinstance(entry[1], yaml.MappingNode):
        raise ValueError(f"target {target_id!r} is not a mapping in the case file")
    target_node = entry[1]
    samples_entry = _mapping_entry(target_node, "samples")
    if samples_entry is None:
        raise ValueError(f"target {target_id!r} has no `samples` key to rewrite")
    key_node, samples_node = samples_entry
    if samples_node.start_mark.index < key_node.end_mark.index:
        raise ValueError(f"the samples of target {target_id!r} are a YAML alias; refusing to rewrite them")
    if not isinstance(samples_node, yaml.SequenceNode):
        raise ValueError(f"the samples of target {target_id!r} are not a list")
    return target_node, key_node, samples_node


def _apply_edits(text: str, edits: Sequence[_Edit]) -> str:
    """Apply non-overlapping edits; of two insertions at one place, the one given first ends up first."""
    ordered = sorted(enumerate(edits), key=lambda numbered: (numbered[1].start, numbered[0]), reverse=True)
    for _, edit in ordered:
        text = text[: edit.start] + edit.replacement + text[edit.end :]
    return text


def _refuse_dangling_aliases(text: str, edits: Sequence[_Edit]) -> None:
    """An anchor removed with an old samples list must not be referenced from kept text."""
    anchors: dict[str, int] = {}
    for token in yaml.scan(text):
        position = token.start_mark.index
        replaced = any(edit.start <= position < edit.end for edit in edits)
        if isinstance(token, yaml.AnchorToken) and replaced:
            anchors[token.value] = position
        elif isinstance(token, yaml.AliasToken) and token.value in anchors and not replaced:
            raise ValueError(f"anchor &{token.value} inside rewritten samples is used elsewhere; refusing to rewrite")
        elif isinstance(token, yaml.AnchorToken):
            anchors.pop(token.value, None)  # a later redefinition outside the edits shadows it


def _samples_edits(
    text: str,
    line_starts: list[int],
    newline: str,
    target_id: str,
    target_node: yaml.MappingNode,
    key_node: yaml.Node,
    samples_node: yaml.SequenceNode,
    original_values: list[Any],
    blocks: Sequence[Mapping[str, Any]],
) -> list[_Edit]:
    if target_node.flow_style:
        # Inside a flow mapping only a flow sequence can stand.
        start, end = samples_node.start_mark.index, samples_node.end_mark.index
        return [_Edit(start, end, _dump_flow_sequence(blocks) if blocks else "[]")]
    colon_index = text.index(":", key_node.end_mark.index)
    if samples_node.flow_style or not samples_node.value:
        return [_flow_samples_edit(text, newline, key_node, colon_index, samples_node, blocks)]
    items = _original_items(text, line_starts, samples_node, original_values)
    dash_column = samples_node.start_mark.column
    first_line = _line_of(line_starts, samples_node.start_mark.index)
    last_line = _last_content_line(text, line_starts, samples_node.value[-1], first_line)
    start, end = _line_span(text, line_starts, first_line, last_line)
    ends_with_newline = text[start:end].endswith("\n")
    if not blocks:
        return [_Edit(start, end, ""), _Edit(colon_index + 1, colon_index + 1, " []")]
    body = _render_items(items, blocks, dash_column, newline)
    if not ends_with_newline:
        body = body[: -len(newline)]
    return [_Edit(start, end, body)]


def _flow_samples_edit(
    text: str,
    newline: str,
    key_node: yaml.Node,
    colon_index: int,
    samples_node: yaml.SequenceNode,
    blocks: Sequence[Mapping[str, Any]],
) -> _Edit:
    value_start, value_end = samples_node.start_mark.index, samples_node.end_mark.index
    if not blocks:
        return _Edit(value_start, value_end, "[]")
    comment = _inline_comment_after(text, value_end)
    line_end = _line_end(text, value_end)
    if text[line_end - 1 : line_end] == "\r":
        line_end -= 1
    dash_column = key_node.start_mark.column + 2
    lines = "".join(line for block in blocks for line in format_block(block, dash_column, newline))
    head = f"  {comment}" if comment else ""
    return _Edit(colon_index + 1, line_end, head + newline + lines[: -len(newline)])


def _original_items(
    text: str, line_starts: list[int], samples_node: yaml.SequenceNode, original_values: list[Any]
) -> list[_OriginalItem]:
    dash_lines = [_line_of(line_starts, dash) for dash in _item_dashes(yaml.scan(text), samples_node)]
    item_nodes = samples_node.value
    if len(dash_lines) != len(item_nodes) or len(original_values) != len(item_nodes):
        return []  # an unusual layout: fall back to writing every block fresh
    last_lines = [
        _last_content_line(text, line_starts, node, dash_line) for node, dash_line in zip(item_nodes, dash_lines)
    ]
    chunk_starts = [dash_lines[0]]
    for index in range(1, len(dash_lines)):
        line = dash_lines[index]
        while line - 1 > last_lines[index - 1] and _line_text(text, line_starts, line - 1).strip().startswith("#"):
            line -= 1
        chunk_starts.append(line)
    items = []
    for index, node in enumerate(item_nodes):
        chunk_end_line = chunk_starts[index + 1] - 1 if index + 1 < len(item_nodes) else last_lines[index]
        start, end = _line_span(text, line_starts, chunk_starts[index], chunk_end_line)
        chunk = text[start:end]
        if not chunk.endswith("\n"):
            chunk += _newline_style(text)
        leading = text[line_starts[chunk_starts[index]] : line_starts[dash_lines[index]]]
        comment_start = _first_line_comment_start(text, line_starts, node, dash_lines[index])
        items.append(
            _OriginalItem(
                chunk=chunk,
                leading_comments=leading,
                first_line_comment="" if comment_start is None else _inline_comment_after(text, comment_start),
                value=original_values[index],
            )
        )
    return items


def _item_dashes(tokens: Iterable[yaml.Token], samples_node: yaml.SequenceNode) -> list[int]:
    """Where the `-` of each item of a block sequence stands (nested lists' dashes are deeper)."""
    dash_column = samples_node.start_mark.column
    sequence_start, sequence_end = samples_node.start_mark.index, samples_node.end_mark.index
    return [
        token.start_mark.index
        for token in tokens
        if isinstance(token, yaml.BlockEntryToken)
        and token.start_mark.column == dash_column
        and sequence_start <= token.start_mark.index < sequence_end
    ]


def _first_line_comment_start(text: str, line_starts: list[int], node: yaml.Node, dash_line: int) -> int | None:
    """Where the inline comment ending the item's first line starts, found after the last token on that line."""
    line_start = line_starts[dash_line]
    line_text = _line_text(text, line_starts, dash_line)
    last_end = None
    for leaf in _leaves(node):
        if leaf.start_mark.line == dash_line and leaf.end_mark.line == dash_line:
            last_end = max(last_end or 0, leaf.end_mark.index)
    if last_end is None or last_end < line_start or last_end > line_start + len(line_text):
        return None
    return _inline_comment_start(text, last_end)


def _leaves(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
        return [node]
    leaves: list[yaml.Node] = []
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            leaves.extend(_leaves(key_node) + _leaves(value_node))
    elif isinstance(node, yaml.SequenceNode):
        for child in node.value:
            leaves.extend(_leaves(child))
    return leaves


def _render_items(
    items: Sequence[_OriginalItem], blocks: Sequence[Mapping[str, Any]], dash_column: int, newline: str
) -> str:
    reused: set[int] = set()
    commented: set[int] = set()
    rendered: list[str] = []
    for block in blocks:
        survivor = next(
            (index for index, item in enumerate(items) if index not in reused and _same_block(item.value, block)),
            None,
        )
        if survivor is not None:
            reused.add(survivor)
            commented.add(survivor)
            rendered.append(items[survivor].chunk)
            continue
        lines = format_block(block, dash_column, newline)
        ancestors = [
            index
            for index, item in enumerate(items)
            if index not in commented and index not in reused and _block_starts_inside(block, item.value)
        ]
        leading = "".join(items[index].leading_comments for index in ancestors)
        inline = next((items[index].first_line_comment for index in ancestors if items[index].first_line_comment), "")
        if inline:
            lines[0] = lines[0][: -len(newline)] + "  " + inline + newline
        commented.update(ancestors)
        rendered.append(leading + "".join(lines))
    return "".join(rendered)


def _as_seconds(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return seconds if math.isfinite(seconds) else None


def _times_of(block: Any) -> tuple[str, list[float]] | None:
    if not isinstance(block, Mapping):
        return None
    if "range" in block and isinstance(block["range"], (list, tuple)) and len(block["range"]) == 2:
        bounds = [_as_seconds(bound) for bound in block["range"]]
        return ("range", bounds) if None not in bounds else None  # type: ignore[return-value]
    if "at" in block:
        points = block["at"] if isinstance(block["at"], (list, tuple)) else [block["at"]]
        seconds = [_as_seconds(point) for point in points]
        return ("at", seconds) if seconds and None not in seconds else None  # type: ignore[return-value]
    return None


def _first_time(block: Mapping[str, Any]) -> float | None:
    times = _times_of(block)
    if times is None:
        return None
    return times[1][0] if times[0] == "range" else min(times[1])


def _block_starts_inside(block: Mapping[str, Any], original: Any) -> bool:
    first = _first_time(block)
    span = _times_of(original)
    if first is None or span is None:
        return False
    kind, values = span
    if kind == "range":
        return values[0] <= first < values[1]
    return any(abs(round(point, 9) - first) <= 1e-9 for point in values)


def _same_block(original: Any, block: Mapping[str, Any]) -> bool:
    """Whether an original block means exactly what a new block says (so its text can stay)."""
    if not isinstance(original, Mapping) or set(original) != set(block):
        return False
    for key, value in block.items():
        kept = original[key]
        if key in ("range", "every_s"):
            if not _same_numbers(kept, value):
                return False
        elif key == "at":
            # A list must stay a list and be sorted already, or its text would not say the same.
            if isinstance(value, (list, tuple)) != isinstance(kept, (list, tuple)) or not _same_numbers(kept, value):
                return False
        elif key == "compare":
            if (kept is None) != (value is None):
                return False
            if value is not None and (
                not isinstance(kept, Mapping)
                or set(kept) != set(value)
                or (kept.get("mode") or "").strip() != (value.get("mode") or "")
                or not _same_numbers(kept.get("tolerance"), value.get("tolerance"))
            ):
                return False
        elif key in ("field", "comment", "ignore"):
            if (kept.strip() if isinstance(kept, str) else kept) != value:
                return False
        elif not strictly_equal(kept, value):
            return False
    return True


def _same_numbers(left: Any, right: Any) -> bool:
    if isinstance(left, (list, tuple)) or isinstance(right, (list, tuple)):
        return (
            isinstance(left, (list, tuple))
            and isinstance(right, (list, tuple))
            and len(left) == len(right)
            and all(_same_numbers(a, b) for a, b in zip(left, right))
        )
    if left is None or right is None:
        return left is None and right is None
    left_seconds, right_seconds = _as_seconds(left), _as_seconds(right)
    return left_seconds is not None and left_seconds == right_seconds


# ---------------------------------------------------------------------------------------------
# Editing blocks in place


def set_block_expectations(
    text: str,
    expectations: Mapping[tuple[str, int], Any],
    rebuilding: Collection[tuple[str, int]] = (),
) -> tuple[str, frozenset[tuple[str, int]]]:
    """Set the `expect` of each (target id, 1-based block number) in place; every other byte is kept.

    An existing entry is replaced (a comment inside its old value moves above the block), a
    missing one goes after the block's `range`/`at`/`every_s`/`field` lines. Returns the text and
    the blocks that cannot be edited so (a flow or unusual layout, merge or duplicate keys, an
    anchor in the old value): the caller writes those fresh with `rewrite_target_samples`. For
    them and for the blocks in `rebuilding`, the comments inside each block that the rewrite
    would drop (all but the one ending its first line) are moved above it first; a block in both
    arguments is one to rebuild.
    """
    numbers_by_target: dict[str, set[int]] = {}
    for target_id, number in [*expectations, *rebuilding]:
        numbers_by_target.setdefault(target_id, set()).add(number)
    if not numbers_by_target:
        return text, frozenset()
    root = yaml.compose(text)
    tokens = list(yaml.scan(text))
    line_starts = _line_starts(text)
    newline = _newline_style(text)
    plain_targets = (yaml.safe_load(text) or {}).get("targets") or {}
    edits: list[_Edit] = []
    refused: set[tuple[str, int]] = set()
    for target_id, numbers in numbers_by_target.items():
        items = _editable_items(root, tokens, target_id)
        for number in sorted(numbers):
            key = (target_id, number)
            item = items[number - 1] if 0 < number <= len(items) else None
            if key in expectations and key not in rebuilding:
                if item is not None:
                    old_block = plain_targets[target_id]["samples"][number - 1]
                    value = expectations[key]
                    in_place = _expectation_edits(text, line_starts, newline, tokens, item, old_block, value)
                    if in_place is not None:
                        edits.extend(in_place)
                        continue
                refused.add(key)
            if item is not None:
                edits.extend(_hoisted_inner_comments(text, line_starts, newline, tokens, item))
    return _apply_edits(text, edits), frozenset(refused)


@dataclass(frozen=True, slots=True)
class _EditableItem:
    """A block-style sample block whose keys are plain and distinct, so it can be edited in place."""

    dash_index: int  # where its `-` is
    mapping: yaml.MappingNode


def _editable_items(root: yaml.Node | None, tokens: Sequence[yaml.Token], target_id: str) -> list[_EditableItem | None]:
    """The target's blocks in order, None for each that cannot be edited in place (all, for an odd layout)."""
    try:
        _, _, samples_node = _target_samples(root, target_id)
    except ValueError:
        return []
    if samples_node.flow_style:
        return []
    dashes = _item_dashes(tokens, samples_node)
    if len(dashes) != len(samples_node.value):
        return []
    items: list[_EditableItem | None] = []
    for dash, node in zip(dashes, samples_node.value):
        # An alias item (`- *block`) is text that lives elsewhere, under its anchor: not this item's.
        own_text = node.start_mark.index > dash
        items.append(_EditableItem(dash, node) if own_text and _has_plain_keys(node) else None)
    return items


def _has_plain_keys(node: yaml.Node) -> bool:
    """A block mapping whose keys are distinct scalars and no merge: each entry is its own text."""
    if not isinstance(node, yaml.MappingNode) or node.flow_style:
        return False
    keys = [key.value if isinstance(key, yaml.ScalarNode) else None for key, _ in node.value]
    return None not in keys and "<<" not in keys and len(set(keys)) == len(keys)


def _expectation_edits(
    text: str,
    line_starts: list[int],
    newline: str,
    tokens: Sequence[yaml.Token],
    item: _EditableItem,
    old_block: Mapping[str, Any],
    value: Any,
) -> list[_Edit] | None:
    """The edits setting the block's `expect` to `value`; None when its old value defines an anchor,
    which other text may still refer to."""
    entries = {key.value: (key, node) for key, node in item.mapping.value}
    column = item.mapping.value[0][0].start_mark.column
    if "expect" in entries:
        if strictly_equal(old_block.get("expect"), value):
            return []
        key, node = entries["expect"]
        start = key.start_mark.index
        end = max(_content_end(text, node) or 0, text.index(":", key.end_mark.index) + 1)
        if any(isinstance(token, yaml.AnchorToken) and start <= token.start_mark.index < end for token in tokens):
            return None
        entry = "".join(_expectation_lines(value, column, newline))[column:].removesuffix(newline)
        comments = _block_comments(text, tokens, start, end)
        return [_Edit(start, end, entry), *_hoisted(line_starts, newline, item, comments)]
    # After the entries a fresh block writes before `expect`, so the new line never lands between
    # a key and the comment ending its line.
    before = [entries[name] for name in ("range", "at", "every_s", "field") if name in entries]
    if not before:
        return None
    last = max(max(_content_end(text, node) or 0, key.end_mark.index) for key, node in before)
    line_end = _line_end(text, last)
    lines = "".join(_expectation_lines(value, column, newline))
    if line_end == len(text):
        return [_Edit(line_end, line_end, newline + lines.removesuffix(newline))]
    return [_Edit(line_end + 1, line_end + 1, lines)]


def _expectation_lines(value: Any, column: int, newline: str) -> list[str]:
    """`expect: <value>` as lines at `column`, rendered exactly as a fresh block would render it."""
    lines = []
    for line in format_block({"expect": value}, 0, "\n"):
        body = line[:-1][2:]  # drop the newline, then the item's `- ` or two-space indent
        lines.append((" " * column + body if body else "") + newline)
    return lines


def _hoisted_inner_comments(
    text: str, line_starts: list[int], newline: str, tokens: Sequence[yaml.Token], item: _EditableItem
) -> list[_Edit]:
    """Keep the comments of a block about to be written fresh by moving them above it.

    The rewrite carries the comment lines above a block and the comment ending its first line
    onto its first part; every other comment inside it would be lost.
    """
    end = _line_end(text, _content_end(text, item.mapping) or item.mapping.start_mark.index)
    dash_line = _line_of(line_starts, item.dash_index)
    carried = _first_line_comment_start(text, line_starts, item.mapping, dash_line)
    comments = [comment for comment in _block_comments(text, tokens, item.dash_index, end) if comment[0] != carried]
    return _hoisted(line_starts, newline, item, comments)


def _hoisted(
    line_starts: list[int], newline: str, item: _EditableItem, comments: Sequence[tuple[int, str]]
) -> list[_Edit]:
    """The comments written again as whole lines right above the block's dash."""
    if not comments:
        return []
    line_start = line_starts[_line_of(line_starts, item.dash_index)]
    indent = " " * (item.dash_index - line_start)
    return [_Edit(line_start, line_start, "".join(f"{indent}{comment}{newline}" for _, comment in comments))]


def _block_comments(text: str, tokens: Sequence[yaml.Token], start: int, end: int) -> list[tuple[int, str]]:
    """(index, text) of each comment that starts in [start, end).

    Comments are not YAML tokens, so a `#` that no token covers starts one.
    """
    covering = [
        (token.start_mark.index, token.end_mark.index)
        for token in tokens
        if token.start_mark.index < end and token.end_mark.index > start
    ]
    found = []
    index = start
    while index < end:
        line_end = _line_end(text, index)
        for position in range(index, min(line_end, end)):
            if text[position] == "#" and not any(first <= position < last for first, last in covering):
                found.append((position, text[position:line_end].rstrip("\r")))
                break
        index = line_end + 1
    return found


# ---------------------------------------------------------------------------------------------
# Aliases of sample data


class _NoAliasDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


class _AliasRecordingLoader(yaml.SafeLoader):
    """A SafeLoader that notes where each alias stands in the text and which node it names."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases: list[tuple[int, int, yaml.Node]] = []

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            node = super().compose_node(parent, index)
            self.aliases.append((event.start_mark.index, event.end_mark.index, node))
            return node
        return super().compose_node(parent, index)


def _subtree(node: yaml.Node, seen: set[int]) -> None:
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _subtree(item, seen)
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            _subtree(key, seen)
            _subtree(value, seen)


def expand_sample_aliases(text: str) -> str:
    """`text` with every alias (`*name`) that stands for sample data written out in full, in flow style,
    and the anchors of `samples` lists dropped.

    Two targets sharing samples through an anchor (`samples: *schedule`, `- *block`, `<<: *block`) are
    one text for two meanings: an `expect` written into the anchored block would land in the other
    target too, and a rewritten block cannot take its anchor along. Written out, each target has its own
    copy, as GlassKit's rewrite (which drops anchors) leaves it; the rest of the text is kept. An anchor on
    a `samples` list itself (`samples: &schedule`), unused once its aliases are written out, stands where
    the rewrite of that list starts, so it goes too.
    """
    if "*" not in text and "&" not in text:
        return text
    loader = _AliasRecordingLoader(text)
    try:
        root = loader.get_single_node()
        if not isinstance(root, yaml.MappingNode):
            return text
        sample_nodes: set[int] = set()
        samples_lists: set[int] = set()  # where each `samples` list starts
        targets = _mapping_entry(root, "targets")
        if targets is not None and isinstance(targets[1], yaml.MappingNode):
            for _, target in targets[1].value:
                if isinstance(target, yaml.MappingNode):
                    samples = _mapping_entry(target, "samples")
                    if samples is not None:
                        _subtree(samples[1], sample_nodes)
                        samples_lists.add(samples[1].start_mark.index)
        edits = []
        for start, end, node in loader.aliases:
            named: set[int] = set()
            _subtree(node, named)
            if named & sample_nodes:  # the alias is sample data, or holds some (a whole target)
                value = loader.construct_object(node, deep=True)
                dumped = yaml.dump(value, Dumper=_NoAliasDumper, default_flow_style=True, sort_keys=False,
                                   allow_unicode=True, width=1 << 30)
                edits.append(_Edit(start, end, dumped.removesuffix("\n...\n").strip()))
    finally:
        loader.dispose()
    for token in yaml.scan(text):
        if isinstance(token, yaml.AnchorToken) and token.start_mark.index in samples_lists:
            start = token.start_mark.index
            while start > 0 and text[start - 1] == " ":
                start -= 1
            edits.append(_Edit(start, token.end_mark.index, ""))
    return _apply_edits(text, edits)
