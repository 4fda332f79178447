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


STOPPING = textwrap.dedent(
    """
    import sys, time
    from assay.core.process import _terminate_as_interrupt

    _terminate_as_interrupt()
    try:
        print("ready", flush=True)
        time.sleep(30)
    except KeyboardInterrupt:  # the orderly stop a command makes: it takes a while
        print("stopping", flush=True)
        deadline = time.monotonic() + float(sys.argv[1])
        while time.monotonic() < deadline:
            time.sleep(0.01)
        sys.exit(130)
    """
)


def _stopped_by(sigterm_gaps: list[float], stopping_s: float) -> tuple[int, str]:
    import signal
    import time

    process = subprocess.Popen([sys.executable, "-c", STOPPING, str(stopping_s)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    process.send_signal(signal.SIGTERM)
    assert process.stdout.readline() == "stopping\n"  # the first SIGTERM's handler has run
    for gap in sigterm_gaps:
        time.sleep(gap)
        process.send_signal(signal.SIGTERM)
    return process.wait(timeout=30), process.stdout.read()


def test_a_sigterm_right_after_the_first_is_the_same_request_and_a_later_one_ends_at_once() -> None:
    # `timeout` sends SIGTERM to the command and again to its process group: one orderly stop, exit 130.
    assert _stopped_by([0.05], stopping_s=0.6)[0] == 130
    # A second SIGTERM well after the first (a job runner losing patience) ends the command at once.
    assert _stopped_by([1.2], stopping_s=5)[0] == -15


# Ctrl-C, as a real SIGINT, at the moment the console script imports `MODULE` (before that import runs):
# the exception lands inside the import machinery, as a user's Ctrl-C during the first ~0.1 s does.
INTERRUPTED_WHILE_LOADING = textwrap.dedent(
    """
    import os, signal, sys

    class Interrupt:
        def find_spec(self, name, path=None, target=None):
            if name == MODULE:
                sys.meta_path.remove(self)
                os.kill(os.getpid(), signal.SIGINT)
            return None

    sys.meta_path.insert(0, Interrupt())
    sys.argv = ["assay", "agent", "list"]
    from assay.__main__ import main
    main()
    """
)


def test_ctrl_c_while_the_command_line_loads_is_interrupted_not_a_traceback(tmp_path: Path) -> None:
    for module in ("typer", "assay.cli.options"):
        script = INTERRUPTED_WHILE_LOADING.replace("MODULE", repr(module))
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (130, "", "Interrupted.\n"), module


# Ctrl-C while typer parses the options (before a command's own handling begins): typer turns it into a
# silent exit 130 of its own; a command that says "Interrupted." itself is not said twice.
INTERRUPTED_WHILE_PARSING = textwrap.dedent(
    """
    import sys, typer
    from assay.core.process import run_as_process

    app = typer.Typer()

    def interrupt(value):
        raise KeyboardInterrupt

    @app.command()
    def parse(when: str = typer.Option("x", callback=interrupt)) -> None:
        pass

    @app.command()
    def body() -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            print("Interrupted.", file=sys.stderr)
            raise typer.Exit(130) from None

    run_as_process(app)
    """
)


def test_ctrl_c_while_typer_parses_the_options_is_said_once() -> None:
    for command in ("parse", "body"):
        done = subprocess.run([sys.executable, "-c", INTERRUPTED_WHILE_PARSING, command], capture_output=True,
                              text=True, timeout=60)
        assert (done.returncode, done.stdout, done.stderr) == (130, "", "Interrupted.\n"), command
