"""A module-form `--adapter` (`myapp.eval_adapter:make`) is imported from the Python path, which does not hold
the current folder (GlassKit's rule): when the module lies there, the error says how to reach it."""

from __future__ import annotations

import sys

import pytest

from assay.adapters.loading import load_adapter_callable
from assay.errors import AssayError


def test_a_module_adapter_in_the_current_folder_is_named_with_how_to_reach_it(tmp_path, monkeypatch):
    (tmp_path / "myapp").mkdir()
    (tmp_path / "myapp" / "__init__.py").write_text("")
    (tmp_path / "myapp" / "eval_adapter.py").write_text("def make(config=None):\n    return lambda sample, target: True\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [entry for entry in sys.path if entry not in ("", ".", str(tmp_path))])
    with pytest.raises(AssayError) as raised:
        load_adapter_callable("myapp.eval_adapter:make")
    assert str(raised.value) == (
        "adapter import failed for module 'myapp.eval_adapter': No module named 'myapp' (a module adapter is imported "
        "from the Python path, which does not include the current folder: give the file instead, "
        "myapp/eval_adapter.py:…, or set PYTHONPATH=.)")
    with pytest.raises(AssayError) as elsewhere:
        load_adapter_callable("nosuch.thing:make")  # nowhere near: GlassKit's message as it is
    assert str(elsewhere.value) == "adapter import failed for module 'nosuch.thing': No module named 'nosuch'"
    assert load_adapter_callable("myapp/eval_adapter.py:make") is not None  # the file form the hint gives
