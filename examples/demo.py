"""Run the bundled demo evals offline: `python examples/demo.py` (the README's first command)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    sys.path.insert(0, str(HERE / "video"))
    from make_video import make_demo_video

    make_demo_video(HERE / "video" / "cases" / "traffic-light.mp4")
    print("== assay video run --eval-dir examples/video ==", flush=True)
    command = [sys.executable, "-m", "assay", "video", "run", "--eval-dir", str(HERE / "video"), "--concurrency", "4"]
    return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main())
