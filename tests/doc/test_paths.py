"""Safe ids and containment: `..`, absolute paths, symlink escapes and ids with a trailing newline."""

from __future__ import annotations

import os

import pytest

from assay.doc.paths import PathResolver, assert_safe_id, is_contained, is_safe_id, resolve_within
from assay.errors import CaseError, UsageError


@pytest.mark.parametrize("value", ["a", "A_1.v2", "a..b", "case-one", "0"])
def test_safe_ids_are_accepted(value):
    assert is_safe_id(value)


@pytest.mark.parametrize("value", ["", ".x", "-x", "a/b", "a b", "..", "x\n", "case\n", "a\\b", None, 3])
def test_unsafe_ids_are_rejected_including_a_trailing_newline(value):
    assert not is_safe_id(value)


def test_assert_safe_id_names_the_label():
    with pytest.raises(UsageError, match="^run id must be an id, not a path$"):
        assert_safe_id("../x", "run id")


def test_dot_dot_escape_is_refused(tmp_path):
    with pytest.raises(CaseError, match="escapes"):
        resolve_within(tmp_path / "base", "../outside.md", "artifact")


def test_absolute_path_is_refused_even_inside_the_base(tmp_path):
    with pytest.raises(CaseError, match="must be a relative path"):
        resolve_within(tmp_path, str(tmp_path / "inside.md"), "artifact")


def test_symlink_leaving_the_base_is_refused(tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    (tmp_path / "secret.txt").write_text("secret")
    os.symlink(tmp_path / "secret.txt", base / "link.txt")
    with pytest.raises(CaseError, match="escapes"):
        resolve_within(base, "link.txt", "artifact")


def test_symlinked_directory_leaving_the_base_is_refused_for_paths_below_it(tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", base / "dir")
    assert not is_contained(base, base / "dir" / "new-file.md")


def test_symlink_staying_inside_is_fine_and_dot_dot_prefixed_names_are_children(tmp_path):
    (tmp_path / "real.md").write_text("x")
    os.symlink(tmp_path / "real.md", tmp_path / "alias.md")
    (tmp_path / "..foo").write_text("x")
    assert resolve_within(tmp_path, "alias.md", "a") == tmp_path / "alias.md"
    assert resolve_within(tmp_path, "..foo", "a") == tmp_path / "..foo"
    assert resolve_within(tmp_path, "sub/../real.md", "a") == tmp_path / "real.md"


def test_resolver_run_dirs_and_relative_helpers(tmp_path):
    resolver = PathResolver(tmp_path, tmp_path / "evals", tmp_path / "evals", tmp_path / "evals" / "results")
    assert resolver.resolve_run_dir("run-1") == tmp_path / "evals" / "results" / "run-1"
    for bad in ("../x", "x\n", "/abs", ""):
        with pytest.raises(UsageError, match="run id must be an id, not a path"):
            resolver.resolve_run_dir(bad)
    run_dir = resolver.resolve_run_dir("run-1")
    assert resolver.resolve_result_artifact(run_dir, "cases/a/candidate.md") == run_dir / "cases" / "a" / "candidate.md"
    with pytest.raises(CaseError, match="escapes"):
        resolver.resolve_result_artifact(run_dir, "../other/file.json")
    with pytest.raises(CaseError, match="escapes"):
        resolver.resolve_repo_path("../../etc/passwd")
    assert resolver.relative_to_repo(tmp_path / "evals" / "x.md") == "evals/x.md"
    assert resolver.relative_to_suite(tmp_path / "other.md") == "../other.md"
