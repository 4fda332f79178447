"""promptfoo results (`promptfoo eval --output results.json`) as a run: one unit per test case,
prompt and provider.

The unit id is `<provider>/<prompt label>/<test>`, the test being its `description`, else its
vars (`country=France, answer=Paris`), else its index; a repeated id (`--repeat`) is a trial
`…#2`. The verdict is promptfoo's own (`success`: every assertion passed, weighted by its
threshold); a result promptfoo marks as an error (failureReason 2, a provider that failed) is
errored, so assay's totals equal the file's `stats` (successes, failures, errors). The group is
the provider and prompt; output, score, named scores, token usage, cost and latency are kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from assay.core.interop.log import ImportFormatError, ImportedLog, Sniff, UnitIds, bounded, file_time, iso_time, number, read_json, unit_line
from assay.core.record import UnitLine

__all__ = ["detect", "read"]

_ERROR = 2  # promptfoo's ResultFailureReason.ERROR


def detect(sniff: Sniff) -> bool:
    keys = sniff.json_keys
    return "results" in keys and ("evalId" in keys or "shareableUrl" in keys or {"config", "createdAt"} <= keys)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _test_name(result: Mapping[str, Any]) -> str:
    case = result.get("testCase") if isinstance(result.get("testCase"), Mapping) else {}
    if case.get("description"):
        return str(case["description"])
    variables = result.get("vars") if isinstance(result.get("vars"), Mapping) else case.get("vars")
    if isinstance(variables, Mapping) and variables:
        return ", ".join(f"{name}={_text(value)}" for name, value in variables.items())
    return f"test-{result.get('testIdx', '?')}"


def _provider(result: Mapping[str, Any]) -> str:
    provider = result.get("provider")
    if isinstance(provider, Mapping):
        return str(provider.get("label") or provider.get("id") or "provider")
    return str(provider or "provider")


def _usage(tokens: Any) -> dict[str, int] | None:
    if not isinstance(tokens, Mapping):
        return None
    usage = {key: tokens[source] for source, key in (("prompt", "input_tokens"), ("completion", "output_tokens"),
                                                    ("total", "total_tokens"), ("cached", "cache_read_tokens"))
             if isinstance(tokens.get(source), int) and tokens[source]}
    return usage or None


def _unit(path: Path, index: int, result: Mapping[str, Any], ids: UnitIds) -> UnitLine:
    if "success" in result and not isinstance(result["success"], bool):
        # promptfoo writes true or false: `"success": "false"` (a file edited or made by another tool) was truthy,
        # and the failed result was imported as passed
        raise ImportFormatError(f"{path}: result {index} ({_test_name(result)}): `success` must be true or false, as "
                                f"promptfoo writes it; got {json.dumps(result['success'], default=str)}")
    prompt = result.get("prompt") if isinstance(result.get("prompt"), Mapping) else {}
    group = f"{_provider(result)}/{prompt.get('label') or prompt.get('raw') or 'prompt'}"
    grading = result.get("gradingResult") if isinstance(result.get("gradingResult"), Mapping) else {}
    if result.get("failureReason") == _ERROR or (result.get("error") and not grading and not result.get("success")):
        verdict = "errored"
    else:
        verdict = "passed" if result.get("success") else "failed"
    response = result.get("response") if isinstance(result.get("response"), Mapping) else {}
    case = result.get("testCase") if isinstance(result.get("testCase"), Mapping) else {}
    observed: dict[str, Any] = {"output": response.get("output"), "score": result.get("score")}
    if result.get("namedScores"):
        observed["named_scores"] = result["namedScores"]
    detail: dict[str, Any] = {
        "evaluation": ", ".join(str((item.get("assertion") or {}).get("type")) for item in grading.get("componentResults") or ()
                                if isinstance(item, Mapping) and isinstance(item.get("assertion"), Mapping)) or "promptfoo",
        "vars": result.get("vars"), "prompt": prompt.get("raw"), "provider": result.get("provider"),
        "assertions": [{"type": (item.get("assertion") or {}).get("type"), "value": (item.get("assertion") or {}).get("value"),
                        "pass": item.get("pass"), "score": item.get("score"), "reason": item.get("reason")}
                       for item in grading.get("componentResults") or () if isinstance(item, Mapping)],
    }
    if result.get("id"):
        detail["result_id"] = result["id"]
    latency = number(result.get("latencyMs"))
    return unit_line(
        unit_id=ids.unique(f"{group}/{_test_name(result)}"), verdict=verdict, group=group, title=_test_name(result),
        expected=bounded(case.get("assert")), observed=bounded(observed),
        reason=bounded(str(grading.get("reason") or result.get("error") or "") if verdict != "passed" else "", 1_000),
        duration_seconds=latency / 1000 if latency is not None else None,
        usage=_usage(result.get("tokenUsage") or response.get("tokenUsage")), cost_usd=number(result.get("cost")),
        detail=bounded(detail),
    )


def read(path: Path) -> ImportedLog:
    document = read_json(path)
    summary_of = document.get("results") if isinstance(document, Mapping) else None
    results = summary_of.get("results") if isinstance(summary_of, Mapping) else summary_of
    if not isinstance(results, list):
        raise ImportFormatError(f"{path}: promptfoo output needs `results.results`, a list (promptfoo eval --output results.json)")
    summary_of = summary_of if isinstance(summary_of, Mapping) else {}

    def units() -> Iterator[UnitLine]:
        ids = UnitIds()
        for index, result in enumerate(results):
            if not isinstance(result, Mapping):
                raise ImportFormatError(f"{path}: result {index} is not an object")
            yield _unit(path, index, result, ids)

    metadata = document.get("metadata") if isinstance(document.get("metadata"), Mapping) else {}
    config = document.get("config") if isinstance(document.get("config"), Mapping) else {}
    described = config.get("description") or document.get("evalId") or path.stem
    return ImportedLog(
        format="promptfoo", tool="promptfoo", tool_version=metadata.get("promptfooVersion"),
        title=f"promptfoo {described}: {path.name}",
        created_at=iso_time(summary_of.get("timestamp")) or iso_time(metadata.get("evaluationCreatedAt"))
        or iso_time(document.get("createdAt")) or file_time(path),
        units=units(),
        identity={key: value for key, value in {
            "eval_id": document.get("evalId"), "description": config.get("description"),
            "providers": sorted({_provider(result) for result in results if isinstance(result, Mapping)}) or None,
        }.items() if value is not None},
        summary={key: value for key, value in {"stats": summary_of.get("stats"), "version": summary_of.get("version")}.items()
                 if value is not None},
    )
