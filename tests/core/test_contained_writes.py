"""Writes under a root never follow a symbolic link out of it; interrupted writes are cleaned up later."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from assay.core.fsutil import (
    STALE_TEMPORARY_AGE_S,
    OutsideRoot,
    contained_target,
    make_directories_under,
    remove_stale_temporary_files,
    write_atomically,
)
from assay.core.journal import Checkpoint
from assay.errors import CheckpointError


def age(path: Path, seconds: float) -> Path:
    past = time.time() - seconds
    os.utime(path, (past, past), follow_symlinks=False)
    return path


def new_checkpoint(eval_dir: Path, kind: str = "run") -> Checkpoint:
    return Checkpoint.create(eval_dir, kind, plan_hash="a" * 64, total=1, invocation={})


# ---------------------------------------------------------------------------------------------
# The helper


def test_a_link_inside_the_root_is_written_through_and_stays_a_link(tmp_path: Path) -> None:
    root = tmp_path / "eval"
    (root / "shared").mkdir(parents=True)
    target = root / "shared" / "case.yaml"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    link = root / "case.yaml"
    link.symlink_to(Path("shared") / "case.yaml")

    write_atomically(link, "new\n", root=root)

    assert link.is_symlink() and target.read_text() == "new\n"
    assert target.stat().st_mode & 0o777 == 0o640


def test_a_link_out_of_the_root_is_refused_naming_path_and_root(tmp_path: Path) -> None:
    root, outside = tmp_path / "eval", tmp_path / "outside.txt"
    root.mkdir()
    outside.write_text("precious\n")
    (root / "planted.json").symlink_to(outside)

    with pytest.raises(OutsideRoot) as refused:
        write_atomically(root / "planted.json", "overwritten", root=root)

    assert outside.read_text() == "precious\n"
    assert str(root / "planted.json") in str(refused.value) and f"outside {root}" in str(refused.value)
    assert isinstance(refused.value, OSError)  # callers report it like any failed write


def test_dot_dot_and_dangling_links_are_refused_too(tmp_path: Path) -> None:
    root = tmp_path / "eval"
    root.mkdir()
    (root / "dangling").symlink_to(tmp_path / "not-yet")
    with pytest.raises(OutsideRoot):
        contained_target(root, root / ".." / "x")
    with pytest.raises(OutsideRoot):
        write_atomically(root / "dangling", "x", root=root)
    assert not (tmp_path / "not-yet").exists()


def test_folders_are_created_only_inside_the_root(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "eval", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (root / "runs").symlink_to(elsewhere)
    with pytest.raises(OutsideRoot):
        make_directories_under(root, root / "runs" / "frames" / "clip")
    assert list(elsewhere.iterdir()) == []
    made = make_directories_under(root, root / "other" / "frames")
    assert made.is_dir()


# ---------------------------------------------------------------------------------------------
# Checkpoints


def test_a_runs_link_out_of_the_eval_dir_refuses_the_checkpoint(tmp_path: Path) -> None:
    eval_dir, elsewhere = tmp_path / "eval", tmp_path / "elsewhere"
    eval_dir.mkdir()
    elsewhere.mkdir()
    (eval_dir / "runs").symlink_to(elsewhere)

    with pytest.raises(CheckpointError) as refused:
        new_checkpoint(eval_dir)

    assert "outside" in str(refused.value) and str(eval_dir) in str(refused.value)
    assert list(elsewhere.iterdir()) == []


def test_a_runs_link_inside_the_eval_dir_is_followed(tmp_path: Path) -> None:
    eval_dir = tmp_path / "eval"
    (eval_dir / "kept-runs").mkdir(parents=True)
    (eval_dir / "runs").symlink_to("kept-runs")
    with new_checkpoint(eval_dir) as checkpoint:
        assert (eval_dir / "kept-runs" / "checkpoints" / checkpoint.path.name / "manifest.json").is_file()


# ---------------------------------------------------------------------------------------------
# Leftovers of interrupted writes


def test_stale_temporaries_are_removed_and_fresh_ones_and_other_files_kept(tmp_path: Path) -> None:
    for path in (tmp_path / ".case.yaml.0123456789ab.tmp", tmp_path / ".case.yaml.aaaaaaaaaaaa.tmp",
                 tmp_path / "notes.tmp", tmp_path / ".case.yaml.xyz.tmp"):  # fmt: skip
        path.write_text("x")
    age(tmp_path / ".case.yaml.0123456789ab.tmp", STALE_TEMPORARY_AGE_S + 5)
    age(tmp_path / "notes.tmp", STALE_TEMPORARY_AGE_S + 5)
    age(tmp_path / ".case.yaml.xyz.tmp", STALE_TEMPORARY_AGE_S + 5)

    removed = remove_stale_temporary_files(tmp_path)

    assert removed == [tmp_path / ".case.yaml.0123456789ab.tmp"]
    assert sorted(path.name for path in tmp_path.iterdir()) == [".case.yaml.aaaaaaaaaaaa.tmp", ".case.yaml.xyz.tmp", "notes.tmp"]


def test_the_next_checkpoint_of_the_kind_removes_what_killed_runs_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with new_checkpoint(tmp_path) as earlier:
        pass
    with new_checkpoint(tmp_path, "seed") as other_kind:
        pass
    left = age_write(earlier.path / ".manifest.json.0123456789ab.tmp")
    other = age_write(other_kind.path / ".manifest.json.0123456789ab.tmp")
    discarding = earlier.path.parent / ".run-20260101T000000Z-00000000.feedbeeffeedbeef.discarding"
    discarding.mkdir()
    (discarding / "events.jsonl").write_text("")
    root = earlier.path.parent

    with new_checkpoint(tmp_path):
        pass
    assert not left.exists()
    assert other.exists()  # a seed's leftovers are for the next seed
    # The set-aside folder is younger than the stale age (ctime cannot be faked): it stays for now.
    assert discarding.exists()
    monkeypatch.setattr("assay.core.journal.STALE_TEMPORARY_AGE_S", 0.0)
    with new_checkpoint(tmp_path):
        pass
    assert not discarding.exists() and root.is_dir()


def test_resuming_a_checkpoint_removes_its_stale_temporaries(tmp_path: Path) -> None:
    with new_checkpoint(tmp_path) as earlier:
        pass
    left = age_write(earlier.path / ".manifest.json.0123456789ab.tmp")
    with Checkpoint.resume(earlier.path, earlier.manifest):
        pass
    assert not left.exists()


def age_write(path: Path) -> Path:
    path.write_text("{")
    return age(path, STALE_TEMPORARY_AGE_S + 5)


def test_writing_a_report_removes_what_a_killed_write_of_the_same_report_left(tmp_path: Path) -> None:
    """`--output-json` and `--junit` targets sit in folders no other cleanup visits (often the
    repository root), so each report write clears its own stale temporaries, and only those."""
    from assay.core.report.junit import write_junit
    from assay.video.report import write_json_report

    for target, write in ((tmp_path / "report.json", lambda: write_json_report(str(tmp_path / "report.json"), {"a": 1})),
                          (tmp_path / "junit.xml", lambda: write_junit(tmp_path / "junit.xml", []))):
        stale = tmp_path / f".{target.name}.0123456789ab.tmp"
        stale.write_text("half")
        age(stale, STALE_TEMPORARY_AGE_S + 5)
        fresh = tmp_path / f".{target.name}.ba9876543210.tmp"
        fresh.write_text("a write in progress")
        other = tmp_path / ".other.json.0123456789ab.tmp"
        other.write_text("someone else's")
        age(other, STALE_TEMPORARY_AGE_S + 5)
        write()
        assert target.is_file() and not stale.exists()
        assert fresh.exists() and other.exists()


def test_a_seed_with_nothing_to_seed_still_clears_what_a_killed_seed_left(tmp_path: Path) -> None:
    from assay.core.journal import remove_checkpoint_leftovers

    eval_dir = tmp_path / "eval"
    killed = new_checkpoint(eval_dir, "seed")
    killed.release()
    leftover = killed.path / ".manifest.json.0123456789ab.tmp"
    leftover.write_text("{")
    age(leftover, STALE_TEMPORARY_AGE_S + 5)
    run_leftover = new_checkpoint(eval_dir, "run")
    run_leftover.release()
    other_kind = run_leftover.path / ".manifest.json.0123456789ab.tmp"
    other_kind.write_text("{")
    age(other_kind, STALE_TEMPORARY_AGE_S + 5)
    remove_checkpoint_leftovers(eval_dir, "seed")
    assert not leftover.exists() and other_kind.exists()  # only the command's own kind is touched
    remove_checkpoint_leftovers(tmp_path / "no-such-eval", "seed")  # nothing there: nothing to do
