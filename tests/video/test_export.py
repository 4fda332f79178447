"""`export-frames`: file naming, de-duplication, the strict duration check and lossless output."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from media import make_numbered_video, make_quadrant_video, read_frame_number
from PIL import Image
from video_evals import invoke

from assay.errors import VideoError
from assay.video.decode import select_frames
from assay.video.export import distinct_export_times, export_frames
from assay.video.model import Case, LocalVideo, RemoteVideo, Thresholds


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 s at 30 fps; frame i shows the number i."""
    return make_numbered_video(tmp_path_factory.mktemp("videos") / "colors.mp4", 90, fps=30)


def make_case(video_path: Path | None, name: str = "colors", remote: bool = False) -> Case:
    video = RemoteVideo("store", "colors.mp4", "0" * 64, video_path) if remote else LocalVideo(video_path, "colors.mp4")  # type: ignore[arg-type]
    return Case(
        name=name,
        path=Path("/evals/cases") / f"{name}.yaml",
        source_sha256="0" * 64,
        description=None,
        every_s=0.5,
        video=video,
        targets=(),
        thresholds=Thresholds(),
        declared_target_ids=(),
        raw={},
    )


def test_files_are_named_with_python_str_of_the_requested_time(clip: Path, tmp_path: Path) -> None:
    times = [1.5, 0.0, 2.0166666, 1e-09, 3.0]
    written = export_frames(make_case(clip), times, tmp_path / "out", tmp_path)
    assert [path.name for path in written] == [
        "at-1.5s.png",
        "at-0.0s.png",
        "at-2.0166666s.png",
        "at-1e-09s.png",
        "at-3.0s.png",
    ]
    assert all(path.is_absolute() and path.is_file() for path in written)


def test_frames_are_the_ones_the_sequential_pass_selects(clip: Path, tmp_path: Path) -> None:
    written = export_frames(make_case(clip), [2.0166666, 0.5, 3.0, 1.99], tmp_path, tmp_path)
    assert [read_frame_number(np.asarray(Image.open(path))) for path in written] == [60, 15, 89, 60]


def test_exported_png_is_lossless_rgb_of_the_display_oriented_frame(tmp_path: Path) -> None:
    video = make_quadrant_video(tmp_path / "quadrant.mp4", display_rotation=90, display_hflip=True)
    (written,) = export_frames(make_case(video), [0.0], tmp_path / "out", tmp_path)
    (frame,) = select_frames(video, [0.0])
    with Image.open(written) as image:
        assert image.format == "PNG" and image.mode == "RGB" and image.size == (64, 96)
        assert np.array_equal(np.asarray(image), frame.pixels)


def test_duplicate_times_are_dropped_by_exact_equality_keeping_first_occurrence(clip: Path, tmp_path: Path) -> None:
    written = export_frames(make_case(clip), [1.0, 0.5, 1.0, 1.0000000001, -0.0, 0.0], tmp_path, tmp_path)
    assert [path.name for path in written] == ["at-1.0s.png", "at-0.5s.png", "at-1.0000000001s.png", "at-0.0s.png"]


def test_negative_zero_is_exported_as_zero() -> None:
    (t,) = distinct_export_times([-0.0])
    assert str(t) == "0.0"


@pytest.mark.parametrize("bad", [-0.5, float("nan"), float("inf")])
def test_times_must_be_finite_and_nonnegative(bad: float) -> None:
    with pytest.raises(VideoError, match=r"^--at must be a finite, nonnegative number$"):
        distinct_export_times([1.0, bad])


@pytest.mark.parametrize("bad", ["inf"])
def test_a_non_finite_time_is_an_export_error_on_stdout_checked_before_the_case(bad: str, tmp_path: Path) -> None:
    # GlassKit's `--at` has min=0, which +inf passes (NaN does not): its export refuses it as it refuses
    # any export problem (spec §21), before the case is looked up.
    result = invoke("video", "export-frames", "--eval-dir", tmp_path, "--case", "nope", "--at", "1", "--at", bad)
    assert result.exit_code == 2
    assert result.stdout.strip() == "Could not export frames: --at must be a finite, nonnegative number"


@pytest.mark.parametrize("bad", ["-1", "nan"])
def test_a_negative_time_is_a_usage_error(tmp_path: Path, bad: str) -> None:
    # GlassKit 0.1.12: `Invalid value for '--at': Input should be greater than or equal to 0` (NaN too).
    result = invoke("video", "export-frames", "--eval-dir", tmp_path, "--case", "nope", "--at", bad)
    assert result.exit_code == 2
    assert "Invalid value for '--at': Input should be greater than or equal to 0" in result.flat
    assert "Could not export frames" not in result.output


def test_time_past_the_duration_is_rejected_without_slack(clip: Path, tmp_path: Path) -> None:
    with pytest.raises(VideoError) as raised:
        export_frames(make_case(clip), [1.0, 3.01], tmp_path / "out", tmp_path)
    assert str(raised.value) == "requested time 3.01s exceeds video duration 3s for case 'colors'"
    assert not (tmp_path / "out").exists()  # checked before anything is created


def test_time_equal_to_the_duration_is_accepted(clip: Path, tmp_path: Path) -> None:
    (written,) = export_frames(make_case(clip), [3.0], tmp_path, tmp_path)
    assert read_frame_number(np.asarray(Image.open(written))) == 89


def test_default_destination_is_runs_frames_case_under_the_eval_dir(clip: Path, tmp_path: Path) -> None:
    eval_dir = tmp_path / "eval"
    eval_dir.mkdir()
    (written,) = export_frames(make_case(clip, name="kitchen"), [0.5], None, eval_dir)
    assert written == eval_dir.resolve() / "runs" / "frames" / "kitchen" / "at-0.5s.png"


def test_relative_output_dir_is_resolved(clip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (written,) = export_frames(make_case(clip), [0.5], Path("frames/here"), tmp_path / "eval")
    assert written == tmp_path.resolve() / "frames" / "here" / "at-0.5s.png"


def test_existing_files_are_replaced(clip: Path, tmp_path: Path) -> None:
    (tmp_path / "at-0.5s.png").write_text("stale")
    (written,) = export_frames(make_case(clip), [0.5], tmp_path, tmp_path)
    assert read_frame_number(np.asarray(Image.open(written))) == 15


def test_uncreatable_destination_is_reported(clip: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(VideoError, match=r"^could not create frame export directory .*file[/\\]out"):
        export_frames(make_case(clip), [0.5], blocker / "out", tmp_path)


def test_remote_video_is_read_from_its_cache_path(clip: Path, tmp_path: Path) -> None:
    (written,) = export_frames(make_case(clip, remote=True), [1.0], tmp_path, tmp_path)
    assert read_frame_number(np.asarray(Image.open(written))) == 30
