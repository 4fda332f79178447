"""Run a command and measure its own peak resident set, whatever the test process ran before.

`RUSAGE_CHILDREN` is the largest child the calling process ever waited for (an earlier test's Ray
worker, mkdocs, a browser), and even `os.wait4` on a child of the test process reports at least the
test process's own size (the child is forked from it before it execs). So the command is started by
a small launcher process, and its peak is the launcher's `os.wait4` of it: a child of a process that
never held more than an interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence

_LAUNCHER = (
    "import os, subprocess, sys\n"
    "child = subprocess.Popen(sys.argv[2:])\n"
    "_, status, usage = os.wait4(child.pid, 0)\n"
    "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
    "sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)\n"
)


def run_with_peak_rss(args: Sequence[str], *, timeout: float, **options) -> tuple[subprocess.CompletedProcess, float]:
    """The finished command (stdout and stderr as text) and its own peak RSS in MiB."""
    with tempfile.NamedTemporaryFile("r", suffix=".maxrss") as report:
        done = subprocess.run([sys.executable, "-c", _LAUNCHER, report.name, *args], capture_output=True, text=True,
                              timeout=timeout, **options)
        measured = report.read().strip()
    if not measured:
        raise RuntimeError(f"the launcher did not report a peak: {done.stderr}")
    return done, int(measured) / 1024  # Linux reports KiB
