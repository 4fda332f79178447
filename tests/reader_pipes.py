"""A command whose reader leaves (`cmd | head -N`): read N lines of its stdout, close the pipe, and let the
command find out; what it printed on stderr and its exit code come back."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path


def reader_leaves(argv: Sequence[str], *, lines: int = 1, until: Callable[[bytes], bool] | None = None,
                  cwd: Path | None = None, env: Mapping[str, str] | None = None,
                  timeout: float = 60) -> tuple[list[bytes], int, str]:
    """(the lines read, the exit code, stderr) of `argv` whose reader closes the pipe after `lines` lines
    (0: before the command writes anything), or with `until`, after the first line it accepts."""
    process = subprocess.Popen(list(argv), cwd=cwd, env=None if env is None else dict(env),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    if until is None:
        read = [process.stdout.readline() for _ in range(lines)]
    else:
        read = []
        for line in process.stdout:
            read.append(line)
            if until(line):
                break
    process.stdout.close()
    try:
        code = process.wait(timeout=timeout)
    finally:
        process.kill()
    stderr = process.stderr.read().decode()
    process.stderr.close()
    return read, code, stderr
