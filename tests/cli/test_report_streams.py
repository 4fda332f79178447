"""A report path that names a stream (`--junit /dev/fd/1`, `--output-json /dev/stdout`, a named pipe) is written
into, never replaced: replacing it put a plain file where the device or pipe was (as root, /dev/stdout itself), and
`--junit /dev/fd/1` failed ("No such file or directory") or was refused as "a file that is not XML"."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from agent_projects import replying_project


def _project(root: Path) -> Path:
    project = replying_project(root, reply="yes")
    (project / "evals" / "ask_eval.py").write_text(
        "from assay.agent import define_eval, includes\n\nasync def test(t):\n    await t.send('ok?')\n"
        "    t.check(t.reply, includes('yes'))\n\nask = define_eval(test)\n")
    return project


def _run(project: Path, *arguments: str, stdout) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay", "agent", "run", *arguments], cwd=project, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120,
                          env={**os.environ, "ASSAY_STORE": str(project / "store" / "assay.db")})


def test_junit_into_the_commands_own_stdout_lands_between_what_was_there_and_the_console_lines(tmp_path):
    project = _project(tmp_path / "p")
    log = tmp_path / "ci.log"
    log.write_text("earlier lines of the job\n", encoding="utf-8")
    with log.open("a", encoding="utf-8") as appended:  # `assay … --junit /dev/fd/1 >> ci.log`
        done = _run(project, "--junit", "/dev/fd/1", stdout=appended)
    assert done.returncode == 0, done.stderr
    text = log.read_text(encoding="utf-8")
    assert text.startswith("earlier lines of the job\n"), text[:200]
    report, summary = text.index("<testsuites"), text.index("PASSED")
    assert report < summary, text  # the console's lines came after the report, not over it


def test_junit_into_a_named_pipe_is_read_from_it_and_the_pipe_stays_a_pipe(tmp_path):
    project = _project(tmp_path / "p")
    pipe = tmp_path / "junit.pipe"
    os.mkfifo(pipe)
    read: list[str] = []
    reader = threading.Thread(target=lambda: read.append(pipe.read_text(encoding="utf-8")), daemon=True)
    reader.start()
    done = _run(project, "--junit", str(pipe), stdout=subprocess.DEVNULL)
    reader.join(timeout=60)
    assert done.returncode == 0, done.stderr
    assert read and "<testsuites" in read[0]
    assert pipe.is_fifo()
