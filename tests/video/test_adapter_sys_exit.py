"""A Python adapter whose code calls `sys.exit()` fails that call; it does not end assay with its code."""

from __future__ import annotations

from pathlib import Path

import pytest
from video_evals import invoke, make_eval, run_eval

CASE = """
video: clip.mp4
targets:
  number:
    samples:
      - at: [0.0, 0.5, 1.0]
        expect: 0
"""

EXITS_IN_EVALUATE = '''
import sys

def create_evaluator(config):
    return Evaluator()

class Evaluator:
    {kind}def evaluate(self, sample, target):
        if sample.sample_index == 1:
            sys.exit(3)
        return 0
'''

EXITS_IN_FACTORY = '''
import sys

def create_evaluator(config):
    sys.exit("no gpu")
'''


@pytest.mark.parametrize("kind", ["", "async "])
def test_sys_exit_in_evaluate_is_an_adapter_error_with_exit_2(tmp_path: Path, kind: str) -> None:
    eval_dir = make_eval(tmp_path, CASE, adapter=EXITS_IN_EVALUATE.format(kind=kind))
    result = run_eval(eval_dir)
    assert result.exit_code == 2, result.output
    assert "Eval failed: adapter failed for clip/number sample 1 at 0.5s: the adapter called sys.exit(3)" in result.flat
    assert not list((eval_dir / "runs" / "checkpoints").glob("*/active.lock"))  # the checkpoint was let go


def test_sys_exit_in_evaluate_is_kept_going_past_with_keep_going(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, CASE, adapter=EXITS_IN_EVALUATE.format(kind=""))
    result = run_eval(eval_dir, "--keep-going")
    assert result.exit_code == 1, result.output
    assert "reason=adapter_error: adapter failed for clip/number sample 1 at 0.5s: the adapter called sys.exit(3)" in result.flat
    assert "1 adapter error can be retried" in result.flat


def test_sys_exit_in_the_factory_is_a_factory_failure(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, CASE, adapter=EXITS_IN_FACTORY)
    result = run_eval(eval_dir)
    assert result.exit_code == 2, result.output
    assert "failed: the adapter called sys.exit('no gpu')" in result.flat
    assert result.flat.strip().startswith("Eval failed: adapter factory")


EXITS_ON_IMPORT = '''
import sys

sys.exit(4)
'''


def test_sys_exit_while_an_adapter_module_is_imported_is_an_import_failure(tmp_path: Path, monkeypatch) -> None:
    eval_dir = make_eval(tmp_path, CASE)
    (tmp_path / "exits_on_import.py").write_text(EXITS_ON_IMPORT, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))  # the module form: imported from sys.path
    result = invoke("video", "run", "--eval-dir", str(eval_dir), "--adapter", "exits_on_import:create_evaluator")
    assert result.exit_code == 2, result.output  # not the adapter's 4, said by nobody
    assert result.flat.strip() == (
        "Eval failed: adapter import failed for module 'exits_on_import': the adapter called sys.exit(4); "
        "raise an exception instead to report a failure"
    )
    checkpoints = eval_dir / "runs" / "checkpoints"
    assert not checkpoints.exists() or not any(checkpoints.iterdir())  # nothing reusable: no checkpoint, no lock left


def test_sys_exit_while_an_adapter_file_is_imported_names_the_call(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, CASE, adapter=EXITS_ON_IMPORT)
    result = run_eval(eval_dir)
    assert result.exit_code == 2, result.output
    assert result.flat.strip() == (
        f"Eval failed: adapter import failed for {eval_dir / 'adapter.py'}: the adapter called sys.exit(4); "
        "raise an exception instead to report a failure"
    )
