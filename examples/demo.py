"""Run the bundled demo evals offline: `python examples/demo.py` (the README's first command).

Each demo is a real eval: the video demo decodes a clip it makes with PyAV, the document demo
grades a candidate deterministically. A demo's eval may fail on purpose (to show a failure);
the script itself fails only if a demo could not run (exit code 2 or more).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def run(title: str, *arguments: str) -> int:
    print(f"\n== assay {' '.join(arguments)} ==", flush=True)
    code = subprocess.call([sys.executable, "-m", "assay", *arguments], cwd=ROOT)
    print(f"-- {title}: exit code {code}", flush=True)
    return code


def main() -> int:
    sys.path.insert(0, str(HERE / "video"))
    from make_video import make_demo_video

    make_demo_video(HERE / "video" / "cases" / "traffic-light.mp4")
    codes = [
        run("video eval (one brightness expectation is wrong on purpose)", "video", "run", "--eval-dir", "examples/video", "--concurrency", "4"),
        run("agent eval (`wrong_on_purpose` fails by design)", "agent", "run", "--project", "examples/agent"),
        run(
            "document eval",
            "doc", "run-case", "--config", "examples/doc/evals/eval-kit.config.json",
            "--case", "release-notes-v1", "--candidate", "examples/doc/candidates/good.md",
        ),
    ]
    ran = all(code in (0, 1) for code in codes)
    print("\nAll demos ran." if ran else "\nA demo could not run (see above).", flush=True)
    return 0 if ran else 2


if __name__ == "__main__":
    sys.exit(main())
