"""A report path under `~name` where no user has that name: kept as written, as a shell keeps it.

`Path.expanduser` raises RuntimeError for it, so `--output-json '~nouser/report.json'` ended a video run with
`Eval failed: internal error: RuntimeError` (exit 2) before anything ran."""

from __future__ import annotations

import pwd

import pytest

from assay.core.fsutil import check_report_path, unwritable_file_reason


def _no_user() -> str:
    name = "nouser-assay-test"
    with pytest.raises(KeyError):
        pwd.getpwnam(name)
    return f"~{name}"


def test_a_report_under_a_tilde_naming_no_user_is_a_relative_path_not_an_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = f"{_no_user()}/report.json"
    assert unwritable_file_reason(path) is None  # its folder is made when the report is written
    check_report_path("--output-json", path)  # refused nothing, raised nothing


def test_a_report_under_a_tilde_naming_no_user_that_is_a_folder_is_refused_as_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / _no_user()
    folder.mkdir()
    assert unwritable_file_reason(folder.name) == "is a folder"
