"""Runs DeepEval's `evaluate` over four test cases with two offline metrics (one raises on one case),
which saves the test run as `test_run_<time>.json` in DEEPEVAL_RESULTS_FOLDER; what `evaluate`
returned is kept beside it (`summary.json`). Run as a script: `python deepeval_run.py DIR`."""

import json
import sys
from pathlib import Path

from deepeval import evaluate
from deepeval.evaluate.configs import AsyncConfig, DisplayConfig, ErrorConfig
from deepeval.metrics import BaseMetric
from deepeval.test_case import LLMTestCase


class ExactAnswer(BaseMetric):
    def __init__(self, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def measure(self, test_case, *args, **kwargs):
        if test_case.input == "Atlantis?":
            raise RuntimeError("grader down")
        self.score = 1.0 if test_case.actual_output == test_case.expected_output else 0.0
        self.reason = "matches" if self.score else f"expected {test_case.expected_output!r}"
        self.success = self.score >= self.threshold
        return self.score

    async def a_measure(self, test_case, *args, **kwargs):
        return self.measure(test_case)

    def is_successful(self) -> bool:
        return bool(self.success)

    @property
    def __name__(self) -> str:
        return "Exact answer"


class Brevity(BaseMetric):
    def __init__(self, threshold: float = 0.7) -> None:
        self.threshold = threshold

    def measure(self, test_case, *args, **kwargs):
        self.score = min(1.0, 10 / max(1, len(test_case.actual_output)))
        self.reason = f"{len(test_case.actual_output)} characters"
        self.success = self.score >= self.threshold
        return self.score

    async def a_measure(self, test_case, *args, **kwargs):
        return self.measure(test_case)

    def is_successful(self) -> bool:
        return bool(self.success)

    @property
    def __name__(self) -> str:
        return "Brevity"


cases = [
    LLMTestCase(name="france", input="France?", actual_output="Paris", expected_output="Paris"),
    LLMTestCase(name="spain", input="Spain?", actual_output="Barcelona is the answer", expected_output="Madrid"),
    LLMTestCase(name="peru", input="Peru?", actual_output="Lima", expected_output="Lima"),
    LLMTestCase(name="atlantis", input="Atlantis?", actual_output="?", expected_output="?"),
]
result = evaluate(cases, [ExactAnswer(), Brevity()], async_config=AsyncConfig(run_async=False),
                  display_config=DisplayConfig(show_indicator=False, print_results=False),
                  error_config=ErrorConfig(ignore_errors=True))
import deepeval

(Path(sys.argv[1]) / "summary.json").write_text(json.dumps({
    "passed": sum(1 for test in result.test_results if test.success),
    "failed": sum(1 for test in result.test_results if not test.success),
    "errored": sum(1 for test in result.test_results if any(metric.error for metric in test.metrics_data or ())),
    "version": deepeval.__version__,
}))
