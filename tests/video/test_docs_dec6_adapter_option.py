"""docs/video/python-adapters.md writes `--adapter eval/adapter.py:create_evaluator`; typed without the
`:create_evaluator`, run, validate and seed name the option, GlassKit's words, and the value to give."""

from __future__ import annotations

import subprocess
import sys

import pytest
from media import make_numbered_video


@pytest.mark.parametrize("command", ["run", "validate", "seed"])
def test_an_adapter_without_its_callable_says_to_name_it_after_a_colon(tmp_path, monkeypatch, command):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    cases = tmp_path / "eval" / "cases"
    cases.mkdir(parents=True)
    make_numbered_video(cases / "lamp.mp4", 10, fps=10)
    (cases / "lamp.yaml").write_text("video: lamp.mp4\ntargets:\n  t:\n    samples:\n      - at: 0.5\n        expect: 5\n",
                                     encoding="utf-8")
    (tmp_path / "eval" / "adapter.py").write_text("def create_evaluator(config):\n    return None\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "assay", "video", command, "--adapter", "eval/adapter.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    said = " ".join((done.stdout + done.stderr).split())
    assert ("Invalid value for '--adapter': adapter must be '<module-or-file>:<callable>', got 'eval/adapter.py'; "
            "name the factory after a colon, e.g. eval/adapter.py:create_evaluator") in said
    assert "Traceback" not in said
