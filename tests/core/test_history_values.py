"""`assay runs compare` as a newcomer types it from docs/results.md: the numbers it prints, and the values its
options refuse (with the value that was meant)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from assay.cli.app import app
from assay.core.history.verdict import FamilyTest


def test_the_flaky_units_expected_failures_are_printed_to_two_significant_digits_as_the_stable_units_are() -> None:
    """0.054 expected failures printed as "0.1 expected" (twice the figure); the stable families printed 0.054."""
    test = FamilyTest("flaky", "two-sided Poisson-binomial test vs each unit's history", 1, "worse", 1.0, 0.0538, 0.108)
    line = test.describe()
    assert "1 failing trial now, 0.054 expected from their history" in line, line
    assert "flaky units (2): 1 failing trial now, 0.9 expected" in FamilyTest(
        "flaky", "two-sided Poisson-binomial test vs each unit's history", 2, "worse", 1.0, 0.9028, 1.0).describe()
    # Many flaky units: a whole number, not two significant digits in exponent form ("3.1e+02").
    assert "flaky units (900): 350 failing trials now, 312 expected" in FamilyTest(
        "flaky", "two-sided Poisson-binomial test vs each unit's history", 900, "worse", 350.0, 312.4, 0.03).describe()
    assert "; 10 expected by chance in this suite" in FamilyTest(
        "stable-pass", "exact Poisson-binomial test", 4000, "worse", 12.0, 9.97, 0.3, flips=("u",) * 12).describe()


@pytest.mark.parametrize("option, value, meant", [
    ("--margin", "5", "it is a fraction (0.05 is 5 points): for 5 points, give 0.05"),
    ("--margin", "1.5", "it is a fraction (0.05 is 5 points): for 1.5 points, give 0.015"),
    ("--power", "80", "it is a fraction (0.8 is 80 %): for 80 %, give 0.8"),
])
def test_a_margin_or_power_given_in_points_or_percent_is_refused_with_the_fraction_meant(
        tmp_path, monkeypatch, option: str, value: str, meant: str) -> None:
    """The docs speak of "±5 points" and "80 % power"; `--margin 5` said only "less than or equal to 1"."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "assay.db"))
    result = CliRunner().invoke(app, ["runs", "compare", "latest~1", "latest", option, value])
    assert result.exit_code == 2, result.output
    assert meant in " ".join(result.output.split()), result.output


@pytest.mark.parametrize("option, value", [("--power", "99.5"), ("--margin", "500")])
def test_a_value_that_is_no_fraction_either_way_gets_no_hint(tmp_path, monkeypatch, option: str, value: str) -> None:
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "assay.db"))
    result = CliRunner().invoke(app, ["runs", "compare", "latest~1", "latest", option, value])
    assert result.exit_code == 2, result.output
    expected = {"99.5": "less than or equal to 0.99", "500": "less than or equal to 1"}[value]
    assert expected in " ".join(result.output.split()), result.output
    assert "fraction" not in result.output


def test_counts_of_a_million_and_more_are_whole_numbers_not_exponent_form() -> None:
    """`flaky units (2000000): 1.23457e+06 failing trials now`: a count rounded to six digits in exponent form, which
    is not the count `--json` holds (1234567). Counts are whole numbers, thousands marked as the expected ones are."""
    flaky = FamilyTest("flaky", "two-sided Poisson-binomial test vs each unit's history", 2_000_000, "worse", 1_234_567.0,
                       1_234_000.2, 0.5).describe()
    assert flaky.startswith("flaky units (2,000,000): 1,234,567 failing trials now, 1,234,000 expected"), flaky
    short = FamilyTest("short-history", "exact sign test on paired changes (McNemar with one trial)", 3_000_000, "worse",
                       1_500_000.0, 1_234_567.0, 0.5).describe()
    assert short.startswith("units with too little history (3,000,000): 1,500,000 changed for the better, 1,234,567 for "
                            "the worse"), short
    stable = FamilyTest("stable-pass", "Poisson-binomial tail vs the suite's history", 3_000_000, "worse", 1_500_000,
                        1_234_567.0, 0.5, flips=("u",) * 1_500_000).describe()
    assert stable.startswith("1,500,000 units that passed every trial of their history fail now; 1,234,567 expected"), stable
