"""Runs a small pydantic-evals dataset (two repeats, one failing assertion, one raising task, one
raising evaluator) and saves its `EvaluationReport` as JSON, with the report's own averages
(`summary.json`). Run as a script: `python pydantic_evals_report.py DIR`."""

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import EqualsExpected, Evaluator, EvaluatorContext, IsInstance
from pydantic_evals.reporting import EvaluationReportAdapter


@dataclass
class Length(Evaluator):
    def evaluate(self, ctx: EvaluatorContext) -> float:
        return len(str(ctx.output)) / 10


@dataclass
class FlakyJudge(Evaluator):
    def evaluate(self, ctx: EvaluatorContext) -> bool:
        if ctx.inputs == "Peru":
            raise RuntimeError("judge down")
        return True


async def capital(country: str) -> str:
    if country == "Atlantis":
        raise ValueError("no such country")
    return {"France": "Paris", "Spain": "Barcelona"}.get(country, "Lima")


dataset = Dataset(
    name="capitals",
    cases=[
        Case(name="france", inputs="France", expected_output="Paris"),
        Case(name="spain", inputs="Spain", expected_output="Madrid"),
        Case(name="peru", inputs="Peru", expected_output="Lima"),
        Case(name="atlantis", inputs="Atlantis", expected_output="?"),
    ],
    evaluators=[EqualsExpected(), IsInstance(type_name="str"), Length(), FlakyJudge()],
)
report = dataset.evaluate_sync(capital, repeat=2, progress=False)
folder = Path(sys.argv[1])
(folder / "report.json").write_bytes(EvaluationReportAdapter.dump_json(report, indent=2))
averages = report.averages()
(folder / "summary.json").write_text(json.dumps({
    "cases": len(report.cases), "failures": len(report.failures), "assertions": averages.assertions,
    "scores": averages.scores, "all_assertions_pass": sum(1 for case in report.cases if case.assertions and all(
        result.value for result in case.assertions.values()) and not case.evaluator_failures),
    "evaluator_failures": sum(1 for case in report.cases if case.evaluator_failures),
}))
