"""A results store this user may not write: a run still finishes with its own exit code, and the warning names
the folder and what to do, not a bare `PermissionError: [Errno 13]`."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from assay.core import record
from assay.core.report.store import StorePublisher
from assay.errors import ConfigError


def _unwritable(monkeypatch: pytest.MonkeyPatch, folder) -> None:
    """`folder` read-only as os.access sees it (a test run as root would write it anyway)."""
    real = os.access
    monkeypatch.setattr(record.os, "access", lambda path, mode, **kw: False if str(path) == str(folder) else real(path, mode, **kw))


def _finished(home) -> SimpleNamespace:
    def build_manifest(exit_code: int):
        raise AssertionError("a store that cannot be written is not written")

    return SimpleNamespace(build_manifest=build_manifest, home=home, exit_code=0, units=lambda: [])


@pytest.mark.parametrize("records_made", [False, True])
def test_a_read_only_store_folder_is_one_warning_naming_it(tmp_path, monkeypatch, capsys, records_made):
    store = tmp_path / "shared store"
    store.mkdir()
    if records_made:
        (store / "records").mkdir()
    unwritable = store / "records" if records_made else store
    _unwritable(monkeypatch, unwritable)
    monkeypatch.setenv("ASSAY_STORE", str(store / "assay.db"))
    StorePublisher._record(_finished(tmp_path))
    err = capsys.readouterr().err
    assert err == (f"Warning: run record not stored: the results store {store / 'assay.db'} cannot be used: no permission "
                   f"to write {unwritable}; give this user write access to it, or set ASSAY_STORE to a store this user "
                   "may write\n")


def test_a_store_under_a_missing_folder_is_checked_where_it_would_be_made(tmp_path, monkeypatch):
    _unwritable(monkeypatch, tmp_path)
    with pytest.raises(ConfigError, match=f"no permission to write {tmp_path};"):
        record.check_store_writable(tmp_path / "new" / "deeper" / "assay.db")
    record.check_store_writable(tmp_path.parent / "elsewhere" / "assay.db")  # a writable folder passes
