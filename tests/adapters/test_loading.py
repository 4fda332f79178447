import sys
import textwrap

import pytest

from assay.adapters.loading import load_adapter_callable, parse_adapter_target
from assay.errors import AdapterError


def write(path, text):
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_target_splits_on_the_last_colon(tmp_path):
    directory = tmp_path / "repo:with-colon"
    directory.mkdir()
    write(directory / "adapter.py", "def create_evaluator(config):\n    return 1\n")
    function, target = load_adapter_callable(f"{directory}/adapter.py:create_evaluator")
    assert target.attribute == "create_evaluator"
    assert function(None) == 1


@pytest.mark.parametrize("text", ["adapter.py", ":make", "adapter.py:", "  :  "])
def test_malformed_target_names_the_expected_shape(text):
    with pytest.raises(AdapterError, match=r"adapter must be '<module-or-file>:<callable>', got "):
        parse_adapter_target(text)


def test_missing_file_is_reported_with_its_absolute_path(tmp_path):
    with pytest.raises(AdapterError, match=f"adapter file does not exist: {tmp_path}/nope.py"):
        load_adapter_callable(f"{tmp_path}/nope.py:make")


def test_import_error_in_a_file_is_reported(tmp_path):
    path = write(tmp_path / "broken.py", "raise RuntimeError('no model key')\n")
    with pytest.raises(AdapterError, match=f"adapter import failed for {path}: no model key"):
        load_adapter_callable(f"{path}:make")


def test_missing_module_is_reported(tmp_path):
    with pytest.raises(AdapterError, match="adapter import failed for module 'no_such_module_xyz': "):
        load_adapter_callable("no_such_module_xyz:make", cwd=tmp_path)


def test_dotted_attribute_paths_and_their_errors(tmp_path):
    path = write(
        tmp_path / "nested.py",
        """
        class EvalAdapters:
            value = 3

            @staticmethod
            def step_checker(image, target_id):
                return True
        """,
    )
    function, _ = load_adapter_callable(f"{path}:EvalAdapters.step_checker")
    assert function(None, "t") is True
    with pytest.raises(AdapterError, match=r"adapter callable 'EvalAdapters.missing' was not found in '"):
        load_adapter_callable(f"{path}:EvalAdapters.missing")
    with pytest.raises(AdapterError, match=r"adapter attribute 'EvalAdapters.value' in '.*' is not callable"):
        load_adapter_callable(f"{path}:EvalAdapters.value")


def test_file_adapters_are_imported_afresh_each_time(tmp_path):
    path = write(tmp_path / "counter.py", "COUNT = []\ndef make():\n    COUNT.append(1)\n    return len(COUNT)\n")
    first, _ = load_adapter_callable(f"{path}:make")
    second, _ = load_adapter_callable(f"{path}:make")
    assert first() == 1
    assert second() == 1


def test_file_adapters_can_import_their_neighbours(tmp_path):
    write(tmp_path / "helpers_for_adapter_test.py", "ANSWER = 42\n")
    path = write(tmp_path / "uses_helper.py", "from helpers_for_adapter_test import ANSWER\ndef make():\n    return ANSWER\n")
    function, _ = load_adapter_callable(f"{path}:make")
    assert function() == 42
    sys.modules.pop("helpers_for_adapter_test", None)


def test_modules_are_imported_by_name(tmp_path, monkeypatch):
    package = tmp_path / "pkg_for_adapter_test"
    package.mkdir()
    write(package / "__init__.py", "")
    write(package / "mod.py", "def make():\n    return 'module'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    function, target = load_adapter_callable("pkg_for_adapter_test.mod:make", cwd=tmp_path / "elsewhere")
    assert target.file is None
    assert function() == "module"
