"""Ctrl-C that lands while a class is being made (a lazily imported pydantic model, early in a run) reaches
Python 3.11's caller as `RuntimeError: Error calling __set_name__ …` raised from the KeyboardInterrupt. It is
still Ctrl-C: `Interrupted.` and exit 130, not a traceback and exit 1 (which CI reads as a failed gate)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# A class whose making is interrupted, as Ctrl-C does it: the descriptor's `__set_name__` raises the interrupt.
INTERRUPTED_CLASS = """
class Interrupting:
    def __set_name__(self, owner, name):
        raise KeyboardInterrupt

def make_a_class():
    class Model:
        field = Interrupting()
"""

THROUGH_A_COMMAND = INTERRUPTED_CLASS + """
import typer
from assay.cli.options import command
from assay.core.process import run_as_process

app = typer.Typer(add_completion=False)

@command(app, "go")
def go(given):
    make_a_class()

@command(app, "other")
def other(given):
    pass

run_as_process(app)
"""

THROUGH_THE_PROCESS = INTERRUPTED_CLASS + """
import typer
from assay.core.process import run_as_process

app = typer.Typer(add_completion=False)

@app.command()
def go():
    make_a_class()

@app.command()
def other():
    pass

run_as_process(app)
"""

A_PLAIN_RUNTIME_ERROR = """
import typer
from assay.core.process import run_as_process

app = typer.Typer(add_completion=False)

@app.command()
def go():
    raise RuntimeError("a bug, not an interrupt")

@app.command()
def other():
    pass

run_as_process(app)
"""


def run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), "go"], capture_output=True, text=True, timeout=60)


def test_python_wraps_an_interrupt_in_a_class_being_made_on_this_version() -> None:
    """What the tests below stand for: on 3.11 the interrupt arrives wrapped (3.12 raises it as it is)."""
    namespace: dict[str, object] = {}
    exec(INTERRUPTED_CLASS, namespace)
    with pytest.raises((RuntimeError, KeyboardInterrupt)) as raised:
        namespace["make_a_class"]()  # type: ignore[operator]
    if sys.version_info < (3, 12):
        assert isinstance(raised.value, RuntimeError) and isinstance(raised.value.__cause__, KeyboardInterrupt)


@pytest.mark.parametrize("script", [THROUGH_A_COMMAND, THROUGH_THE_PROCESS], ids=["assay command", "any typer command"])
def test_an_interrupt_wrapped_by_python_is_interrupted_and_exit_130(script: str) -> None:
    done = run(script)
    assert (done.returncode, done.stderr.strip()) == (130, "Interrupted."), done.stderr


def test_a_runtime_error_of_its_own_is_still_an_error() -> None:
    done = run(A_PLAIN_RUNTIME_ERROR)
    assert done.returncode == 1
    assert "a bug, not an interrupt" in done.stderr
