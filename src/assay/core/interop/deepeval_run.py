"""DeepEval test runs as a run: one unit per test case.

DeepEval saves a test run as JSON when `DEEPEVAL_RESULTS_FOLDER` is set (`test_run_<time>.json`;
`.deepeval/.latest_run_full.json` is the same document). A test case passes or fails by DeepEval's
own verdict (`success`: every metric's score met its threshold); one whose metric raised is
errored (DeepEval counts it failed: its `testFailed` equals assay's failed + errored). Each
metric's score, threshold and reason are kept. The group is the test file, the run's identifier
or its dataset; the run's time is the file's (the document records none).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from assay.core.interop.log import ImportFormatError, ImportedLog, Sniff, UnitIds, bounded, file_time, number, read_json, unit_line
from assay.core.record import UnitLine

__all__ = ["detect", "read"]


def detect(sniff: Sniff) -> bool:
    keys = sniff.json_keys
    return "testCases" in keys and ("metricsScores" in keys or "testPassed" in keys or "conversationalTestCases" in keys)


def _case(path: Path, case: Mapping[str, Any], index: int, group: str, ids: UnitIds) -> UnitLine:
    metrics = [item for item in case.get("metricsData") or () if isinstance(item, Mapping)]
    errors = [item for item in metrics if item.get("error")]
    success = case.get("success")
    if success is not None and not isinstance(success, bool):
        # DeepEval writes true, false or null: `"success": "false"` (a report edited or made by another tool) was
        # truthy, and the failed case was imported as passed
        raise ImportFormatError(f"{path}: test case {index} ({case.get('name') or 'unnamed'}): `success` must be true, "
                                f"false or null, as DeepEval writes it; got {json.dumps(success, default=str)}")
    if errors:
        verdict = "errored"
        reason = "; ".join(f"{item.get('name')} raised: {item.get('error')}" for item in errors)
    elif success is None:
        verdict, reason = "skipped", "not evaluated"
    else:
        verdict = "passed" if success else "failed"
        reason = "; ".join(
            f"{item.get('name')} {item.get('score')} < {item.get('threshold')}" + (f": {item.get('reason')}" if item.get("reason") else "")
            for item in metrics if item.get("success") is False
        )
    scores = {str(item.get("name")): item.get("score") for item in metrics if item.get("score") is not None}
    observed: dict[str, Any] = {"output": case.get("actualOutput"), "scores": scores}
    if len(metrics) == 1 and scores:  # one metric alone: a case whose other metric raised has no single score
        observed["score"] = next(iter(scores.values()))
    detail: dict[str, Any] = {
        "evaluation": ", ".join(str(item.get("name")) for item in metrics) or "deepeval",
        "input": case.get("input"),
        "metrics": [{key: item.get(key) for key in ("name", "score", "threshold", "success", "reason", "error",
                                                    "evaluationModel", "strictMode") if item.get(key) is not None}
                    for item in metrics],
    }
    for source, target in (("context", "context"), ("retrievalContext", "retrieval_context"), ("toolsCalled", "tools_called"),
                           ("expectedTools", "expected_tools"), ("additionalMetadata", "metadata"), ("turns", "turns"),
                           ("scenario", "scenario"), ("evaluationCost", "evaluation_cost")):
        if case.get(source) is not None:
            detail[target] = case[source]
    usage = {key: case[source] for source, key in (("inputTokenCount", "input_tokens"), ("outputTokenCount", "output_tokens"))
             if isinstance(case.get(source), int)}
    name = str(case.get("name") or f"test_case_{case.get('order', index)}")
    return unit_line(
        unit_id=ids.unique(name), verdict=verdict, group=group, title=name,
        expected=bounded(case.get("expectedOutput") if "expectedOutput" in case else case.get("expectedOutcome")),
        observed=bounded(observed), reason=bounded(reason, 1_000),
        duration_seconds=number(case.get("runDuration")), usage=usage or None, cost_usd=number(case.get("tokenCost")),
        detail=bounded(detail),
    )


def read(path: Path) -> ImportedLog:
    run = read_json(path)
    if not isinstance(run, Mapping) or not isinstance(run.get("testCases"), list):
        raise ImportFormatError(f"{path}: a DeepEval test run needs a `testCases` list")
    cases = [*(run.get("testCases") or []), *(run.get("conversationalTestCases") or [])]
    group = str(run.get("testFile") or run.get("identifier") or run.get("datasetAlias") or "deepeval test run")

    def units() -> Iterator[UnitLine]:
        ids = UnitIds()
        for index, case in enumerate(cases):
            if not isinstance(case, Mapping):
                raise ImportFormatError(f"{path}: test case {index} is not an object")
            yield _case(path, case, index, group, ids)

    hyperparameters = run.get("hyperparameters") if isinstance(run.get("hyperparameters"), Mapping) else {}
    return ImportedLog(
        format="deepeval", tool="deepeval", tool_version=None, title=f"DeepEval {group}: {path.name}",
        created_at=file_time(path), units=units(),
        identity={key: value for key, value in {
            "test_file": run.get("testFile"), "identifier": run.get("identifier"), "dataset": run.get("datasetAlias"),
            "dataset_version": run.get("datasetVersion"), "model": hyperparameters.get("model"),
            "hyperparameters": hyperparameters or None,
        }.items() if value is not None},
        summary={key: run.get(key) for key in ("testPassed", "testFailed", "runDuration", "evaluationCost", "metricsScores")
                 if run.get(key) is not None},
    )
