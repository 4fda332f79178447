"""`assay video store prune-cache | head -1` and friends: once a tool's work is done (frames written, videos
downloaded, cache pruned, video uploaded), a reader that leaves only loses output. It must not stop the
command as on Ctrl-C (exit 130, "the command stopped"), which it used to whenever the reader left before the
process did: a race lost most of the time with `| head -1`."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from media import make_numbered_video
from test_export import make_case

from assay.core import stdout_guard
from assay.core.stdout_guard import StdoutGuard
from assay.video.export import export_frames
from assay.video.store_commands import prune_lines, pull_lines


@contextmanager
def command_read_by_head(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Callable[[list[str]], None], list[int]]]:
    """A started command whose guarded stdout is a pipe (`assay … | head -1`): yields `print_then_reader_leaves`,
    which prints the command's lines and closes the reader as `head -1` does, and the SIGINTs the main
    thread received (recorded, not raised: a raised one would stop pytest)."""
    interrupts: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupts.append(signum))
    read_end, write_end = os.pipe()
    stream = os.fdopen(write_end, "w")
    monkeypatch.setattr(sys, "stdout", StdoutGuard(stream))
    stdout_guard.results_kept()  # the command's body starts: from here a reader leaving stops it

    def print_then_reader_leaves(lines: list[str]) -> None:
        os.close(read_end)
        print(*lines, sep="\n")
        sys.stdout.flush()

    try:
        yield print_then_reader_leaves, interrupts
    finally:
        signal.signal(signal.SIGINT, previous)
        stream.close()


def test_prune_cache_whose_reader_leaves_after_pruning_is_not_stopped(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("ASSAY_CACHE_DIR", raising=False)
    monkeypatch.setenv("GLASSKIT_EVAL_CACHE_DIR", str(tmp_path / "cache"))
    with command_read_by_head(monkeypatch) as (print_then_reader_leaves, interrupts):
        print_then_reader_leaves(prune_lines(all_files=True))
    assert interrupts == []


def test_pull_whose_reader_leaves_after_pulling_is_not_stopped(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "eval" / "cases").mkdir(parents=True)
    (tmp_path / "eval" / "cases" / "local.yaml").write_text("video: clip.mp4\ntargets:\n  t:\n    samples: []\n")
    with command_read_by_head(monkeypatch) as (print_then_reader_leaves, interrupts):
        print_then_reader_leaves(pull_lines(tmp_path / "eval", None))
    assert interrupts == []


def test_export_frames_whose_reader_leaves_after_writing_is_not_stopped(tmp_path: Path, monkeypatch) -> None:
    clip = make_numbered_video(tmp_path / "clip.mp4", 10, fps=10)
    with command_read_by_head(monkeypatch) as (print_then_reader_leaves, interrupts):
        written = export_frames(make_case(clip), [0.0, 0.5], tmp_path / "frames", tmp_path)
        print_then_reader_leaves([str(path) for path in written])
    assert interrupts == [] and all(path.is_file() for path in written)
