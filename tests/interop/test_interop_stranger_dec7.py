"""`assay runs import` of a log whose verdict field holds a value its tool never writes there (a report edited by hand,
or made by another tool in the tool's shape): `"success": "false"` is a non-empty string, so it was truthy and a
failed case went into the store as passed, with exit 0. The docs promise "a value of a type its tool never writes
there" is one error naming the file and the place, exit 2, and nothing imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("own_store")


def _assay(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=120,
                          check=False)


def _nothing_imported() -> None:
    done = _assay("runs", "list", "--json")
    assert done.returncode == 0, done.stderr
    assert "imported-" not in done.stdout, done.stdout


def _refused(path: Path, said: str) -> None:
    done = _assay("runs", "import", str(path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "Imported" not in done.stdout
    _nothing_imported()


def test_a_deepeval_success_given_as_text_is_refused_not_read_as_a_pass(deepeval_run, tmp_path):
    run = json.loads(deepeval_run.path.read_text())
    index, case = next((index, case) for index, case in enumerate(run["testCases"]) if case.get("success") is False)
    case["success"] = "false"
    edited = tmp_path / "test_run_edited.json"
    edited.write_text(json.dumps(run))
    _refused(edited, f"{edited}: test case {index} ({case['name']}): `success` must be true, false or null, as DeepEval "
                     'writes it; got "false"')


def test_a_promptfoo_success_given_as_text_is_refused_not_read_as_a_pass(promptfoo_results, tmp_path):
    document = json.loads(promptfoo_results.path.read_text())
    index, result = next((index, result) for index, result in enumerate(document["results"]["results"])
                         if result.get("success") is False)
    result["success"] = "false"
    edited = tmp_path / "results-edited.json"
    edited.write_text(json.dumps(document))
    _refused(edited, f"{edited}: result {index} (")
    assert "`success` must be true or false, as promptfoo writes it; got \"false\"" in _assay(
        "runs", "import", str(edited)).stderr


@pytest.mark.parametrize(("value", "said"), [("true", 'has the value "true"'), (None, "has no value")])
def test_a_pydantic_evals_assertion_that_is_no_bool_is_refused_not_read_as_a_failure(pydantic_evals_report, tmp_path,
                                                                                      value, said):
    """A passing case whose assertion's value was text (or missing) was imported as failed, silently."""
    report = json.loads(pydantic_evals_report.path.read_text())
    case = next(case for case in report["cases"]
                if case["assertions"] and all(item["value"] is True for item in case["assertions"].values()))
    name = next(iter(case["assertions"]))
    if value is None:
        del case["assertions"][name]["value"]
    else:
        case["assertions"][name]["value"] = value
    edited = tmp_path / "report-edited.json"
    edited.write_text(json.dumps(report))
    _refused(edited, f"{edited}: case {case['name']!r}: assertion {name!r} {said}; pydantic-evals writes an "
                     "assertion's value as true or false")


def test_the_logs_as_the_tools_write_them_still_import(deepeval_run, promptfoo_results, pydantic_evals_report):
    done = _assay("runs", "import", str(deepeval_run.path), str(promptfoo_results.path), str(pydantic_evals_report.path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Imported imported-") == 3, done.stdout
    assert os.environ["ASSAY_STORE"]  # (own_store: a store of this test's own)


# --- `[tool.assay.export]` misspelt, or its `otlp` put in `[tool.assay]` itself -------------------------------------


def _recorded_run(run_id: str) -> Path:
    from assay.core.record import RunManifest, UnitResult, utc_timestamp
    from assay.core.results_store import publish_run

    manifest = RunManifest(run_id=run_id, kind="doc", created_at=utc_timestamp(), title="contracts")
    publish_run(manifest, [UnitResult("contracts/nda#1", "passed", group="contracts")])
    return Path(os.environ["ASSAY_STORE"]).parent / "records" / run_id


@pytest.mark.parametrize(("table", "said"), [
    ('[tool.assay.exprt]\notlp = "{url}"\n',
     "pyproject.toml [tool.assay.exprt]: assay reads the endpoint from [tool.assay.export] (did you mean it?): rename the "
     "table"),
    ('[tool.assay]\notlp = "{url}"\n',
     "pyproject.toml [tool.assay] holds otlp, which assay reads from the [tool.assay.export] table: move it there"),
])
def test_an_endpoint_where_assay_does_not_read_it_is_named_not_passed_over(tmp_path, monkeypatch, table, said):
    """A doc or video project (no agent loader checks its [tool.assay]) whose table was misspelt: every run went
    unexported without a word, and `assay runs export RUN` said to set the `otlp` the file had set."""
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra: pip install 'assay[otel]'")
    from servers.otlp_receiver import receiver

    from assay.core.interop.otlp_export import export_after_run

    monkeypatch.delenv("ASSAY_OTLP_EXPORT", raising=False)
    record = _recorded_run("doc-20261207T090000Z-5eca0007")
    project = tmp_path / "contracts"
    project.mkdir()
    with receiver() as (url, received):
        (project / "pyproject.toml").write_text(table.format(url=url))
        done = subprocess.run([sys.executable, "-m", "assay", "runs", "export", "doc-20261207T090000Z-5eca0007"],
                              capture_output=True, text=True, timeout=120, cwd=project, check=False)
        assert done.returncode == 2, done.stdout + done.stderr
        assert said in done.stderr and "--otlp is needed" not in done.stderr, done.stderr

        # after a run: one warning naming the table, the run's outcome untouched
        import contextlib
        import io

        warned = io.StringIO()
        with contextlib.redirect_stderr(warned):
            export_after_run(record, project)
        assert warned.getvalue().startswith("Warning: run not exported: "), warned.getvalue()
        assert said in warned.getvalue()
        assert received.requests == 0


def test_a_project_whose_export_table_is_right_still_exports(tmp_path, monkeypatch):
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra: pip install 'assay[otel]'")
    from servers.otlp_receiver import receiver

    monkeypatch.delenv("ASSAY_OTLP_EXPORT", raising=False)
    _recorded_run("doc-20261207T090000Z-5eca0008")
    project = tmp_path / "contracts"
    project.mkdir()
    with receiver() as (url, received):
        (project / "pyproject.toml").write_text(f'[tool.assay]\n[tool.assay.telemetry]\nport = 4318\n'
                                                f'[tool.assay.export]\notlp = "{url}"\n')
        done = subprocess.run([sys.executable, "-m", "assay", "runs", "export", "doc-20261207T090000Z-5eca0008"],
                              capture_output=True, text=True, timeout=120, cwd=project, check=False)
        assert done.returncode == 0, done.stderr
        assert received.requests >= 2
