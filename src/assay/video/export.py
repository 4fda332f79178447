"""`export-frames`: write the frames a case's video shows at requested times as lossless PNG files.

Same frame selection as `run` (one sequential pass, `assay.video.decode`); GlassKit §21.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path

from assay.core.fsutil import make_directories_under, write_atomically
from assay.core.stdout_guard import results_made
from assay.errors import VideoError
from assay.video.decode import probe_video, select_frames
from assay.video.model import Case, expand_home


def export_frames(case: Case, times: Sequence[float], output_dir: Path | None, eval_dir: Path) -> list[Path]:
    """Write `at-<t>s.png` for each distinct time and return the absolute paths in request order."""
    requested = distinct_export_times(times)
    video_path = case.video.path
    if video_path is None:
        raise VideoError(f"video for case '{case.name}' has not been downloaded: {case.video.display_name}")
    info = probe_video(video_path)
    for t in requested:
        if t > info.duration_s:
            raise VideoError(
                f"requested time {t:g}s exceeds video duration {info.duration_s:g}s for case '{case.name}'"
            )
    destination = export_directory(case, output_dir, eval_dir)
    # The default destination lives in the eval dir, and a `runs` or `frames` link must not carry the
    # files out of it; a chosen --output-dir is its own root.
    root = destination if output_dir is not None else Path(eval_dir).resolve()
    try:
        make_directories_under(root, destination)
    except (FileExistsError, NotADirectoryError) as error:  # a file where a folder must be (here or above)
        blocker = next((folder for folder in (destination, *destination.parents) if folder.is_file()), destination)
        raise VideoError(f"could not create frame export directory {destination}: {blocker} is a file, not a folder; "
                         "give --output-dir a folder (it is made when missing)") from error
    except OSError as error:
        raise VideoError(f"could not create frame export directory {destination}: {error}") from error
    written = []
    for t, frame in zip(requested, select_frames(video_path, requested)):
        path = destination / export_file_name(t)
        encoded = io.BytesIO()
        with frame.to_image() as image:
            image.save(encoded, format="PNG")
        try:
            write_atomically(path, encoded.getvalue(), root=root)
        except OSError as error:
            raise VideoError(f"could not write exported frame {path}: {error}") from error
        written.append(path)
    results_made()  # written: a reader leaving now (`| head -1`) only loses paths, it stops nothing
    return written


def distinct_export_times(times: Sequence[float]) -> list[float]:
    """Validated times, -0.0 as 0.0, exact duplicates dropped (first kept); never rounded.

    A negative time is refused on the command line (GlassKit's `--at` has `min=0`); NaN and +inf get
    past that check and are refused here, as GlassKit's export does: `Could not export frames: --at
    must be a finite, nonnegative number` on stdout."""
    distinct: list[float] = []
    seen: set[float] = set()
    for value in times:
        t = float(value)
        if not math.isfinite(t) or t < 0:
            raise VideoError("--at must be a finite, nonnegative number")
        t = t + 0.0  # turns -0.0 into 0.0
        if t not in seen:
            seen.add(t)
            distinct.append(t)
    return distinct


def export_directory(case: Case, output_dir: Path | None, eval_dir: Path) -> Path:
    if output_dir is not None:
        return expand_home(output_dir).resolve()
    return Path(eval_dir).resolve() / "runs" / "frames" / case.name


def export_file_name(t: float) -> str:
    return f"at-{t!s}s.png"
