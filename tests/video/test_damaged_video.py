"""A video file damaged inside its index: every command says which file and what to do, no traceback."""

from __future__ import annotations

from pathlib import Path

import av
import pytest
from video_evals import invoke, make_eval, run_eval

from assay.errors import VideoError
from assay.video.decode import probe_video

CASE = """
video: clip.mp4
targets:
  number:
    samples:
      - at: [0.5, 1.0]
        expect: 5
"""


def _cut_inside_its_index(video: Path) -> Path:
    """Cut the file where its sample description starts: PyAV then opens a video stream with no codec."""
    data = video.read_bytes()
    video.write_bytes(data[: data.index(b"stsd")])
    with av.open(str(video)) as container:
        assert container.streams.video[0].codec_context is None  # the damage this file is about
    return video


@pytest.fixture
def damaged_eval(tmp_path: Path) -> Path:
    eval_dir = make_eval(tmp_path, CASE)
    _cut_inside_its_index(eval_dir / "cases" / "clip.mp4")
    return eval_dir


def test_probe_of_a_stream_without_codec_is_a_video_error(damaged_eval: Path) -> None:
    video = damaged_eval / "cases" / "clip.mp4"
    with pytest.raises(VideoError, match="video has no readable dimensions: .*clip.mp4: .*truncated or damaged"):
        probe_video(video)


@pytest.mark.parametrize(
    ("command", "prefix", "exit_code"),
    [
        (["run"], "Eval failed:", 2),
        (["validate"], "Validation failed", 1),
        (["export-frames", "--case", "clip", "--at", "0.5"], "Could not export frames:", 2),
    ],
)
def test_commands_name_the_damaged_video_without_a_traceback(
    damaged_eval: Path, command: list[str], prefix: str, exit_code: int
) -> None:
    if command == ["run"]:
        result = run_eval(damaged_eval)
    else:
        result = invoke("video", *command, "--eval-dir", damaged_eval)
    assert result.exit_code == exit_code, result.output
    assert "Traceback" not in result.output
    assert "internal error" not in result.flat
    assert result.flat.strip().startswith(prefix)
    assert "clip.mp4" in result.flat and "truncated or damaged" in result.flat
