"""A misspelt `assay doc` option names the option meant, as a misspelt command does (`Unknown command:
run-cse (did you mean run-case?)`); before, it said only `unknown option --cas`."""

from __future__ import annotations

import pytest

from doc_suites import invoke, make_suite


@pytest.fixture
def suite(tmp_path, monkeypatch):
    built = make_suite(tmp_path)
    monkeypatch.chdir(built.repo)
    return built


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run-case", "--cas", "case-one"], "unknown option --cas (did you mean --case?)"),
        (["run-case", "--candidat", "x"], "unknown option --candidat (did you mean --candidate?)"),
        (["judge-coverage", "--efort", "low"], "unknown option --efort (did you mean --effort?)"),
        (["doctor", "--confg", "x"], "unknown option --confg (did you mean --config?)"),
        (["run-case", "--bogus", "1"], "unknown option --bogus"),  # nothing close: no guess
    ],
)
def test_a_misspelt_option_names_the_option_meant(suite, args, message):
    result = invoke(*args)
    assert result.exit_code == 2 and result.stderr.strip() == f"Error parsing arguments: {message}"
