"""Benchmark `assay video run --adapter-command` against a bare decode (issue: Video evals II, issue 35).

600 samples (1 target every 0.1 s) of the noisy 60 s 720p clip through a node adapter on the shipped
kit (tests/adapters/fixtures/png_probe_adapter.mjs on src/assay/video/js/adapter-kit.mjs), in
interleaved rounds (the order rotates each round) of:
  * bare    the floor: one PyAV pass decoding the whole clip (FFmpeg's threads) and converting the
            600 sampled frames to RGB, as benchmarks/video_run.py does;
  * shared  the run, frames through shared memory (the kit accepts assay's offer), `trivial` mode:
            the adapter answers true without reading the pixels;
  * png     the same run with ASSAY_SHARED_FRAMES=0: frames as base64 PNG, as every GlassKit adapter
            gets them;
and, with --reading, the same two runs with `first-pixel` mode (the adapter reads every frame's RGB).
Each row gives median wall and CPU (user + system of assay and node, from GNU time), peak RSS, and
the medians of the per-round ratios to the bare pass; the load average is printed for every round.
`--targets 3` samples 3 targets every 0.1 s (1,800 samples over the same 600 frames) instead.
`--adapter FILE` runs another script (`node FILE MODE`), e.g. another version of the kit.
`--baseline CHECKOUT` adds the same run from another checkout of assay (`git worktree add`): its
src/ on PYTHONPATH, its own kit and probe adapter.
It also prints the per-frame cost of assay's PNG encoding.
Run: python benchmarks/command_adapter.py [--rounds 5] [--reading] [--targets 1|3] [--adapter FILE] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from video_run import BARE_PASS, OUT, byte_compile_assay, make_eval, make_video  # noqa: E402

ADAPTER = HERE.parent / "tests" / "adapters" / "fixtures" / "png_probe_adapter.mjs"


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system, waited-for children included) and peak RSS (MiB)."""
    started = time.perf_counter()
    completed = subprocess.run(
        ["/usr/bin/time", "-f", "%U %S %M", *command], capture_output=True, text=True, env={**os.environ, **(env or {})}
    )
    wall = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        raise SystemExit(f"command failed: {' '.join(command)}\n{completed.stdout}\n{completed.stderr}")
    user, system, rss_kib = completed.stderr.strip().splitlines()[-1].split()
    return wall, float(user) + float(system), int(rss_kib) // 1024


def run_command(eval_dir: Path, adapter: Path, mode: str) -> list[str]:
    return [sys.executable, "-m", "assay", "video", "run", "--eval-dir", str(eval_dir),
            "--adapter-command", f"node {adapter} {mode}", "--concurrency", "4"]


def png_cost(video: Path, frames: int = 30) -> tuple[dict[str, tuple[float, int]], float]:
    import io

    import av
    from PIL import Image

    from assay.video.png_encoding import encode_png

    arrays = []
    with av.open(str(video)) as container:
        for index, frame in enumerate(container.decode(video=0)):
            if index % 20 == 0:
                arrays.append(frame.to_ndarray(format="rgb24"))
            if len(arrays) == frames:
                break
    ours = {}
    for compression in ("auto", "deflate", "stored"):
        started = time.process_time()
        sizes = [len(encode_png(pixels, compression)) for pixels in arrays]
        ours[compression] = ((time.process_time() - started) / frames, int(statistics.mean(sizes)))
    started = time.process_time()
    for pixels in arrays[:5]:
        Image.fromarray(pixels).save(io.BytesIO(), format="PNG")
    pillow_default = (time.process_time() - started) / 5
    return ours, pillow_default


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--adapter", type=Path, default=ADAPTER, help="node script run as `node FILE MODE`")
    parser.add_argument("--reading", action="store_true", help="also runs whose adapter reads every frame's pixels")
    parser.add_argument("--targets", type=int, choices=(1, 3), default=1)
    parser.add_argument("--baseline", type=Path, help="another checkout of assay to run the same way")
    args = parser.parse_args()
    byte_compile_assay()
    if args.baseline is not None:
        import compileall

        compileall.compile_dir(str(args.baseline / "src" / "assay"), quiet=1)
    video = make_video(OUT / "perf-noisy.mp4", noisy=True)
    eval_dir = make_eval(OUT / f"eval-perf-noisy.mp4-{args.targets}x0.1", video, args.targets, 0.1)
    variants: dict[str, tuple[list[str], dict[str, str]]] = {
        "bare": ([sys.executable, "-c", BARE_PASS, str(video), "3"], {}),
        "shared": (run_command(eval_dir, args.adapter, "trivial"), {}),
        "png": (run_command(eval_dir, args.adapter, "trivial"), {"ASSAY_SHARED_FRAMES": "0"}),
    }
    if args.baseline is not None:
        probe = args.baseline / "tests" / "adapters" / "fixtures" / ADAPTER.name
        variants["baseline"] = (run_command(eval_dir, probe, "trivial"), {"PYTHONPATH": str(args.baseline / "src")})
    if args.reading:
        variants["shared, reading"] = (run_command(eval_dir, args.adapter, "first-pixel"), {})
        variants["png, reading"] = (run_command(eval_dir, args.adapter, "first-pixel"), {"ASSAY_SHARED_FRAMES": "0"})
    names = list(variants)
    results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in names}
    loads: list[float] = []
    for round_number in range(args.rounds):
        order = names[round_number % len(names):] + names[: round_number % len(names)]
        load = os.getloadavg()[0]
        loads.append(load)
        for name in order:
            command, env = variants[name]
            results[name].append(timed(command, env))
        print(f"round {round_number + 1}: load {load:.2f} -> {os.getloadavg()[0]:.2f}; "
              + ", ".join(f"{name} {results[name][-1][0]:.2f} s / {results[name][-1][1]:.2f} s CPU" for name in names),
              flush=True)
    samples = 600 * args.targets
    print(f"\n{samples} noisy 720p samples ({args.targets} target(s), 600 frames), --concurrency 4, {args.rounds} "
          f"interleaved rounds, load average {min(loads):.2f}-{max(loads):.2f} (median {statistics.median(loads):.2f})")
    bare = results["bare"]
    for name in names:
        runs = results[name]
        wall = statistics.median(run[0] for run in runs)
        cpu = statistics.median(run[1] for run in runs)
        line = f"{name:16} wall {wall:5.2f} s  CPU {cpu:5.2f} s  peak RSS {max(run[2] for run in runs):4d} MiB"
        if name != "bare":
            wall_ratio = statistics.median(run[0] / floor[0] for run, floor in zip(runs, bare))
            cpu_ratio = statistics.median(run[1] / floor[1] for run, floor in zip(runs, bare))
            line += f"  / bare: wall {wall_ratio:.2f}x  CPU {cpu_ratio:.2f}x"
        print(line)
    ours, pillow = png_cost(video)
    modes = ", ".join(f"{mode} {cost * 1000:.1f} ms ({size / 1e6:.2f} MB)" for mode, (cost, size) in ours.items())
    print(f"PNG per noisy 720p frame, CPU: assay encoder {modes}; Pillow default {pillow * 1000:.1f} ms")


if __name__ == "__main__":
    main()
