"""The kept code of assay's dataclass methods: used for assay's classes only, identical in behaviour, safely kept."""

from __future__ import annotations

import dataclasses
import marshal
import sys
import types

import pytest

from assay import _method_code

# Python 3.13 compiles a class's methods in one `exec`, and assay keeps nothing there.
pytestmark = pytest.mark.skipif(sys.version_info >= (3, 13), reason="dataclasses compiles a class's methods at once")

CLASS = """
from dataclasses import dataclass, field

@dataclass(frozen=True)
class Point:
    x: int
    y: int = 0
    tags: tuple = field(default_factory=tuple)
"""


@pytest.fixture
def cache(monkeypatch):
    """An empty cache in place of the one this process loaded; what the test compiles stays out of it."""
    known: dict[bytes, bytes] = {}
    added: dict[bytes, bytes] = {}
    used: set[bytes] = set()
    monkeypatch.setattr(_method_code, "_known", known)
    monkeypatch.setattr(_method_code, "_added", added)
    monkeypatch.setattr(_method_code, "_used", used)
    monkeypatch.setattr(_method_code, "_loaded", True)  # the file is not read into it
    return types.SimpleNamespace(known=known, added=added, used=used)


def define(module_name: str, monkeypatch) -> type:
    module = types.ModuleType(module_name)
    monkeypatch.setitem(sys.modules, module_name, module)
    exec(compile(CLASS, f"<{module_name}>", "exec", dont_inherit=True), module.__dict__)
    return module.Point


def methods(entries: dict[bytes, bytes]) -> set[str]:
    """The names of the methods whose code `entries` keeps (each text defines one inside `__create_fn__`)."""
    names = set()
    for blob in entries.values():
        for maker in marshal.loads(blob).co_consts:
            if isinstance(maker, types.CodeType):
                names |= {const.co_name for const in maker.co_consts if isinstance(const, types.CodeType)}
    return names


def test_importing_assay_serves_dataclass_methods_from_the_kept_code():
    assert dataclasses.exec is _method_code._exec  # type: ignore[attr-defined]


def test_the_file_is_read_when_the_first_assay_class_is_made_not_when_assay_is_imported():
    # So Ctrl-C while it is read lands in the command line's handling (`assay.__main__`), not a traceback.
    import subprocess

    script = ("import assay, assay._method_code as kept; print(kept._loaded); "
              "import assay.core.record; print(kept._loaded)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "True"], done.stderr


def test_an_assay_class_is_compiled_once_then_made_from_the_kept_code_and_behaves_the_same(cache, monkeypatch):
    first = define("assay.probe_methods", monkeypatch)
    compiled = dict(cache.added)
    assert methods(compiled) == {"__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"}
    cache.known.update(compiled)
    cache.added.clear()

    second = define("assay.probe_methods", monkeypatch)
    assert cache.added == {}, "nothing is compiled again for the same class"
    assert cache.used == set(compiled)
    assert cache.known == {}, "what was used is not held any longer"

    third = define("assay.probe_methods", monkeypatch)  # served before in this process: compiled, not kept twice
    assert cache.added == {}
    assert third(1) == third(1)
    for made in (first, second):
        point = made(1, y=2)
        assert point == made(1, 2) and point != made(2, 2)
        assert hash(point) == hash(made(1, 2))
        assert repr(point) == "Point(x=1, y=2, tags=())"
        assert made(3).tags == ()
        with pytest.raises(dataclasses.FrozenInstanceError):
            point.x = 5  # type: ignore[misc]
        # Compiled as the builtin compiles a string: annotations are objects, not this module's strings.
        assert made.__init__.__annotations__["x"] is int


def test_a_class_outside_assay_is_made_as_before_and_never_kept(cache, monkeypatch):
    made = define("someone_elses.models", monkeypatch)
    assert made(1) == made(1)
    assert cache.added == {} and cache.used == set()


def test_kept_code_round_trips_through_its_file(cache, monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    define("assay.probe_methods", monkeypatch)
    path = tmp_path / "__pycache__" / "kept.marshal"
    keys = set(cache.added)
    _method_code._write(str(path))
    assert cache.added == {} and cache.used == keys
    assert set(_method_code._read(str(path))) == keys
    assert list(tmp_path.rglob("*.tmp")) == []


def test_a_file_cut_short_or_from_another_interpreter_is_not_used(tmp_path):
    path = tmp_path / "kept.marshal"
    path.write_bytes(marshal.dumps((_method_code._frozen_importlib_external.MAGIC_NUMBER, {b"a": b"b"}))[:-3])
    assert _method_code._read(str(path)) == {}
    path.write_bytes(marshal.dumps((b"\x00\x00\r\n", {b"a": b"b"})))
    assert _method_code._read(str(path)) == {}
    path.write_bytes(b"not marshal at all")
    assert _method_code._read(str(path)) == {}
    assert _method_code._read(str(tmp_path / "missing")) == {}


def test_a_broken_entry_is_compiled_again(cache, monkeypatch):
    define("assay.probe_methods", monkeypatch)
    cache.known.update({key: b"\x00broken" for key in cache.added})
    cache.added.clear()
    made = define("assay.probe_methods", monkeypatch)
    assert made(1) == made(1)
    assert len(cache.added) >= 5


def test_nothing_is_written_when_python_is_told_not_to_write_bytecode(cache, monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    define("assay.probe_methods", monkeypatch)
    _method_code._write(str(tmp_path / "kept.marshal"))
    assert list(tmp_path.iterdir()) == []


def test_a_file_grown_past_its_bound_keeps_only_what_this_process_used(cache, monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(_method_code, "KEPT_AT_MOST", 10)
    path = tmp_path / "kept.marshal"
    define("assay.probe_methods", monkeypatch)
    _method_code._write(str(path))
    class_entries = _method_code._read(str(path))
    stale = {bytes([number]) * 16: b"" for number in range(20)}
    path.write_bytes(marshal.dumps((_method_code._frozen_importlib_external.MAGIC_NUMBER, {**stale, **class_entries})))
    cache.used.clear()
    cache.known.update(_method_code._read(str(path)))

    define("assay.probe_methods", monkeypatch)  # served from the file
    cache.added[b"n" * 16] = b"new"
    _method_code._write(str(path))
    assert set(_method_code._read(str(path))) == set(class_entries) | {b"n" * 16}


def test_what_another_process_kept_meanwhile_is_kept_too(cache, monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "kept.marshal"
    path.write_bytes(marshal.dumps((_method_code._frozen_importlib_external.MAGIC_NUMBER, {b"o" * 16: b"other"})))
    define("assay.probe_methods", monkeypatch)
    keys = set(cache.added)
    _method_code._write(str(path))
    assert set(_method_code._read(str(path))) == keys | {b"o" * 16}


def test_a_folder_it_cannot_write_leaves_the_run_alone(cache, monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    (tmp_path / "__pycache__").write_text("a file where the folder would be")
    define("assay.probe_methods", monkeypatch)
    _method_code._write(str(tmp_path / "__pycache__" / "kept.marshal"))  # no error
    assert cache.added, "kept for a later attempt, not dropped as if written"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["__pycache__"]


def test_the_kept_code_lives_with_the_users_caches_not_in_the_package(monkeypatch, tmp_path):
    # A file pip did not install stays behind after `pip uninstall`, and the folder left holding it would
    # import as an empty namespace package called assay.
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "caches"))
    path = _method_code._cache_path()
    assert path == str(tmp_path / "caches" / "assay" / f"dataclass-methods.{sys.implementation.cache_tag}.marshal")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _method_code._cache_path().startswith(str(tmp_path / "home" / ".cache" / "assay") + "/")
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "bytecode"))
    assert _method_code._cache_path().startswith(str(tmp_path / "bytecode" / "assay") + "/")
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/caches")  # ignored, as the XDG rule has it: the home's then
    assert _method_code._cache_path().startswith(str(tmp_path / "home" / ".cache" / "assay") + "/")
    monkeypatch.setenv("HOME", "~")  # a home that cannot be found: nothing kept rather than the working directory
    assert _method_code._cache_path() is None
