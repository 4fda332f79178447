"""pydantic-evals reports (an `EvaluationReport` saved as JSON) as a run: one unit per case run.

Save one with `EvaluationReportAdapter.dump_json(report)`. A case passes when every assertion
(an evaluator returning a bool) holds and fails when one does not; a case with scores or labels
but no assertion is a score without a threshold (ignored), as pydantic-evals renders it. A case
whose task raised (the report's `failures`) or one of whose evaluators raised is errored. Cases
run with `repeat=n` (named `case [k/n]`) are the trials `case#k`; the group is the report's name.
The report records no time, so the run's time is the file's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from assay.core.interop.log import ImportFormatError, ImportedLog, Sniff, UnitIds, bounded, file_time, number, read_json, unit_line
from assay.core.record import UnitLine

__all__ = ["detect", "read"]

_REPEAT = re.compile(r" \[(\d+)/\d+\]$")


def detect(sniff: Sniff) -> bool:
    return {"name", "cases"} <= sniff.json_keys and ("failures" in sniff.json_keys or "dataset_name" in sniff.json_keys)


def _unit_id(case: Mapping[str, Any], ids: UnitIds) -> str:
    name = str(case.get("name") or "")
    source = case.get("source_case_name")
    match = _REPEAT.search(name)
    if source and match:
        return ids.unique(f"{source}#{match.group(1)}")
    return ids.unique(name)


def _results(case: Mapping[str, Any], key: str) -> dict[str, Mapping[str, Any]]:
    found = case.get(key)
    return {str(name): result for name, result in found.items() if isinstance(result, Mapping)} if isinstance(found, Mapping) else {}


def _case(path: Path, case: Mapping[str, Any], group: str, ids: UnitIds) -> UnitLine:
    assertions, scores, labels = _results(case, "assertions"), _results(case, "scores"), _results(case, "labels")
    for name, result in assertions.items():
        if not isinstance(result.get("value"), bool):
            # an assertion is an evaluator's bool: `"value": "true"` or none at all was read as a failed assertion
            given = f"the value {json.dumps(result['value'], default=str)}" if "value" in result else "no value"
            raise ImportFormatError(f"{path}: case {case.get('name')!r}: assertion {name!r} has {given}; pydantic-evals "
                                    "writes an assertion's value as true or false")
    failures = [item for item in case.get("evaluator_failures") or () if isinstance(item, Mapping)]
    failing = [f"{name}: {result.get('reason')}" if result.get("reason") else name
               for name, result in assertions.items() if result.get("value") is not True]
    if failures:
        verdict = "errored"
        reason = "; ".join(f"evaluator {item.get('name')} raised: {item.get('error_message')}" for item in failures)
    elif assertions:
        verdict = "failed" if failing else "passed"
        reason = ("failed: " + "; ".join(failing)) if failing else ""
    else:
        verdict, reason = "ignored", ""
    observed: dict[str, Any] = {"output": case.get("output")}
    if scores:
        observed["scores"] = {name: result.get("value") for name, result in scores.items()}
        if len(scores) == 1:
            observed["score"] = next(iter(observed["scores"].values()))
    if labels:
        observed["labels"] = {name: result.get("value") for name, result in labels.items()}
    if assertions:
        observed["assertions"] = {name: result.get("value") for name, result in assertions.items()}
    detail: dict[str, Any] = {
        "evaluation": ", ".join(assertions) or ", ".join(scores) or ", ".join(labels) or "pydantic-evals",
        "inputs": case.get("inputs"),
        "results": [{"kind": kind, "name": name, "value": result.get("value"), "reason": result.get("reason")}
                    for kind, found in (("assertion", assertions), ("score", scores), ("label", labels))
                    for name, result in found.items()],
    }
    for key in ("metadata", "metrics", "attributes"):
        if case.get(key):
            detail[key] = case[key]
    if failures:
        detail["evaluator_failures"] = [{key: item.get(key) for key in ("name", "error_message", "error_stacktrace")}
                                        for item in failures]
    if case.get("trace_id"):
        detail["trace"] = {"trace_id": case.get("trace_id"), "span_id": case.get("span_id")}
    return unit_line(
        unit_id=_unit_id(case, ids), verdict=verdict, group=group, title=str(case.get("name") or ""),
        expected=bounded(case.get("expected_output")), observed=bounded(observed), reason=bounded(reason, 1_000),
        duration_seconds=number(case.get("task_duration")), detail=bounded(detail),
    )


def _failure(case: Mapping[str, Any], group: str, ids: UnitIds) -> UnitLine:
    detail: dict[str, Any] = {"evaluation": "pydantic-evals", "inputs": case.get("inputs"),
                              "traceback": case.get("error_stacktrace")}
    if case.get("trace_id"):
        detail["trace"] = {"trace_id": case.get("trace_id"), "span_id": case.get("span_id")}
    return unit_line(
        unit_id=_unit_id(case, ids), verdict="errored", group=group, title=str(case.get("name") or ""),
        expected=bounded(case.get("expected_output")), reason=bounded(str(case.get("error_message") or ""), 1_000),
        detail=bounded(detail),
    )


def read(path: Path) -> ImportedLog:
    report = read_json(path)
    cases = report.get("cases") if isinstance(report, Mapping) else None
    if not isinstance(cases, list):
        raise ImportFormatError(f"{path}: a pydantic-evals report needs a `cases` list")
    failures = [item for item in report.get("failures") or () if isinstance(item, Mapping)]
    name = str(report.get("name") or path.stem)
    assertions = [result.get("value") for case in cases if isinstance(case, Mapping)
                  for result in _results(case, "assertions").values()]

    def units() -> Iterator[UnitLine]:
        ids = UnitIds()
        for case in cases:
            if not isinstance(case, Mapping):
                raise ImportFormatError(f"{path}: a case that is not an object")
            yield _case(path, case, name, ids)
        for case in failures:
            yield _failure(case, name, ids)

    metadata = report.get("experiment_metadata") if isinstance(report.get("experiment_metadata"), Mapping) else {}
    return ImportedLog(
        format="pydantic-evals", tool="pydantic-evals", tool_version=None,
        title=f"pydantic-evals {name}: {path.name}", created_at=file_time(path), units=units(),
        identity={key: value for key, value in {
            "report": name, "dataset": report.get("dataset_name"), "model": metadata.get("model"),
            "trace_id": report.get("trace_id"),
        }.items() if value is not None},
        summary={
            "cases": len(cases), "failures": len(failures),
            "assertions_passed": sum(1 for value in assertions if value is True), "assertions": len(assertions),
            **({"experiment_metadata": metadata} if metadata else {}),
        },
    )
