"""Inspect AI eval logs (`.eval` and `.json`) as a run: one unit per sample and epoch.

`.eval` is a zip holding, beside the header (`header.json`; while a run is going only
`_journal/start.json`, and such a log is refused as not finished), one member per sample
(`samples/<id>_epoch_<n>.json`, ~7 KB: messages, events, scores) and
`summaries.json`, Inspect's summary of every sample (~0.5 KB: id, epoch, input, target, scores,
model usage, error message, times; what Inspect's own log list reads). A unit is made from the
summary when the log has them (every finished log Inspect writes), which is about ten times less
to decode, and from the sample member otherwise (a log written with `log_samples=False` has neither,
only the totals: it is refused, as there is no unit in it);
from a summary it has no model output text and no error traceback (Inspect keeps those in the
sample only). `summaries.json` is inflated and decoded a summary at a time, sample members one at a
time. `.json` is one document whose header keys precede `samples`; each sample is decoded on its own
(found by its indentation in the layout Inspect writes, else by walking the document key by key).
Neither is read whole, and neither needs Inspect installed (its zstd members need the `zstandard`
package). The format is Inspect's, not a frozen public spec: the fields read here are the ones its
logs have carried since 2024 (id, epoch, scores, error, model_usage, total_time).

The unit id is `<sample id>#<epoch>`, so epochs are trials. The verdict is the headline scorer's
(the results' `headline`, else the first scorer): a value Inspect counts as 1 (C, true, yes, 1) is
passed, one it counts as 0 or ½ (I, N, P, false, 0) is failed, any other number is a score without
a threshold (ignored); a sample with an error is errored, one with no such score skipped.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson

from assay.core.interop.jsonstream import JsonStream, JsonStreamError
from assay.core.interop.log import (
    TEXT_LIMIT, ImportFormatError, ImportedLog, Sniff, bounded, document_line, file_time, iso_time, number,
    usage_total,
)
from assay.core.interop.zipstream import (
    Member, ZipStreamError, find_members, is_zip, iter_members, member_chunks, member_names, read_member,
)
from assay.core.record import UnitLine

__all__ = ["detect", "read", "score_verdict"]

_HEADER_KEYS = frozenset({"version", "status", "eval"})
_PASSING = frozenset({"C", "yes", "true", "1", "1.0"})
_FAILING = frozenset({"I", "N", "P", "no", "false", "0", "0.0"})


def detect(sniff: Sniff) -> bool:
    if is_zip(sniff.head):
        names = sniff.zip_names
        # A `.eval` archive cut short (still being written, a partial copy) has no member list at its end to
        # read: it is still Inspect's, so that reading it says what is wrong with it.
        return ("_journal/start.json" in names or "header.json" in names or any(name.startswith("samples/") for name in names)
                or (not names and sniff.path.suffix == ".eval"))
    return _HEADER_KEYS <= sniff.json_keys


def score_verdict(value: Any) -> str:
    """passed / failed / ignored for a score value, as Inspect's `value_to_float` would count it."""
    if isinstance(value, bool):
        return "passed" if value else "failed"
    if isinstance(value, (int, float)):
        return "passed" if value == 1 else "failed" if value == 0 else "ignored"
    if isinstance(value, str):
        text = value if value in ("C", "I", "N", "P") else value.strip().lower()
        if text in _PASSING:
            return "passed"
        if text in _FAILING:
            return "failed"
    return "ignored"


def _headline(header: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(scorer, score name) of the headline metric: the results' own, else the first scorer."""
    results = header.get("results") or {}
    headline = results.get("headline") if isinstance(results, Mapping) else None
    if isinstance(headline, Mapping) and headline.get("scorer"):
        return str(headline["scorer"]), headline.get("score")
    for score in (results.get("scores") or []) if isinstance(results, Mapping) else []:
        if isinstance(score, Mapping) and (score.get("scorer") or score.get("name")):
            return str(score.get("scorer") or score.get("name")), score.get("name")
    for scorer in (header.get("eval") or {}).get("scorers") or []:
        if isinstance(scorer, Mapping) and scorer.get("name"):
            return str(scorer["name"]), None
    return None, None


class _Samples:
    """Converts samples (or their summaries) to units, with what the header says about the run."""

    def __init__(self, path: Path, header: Mapping[str, Any]) -> None:
        self.path = path
        spec = header.get("eval") or {}
        self.task = str(spec.get("task") or path.stem)
        self.model = spec.get("model")
        self.scorer, self.score_name = _headline(header)

    def unit(self, sample: Any) -> UnitLine:
        # A sample is decoded JSON, so its objects are dicts and its texts strs: `isinstance(…, dict)` is a type
        # check where `Mapping` is an ABC's, and a short text is kept as it is without calling `bounded`
        # (each was a tenth of the conversion, 100,000 times).
        if type(sample) is not dict and not isinstance(sample, dict) or "id" not in sample:
            raise ImportFormatError(f"{self.path}: a sample without an id")
        get = sample.get
        sample_id = sample["id"]
        epoch = get("epoch") or 1
        if type(sample_id) not in (str, int) or sample_id == "" or type(epoch) is not int or epoch < 1:
            # Inspect writes a text or integer id and an epoch from 1: anything else (`null`, "one") was made
            # into a unit id like `None#1` or `3#one` that pairs with nothing.
            which = "id" if type(sample_id) not in (str, int) or sample_id == "" else "epoch"
            wanted = "a text or an integer" if which == "id" else "an integer from 1"
            raise ImportFormatError(f"{self.path}: a sample's {which} must be {wanted}, got {sample.get(which)!r} "
                                    f"(sample id {sample_id!r})")
        unit_id = f"{sample_id}#{epoch}"
        scores = get("scores")
        if not isinstance(scores, dict):
            scores = {}
        scorer = self.scorer if self.scorer in scores else next(iter(scores), None)
        headline = scores.get(scorer) if scorer is not None else None
        if not isinstance(headline, dict):
            headline_fields: dict[str, Any] = {}
        else:
            headline_fields = headline
        value = headline_fields.get("value")
        if isinstance(value, dict) and self.score_name in value:
            value = value[self.score_name]
        error = get("error")
        if error:
            verdict = "errored"
            reason = error.get("message") if isinstance(error, dict) else str(error)
        elif headline is None:
            verdict, reason = "skipped", "not scored"
        else:
            verdict = score_verdict(value)
            reason = (headline_fields.get("explanation") or "") if verdict != "passed" else ""
        observed: dict[str, Any] = {"score": value}
        answer = headline_fields.get("answer")
        if answer is not None:
            observed["answer"] = _kept(answer)
        # Only what a person reads is bounded (walking the whole sample would cost more than decoding it).
        detail: dict[str, Any] = {
            "evaluation": scorer or "inspect",
            "scores": {name: _score_fields(score) for name, score in scores.items() if isinstance(score, dict)},
            "input": _kept(get("input")),
        }
        output = get("output")
        if isinstance(output, dict):
            if output.get("completion") is not None:
                detail["output"] = _kept(output["completion"])
            model = output.get("model") or self.model
        else:
            model = self.model
        if model:
            detail["model"] = model
        for key in ("metadata", "limit"):
            if part := get(key):
                detail[key] = _kept(part)
        if isinstance(error, dict) and error.get("traceback"):
            detail["traceback"] = bounded(error["traceback"])
        # The record document as `unit_line` would make it (`unit_document`'s keys and order), made here: its
        # keyword arguments and emptiness tests were a tenth of the conversion.
        document: dict[str, Any] = {"unit_id": unit_id, "verdict": verdict, "group": self.task,
                                    "expected": _kept(get("target")), "observed": observed}
        if title := str(sample_id):
            document["title"] = title
        if reason:
            reason = reason if type(reason) is str else str(reason)
            document["reason"] = reason if len(reason) <= 1_000 else bounded(reason, 1_000)
        if (duration := number(get("total_time"))) is not None:
            document["duration_seconds"] = duration
        usage, cost = _usage_and_cost(get("model_usage"))
        if usage:
            document["usage"] = usage
        if cost is not None:
            document["cost_usd"] = cost
        document["detail"] = detail
        return document_line(document)


_SCORE_FIELDS = ("value", "answer", "explanation")


def _kept(value: Any) -> Any:
    """`bounded(value)`, answered at once for a short text or a scalar."""
    kind = type(value)
    if kind is str:
        return value if len(value) <= TEXT_LIMIT else bounded(value)
    return value if value is None or kind is int or kind is float or kind is bool else bounded(value)


def _score_fields(score: dict[str, Any]) -> dict[str, Any]:
    fields = {}
    for key in _SCORE_FIELDS:
        part = score.get(key)
        if part is not None:
            fields[key] = part if type(part) is str and len(part) <= TEXT_LIMIT else _kept(part)
    return fields


def _usage_and_cost(usage: Any) -> tuple[dict[str, int] | None, float | None]:
    """The tokens summed over a sample's models (`usage_total`) and their total cost, if any says one."""
    if type(usage) is not dict:
        return None, None
    if len(usage) == 1:  # one model, most samples: the same sums, without the lists
        (part,) = usage.values()
        if type(part) is not dict:
            return None, None
        cost = number(part.get("total_cost"))
        return usage_total((part,)), None if cost is None else 0 + cost  # (as `sum` would: -0.0 is 0.0)
    parts = [part for part in usage.values() if isinstance(part, dict)]
    costs = [cost for part in parts if (cost := number(part.get("total_cost"))) is not None]
    return usage_total(parts), sum(costs) if costs else None


def _decode(path: Path, name: str, content: bytes) -> Any:
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError as error:
        raise ImportFormatError(f"{path}: member {name} is not valid JSON ({error})") from None


def _holding_samples(path: Path, results: Mapping[str, Any], units: Iterator[UnitLine]) -> Iterator[UnitLine]:
    """`units`, refused at their end when there were none although the results count samples: Inspect's
    `log_samples=False` keeps only the totals (its summaries.json is an empty list), and an empty run
    in their place would read as an eval of nothing, and be "already imported" for good."""
    count = 0
    for line in units:
        count += 1
        yield line
    total = results.get("total_samples")
    if count == 0 and isinstance(total, int) and not isinstance(total, bool) and total > 0:
        raise ImportFormatError(
            f"{path}: the log holds none of the {total} samples its results count (Inspect wrote it with "
            "log_samples=False, which keeps only the totals); there is no unit to import: run the eval again "
            "with its samples logged (the default) and import that log")


def _log(path: Path, header: Mapping[str, Any], units: Iterator[UnitLine]) -> ImportedLog:
    spec = header.get("eval") or {}
    results = header.get("results") if isinstance(header.get("results"), Mapping) else {}
    stats = header.get("stats") if isinstance(header.get("stats"), Mapping) else {}
    summary: dict[str, Any] = {
        "status": header.get("status"),
        "total_samples": results.get("total_samples"),
        "completed_samples": results.get("completed_samples"),
        "scores": results.get("scores"),
        "headline": results.get("headline"),
        "model_usage": stats.get("model_usage"),
    }
    if header.get("error"):
        summary["error"] = bounded(header["error"], 1_000)
    task, model = spec.get("task") or path.stem, spec.get("model")
    return ImportedLog(
        format="inspect", tool="inspect-ai", tool_version=(spec.get("packages") or {}).get("inspect_ai"),
        title=f"Inspect {task}" + (f" ({model})" if model else "") + f": {path.name}",
        created_at=iso_time(spec.get("created")) or file_time(path),
        units=_holding_samples(path, results, units),
        identity={key: value for key, value in {
            "task": task, "model": model, "eval_id": spec.get("eval_id"), "run_id": spec.get("run_id"),
            "task_version": spec.get("task_version"), "epochs": (spec.get("config") or {}).get("epochs"),
        }.items() if value is not None},
        summary={key: value for key, value in summary.items() if value is not None},
    )


_SUMMARIES = "summaries.json"
# While an eval runs, its `.eval` log has `_journal/start.json` and the samples done so far; Inspect writes
# `header.json` (status success, error or cancelled) and `summaries.json` when the eval ends. A log whose
# eval was killed stays that way: importing it would make a finished-looking run of part of the samples.
_UNFINISHED = ("{path}: the Inspect log is not finished ({why}): Inspect completes it when its eval ends; "
               "import it then")


def _check_header(path: Path, header: Any) -> None:
    """A log's header as Inspect writes it, of an eval that has ended (`ImportFormatError` otherwise): any other
    JSON document given `--format inspect` is refused here instead of imported as an empty run."""
    if not isinstance(header, dict) or not _HEADER_KEYS <= header.keys() or not isinstance(header.get("eval"), dict):
        raise ImportFormatError(f"{path}: not an Inspect eval log (its header needs version, status and eval)")
    if header.get("status") == "started":
        raise ImportFormatError(_UNFINISHED.format(path=path, why="its status is started"))


def _read_eval(path: Path) -> ImportedLog:
    try:
        members = find_members(path, {"header.json", "_journal/start.json", _SUMMARIES})
        if "header.json" not in members:
            # A damaged directory can hide header.json (its entry no longer parses) and leave the journal's: the walk
            # of every entry says it is damaged, where "not finished" would ask to wait for an eval that has ended.
            member_names(path)
            if "_journal/start.json" in members:
                raise ImportFormatError(_UNFINISHED.format(path=path, why="it has no header.json yet"))
            raise ImportFormatError(f"{path}: an Inspect .eval log without header.json or _journal/start.json")
        header = _decode(path, "header.json", read_member(path, members["header.json"]))
    except ZipStreamError as error:
        raise ImportFormatError(str(error)) from None
    _check_header(path, header)
    samples = _Samples(path, header)
    summaries = members.get(_SUMMARIES)

    def units() -> Iterator[UnitLine]:
        try:
            if summaries is not None:
                for summary in _summary_items(path, summaries):
                    yield samples.unit(summary)
                return
            for member, content in iter_members(path, lambda candidate: candidate.startswith("samples/")):
                yield samples.unit(_decode(path, member, content))
        except ZipStreamError as error:
            raise ImportFormatError(str(error)) from None

    return _log(path, header, units())


_NEXT_SUMMARY = b'},{"id":'
_SUMMARY_CHUNK = 1 << 20  # bytes inflated at a time


def _summary_items(path: Path, member: Member) -> Iterator[Any]:
    """The summaries in `summaries.json`, each decoded by orjson as the member is inflated.

    Inspect writes the list compact, and a summary's first key is its id, so summaries are separated
    by `},{"id":`. The same bytes may also be inside a summary (an input of chat messages, whose
    first key is theirs too), so the piece up to one is a summary only if it decodes whole: its
    braces then balance, and a brace inside it would not. What is left at the end (the last summary,
    or every one in a layout other than Inspect's) is decoded as the rest of the list."""
    pending, start, search, opened = b"", 0, 0, False
    with closing(member_chunks(path, member, _SUMMARY_CHUNK)) as chunks:
        for chunk in chunks:
            pending = pending[start:] + chunk
            search -= start
            start = 0
            if not opened:
                text = pending.lstrip()
                if not text:
                    continue
                if not text.startswith(b"["):
                    break  # not a list: decoded below, for its message
                pending, search, opened = text[1:], 0, True
            while (at := pending.find(_NEXT_SUMMARY, search)) >= 0:
                try:
                    summary = orjson.loads(pending[start : at + 1])
                except orjson.JSONDecodeError:
                    search = at + 1  # inside a summary: look further
                    continue
                yield summary
                start = search = at + 2
            search = max(start, len(pending) - len(_NEXT_SUMMARY) + 1)  # the next chunk may complete one
    rest = pending[start:] if opened else pending
    try:
        remaining = orjson.loads(b"[" + rest if opened else rest)
    except orjson.JSONDecodeError as error:
        raise ImportFormatError(f"{path}: member {member.name} is not valid JSON ({error})") from None
    if not isinstance(remaining, list):
        raise ImportFormatError(f"{path}: member {member.name} is not a list of sample summaries")
    yield from remaining


_SAMPLES_KEY = b'\n  "samples": ['
_SAMPLE_START = b"\n    {"
_SAMPLE_END = b"\n    }"
_CHUNK = 8 << 20


def _pretty_samples(path: Path, header_characters: int) -> Iterator[Any] | None:
    """The samples of a log laid out as Inspect writes it (indented by two spaces), or None.

    A sample then starts at a line `    {` and ends at the next line `    }`: JSON strings hold no raw
    newline, and what is nested deeper is indented deeper, so the next `\\n    }` is the sample's
    end. Each is found with `bytes.find` and decoded by orjson, several times faster than
    walking the document with the standard library's scanner (the only way for other layouts)."""
    handle = open(path, "rb")
    # The key ends the header, which is `header_characters` long: at most 4 bytes each in UTF-8.
    buffer = handle.read(max(_CHUNK, 4 * header_characters + 64))
    found = buffer.find(_SAMPLES_KEY)
    position = found + len(_SAMPLES_KEY)
    if found < 0 or not buffer.startswith(_SAMPLE_START, position) and not buffer.startswith(b"]", position):
        handle.close()
        return None

    def samples() -> Iterator[Any]:
        nonlocal buffer, position
        try:
            while buffer.startswith(_SAMPLE_START, position):
                end = buffer.find(_SAMPLE_END, position + len(_SAMPLE_START))
                while end < 0:
                    more = handle.read(_CHUNK)
                    if not more:
                        raise ImportFormatError(f"{path}: the samples end before the document does (a log still being written?)")
                    buffer, position = buffer[position:] + more, 0
                    end = buffer.find(_SAMPLE_END, len(_SAMPLE_START))
                end += len(_SAMPLE_END)
                try:
                    yield orjson.loads(buffer[position:end])
                except orjson.JSONDecodeError as error:
                    raise ImportFormatError(f"{path}: a sample is not valid JSON ({error})") from None
                position = end + 1 if buffer[end : end + 1] == b"," else end
                if len(buffer) - position < len(_SAMPLE_START):
                    buffer, position = buffer[position:] + handle.read(_CHUNK), 0
            # No further sample: the list must close here, and the document end as Inspect ends it (its last line `}`,
            # at no indent). A log cut between two samples would otherwise be imported as a run of the first ones.
            if not buffer[position:].lstrip().startswith(b"]") or not _ends_document(handle):
                raise ImportFormatError(f"{path}: the log is cut short after its last whole sample (a log still being "
                                        "written, or a partial copy?)")
        finally:
            handle.close()

    return samples()


def _ends_document(handle: Any) -> bool:
    """Whether the file ends as a document Inspect wrote does: with a `}` at the start of its last line."""
    size = handle.seek(0, 2)
    handle.seek(max(0, size - 64))
    return handle.read().rstrip().endswith(b"\n}")


def _read_json(path: Path) -> ImportedLog:
    stream = JsonStream.open(path)
    header: dict[str, Any] = {}
    try:
        keys = stream.keys()
        for key in keys:
            if key == "samples":
                break
            header[key] = stream.value()
        else:
            stream.close()
            _check_header(path, header)
            return _log(path, header, iter(()))
    except JsonStreamError as error:
        stream.close()
        raise ImportFormatError(str(error)) from None
    try:
        _check_header(path, header)
    except ImportFormatError:
        stream.close()
        raise
    samples = _Samples(path, header)
    pretty = _pretty_samples(path, stream.where())
    if pretty is not None:
        stream.close()
        return _log(path, header, (samples.unit(sample) for sample in pretty))

    def units() -> Iterator[UnitLine]:
        try:
            if stream.peek() == "n":  # "samples": null
                stream.value()
            else:
                for sample in stream.items():
                    yield samples.unit(sample)
            for _ in keys:  # what follows (the reductions) is not needed: walked, not kept
                stream.skip()
            stream.end()
        except JsonStreamError as error:
            raise ImportFormatError(str(error)) from None
        finally:
            stream.close()

    return _log(path, header, units())


def read(path: Path) -> ImportedLog:
    with open(path, "rb") as handle:
        head = handle.read(4)
    return _read_eval(path) if is_zip(head) else _read_json(path)
