"""Bad input to `assay runs`, `labels`, `judge`, `view` and the options of `assay agent`, met on the real command line:
a misspelt variable, a file that is not what it should be, an option given empty. Each is one line naming what is
wrong and what to do, exit 2, and no traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cli_examples import EXAMPLES, assay

JUNIT = """<?xml version="1.0"?>
<testsuite name="suite" tests="2">
  <testcase classname="pkg.mod" name="test_one" time="0.01"/>
  <testcase classname="pkg.mod" name="test_two" time="0.01"><failure message="boom">trace</failure></testcase>
</testsuite>
"""


def _environment(tmp_path: Path, **changes: str | None) -> dict[str, str]:
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db")}
    for name in ("ASSAY_OTLP_EXPORT", "OTEL_EXPORTER_OTLP_HEADERS"):
        env.pop(name, None)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def _run(tmp_path: Path, *arguments: str, cwd: Path | None = None, **changes: str | None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(assay(*arguments), cwd=cwd or tmp_path, env=_environment(tmp_path, **changes),
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


def _one_line(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    """A store (under tmp_path/store) holding one run, imported from a JUnit file."""
    report = tmp_path / "junit.xml"
    report.write_text(JUNIT, encoding="utf-8")
    done = _run(tmp_path, "runs", "import", str(report))
    assert done.returncode == 0, done.stdout + done.stderr
    return tmp_path / "store" / "assay.db"


@pytest.mark.parametrize("misspelt", ["ASSAY_STOER", "ASAY_STORE", "assay_store"])
def test_a_misspelt_store_variable_is_refused_not_ignored(tmp_path: Path, misspelt: str) -> None:
    """`ASSAY_STOER=/tmp/s.db assay runs list` read the project's own store (and a run wrote into it), the store the
    variable was set to keep them out of; it said at most `no results store at <project>/.assay/assay.db`."""
    kept = tmp_path / "kept" / "assay.db"
    done = _run(tmp_path, "runs", "list", ASSAY_STORE=None, **{misspelt: str(kept)})
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert _one_line(done.stderr) == (
        f"Error: {misspelt} is set, but assay reads ASSAY_STORE (did you mean it?), so the results store would be "
        f"{tmp_path.resolve() / '.assay' / 'assay.db'}: rename the variable to ASSAY_STORE, or unset it")
    assert not (tmp_path / ".assay").exists() and not kept.parent.exists()


def test_the_store_variable_spelt_right_is_not_refused_for_a_lookalike_beside_it(tmp_path: Path, imported: Path) -> None:
    done = _run(tmp_path, "runs", "list", "--json", ASSAY_STOER=str(tmp_path / "other.db"))
    assert done.returncode == 0, done.stderr
    assert '"run_id"' in done.stdout


def test_a_misspelt_export_variable_is_refused_by_runs_export(tmp_path: Path, imported: Path) -> None:
    """`ASSAY_OTLP_EXPROT=… assay runs export` said `--otlp is needed … (or set ASSAY_OTLP_EXPORT …)`, the variable the
    user believed set; after a run, nothing was exported and nothing said why."""
    done = _run(tmp_path, "runs", "export", ASSAY_OTLP_EXPROT="http://127.0.0.1:4318")
    assert done.returncode == 2
    assert _one_line(done.stderr) == ("Error: ASSAY_OTLP_EXPROT is set, but assay reads ASSAY_OTLP_EXPORT (did you mean "
                                      "it?): rename the variable to ASSAY_OTLP_EXPORT, or unset it")


@pytest.mark.parametrize(("content", "said"), [
    (b'[tool.assay.export]\notlp = "http://127.0.0.1:4318\n', "is not valid TOML (Illegal character"),
    (b'[tool.assay.export]\notlp = "http://caf\xe9:4318"\n', "is not UTF-8 text (invalid continuation byte at byte"),
], ids=["not-toml", "not-utf8"])
def test_runs_export_names_a_pyproject_it_cannot_read(tmp_path: Path, imported: Path, content: bytes, said: str) -> None:
    """A pyproject.toml here that does not parse was passed over in silence, and the error then asked for `otlp` in
    that file's [tool.assay.export] table, where the user had put it."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_bytes(content)
    done = _run(tmp_path, "runs", "export", cwd=project)
    assert done.returncode == 2
    message = _one_line(done.stderr)
    assert message.startswith("Error: --otlp is needed: the collector's OTLP/HTTP base URL, like http://127.0.0.1:4318; "
                              f"{project / 'pyproject.toml'} {said}"), message
    assert message.endswith("so its [tool.assay.export] table was not read: mend it, or give --otlp"), message


def test_runs_import_says_a_junit_file_is_not_utf8(tmp_path: Path) -> None:
    """A JUnit report written in Latin-1 without an encoding declaration was `not well-formed (invalid token)`, which
    sent the user looking for a broken tag; it says now that the bytes are not UTF-8, and what to do."""
    report = tmp_path / "latin1.xml"
    report.write_bytes(JUNIT.replace("test_one", "test_caf\u00e9").encode("latin-1"))
    done = _run(tmp_path, "runs", "import", str(report))
    assert done.returncode == 2
    message = _one_line(done.stderr)
    assert message.startswith(f"Error: {report}:3:46: ") and "not well-formed XML" in message, message
    assert ("the bytes there are not UTF-8 text (invalid continuation byte), and the file declares no other "
            "encoding: save it as UTF-8") in message, message
    assert 'encoding="ISO-8859-1"' in message
    declared = tmp_path / "declared.xml"
    declared.write_bytes(b'<?xml version="1.0" encoding="ISO-8859-1"?>' + report.read_bytes()[len(b'<?xml version="1.0"?>'):])
    assert _run(tmp_path, "runs", "import", str(declared)).returncode == 0


def test_runs_import_keeps_the_plain_message_for_a_broken_tag(tmp_path: Path) -> None:
    report = tmp_path / "broken.xml"
    report.write_text(JUNIT.replace('name="test_one"', 'name="test<one"'), encoding="utf-8")
    done = _run(tmp_path, "runs", "import", str(report))
    assert done.returncode == 2
    assert "UTF-8" not in done.stderr and "not well-formed (invalid token)" in done.stderr


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    shutil.copytree(EXAMPLES / "agent", folder, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    return folder


def test_agent_resume_errors_name_the_option(tmp_path: Path, project: Path) -> None:
    """`--resume "$CHECKPOINT"` of an unset variable said `Error: needs a checkpoint id or folder …`, naming no option;
    a file or a folder that is no checkpoint said `[Errno 20] Not a directory: '…/manifest.json'`."""
    empty = _run(tmp_path, "agent", "run", "--project", str(project), "--resume", "")
    assert empty.returncode == 2
    assert _one_line(empty.stderr) == ("Error: --resume: needs a checkpoint id or folder, and the value given is empty "
                                       "(an unset variable in a script?)")
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x", encoding="utf-8")
    given_a_file = _run(tmp_path, "agent", "run", "--project", str(project), "--resume", str(a_file))
    assert given_a_file.returncode == 2
    assert _one_line(given_a_file.stderr) == (
        f"Error: --resume: could not read checkpoint manifest {a_file / 'manifest.json'}: {a_file} is a file, not a "
        "checkpoint folder; give a checkpoint's folder (the one holding manifest.json) or its id")
    given_a_folder = _run(tmp_path, "agent", "run", "--project", str(project), "--resume", str(tmp_path))
    assert given_a_folder.returncode == 2
    assert _one_line(given_a_folder.stderr) == (
        f"Error: --resume: could not read checkpoint manifest {tmp_path / 'manifest.json'}: {tmp_path} is a folder "
        "without a manifest.json, so no checkpoint; give a checkpoint's folder (the one holding manifest.json) or its id")
    assert "Errno" not in given_a_file.stderr + given_a_folder.stderr


def test_agent_show_refuses_an_empty_run_naming_the_option(tmp_path: Path, project: Path) -> None:
    """`assay agent show --run "$RUN"` of an unset variable said `needs a checkpoint id or folder`, naming no option."""
    done = _run(tmp_path, "agent", "show", "--project", str(project), "--run", "")
    assert done.returncode == 2
    assert _one_line(done.stderr).endswith(
        "Error: Invalid value for '--run': needs a value, and the value given is empty (an unset variable in a script?); "
        "leave the option out for the latest run"), done.stderr


def test_a_map_file_pair_that_is_not_two_ids_is_shown_as_written(tmp_path: Path, imported: Path) -> None:
    """`--map @pairs.json` holding `{"a": 1}` said `pair 1 is not two ids (('a', 1))`: Python's repr of the entry, and
    nothing of what a pair is."""
    pairs = tmp_path / "pairs.json"
    pairs.write_text('{"pkg.mod::test_one": 1}', encoding="utf-8")
    done = _run(tmp_path, "runs", "compare", "latest", "latest", "--map", f"@{pairs}")
    assert done.returncode == 2
    assert _one_line(done.stderr) == (
        f'Error: --map @{pairs}: pair 1 is not two ids ("pkg.mod::test_one": 1): each pair is a baseline id and a '
        'candidate id, both text (JSON: {"before id": "after id"}; CSV: a before,after row)')
