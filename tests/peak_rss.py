"""Run a command and measure its own peak resident set, whatever the test process ran before.

`RUSAGE_CHILDREN` is the largest child the calling process ever waited for (an earlier test's Ray
worker, mkdocs, a browser), so it cannot measure one run; `os.wait4` returns the usage of exactly the
child it reaps.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence


def run_with_peak_rss(args: Sequence[str], *, timeout: float, **popen) -> tuple[subprocess.CompletedProcess, float]:
    """The finished command (stdout and stderr as text) and its own peak RSS in MiB."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(list(args), stdout=out, stderr=err, **popen)
        try:
            _, status, usage = _wait4(process.pid, timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        done = subprocess.CompletedProcess(process.args, process.returncode,
                                           out.read().decode(errors="replace"), err.read().decode(errors="replace"))
    return done, usage.ru_maxrss / 1024  # Linux reports KiB


def _wait4(pid: int, timeout: float):
    import time

    deadline = time.monotonic() + timeout
    while True:
        reaped, status, usage = os.wait4(pid, os.WNOHANG)
        if reaped == pid:
            return reaped, status, usage
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(str(pid), timeout)
        time.sleep(0.05)
