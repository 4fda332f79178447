"""Benchmark `assay video run` against a bare PyAV pass (issue: Video evals I figures).

Workload: a 60 s 1280x720 30 fps H.264 clip, flat and noisy (~4 Mbit/s), made with PyAV and
cached under benchmarks/out/. A trivial async adapter returns True. For each video it measures:
  * `assay --version` and `assay video list-samples` on the 3-target x 600-sample case;
  * `assay video run`, 3 targets every 0.1 s (1,800 samples over 600 frames), and 1 target every
    0.5 s, wall seconds and peak RSS, against a bare PyAV pass that decodes the file and converts
    the frames those samples pick to RGB.
Run: python benchmarks/video_run.py [--rounds 3] [--checkpoint-overhead]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import textwrap
import time
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

OUT = Path(__file__).resolve().parent / "out"
WIDTH, HEIGHT, FPS, SECONDS = 1280, 720, 30, 60


def byte_compile_assay() -> None:
    """Compile assay's modules to bytecode once, as `pip install` does for a regular install.

    This sandbox sets PYTHONDONTWRITEBYTECODE, so an editable install would otherwise compile
    every assay module from source on every start (~0.07 s per run), which no installed copy does."""
    import compileall

    import assay

    compileall.compile_dir(str(Path(assay.__file__).parent), quiet=1)


def make_video(path: Path, noisy: bool) -> Path:
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    ys, xs = np.mgrid[0:HEIGHT, 0:WIDTH]
    partial = path.with_suffix(".partial.mp4")
    with av.open(str(partial), "w") as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        stream.time_base = Fraction(1, FPS)
        stream.options = {"g": "60", "preset": "veryfast"} | ({"b": "4000k"} if noisy else {"crf": "23"})
        if noisy:
            stream.bit_rate = 4_000_000
        for index in range(FPS * SECONDS):
            frame = np.empty((HEIGHT, WIDTH, 3), dtype=np.uint8)
            frame[..., 0] = (index * 4) % 256
            frame[..., 1] = 90
            frame[..., 2] = 160
            if noisy:
                gradient = ((xs + ys + index * 8) % 256).astype(np.uint8)
                frame[..., 1] = gradient
                frame = np.clip(frame.astype(np.int16) + rng.integers(-24, 24, frame.shape), 0, 255).astype(np.uint8)
            video_frame = av.VideoFrame.from_ndarray(frame, format="rgb24")
            video_frame.pts = index
            container.mux(stream.encode(video_frame))
        container.mux(stream.encode())
    partial.replace(path)
    return path


ADAPTER = """
async def evaluate(sample, target):
    return True
"""


def make_eval(root: Path, video: Path, targets: int, every_s: float) -> Path:
    cases = root / "cases"
    cases.mkdir(parents=True, exist_ok=True)
    link = cases / video.name
    if not link.exists():
        link.symlink_to(video)
    lines = [f"video: {video.name}", "targets:"]
    for number in range(targets):
        lines += [f"  t{number}:", "    samples:", "      - range: [0.0, 60.0]", f"        every_s: {every_s}", "        expect: true"]
    (cases / "bench.yaml").write_text("\n".join(lines) + "\n")
    (root / "adapter.py").write_text(textwrap.dedent(ADAPTER))
    return root


def timed(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (MiB) of one command, via GNU time when available."""
    started = time.perf_counter()
    if Path("/usr/bin/time").exists():
        completed = subprocess.run(["/usr/bin/time", "-f", "%M", *command], capture_output=True, text=True)
        wall = time.perf_counter() - started
        rss_kib = int(completed.stderr.strip().splitlines()[-1])
    else:  # pragma: no cover
        completed = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - started
        rss_kib = 0
    if completed.returncode not in (0, 1):
        raise SystemExit(f"command failed: {' '.join(command)}\n{completed.stdout}\n{completed.stderr}")
    return wall, rss_kib // 1024


BARE_PASS = """
import sys, av
path, step = sys.argv[1], int(sys.argv[2])
with av.open(path) as container:
    stream = container.streams.video[0]
    stream.thread_type = "AUTO"
    for index, frame in enumerate(container.decode(stream)):
        if index % step == 0:
            frame.to_ndarray(format="rgb24")
"""


def median(samples: list[tuple[float, int]]) -> tuple[float, int]:
    return statistics.median(s[0] for s in samples), max(s[1] for s in samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--checkpoint-overhead", action="store_true", help="also time runs with checkpoints disabled")
    args = parser.parse_args()
    byte_compile_assay()
    assay = [sys.executable, "-m", "assay"]
    version = median([timed([*assay, "--version"]) for _ in range(args.rounds)])
    print(f"assay --version: {version[0]:.3f} s, {version[1]} MiB")
    for noisy in (False, True):
        name = "perf-noisy.mp4" if noisy else "perf.mp4"
        video = make_video(OUT / name, noisy)
        print(f"\n== {name} ({video.stat().st_size / 1e6:.1f} MB) ==")
        for targets, every_s, step in ((3, 0.1, 3), (1, 0.5, 15), (1, 0.1, 3)):
            eval_dir = make_eval(OUT / f"eval-{name}-{targets}x{every_s}", video, targets, every_s)
            samples = targets * int(60 / every_s)
            if targets == 3:
                listing = median([timed([*assay, "video", "list-samples", "--eval-dir", str(eval_dir)]) for _ in range(args.rounds)])
                print(f"list-samples ({samples} samples): {listing[0]:.3f} s, {listing[1]} MiB")
            bare = median([timed([sys.executable, "-c", BARE_PASS, str(video), str(step)]) for _ in range(args.rounds)])
            run = median([
                timed([*assay, "video", "run", "--eval-dir", str(eval_dir), "--adapter", f"{eval_dir}/adapter.py:evaluate", "--concurrency", "8"])
                for _ in range(args.rounds)
            ])
            ratio = (run[0] - version[0]) / bare[0]
            print(
                f"{targets} target(s) every {every_s}s ({samples} samples): run {run[0]:.2f} s / {run[1]} MiB; "
                f"bare PyAV pass {bare[0]:.2f} s / {bare[1]} MiB; (run - startup) / bare = {ratio:.2f}"
            )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
