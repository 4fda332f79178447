"""`assay video review --case C --target T` as docs/video/tools.md shows it, with the target id misspelt:
the refusal keeps GlassKit's words and names the case's targets, the nearest first, as `run --target` does."""

from __future__ import annotations

import subprocess
import sys

from media import make_numbered_video


def _review(tmp_path, monkeypatch, *args: str) -> subprocess.CompletedProcess[str]:
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    eval_dir = tmp_path / "eval"
    (eval_dir / "cases").mkdir(parents=True)
    make_numbered_video(eval_dir / "cases" / "lamp.mp4", 10, fps=10)
    (eval_dir / "cases" / "lamp.yaml").write_text(
        "video: lamp.mp4\ntargets:\n  color:\n    samples:\n      - at: 0.5\n        expect: red\n"
        "  brightness:\n    samples:\n      - at: 0.5\n        expect: 0.3\n", encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "assay", "video", "review", "--eval-dir", str(eval_dir), "--no-open",
                           "--port", "0", *args], capture_output=True, text=True, timeout=60)


def test_a_misspelt_review_target_names_the_nearest_and_the_case_targets(tmp_path, monkeypatch):
    done = _review(tmp_path, monkeypatch, "--case", "lamp", "--target", "colr")
    assert done.returncode == 2
    said = " ".join((done.stdout + done.stderr).split())
    assert ("Could not start review UI: case 'lamp.yaml' has no target matching 'colr' (did you mean 'color'?); "
            "its targets: 'brightness', 'color'") in said
    assert "Review UI:" not in done.stdout and "Traceback" not in said


def test_a_review_target_like_none_of_them_still_lists_the_targets(tmp_path, monkeypatch):
    done = _review(tmp_path, monkeypatch, "--case", "lamp", "--target", "zzz")
    assert done.returncode == 2
    said = " ".join((done.stdout + done.stderr).split())
    assert "has no target matching 'zzz'; its targets: 'brightness', 'color'" in said and "did you mean" not in said
