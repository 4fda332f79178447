"""Video commands write only inside the eval dir: links planted in it cannot carry checkpoints,
failure artifacts, exported frames or rewritten case files elsewhere; symlinked case files stay links."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from media import make_numbered_video
from starlette.testclient import TestClient
from video_evals import invoke, write

from assay.core.fsutil import STALE_TEMPORARY_AGE_S
from assay.video.artifacts import artifact_stem
from assay.video.review.server import ReviewServer, create_review_app
from assay.web.app import Binding

ADAPTER = """
class Evaluator:
    async def evaluate(self, sample, target):
        return 7


def create_evaluator(config):
    return Evaluator()
"""

CASE = """
video: clip.mp4
targets:
  number:
    samples:
      - at: 0.5
        expect: 1
"""

DRAFT = """
# a draft: seed fills the expectation
video: ../cases/clip.mp4
targets:
  number:
    samples:
      - at: 0.5
"""


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_numbered_video(tmp_path_factory.mktemp("media") / "clip.mp4", 20, fps=10)


@pytest.fixture
def eval_dir(tmp_path: Path, clip: Path) -> Path:
    root = tmp_path / "eval"
    (root / "cases").mkdir(parents=True)
    (root / "cases" / "clip.mp4").write_bytes(clip.read_bytes())
    write(root / "cases" / "clip.yaml", CASE)
    write(root / "adapter.py", ADAPTER)
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def run(eval_dir: Path, *extra: str):
    return invoke("video", "run", "--eval-dir", eval_dir, "--adapter", f"{eval_dir}/adapter.py:create_evaluator", *extra)


def stale(path: Path, text: str = "half") -> Path:
    path.write_text(text)
    past = time.time() - STALE_TEMPORARY_AGE_S - 5
    os.utime(path, (past, past))
    return path


def test_a_runs_link_out_of_the_eval_dir_stops_the_run_before_any_checkpoint(eval_dir: Path, outside: Path) -> None:
    (eval_dir / "runs").symlink_to(outside)
    result = run(eval_dir)
    assert result.exit_code == 2
    assert "refusing to write" in result.flat and f"outside {eval_dir}" in result.flat
    assert list(outside.iterdir()) == []


def test_save_failures_never_overwrites_a_file_through_a_planted_link(eval_dir: Path, outside: Path) -> None:
    precious = outside / "precious.json"
    precious.write_text("keep me\n")
    trial = eval_dir / "runs" / "failures" / "trial-001"
    trial.mkdir(parents=True)
    (trial / f"{artifact_stem('clip', 'number', 0, 0.5)}.json").symlink_to(precious)

    result = run(eval_dir, "--save-failures")

    assert result.exit_code == 2
    assert "could not save failure artifacts" in result.flat and "refusing to write" in result.flat
    assert precious.read_text() == "keep me\n"


def test_a_failures_link_out_of_the_eval_dir_is_refused(eval_dir: Path, outside: Path) -> None:
    (eval_dir / "runs").mkdir()
    (eval_dir / "runs" / "failures").symlink_to(outside)
    result = run(eval_dir, "--save-failures")
    assert result.exit_code == 2 and "refusing to write" in result.flat
    assert list(outside.iterdir()) == []


def test_save_failures_still_writes_inside_the_eval_dir(eval_dir: Path) -> None:
    result = run(eval_dir, "--save-failures")
    assert result.exit_code == 0, result.output  # no gate: the failed sample only has its artifacts saved
    saved = sorted(path.name for path in (eval_dir / "runs" / "failures" / "trial-001").iterdir())
    stem = artifact_stem("clip", "number", 0, 0.5)
    assert saved == [f"{stem}.jpg", f"{stem}.json"]


def test_export_frames_refuses_a_frames_link_out_of_the_eval_dir(eval_dir: Path, outside: Path) -> None:
    (eval_dir / "runs").mkdir()
    (eval_dir / "runs" / "frames").symlink_to(outside)
    result = invoke("video", "export-frames", "--eval-dir", eval_dir, "--case", "clip", "--at", "0.5")
    assert result.exit_code == 2
    assert "Could not export frames" in result.flat and "refusing to write" in result.flat
    assert list(outside.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# Case files: seed and review


@pytest.fixture
def linked_draft(eval_dir: Path) -> Path:
    """`cases/draft.yaml` -> `drafts/draft.yaml`, both inside the eval dir."""
    target = write(eval_dir / "drafts" / "draft.yaml", DRAFT)
    (eval_dir / "cases" / "clip.yaml").unlink()
    (eval_dir / "cases" / "draft.yaml").symlink_to(Path("..") / "drafts" / "draft.yaml")
    return target


def seed(eval_dir: Path):
    return invoke("video", "seed", "--eval-dir", eval_dir, "--adapter", f"{eval_dir}/adapter.py:create_evaluator")


def test_seed_writes_through_a_symlinked_case_file_and_keeps_the_link(eval_dir: Path, linked_draft: Path) -> None:
    result = seed(eval_dir)
    assert result.exit_code == 0, result.output
    link = eval_dir / "cases" / "draft.yaml"
    assert link.is_symlink() and link.resolve() == linked_draft.resolve()
    assert "expect: 7" in linked_draft.read_text() and linked_draft.read_text().startswith("# a draft")


def test_seed_refuses_a_case_file_linked_out_of_the_eval_dir(eval_dir: Path, outside: Path) -> None:
    target = write(outside / "draft.yaml", DRAFT.replace("../cases/clip.mp4", str(eval_dir / "cases" / "clip.mp4")))
    before = target.read_text()
    (eval_dir / "cases" / "clip.yaml").unlink()
    (eval_dir / "cases" / "draft.yaml").symlink_to(target)

    result = seed(eval_dir)

    assert result.exit_code == 2
    assert "could not write seeded case file" in result.flat and "refusing to write" in result.flat
    assert (eval_dir / "cases" / "draft.yaml").is_symlink() and target.read_text() == before
    assert not (eval_dir / "runs" / "checkpoints").exists()  # refused before any adapter call


def test_a_review_save_writes_through_a_symlinked_case_file_and_keeps_the_link(eval_dir: Path, linked_draft: Path) -> None:
    server = ReviewServer(eval_dir=eval_dir.resolve(), binding=Binding(port=8124))
    api = TestClient(create_review_app(server), base_url="http://127.0.0.1:8124")
    token = api.get("/api/eval-directory").json()["write_token"]
    document = api.get("/api/case-files/draft.yaml").json()
    samples = next(target for target in document["targets"] if target["id"] == "number")["samples"]
    samples[0] = {**samples[0], "has_expectation": True, "expect_type": "number", "expect_json": "3"}

    saved = api.put(
        "/api/case-files/draft.yaml/samples", json={"targets": {"number": {"samples": samples}}},
        headers={"x-glasskit-write-token": token},
    )  # fmt: skip

    assert saved.status_code == 200, saved.text
    link = eval_dir / "cases" / "draft.yaml"
    assert link.is_symlink() and "expect: 3" in linked_draft.read_text()


# ---------------------------------------------------------------------------------------------
# Leftovers of interrupted rewrites


def test_the_next_seed_removes_stale_temporaries_beside_the_case_files(eval_dir: Path, linked_draft: Path) -> None:
    beside_target = stale(linked_draft.parent / ".draft.yaml.0123456789ab.tmp")
    in_cases = stale(eval_dir / "cases" / ".clip.yaml.0123456789ab.tmp")
    fresh = eval_dir / "cases" / ".clip.yaml.aaaaaaaaaaaa.tmp"
    fresh.write_text("a save in progress")
    (eval_dir / "cases" / "plain.yaml").write_text(DRAFT.replace("../cases/clip.mp4", "clip.mp4"))

    assert seed(eval_dir).exit_code == 0
    assert not beside_target.exists() and not in_cases.exists()
    assert fresh.exists()


def test_a_review_launch_removes_stale_temporaries_of_earlier_saves(eval_dir: Path) -> None:
    left = stale(eval_dir / "cases" / ".clip.yaml.0123456789ab.tmp")
    ReviewServer(eval_dir=eval_dir.resolve(), binding=Binding(port=8124))
    assert not left.exists()


def test_export_frames_into_a_file_says_it_is_a_file_not_an_errno(eval_dir: Path, tmp_path: Path) -> None:
    """`--output-dir` naming a file (or a folder under one) said `[Errno 17] File exists` / `[Errno 20] Not a directory`."""
    blocker = tmp_path / "frames.png"
    blocker.write_bytes(b"not a folder")
    for given in (blocker, blocker / "sub"):
        result = invoke("video", "export-frames", "--eval-dir", eval_dir, "--case", "clip", "--at", "0.5", "--output-dir", given)
        assert result.exit_code == 2, result.output
        assert result.flat.strip() == (f"Could not export frames: could not create frame export directory {given}: {blocker} "
                                       "is a file, not a folder; give --output-dir a folder (it is made when missing)")
