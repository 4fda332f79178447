"""The console script leaves without interpreter teardown but keeps shutdown's observable steps."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import atexit, sys, threading, time
    from pathlib import Path
    from assay.core.process import _leave

    out = Path(sys.argv[1])

    def late_writer():
        time.sleep(0.3)
        (out / "thread").write_text("done")

    threading.Thread(target=late_writer).start()  # non-daemon: shutdown must wait for it
    atexit.register(lambda: (out / "atexit").write_text((out / "thread").read_text()))
    sys.stdout.write("buffered, not yet flushed")
    _leave(CODE)
    """
)


def run_leave(tmp_path: Path, code: str) -> subprocess.CompletedProcess[str]:
    script = SCRIPT.replace("CODE", code)
    return subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60
    )


def test_leave_joins_threads_then_runs_atexit_then_flushes(tmp_path: Path) -> None:
    done = run_leave(tmp_path, "3")
    assert done.returncode == 3
    assert done.stdout == "buffered, not yet flushed"
    assert (tmp_path / "thread").read_text() == "done"
    assert (tmp_path / "atexit").read_text() == "done"  # atexit ran after the thread finished


def test_leave_with_a_message_prints_it_and_exits_1(tmp_path: Path) -> None:
    done = run_leave(tmp_path, "'Eval failed: something'")
    assert done.returncode == 1
    assert done.stderr.strip() == "Eval failed: something"


def test_console_script_keeps_exit_codes_and_output() -> None:
    version = subprocess.run([sys.executable, "-m", "assay", "--version"], capture_output=True, text=True, timeout=60)
    assert (version.returncode, version.stdout.strip()) == (0, f"assay {__import__('assay').__version__}")
    missing = subprocess.run(
        [sys.executable, "-m", "assay", "video", "run", "--eval-dir", "/nonexistent/evals"],
        capture_output=True, text=True, timeout=60,
    )
    assert missing.returncode == 2
    assert "eval directory does not exist: /nonexistent/evals" in missing.stdout + missing.stderr
