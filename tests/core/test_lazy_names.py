"""A package filled on first use (`core/lazy_names.py`) whose submodules share their names with what they define:
`assay.agent.adapters.http_agent` is a function whichever import came first."""

from __future__ import annotations

import subprocess
import sys

import pytest

CLASHING = ["http_agent", "process_agent", "pydantic_ai_agent", "langgraph_agent"]


@pytest.mark.parametrize("name", CLASHING)
def test_a_submodule_imported_first_does_not_hide_the_name_it_defines(name):
    """The UI message stream adapter imports `adapters.http_agent` for its transport: every test that then read
    `from assay.agent.adapters import http_agent` got the module ("'module' object is not callable")."""
    script = (f"import assay.agent.adapters.{name}\n"  # a submodule imported directly, first
              f"from assay.agent.adapters import {name}\n"
              "import assay.agent.adapters as package\n"
              f"print(callable({name}), type({name}).__name__, type(package.{name}).__name__)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "function", "function"]


def test_the_submodule_itself_is_still_importable_for_its_other_names():
    from assay.agent.adapters.http_agent import ServiceCalls

    assert ServiceCalls.__module__ == "assay.agent.adapters.http_agent"
