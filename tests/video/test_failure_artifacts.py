"""`--save-failures` and `--artifacts-dir` end to end: the folder is checked when the run starts, and a
trial folder shows the failures of the run that wrote it (a resume keeps those of the results it reuses)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from video_evals import invoke, number_eval, read_report, run_eval

from assay.errors import UsageError


def names(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


@pytest.mark.parametrize(
    ("make", "given", "problem"),
    [
        (lambda root: (root / "out").write_text("x"), "out", "--artifacts-dir out is a file, not a folder"),
        (lambda root: (root / "out").write_text("x"), "out/sub", "--artifacts-dir out/sub cannot be used: out is a file, not a folder"),
        (lambda root: (root / "out").mkdir() or (root / "out" / "failures").write_text("x"), "out",
         "--artifacts-dir out cannot be used: out/failures is a file, not a folder"),
    ],
)
def test_an_unusable_artifacts_dir_is_refused_before_the_adapter_is_called(tmp_path, monkeypatch, make, given, problem):
    calls = tmp_path / "calls.txt"
    eval_dir = number_eval(tmp_path, f'{{calls_file: "{calls}"}}')
    make(tmp_path)
    monkeypatch.chdir(tmp_path)  # the folder as given, relative, is what the message names
    result = run_eval(eval_dir, "--save-failures", "--artifacts-dir", given)
    assert result.exit_code == 2
    assert f"Eval failed: {problem}; pass a folder you can write to" in result.flat
    assert not calls.exists()  # refused when the run starts, not at its first failure
    assert not (eval_dir / "runs" / "checkpoints").exists() or not any((eval_dir / "runs" / "checkpoints").iterdir())


def test_an_artifacts_dir_without_write_permission_is_refused(tmp_path, monkeypatch):
    from assay.video.artifacts import check_artifacts_dir

    (tmp_path / "locked").mkdir()
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != tmp_path / "locked")
    with pytest.raises(UsageError) as caught:
        check_artifacts_dir(str(tmp_path / "locked"), tmp_path, save_failures=True)
    assert caught.value.option == "--artifacts-dir"
    assert str(caught.value) == (
        f"--artifacts-dir {tmp_path}/locked cannot be written (no permission); "
        "pass a folder you can write to (it is created when missing)"
    )
    # Without --save-failures the folder is the adapter's own: it must be writable itself.
    with pytest.raises(UsageError, match=r"locked cannot be written \(no permission\); pass a folder"):
        check_artifacts_dir(str(tmp_path / "locked"), tmp_path, save_failures=False)
    check_artifacts_dir(str(tmp_path / "new" / "folder"), tmp_path, save_failures=True)  # created when needed
    assert not (tmp_path / "new").exists()  # the check creates nothing
    # Without --artifacts-dir the eval's runs/failures is checked.
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "failures").write_text("x")
    with pytest.raises(UsageError) as caught:
        check_artifacts_dir(None, tmp_path, save_failures=True)
    assert (caught.value.option, str(caught.value)) == ("--save-failures", (
        f"--save-failures cannot write to {tmp_path}/runs/failures: it is a file, not a folder; "
        "fix it or pass --artifacts-dir"
    ))
    check_artifacts_dir(None, tmp_path, save_failures=False)  # nothing is saved: nothing to check


def test_a_resumed_run_checks_the_artifacts_dir_it_restores(tmp_path, monkeypatch):
    flag = tmp_path / "still-broken"
    flag.write_text("x")
    eval_dir = number_eval(tmp_path, f'{{fail_at: [1], fail_while_exists: "{flag}"}}')
    monkeypatch.chdir(tmp_path)
    artifacts = tmp_path / "art"
    report_path = tmp_path / "r.json"
    first = run_eval(eval_dir, "--keep-going", "--save-failures", "--artifacts-dir", "art", "--output-json", report_path)
    assert first.exit_code == 1
    checkpoint = read_report(report_path)["checkpoint"]["path"]
    shutil.rmtree(artifacts)
    artifacts.write_text("now a file")
    resumed = invoke("video", "run", "--resume", checkpoint)
    assert resumed.exit_code == 2
    assert (
        "Eval failed: --artifacts-dir art (restored from the checkpoint) is a file, not a folder; "
        "a resumed run writes where it started"
    ) in resumed.flat
    # A different folder on the resume command line is refused, as every other option is (GlassKit's rule).
    moved = invoke("video", "run", "--resume", checkpoint, "--artifacts-dir", "elsewhere")
    assert moved.exit_code == 2
    assert "cannot be combined with overrides (given: --artifacts-dir)" in moved.flat
