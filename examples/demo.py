"""Run the bundled demo evals offline: `python examples/demo.py` (the README's first command).

Each demo is a real eval: the video demo decodes a clip it makes with PyAV, the document demo
grades a candidate deterministically. A demo's eval may fail on purpose (to show a failure);
the script itself fails only if a demo could not run (exit code 2 or more).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


_SECTIONS = []  # the commands run so far: a blank line goes between sections, not above the first


def run(title: str, *arguments: str) -> int:
    print(f"{chr(10) if _SECTIONS else ''}== assay {' '.join(arguments)} ==", flush=True)  # `| head -1` shows it
    _SECTIONS.append(arguments)
    code = subprocess.call([sys.executable, "-m", "assay", *arguments], cwd=ROOT)
    print(f"-- {title}: exit code {code}", flush=True)
    return code


def assay_command() -> str:
    """How to call assay from the clone's folder: `assay` when that is this environment's own command on
    PATH (an activated virtual environment), else the environment's script by its path."""
    script = Path(sys.executable).parent / "assay"
    found = shutil.which("assay")
    if not script.exists() or (found is not None and Path(found).resolve() == script.resolve()):
        return "assay"
    try:
        relative = script.relative_to(ROOT)
    except ValueError:
        return str(script)
    return str(relative) if relative.parts[0].startswith(".") else f"./{relative}"


def gate_summary(report: Path) -> str:
    """Why a video run with a failed sample can still exit 0: every gate it was held to passed."""
    document = json.loads(report.read_text(encoding="utf-8"))
    gates = [gate for trial in document["trials"] for gate in trial["gates"]] + document["gates"]
    passed = [gate for gate in gates if gate["passed"]]
    verdict = "all gates passed" if len(passed) == len(gates) else f"{len(gates) - len(passed)} gate(s) failed"
    return f"   gates: {verdict} ({'; '.join(gate['message'] for gate in gates)})"


def main() -> int:
    sys.path.insert(0, str(HERE / "video"))
    from make_video import make_demo_video

    make_demo_video(HERE / "video" / "cases" / "traffic-light.mp4")
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "video-report.json"
        codes = [
            run(
                "video eval (one brightness expectation is wrong on purpose)",
                "video", "run", "--eval-dir", "examples/video", "--concurrency", "4", "--output-json", str(report),
            ),
        ]
        if report.exists():
            print(gate_summary(report), flush=True)
    codes += [
        run("agent eval (`wrong_on_purpose` fails by design)", "agent", "run", "--project", "examples/agent"),
        *(run(
            title,
            "doc", "run-case", "--config", "examples/doc/evals/eval-kit.config.json",
            "--case", "release-notes-v1", "--candidate", f"examples/doc/candidates/{candidate}.md",
        ) for title, candidate in (("document eval, a weak draft (red on purpose)", "weak"),
                                   ("document eval, the finished draft", "good"))),
    ]
    ran = all(code in (0, 1) for code in codes)
    if not ran:
        print("\nA demo could not run (see above).", flush=True)
        return 2
    assay = assay_command()
    suggestions = [
        ("runs list", "every run, newest first"),
        ("runs compare latest", "what changed since the run before it (the weak draft → the finished one)"),
        ("view", "the results viewer in your browser"),
        ("video init my-eval", "a starter eval of your own (also: agent init)"),
    ]
    width = max(len(f"{assay} {command}") for command, _ in suggestions) + 3
    print(
        "\nAll demos ran: a video eval (GlassKit-compatible), an agent eval (NiceEval's model) and a document "
        "eval (eval-kit's).\n"
        "Exit code 0 means every gate passed, 1 that a gate or verdict failed (as the agent eval and the weak draft do on purpose).\n"
        f"Each run was recorded. Try next, from {ROOT}:\n"
        + "\n".join(f"  {f'{assay} {command}':<{width}}{why}" for command, why in suggestions),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `python examples/demo.py | head`: the reader left, as assay's commands take it
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        print("demo: standard output was closed, so the demo stopped.", file=sys.stderr)
        sys.exit(130)
