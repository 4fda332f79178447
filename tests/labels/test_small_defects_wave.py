"""Small user-facing defects of `assay labels …` and `assay judge agreement`, each pinned where it was found."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from assay.cli.app import app


@pytest.mark.parametrize("command", [["labels", "export"], ["judge", "agreement"]], ids=["export", "agreement"])
def test_a_second_labeller_is_refused_not_silently_taken_instead_of_the_first(command, tmp_path, monkeypatch):
    """`--labeller ann --labeller bo` read bo's labels only, exit 0, as if ann had never been asked for."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    (tmp_path / "junit.xml").write_text('<testsuite name="s" tests="1"><testcase name="a"/></testsuite>\n')
    assert CliRunner().invoke(app, ["runs", "import", str(tmp_path / "junit.xml")]).exit_code == 0  # a store to read
    result = CliRunner().invoke(app, [*command, "--labeller", "ann", "--labeller", "bo"])
    assert result.exit_code == 2, result.output
    assert ("Invalid value for '--labeller': given 2 times ('ann', 'bo'); it takes one labeller: give it once, or "
            "leave it out for every labeller's labels") in " ".join(result.output.split())
    assert CliRunner().invoke(app, [*command, "--labeller", "ann"]).exit_code == 0  # once is as before
