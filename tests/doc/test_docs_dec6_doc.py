"""The doc pages as written, run by the real CLI: `assay doc init` and `scaffold-case` where something stands in the way, an id that
is no path at all, and a case folder without its manifest.

- A file named `evals` (or `evals/results`, or a case's folder name) where `init` or `scaffold-case` writes a
  folder: a Python traceback ending in `FileExistsError: [Errno 17] File exists`, exit 1, after the files before it
  were written; `--force` did the same. A folder where a file goes (`evals/eval-kit.config.json/`) was taken for
  an existing file to overwrite.
- `--case "my case"` said `case id must be an id, not a path`: the user gave no path. eval-kit's words stay, and
  the line goes on to say what an id holds and what in this one breaks the rule.
- A folder under `cases/` that `cases.include` selects but that holds no `case-manifest.json` (an empty folder made
  ahead, a manifest saved as `case_manifest.json`): `doctor` and `validate-fixtures` stopped at eval-kit's
  `configured case manifest not found: …` alone, naming a file the user never meant to write. Now the line goes on to
  say what the folder holds and what to do. The suite is `assay doc init`'s, run by the real CLI (its adapter under
  node).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

FORCE_NOTE = "(--force replaces the files it writes, not a file in their way)"


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
    return folder


def test_init_with_a_file_named_evals_says_so_and_writes_nothing(repo):
    (repo / "evals").write_text("notes\n")
    expected = (f"Execution failed: evals is a file, where the folder of evals/eval-kit.config.json goes; move it away "
                f"or rename it, then run the command again {FORCE_NOTE}\n")
    for extra in ([], ["--force"], ["--dry-run"]):
        done = _doc(repo, "init", *extra)
        assert done.returncode == 2, (extra, done.stdout)
        assert done.stderr == expected, (extra, done.stderr)
        assert done.stdout == ""
    assert (repo / "evals").read_text() == "notes\n"


def test_init_with_a_file_where_results_goes_writes_none_of_the_others(repo):
    (repo / "evals").mkdir()
    (repo / "evals" / "results").write_text("")
    done = _doc(repo, "init")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr == (f"Execution failed: evals/results is a file, where the folder of evals/results/README.md "
                           f"goes; move it away or rename it, then run the command again {FORCE_NOTE}\n")
    assert sorted(path.name for path in (repo / "evals").iterdir()) == ["results"]  # nothing written half-way


def test_init_force_with_a_folder_where_the_config_goes(repo):
    (repo / "evals" / "eval-kit.config.json").mkdir(parents=True)
    done = _doc(repo, "init", "--force")
    assert done.returncode == 2
    assert done.stderr == ("Execution failed: evals/eval-kit.config.json is a folder, where a file goes; move it away "
                           "(--force replaces files only)\n")


def test_scaffold_case_over_a_file_of_the_cases_name(repo):
    assert _doc(repo, "init").returncode == 0
    (repo / "evals" / "cases" / "demo").write_text("")
    done = _doc(repo, "scaffold-case", "--case", "demo")
    assert done.returncode == 2
    assert done.stderr == (f"Execution failed: evals/cases/demo is a file, where the folder of "
                           f"evals/cases/demo/case-manifest.json goes; move it away or rename it, then run the command "
                           f"again {FORCE_NOTE}\n")


@pytest.mark.parametrize(("given", "why"), [("my case", "'my case' has ' '"), ("-draft", "'-draft' begins with '-'"),
                                            ("notes!", "'notes!' has '!'")])
def test_an_id_that_is_no_path_says_what_an_id_holds(repo, given, why):
    assert _doc(repo, "init").returncode == 0
    rule = f"(an id is letters, digits, '.', '_' and '-', beginning with a letter or digit: {why})"
    done = _doc(repo, "scaffold-case", "--case", given)
    assert done.returncode == 2
    assert done.stderr == f"Execution failed: case id must be an id, not a path {rule}\n"
    run = _doc(repo, "run-case", "--case", "demo", "--candidate", "x.md", "--run-id", given)
    assert run.returncode == 2 and run.stderr == f"Execution failed: run id must be an id, not a path {rule}\n"


def test_a_path_keeps_eval_kits_line_alone(repo):
    assert _doc(repo, "init").returncode == 0
    done = _doc(repo, "scaffold-case", "--case", "../x")
    assert done.returncode == 2 and done.stderr == "Execution failed: case id must be an id, not a path\n"


# ---------------------------------------------------------------------------------------------
# A case folder without its manifest


@pytest.fixture
def suite(repo):
    """`assay doc init`'s suite with one scaffolded case, which `doctor` passes."""
    assert _doc(repo, "init").returncode == 0
    assert _doc(repo, "scaffold-case", "--case", "demo").returncode == 0
    assert _doc(repo, "doctor").returncode == 0
    return repo


def test_an_empty_case_folder_says_to_scaffold_it_or_exclude_it(suite):
    repo = suite
    (repo / "evals" / "cases" / "notes").mkdir()
    expected = ("Execution failed: configured case manifest not found: cases/notes/case-manifest.json (cases.include "
                "selects the folder cases/notes, which has no case-manifest.json: `assay doc scaffold-case --case notes` "
                "writes a starter case there, or leave the folder out with cases.exclude)\n")
    for command in ("validate-fixtures", "doctor"):
        done = _doc(suite, command)
        assert done.returncode == 2, (command, done.stdout)
        assert done.stderr == expected, (command, done.stderr)
    # the fix it names works
    assert _doc(suite, "scaffold-case", "--case", "notes").returncode == 0
    assert _doc(suite, "doctor").stdout.endswith("Doctor passed (8 checks).\n")


def test_a_manifest_under_a_near_name_is_named(suite):
    repo = suite
    case = repo / "evals" / "cases" / "demo"
    (case / "case-manifest.json").rename(case / "case_manifest.json")
    done = _doc(suite, "validate-fixtures")
    assert done.returncode == 2
    assert done.stderr == ("Execution failed: configured case manifest not found: cases/demo/case-manifest.json (the "
                           "case folder cases/demo has case_manifest.json: rename it case-manifest.json)\n"), done.stderr


def test_a_listed_manifest_that_is_missing_keeps_eval_kits_line(suite):
    repo = suite
    # `case_manifests` names files outright: the line stays eval-kit's, with no word of cases.include
    config = repo / "evals" / "eval-kit.config.json"
    text = config.read_text()
    config.write_text(text.replace('"cases": {', '"case_manifests": ["cases/ghost/case-manifest.json"],\n  "cases": {', 1))
    done = _doc(suite, "validate-fixtures")
    assert done.returncode == 2
    assert done.stderr == "Execution failed: configured case manifest not found: cases/ghost/case-manifest.json\n"
