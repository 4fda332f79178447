"""Benchmark `assay video run --adapter-command` (issue: Video evals II figures).

600 samples (1 target every 0.1 s) of the noisy 60 s 720p clip through a trivial node adapter
that returns true without decoding (tests/adapters/fixtures/png_probe_adapter.mjs, mode
`trivial`, on the shipped kit src/assay/video/js/adapter-kit.mjs). Reports wall seconds and peak
RSS of assay and of the node process, and the per-frame cost of the lossless PNG encoding assay
uses for the protocol. `--adapter FILE` runs another script (`node FILE trivial`) instead, e.g. to
compare two versions of the kit.
Run: python benchmarks/command_adapter.py [--rounds 3] [--adapter FILE]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from video_run import OUT, byte_compile_assay, make_eval, make_video  # noqa: E402

ADAPTER = HERE.parent / "tests" / "adapters" / "fixtures" / "png_probe_adapter.mjs"


def run_once(eval_dir: Path, adapter: Path = ADAPTER) -> tuple[float, int]:
    started = time.perf_counter()
    completed = subprocess.run(
        ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "assay", "video", "run", "--eval-dir", str(eval_dir),
         "--adapter-command", f"node {adapter} trivial", "--concurrency", "4"],
        capture_output=True, text=True,
    )
    wall = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(completed.stdout + completed.stderr)
    return wall, int(completed.stderr.strip().splitlines()[-1]) // 1024


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
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--adapter", type=Path, default=ADAPTER, help="node script run as `node FILE trivial`")
    args = parser.parse_args()
    byte_compile_assay()
    video = make_video(OUT / "perf-noisy.mp4", noisy=True)
    eval_dir = make_eval(OUT / "eval-perf-noisy.mp4-1x0.1", video, 1, 0.1)
    runs = [run_once(eval_dir, args.adapter) for _ in range(args.rounds)]
    print(f"600 noisy 720p samples through a trivial node adapter: wall {statistics.median(r[0] for r in runs):.2f} s "
          f"(runs {', '.join(f'{r[0]:.2f}' for r in runs)}), peak RSS {max(r[1] for r in runs)} MiB (assay + children)")
    ours, pillow = png_cost(video)
    modes = ", ".join(f"{mode} {cost * 1000:.1f} ms ({size / 1e6:.2f} MB)" for mode, (cost, size) in ours.items())
    print(f"PNG per noisy 720p frame, CPU: assay encoder {modes}; Pillow default {pillow * 1000:.1f} ms")


if __name__ == "__main__":
    main()
