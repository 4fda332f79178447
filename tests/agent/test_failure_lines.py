"""The lines under a failed attempt: each says plainly why the assertion did not pass."""

from __future__ import annotations

from types import SimpleNamespace

from assay.agent.report import failure_lines


def _assertion(**fields):
    return {"scope": "t", "description": "judge('names a city', threshold=0.5)", **fields}


def test_a_judge_scored_below_its_threshold_is_not_called_matched():
    """A judge that answered 0.3 against a threshold of 0.5 was shown as `matched: judge(…): score 0.300 below 0.5`
    under a FAILED attempt: "matched" (the stored status: the judge answered) read as a pass."""
    result = SimpleNamespace(error=None, assertions=[
        _assertion(status="matched", value=0.3, threshold=0.5),
        _assertion(status="matched", value=0.9, threshold=0.5, description="passes"),
        _assertion(status="failed", reason="no 'Paris' in the reply", description="includes('Paris')"),
    ])
    assert failure_lines(result) == [
        "below threshold: judge('names a city', threshold=0.5): score 0.300 below 0.5",
        "failed: includes('Paris'): no 'Paris' in the reply",
    ]
