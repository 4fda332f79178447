"""A folder under `cases/` that `cases.include` selects but that holds no `case-manifest.json` (an empty folder made
ahead, a manifest saved as `case_manifest.json`): `doctor` and `validate-fixtures` stopped at eval-kit's
`configured case manifest not found: …` alone, naming a file the user never meant to write. Now the line goes on to
say what the folder holds and what to do. The suite is `assay doc init`'s, run by the real CLI (its adapter under
node)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def own_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    monkeypatch.delenv("ASSAY_DOC_HOOK_TIMEOUT", raising=False)


def _doc(repo: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", "doc", *arguments], cwd=repo, capture_output=True, text=True,
                          timeout=120, check=False, env=dict(os.environ))


@pytest.fixture
def repo(tmp_path):
    folder = tmp_path / "repo"
    folder.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    assert _doc(folder, "init").returncode == 0
    assert _doc(folder, "scaffold-case", "--case", "demo").returncode == 0
    assert _doc(folder, "doctor").returncode == 0
    return folder


def test_an_empty_case_folder_says_to_scaffold_it_or_exclude_it(repo):
    (repo / "evals" / "cases" / "notes").mkdir()
    expected = ("Execution failed: configured case manifest not found: cases/notes/case-manifest.json (cases.include "
                "selects the folder cases/notes, which has no case-manifest.json: `assay doc scaffold-case --case notes` "
                "writes a starter case there, or leave the folder out with cases.exclude)\n")
    for command in ("validate-fixtures", "doctor"):
        done = _doc(repo, command)
        assert done.returncode == 2, (command, done.stdout)
        assert done.stderr == expected, (command, done.stderr)
    # the fix it names works
    assert _doc(repo, "scaffold-case", "--case", "notes").returncode == 0
    assert _doc(repo, "doctor").stdout.endswith("Doctor passed (8 checks).\n")


def test_a_manifest_under_a_near_name_is_named(repo):
    case = repo / "evals" / "cases" / "demo"
    (case / "case-manifest.json").rename(case / "case_manifest.json")
    done = _doc(repo, "validate-fixtures")
    assert done.returncode == 2
    assert done.stderr == ("Execution failed: configured case manifest not found: cases/demo/case-manifest.json (the "
                           "case folder cases/demo has case_manifest.json: rename it case-manifest.json)\n"), done.stderr


def test_a_listed_manifest_that_is_missing_keeps_eval_kits_line(repo):
    # `case_manifests` names files outright: the line stays eval-kit's, with no word of cases.include
    config = repo / "evals" / "eval-kit.config.json"
    text = config.read_text()
    config.write_text(text.replace('"cases": {', '"case_manifests": ["cases/ghost/case-manifest.json"],\n  "cases": {', 1))
    done = _doc(repo, "validate-fixtures")
    assert done.returncode == 2
    assert done.stderr == "Execution failed: configured case manifest not found: cases/ghost/case-manifest.json\n"
