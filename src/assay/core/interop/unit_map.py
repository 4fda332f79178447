"""`runs compare --map`: how a baseline's unit ids become the candidate's, when the two runs name
their units differently (an imported Inspect log and the assay agent eval that replaced it).

A rule is `PATTERN=>REPLACEMENT`: a Python regular expression substituted everywhere in each of the
baseline's ids (`re.sub`; `\\1` refers to a group; anchor with `^…$`). `@FILE` reads id pairs instead:
a JSON object `{"baseline id": "candidate id"}`, a JSON list of two-item lists, or a CSV file of two
columns (a header row `before,after` is skipped); ids the file does not list are kept as they are.
Rules and files apply in the order given, each to what the one before made of the id.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from assay.errors import UsageError

__all__ = ["Pairing", "UnitIdMap", "pairing"]

_SEPARATOR = "=>"


@dataclass(frozen=True)
class UnitIdMap:
    # Each `--map` in the order given: a rule (a pattern and its replacement) or a file's pairs.
    steps: tuple[tuple[re.Pattern[str], str] | Mapping[str, str], ...] = ()
    given: tuple[str, ...] = ()  # the options as written, for the output

    @classmethod
    def parse(cls, options: Sequence[str]) -> UnitIdMap:
        steps: list[tuple[re.Pattern[str], str] | Mapping[str, str]] = []
        for option in options:
            if option.startswith("@"):
                if not option[1:]:
                    raise UsageError("--map '@': name the file of id pairs after the @, e.g. @pairs.csv", "--map")
                steps.append(_pairs_file(Path(option[1:]).expanduser()))
                continue
            pattern, separator, replacement = option.partition(_SEPARATOR)
            if not separator or not pattern:
                raise UsageError(
                    f"--map '{option}': write PATTERN=>REPLACEMENT (a regular expression and what replaces it, "
                    f"e.g. '^(.*)#(\\d+)$=>evals/\\1#\\2') or @FILE (a JSON or CSV file of id pairs)", "--map"
                )
            try:
                compiled = re.compile(pattern)
            except re.error as error:
                raise UsageError(f"--map '{option}': {error} in the pattern '{pattern}' (a Python regular expression: "
                                 "write \\( \\) \\[ \\. \\* \\+ \\? for the characters themselves)", "--map") from None
            try:
                compiled.sub(replacement, "")  # a bad group reference shows here, not in the middle of a compare
            except (re.error, IndexError) as error:  # (IndexError: a \g<name> the pattern does not name)
                groups = compiled.groups
                has = ("no group to refer to: put the part to keep in ( )" if not groups else
                       "one group: \\1 refers to it" if groups == 1 else f"{groups} groups: \\1 to \\{groups} refer to them")
                if compiled.groupindex:
                    has += f"; named {', '.join(compiled.groupindex)}"
                raise UsageError(f"--map '{option}': {error} in the replacement '{replacement}' (the pattern has {has})",
                                 "--map") from None
            steps.append((compiled, replacement))
        return cls(tuple(steps), tuple(options))

    def __bool__(self) -> bool:
        return bool(self.steps)

    def apply(self, unit_id: str, used: list[bool] | None = None) -> str:
        """`unit_id` renamed by every step in turn; `used[i]` is set when step i applied to it."""
        mapped = unit_id
        for index, step in enumerate(self.steps):
            if not isinstance(step, tuple):
                matched = mapped in step
                mapped = step.get(mapped, mapped)
            else:
                pattern, replacement = step
                matched = pattern.search(mapped) is not None
                try:
                    mapped = pattern.sub(replacement, mapped)
                except (re.error, IndexError) as error:
                    raise UsageError(f"--map '{pattern.pattern}=>{replacement}' on {unit_id!r}: {error}", "--map") from None
            if matched and used is not None:
                used[index] = True
        return mapped

    def map_verdicts(self, verdicts: Mapping[str, str]) -> dict[str, str]:
        """The baseline's verdicts under their mapped ids; two ids mapped to one is a usage error."""
        if not self:
            return dict(verdicts)
        mapped: dict[str, str] = {}
        origin: dict[str, str] = {}
        used = [False] * len(self.steps)
        for unit_id, verdict in verdicts.items():
            target = self.apply(unit_id, used)
            if target in mapped:
                raise UsageError(
                    f"--map sends two baseline units to {target!r} ({origin[target]!r} and {unit_id!r}); a unit pairs "
                    "with one unit: make the rule keep them apart (a trial's #n, say)", "--map"
                )
            mapped[target] = verdict
            origin[target] = unit_id
        self._say_unused(used, verdicts)
        return mapped

    def _say_unused(self, used: list[bool], verdicts: Mapping[str, str]) -> None:
        """A warning for each `--map` that applied to no baseline id (a misspelt pattern or file of ids): the
        comparison still runs, but "Mapped the baseline's unit ids" would otherwise hide that it did nothing."""
        import sys

        if not verdicts or len(self.given) != len(self.steps):  # (a map made in code, not from `--map` options)
            return
        example = min(verdicts)
        for given, step, applied in zip(self.given, self.steps, used, strict=True):
            if applied:
                continue
            what = "none of the ids it lists is" if not isinstance(step, tuple) else "its pattern matches no id"
            print(f"Warning: --map '{given}' applied to no unit id: {what} in the baseline ({len(verdicts)} unit(s), such as "
                  f"{example!r})", file=sys.stderr)


_PAIRS_FILE = ("@FILE names a file of id pairs: a JSON object {\"before id\": \"after id\", …} or a .csv of before,after "
               "rows; or give the rule itself, --map 'PATTERN=>REPLACEMENT'")


def _pairs_file(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise UsageError(f"--map @{path}: not UTF-8 text ({error.reason}); {_PAIRS_FILE}", "--map") from None
    except OSError as error:
        where = " (a path relative to the current folder)" if not path.is_absolute() else ""
        raise UsageError(f"--map @{path}: {error.strerror or error}{where}; {_PAIRS_FILE}", "--map") from None
    if path.suffix.lower() == ".csv":
        rows = [row for row in csv.reader(text.splitlines()) if row and any(cell.strip() for cell in row)]
        if rows and [cell.strip().lower() for cell in rows[0][:2]] == ["before", "after"]:
            rows = rows[1:]
        return _checked(path, rows)
    try:
        # (an object as its list of pairs, so that a baseline id written twice is seen)
        document = json.loads(text, object_pairs_hook=lambda pairs: _Pairs(pairs))
    except json.JSONDecodeError as error:
        raise UsageError(f"--map @{path}: not valid JSON ({error}); give a JSON object or a .csv file", "--map") from None
    if isinstance(document, _Pairs):
        return _checked(path, document)
    if isinstance(document, list):
        return _checked(path, document)
    raise UsageError(f"--map @{path}: give a JSON object {{\"baseline id\": \"candidate id\"}} or a list of pairs", "--map")


class _Pairs(list):  # type: ignore[type-arg]
    """A JSON object of the pairs file, as its (key, value) pairs in the order written."""

    def __repr__(self) -> str:
        return repr(dict(self))


def _checked(path: Path, rows: Iterable[object]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for number, row in enumerate(rows, 1):
        if not isinstance(row, (list, tuple)) or len(row) != 2 or not all(isinstance(item, str) for item in row):
            # (it said `pair 1 is not two ids (('a', 1))`: Python's repr of a JSON entry, and not what to write)
            if isinstance(row, tuple) and len(row) == 2:  # an entry of a JSON object, as written
                shown = ": ".join(json.dumps(item, ensure_ascii=False, default=str) for item in row)
            else:
                shown = json.dumps(row, ensure_ascii=False, default=str)
            raise UsageError(f"--map @{path}: pair {number} is not two ids ({shown}): each pair is a baseline id and a "
                             "candidate id, both text (JSON: {\"before id\": \"after id\"}; CSV: a before,after row)",
                             "--map")
        if pairs.get(row[0], row[1]) != row[1]:
            raise UsageError(f"--map @{path}: pair {number} maps {row[0]!r} to {row[1]!r}, and an earlier pair maps it to "
                             f"{pairs[row[0]]!r}; give each baseline id once", "--map")
        pairs[row[0]] = row[1]
    if not pairs:
        raise UsageError(f"--map @{path}: the file holds no id pairs; {_PAIRS_FILE}", "--map")
    return pairs


@dataclass(frozen=True)
class Pairing:
    """How many units of two runs have a partner in the other."""

    paired: int
    unpaired_before: int
    unpaired_after: int
    rules: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"paired": self.paired, "unpaired_before": self.unpaired_before, "unpaired_after": self.unpaired_after,
                "map": list(self.rules)}

    def sentence(self) -> str:
        files = sum(1 for rule in self.rules if rule.startswith("@"))
        given = [f"{count} --map {what}{'' if count == 1 else 's'}" for count, what in
                 ((len(self.rules) - files, "rule"), (files, "file")) if count]
        mapped = f"Mapped the baseline's unit ids ({' and '.join(given)}): " if self.rules else ""
        return (f"{mapped}{self.paired} unit(s) paired; {self.unpaired_before} of the baseline and "
                f"{self.unpaired_after} of the candidate have no partner.")


def pairing(before: Mapping[str, str], after: Mapping[str, str], rules: Sequence[str] = ()) -> Pairing:
    paired = sum(1 for unit_id in before if unit_id in after)
    return Pairing(paired, len(before) - paired, len(after) - paired, tuple(rules))
