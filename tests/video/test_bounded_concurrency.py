"""A --concurrency far above the work costs no more than the work: calls in flight and adapter
threads are capped at the samples there are to evaluate."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from media import make_numbered_video
from video_evals import invoke, write

from assay.video import observe, run, seed
from assay.video.run import usable_concurrency

ADAPTER = """
class Evaluator:
    def evaluate(self, sample, target):
        return 1


def create_evaluator(config):
    return Evaluator()
"""


@pytest.fixture
def eval_dir(tmp_path: Path) -> Path:
    root = tmp_path / "eval"
    (root / "cases").mkdir(parents=True)
    make_numbered_video(root / "cases" / "clip.mp4", 20, fps=10)
    write(root / "cases" / "clip.yaml", "video: clip.mp4\ntargets:\n  number:\n    samples:\n      - at: [0.5, 1.0, 1.5]\n")
    write(root / "adapter.py", ADAPTER)
    return root


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    seen: dict[str, list[int]] = {"in_flight": [], "threads": []}

    async def recording_observe_case(*args, concurrency, **kwargs):
        seen["in_flight"].append(concurrency)
        return await observe.observe_case(*args, concurrency=concurrency, **kwargs)

    class RecordingPool(ThreadPoolExecutor):
        def __init__(self, max_workers=None, **kwargs):
            seen["threads"].append(max_workers)
            super().__init__(max_workers=max_workers, **kwargs)

    for module in (run, seed):
        monkeypatch.setattr(module, "observe_case", recording_observe_case)
        monkeypatch.setattr(module, "ThreadPoolExecutor", RecordingPool)
    return seen


def test_usable_concurrency_is_the_work_at_most_and_never_zero() -> None:
    assert usable_concurrency(10**8, 3) == 3
    assert usable_concurrency(2, 3) == 2
    assert usable_concurrency(5, 0) == 1


def test_a_run_uses_no_more_workers_than_samples(eval_dir: Path, recorded: dict[str, list[int]]) -> None:
    (eval_dir / "cases" / "clip.yaml").write_text(
        "video: clip.mp4\ntargets:\n  number:\n    samples:\n      - at: [0.5, 1.0, 1.5]\n        expect: 1\n"
    )
    result = invoke("video", "run", "--eval-dir", eval_dir, "--adapter", f"{eval_dir}/adapter.py:create_evaluator",
                    "--concurrency", "10000")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert recorded == {"in_flight": [3], "threads": [3]}


def test_a_seed_uses_no_more_workers_than_samples_to_seed(eval_dir: Path, recorded: dict[str, list[int]]) -> None:
    result = invoke("video", "seed", "--eval-dir", eval_dir, "--adapter", f"{eval_dir}/adapter.py:create_evaluator",
                    "--concurrency", "10000")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert recorded == {"in_flight": [3], "threads": [3]}
