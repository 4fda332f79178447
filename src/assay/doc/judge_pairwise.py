"""`judge-pairwise`: compare two candidates with the model in a seeded order, optionally in both orders.

Echoed metadata is checked, winners are mapped back to the original candidates, the manifest is last.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from assay.doc.artifacts import Clock, open_run, utc_now
from assay.doc.candidates import read_candidate, resolve_candidate
from assay.doc.cases import resolve_case
from assay.doc.config import DocSuite
from assay.doc.hooks import PairwiseInput, RandomizedOrder
from assay.doc.model_run import JudgeCallLog, ModelSettings, check_vars
from assay.doc.pairwise import ORIGINAL_ORDER, combine_order_verdicts, randomize_pair, remap_winner, reversed_order
from assay.doc.paths import assert_safe_id
from assay.doc.prompts import extract_version, load_prompt_template
from assay.doc.session import adapter_module_path, adapter_session, require_hook
from assay.errors import AdapterError
from assay.judge.errors import JudgeError

__all__ = ["PAIRWISE_SCHEMA", "PairwiseResult", "judge_pairwise"]

PAIRWISE_SCHEMA = "pairwise-result.schema.json"
ECHO_FIELDS = ("case_id", "model", "provider", "prompt_version", "rubric_version")
PAIRWISE_VARS = (*ECHO_FIELDS, "candidate_a", "candidate_b", "randomization_method", "randomization_seed")


@dataclass(frozen=True)
class PairwiseResult:
    case_id: str
    winner: str  # an original label: candidate_a / candidate_b (the CLI's), tie or unknown
    position_consistent: bool | None  # None unless both orders were judged
    result: Mapping[str, Any]
    result_dir: Path
    manifest: Mapping[str, Any]
    judge_usage: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # the judge's calls (`assay.judge.usage`)


def _shown(value: Any) -> str:
    # eval-kit's JSON.stringify: compact, so an order reads ["candidate_b","candidate_a"] as it does there.
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _seed_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # JavaScript prints 0.0 as "0"
    return str(value)


def _check_echo(output: Mapping[str, Any], expected: Mapping[str, Any], order: RandomizedOrder) -> None:
    def mismatch(name: str, wanted: Any, received: Any) -> JudgeError:
        return JudgeError(
            f"{name} mismatch in pairwise judge output: expected {_shown(wanted)}, received {_shown(received)}"
        )

    for name in ECHO_FIELDS:
        if output[name] != expected[name]:
            raise mismatch(name, expected[name], output[name])
    if output["candidate_order"] != list(order.candidate_order):
        raise mismatch("candidate_order", list(order.candidate_order), output["candidate_order"])
    randomization = output["randomization"]
    if randomization["method"] != order.method:
        raise mismatch("randomization.method", order.method, randomization["method"])
    if _seed_text(randomization["seed"]) != str(order.seed):
        raise mismatch("randomization.seed", str(order.seed), _seed_text(randomization["seed"]))
    for name in ("original_order", "candidate_order"):
        wanted = list(getattr(order, name))
        if randomization[name] != wanted:
            raise mismatch(f"randomization.{name}", wanted, randomization[name])


async def judge_pairwise(
    suite: DocSuite,
    settings: ModelSettings,
    *,
    case_id: str,
    candidate_a: str,
    candidate_b: str,
    seed: int,
    run_id: str,
    both_orders: bool = False,
    clock: Clock = utc_now,
) -> PairwiseResult:
    assert_safe_id(case_id, "case id")
    assert_safe_id(run_id, "run id")
    paths = {
        "candidate_a": resolve_candidate(suite, candidate_a, "--candidate-a"),
        "candidate_b": resolve_candidate(suite, candidate_b, "--candidate-b"),
    }
    case = resolve_case(suite, case_id)
    suite.resolver.resolve_run_dir(run_id)
    template = load_prompt_template(suite, "pairwise_judge")
    prompt_version = extract_version(template.text, "Prompt version", template.source)
    rubric_version = extract_version(template.text, "Rubric version", template.source)
    schema = suite.schemas.get(PAIRWISE_SCHEMA)
    texts = {
        "candidate_a": read_candidate(paths["candidate_a"], candidate_a),
        "candidate_b": read_candidate(paths["candidate_b"], candidate_b),
    }
    relative = {label: suite.resolver.relative_to_repo(path) for label, path in paths.items()}
    first_order = randomize_pair(seed, case.case_id, relative["candidate_a"], relative["candidate_b"])
    orders = [first_order, reversed_order(first_order)] if both_orders else [first_order]
    expected = {
        "case_id": case.case_id,
        "model": settings.model,
        "provider": settings.provider,
        "prompt_version": prompt_version,
        "rubric_version": rubric_version,
    }
    adapter_path = adapter_module_path(suite)
    if adapter_path is None:
        raise AdapterError("judge-pairwise requires an adapter exporting resolve_pairwise_vars or resolvePairwiseVars")
    outputs: list[dict[str, Any]] = []
    async with adapter_session(suite, adapter_path) as adapter:
        export = require_hook(adapter, "pairwise", "judge-pairwise")
        bundle = open_run(suite, run_id, clock=clock, node_version=adapter.node_version)
        log = JudgeCallLog(bundle, template.source, template.text)
        try:
            async with settings.client() as client:
                judge_usage = client.usage
                for order in orders:
                    shown_a, shown_b = order.candidate_order
                    hook_input = PairwiseInput(
                        case.case_id,
                        case.case_dir,
                        case.artifacts,
                        texts[shown_a],
                        texts[shown_b],
                        paths[shown_a],
                        paths[shown_b],
                        prompt_version,
                        rubric_version,
                        settings.model,
                        settings.provider,
                        order,
                        suite.resolver,
                    )
                    variables = check_vars(
                        await adapter.call(export, hook_input), export, PAIRWISE_VARS, template
                    )
                    # The echo is checked inside the call's check: an answer for another case or order is never cached.
                    output = await log.ask(
                        client, settings, variables, schema=schema, label="pairwise judge output",
                        check=functools.partial(_check_echo, expected=expected, order=order),
                    )
                    outputs.append(output)
        finally:
            log_artifacts = log.write()
    winners = [remap_winner(output["winner"], order) for output, order in zip(outputs, orders)]
    if both_orders:
        winner, consistent = combine_order_verdicts(winners[0], winners[1])
    else:
        winner, consistent = winners[0], None
    # Evidence, criteria and explanation are the model's free text about the displayed slots; they
    # are stored as written (the randomization record says which candidate each slot showed).
    result = {
        **outputs[0],
        "candidate_order": list(ORIGINAL_ORDER),
        "randomization": first_order.to_json(),
        "winner": winner,
    }
    suite.schemas.validate(PAIRWISE_SCHEMA, result, "pairwise result")
    bundle.write_json("pairwise-result.json", result)
    artifacts: list[tuple[str, str]] = [("report", "report.md"), ("pairwise_result", "pairwise-result.json")]
    order_lines: list[str] = []
    if both_orders:
        passes = [
            {
                "candidate_order": list(order.candidate_order),
                "displayed_winner": output["winner"],
                "winner": mapped,
                "confidence": output["confidence"],
                "explanation": output["explanation"],
            }
            for output, order, mapped in zip(outputs, orders, winners)
        ]
        bundle.write_json(
            "pairwise-orders.json",
            {"mode": "both-orders", "winner": winner, "position_consistent": consistent, "passes": passes},
        )
        artifacts.append(("pairwise_orders", "pairwise-orders.json"))
        order_lines = [
            "Order mode: both-orders",
            f"Position consistent: {'true' if consistent else 'false'}",
            *(
                f"Pass {number} ({', '.join(entry['candidate_order'])}): {entry['winner']}"
                for number, entry in enumerate(passes, 1)
            ),
        ]
    report = "\n".join(
        [
            f"# Pairwise Judge Report: {case.case_id}",
            "",
            f"Model: {settings.model}",
            f"Provider: {settings.provider}",
            f"Auth mode: {settings.endpoint.auth_mode}",
            f"Prompt version: {prompt_version}",
            f"Rubric version: {rubric_version}",
            f"Seed: {seed}",
            f"Randomization swapped: {'true' if first_order.swapped else 'false'}",
            *order_lines,
            "",
            f"Winner: {winner}",
            f"Confidence: {result['confidence']}",
            f"Explanation: {result['explanation']}",
            "",
        ]
    )
    bundle.write_text("report.md", report)
    manifest = bundle.build_manifest(
        run_type="judge",
        runner_suffix="pairwise-judge",
        case_ids=[case.case_id],
        artifacts=[*artifacts, *log_artifacts],
        extra={**settings.manifest_fields(), "prompt_version": prompt_version, "rubric_version": rubric_version},
    )
    bundle.write_manifest(manifest)
    return PairwiseResult(case.case_id, winner, consistent, result, bundle.run_dir, manifest, judge_usage)
