"""Benchmark `assay video review` (issue: the browser editor's figures) and take its README screenshot.

Figures, on the 60 s 1280x720 clip of benchmarks/video_run.py (cached under benchmarks/out/):
  * render: a case with 2,000 samples (4 targets x 500) opened in headless Chromium, from navigation
    to the editor being ready with timeline and table drawn (target <= 1 s);
  * frame: GET /api/case-files/<id>/frame?at=t for distinct uncached times (target <= 150 ms),
    plus the cached repeat.
Run: python benchmarks/review_figures.py [--rounds 5] [--frames 40] [--noisy]
     python benchmarks/review_figures.py --screenshot docs/review.png   (the editor on examples/video)
Needs `pip install playwright` and Debian's `chromium`.
"""

from __future__ import annotations

import argparse
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

from browser import CHROMIUM
from browser import launch as launch_chromium
from video_run import OUT, make_video  # noqa: E402

LABELS = ["idle", "walking", "running", "sitting", "standing"]


@contextmanager
def review_server(eval_dir: Path) -> Iterator[str]:
    """The review command in its own process (as users run it), on a free port; yields its origin."""
    command = [
        sys.executable, "-c",
        "import typer; from assay.cli.video_review import review_command; "
        "app = typer.Typer(); app.command()(review_command); app()",
        "--eval-dir", str(eval_dir), "--no-open",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        if not line.startswith("Review UI: "):
            raise RuntimeError(f"the review server did not start: {line!r}")
        origin = line.split(" ", 2)[2].strip().rstrip("/")
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(origin + "/api/eval-directory", timeout=5).raise_for_status()
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield origin
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)


def make_big_case(root: Path, video: Path) -> Path:
    """4 targets x 500 samples every 0.12 s over the 60 s clip; the label changes every 10 samples."""
    cases = root / "cases"
    cases.mkdir(parents=True, exist_ok=True)
    link = cases / video.name
    if not link.exists():
        link.symlink_to(video)
    lines = [f"video: {video.name}", "description: 2,000 samples for the render benchmark", "targets:"]
    for target in range(4):
        lines += [f"  activity_{target}:", f"    label: Activity {target}", "    samples:"]
        for block in range(50):
            start = round(block * 1.2, 3)
            label = LABELS[(block + target) % len(LABELS)]
            lines += [f"      - range: [{start}, {round(start + 1.2, 3)}]", "        every_s: 0.12", f"        expect: {label}"]
    (cases / "big.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def launch(playwright: object) -> object:
    if CHROMIUM is None:
        sys.exit("Chromium is not installed: apt-get install -y chromium")
    return launch_chromium(playwright)


def measure_render(origin: str, rounds: int) -> list[float]:
    """Seconds per page load; the first one also builds the server's case document (cold)."""
    from playwright.sync_api import sync_playwright

    seconds = []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        for _ in range(rounds + 1):
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            started = time.perf_counter()
            page.goto(f"{origin}/?case=big.yaml&target=activity_0")
            page.wait_for_selector("body[data-ready=true]")
            page.evaluate("() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))")
            seconds.append(time.perf_counter() - started)
            count = page.evaluate("window.assayEditor.state.targets.reduce((n, t) => n + t.samples.length, 0)")
            assert count == 2000, count
            page.close()
        browser.close()
    return seconds


FETCH_FRAME_JS = """async (url) => {
  const started = performance.now();
  const response = await fetch(url);
  await response.arrayBuffer();
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return (performance.now() - started) / 1000;
}"""


def measure_frames(origin: str, count: int) -> tuple[list[float], list[float]]:
    """Seconds per frame fetch, timed inside Chromium (the client users have)."""
    from playwright.sync_api import sync_playwright

    rng = random.Random(7)
    times = sorted({round(rng.uniform(0, 59.9), 3) for _ in range(count)})
    rng.shuffle(times)
    url = f"{origin}/api/case-files/big.yaml/frame?at="
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_page()
        page.goto(origin + "/?case=none")  # same origin, no case opened
        page.evaluate(FETCH_FRAME_JS, url + "0")  # open the video once and warm up
        uncached = [page.evaluate(FETCH_FRAME_JS, f"{url}{t}") for t in times]
        cached = [page.evaluate(FETCH_FRAME_JS, f"{url}{t}") for t in times[:10]]
        browser.close()
    return uncached, cached


def describe(label: str, values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"{label}: median {statistics.median(values) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
        f"max {max(values) * 1000:.0f} ms (n={len(values)})"
    )


def take_screenshot(path: Path) -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as scratch:
        eval_dir = Path(scratch) / "examples" / "video"
        shutil.copytree(ROOT / "examples" / "video", eval_dir)
        with review_server(eval_dir) as origin, sync_playwright() as playwright:
            browser = launch(playwright)
            page = browser.new_page(viewport={"width": 1440, "height": 960}, device_scale_factor=1)
            page.goto(f"{origin}/?case=traffic-light.yaml&target=brightness&time=3")
            page.wait_for_selector("body[data-ready=true]")
            page.click("#samples-body tr[data-group]:nth-child(2)")  # the failed sample at 3 s
            page.wait_for_function("() => document.getElementById('frame-meta').textContent.startsWith('at 3 s')")
            page.wait_for_timeout(300)
            path.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(path))
            browser.close()
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument("--noisy", action="store_true", help="use the noisy ~4 Mbit/s clip")
    parser.add_argument("--screenshot", type=Path, help="only write the editor screenshot to this PNG")
    options = parser.parse_args()
    if options.screenshot:
        take_screenshot(options.screenshot)
        return
    video = make_video(OUT / ("perf-noisy.mp4" if options.noisy else "perf.mp4"), options.noisy)
    eval_dir = make_big_case(OUT / f"review-{video.stem}", video)
    with review_server(eval_dir) as origin:
        rounds = measure_render(origin, options.rounds)
        print(f"render 2,000-sample case in Chromium, cold server (builds the document): {rounds[0] * 1000:.0f} ms")
        print(describe("render 2,000-sample case in Chromium, warm (target <= 1000 ms)", rounds[1:]))
        uncached, cached = measure_frames(origin, options.frames)
        print(describe(f"frame fetch on {video.name}, uncached (target <= 150 ms)", uncached))
        print(describe(f"frame fetch on {video.name}, cached", cached))


if __name__ == "__main__":
    main()
