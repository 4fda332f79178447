"""docs/video/case-files.md: a case file whose suffix is nearly right gets a warning with the name to give it.
When a case file of that name is read already (`lamp.YAML` beside `lamp.yaml`), renaming as told would
replace it: the warning says to choose a name of its own instead."""

from __future__ import annotations

import shutil
import subprocess
import sys

from media import make_numbered_video

CASE = "video: lamp.mp4\ntargets:\n  color:\n    samples:\n      - at: 0.5\n        expect: 5\n"


def _validate(tmp_path, monkeypatch, *names: str) -> subprocess.CompletedProcess[str]:
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    cases = tmp_path / "eval" / "cases"
    cases.mkdir(parents=True)
    make_numbered_video(cases / "lamp.mp4", 10, fps=10)
    for name in names:
        (cases / name).write_text(CASE, encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "assay", "video", "validate", "--eval-dir", str(tmp_path / "eval")],
                          capture_output=True, text=True, timeout=60)


def test_a_misnamed_copy_beside_the_case_is_not_told_to_take_the_case_name(tmp_path, monkeypatch):
    done = _validate(tmp_path, monkeypatch, "lamp.yaml", "lamp.YAML")
    assert done.returncode == 0, done.stdout + done.stderr
    warning = f"Warning: {tmp_path / 'eval' / 'cases' / 'lamp.YAML'} is not read: a case file's name ends in .yaml or .yml"
    assert warning in done.stderr
    assert ("(lower case); lamp.yaml is read already, so give this one a name of its own ending in .yaml"
            in done.stderr)
    assert "rename it to lamp.yaml" not in done.stderr


def test_a_misnamed_case_alone_is_still_told_its_name(tmp_path, monkeypatch):
    done = _validate(tmp_path, monkeypatch, "other.yaml", "lamp.yam")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(lower case); rename it to lamp.yaml" in done.stderr
