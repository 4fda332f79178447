"""`assay.doc` offers eval-kit's programmatic API (spec doc.md §2.11) under Python names, and its
helpers name the argument a stranger got wrong instead of failing deep inside."""

from __future__ import annotations

import subprocess
import sys

import pytest

import assay.doc as doc


def test_the_package_exports_the_spec_names():
    for name in ("normalize", "candidate_segments", "includes_any", "includes_all", "assess_coverage", "grade_facts",
                 "aggregate_verdict", "critical_blocker_count", "POINTWISE_VERDICTS", "count_pointwise_verdicts",
                 "DEFAULT_CONFIG_PATH", "init_suite", "run_doctor", "discover_case_ids", "run_case",
                 "generate_candidate", "judge_coverage", "compile_report", "validate_fixtures"):
        assert name in doc.__all__
        assert getattr(doc, name) is not None
    from assay.doc import aggregate_verdict as exported
    from assay.doc.verdict import aggregate_verdict

    assert exported is aggregate_verdict  # the module's own object, imported on first use
    with pytest.raises(AttributeError, match="no attribute 'asses_coverage'"):
        doc.asses_coverage  # noqa: B018


def test_normalize():
    assert doc.normalize("It\u2019s the \u201cOwner\u201d \u2014 A&B_x  ") == "its the owner a and bx"


def test_whole_token_matching():
    assert doc.includes_any("The cache owns the index.", ["owns", "nothing"])
    assert not doc.includes_any("The cacheowns it.", ["owns"])
    assert doc.includes_all("The cache owns the index.", ["cache", "the index"])
    assert not doc.includes_all("The cache owns the index.", ["cache", "index files"])


def test_assess_coverage_in_the_spec_order():
    assert doc.assess_coverage("Never cache.", {"must_include_all": ["cache"], "must_not_include_any": ["never cache"]})[
        "verdict"] == "contradicted"
    covered = doc.assess_coverage("The cache owns the index.", {"must_include_any": ["owns"], "must_include_all": ["index"]})
    assert covered == {"verdict": "covered", "evidence": "exact evidence hit: any=owns; all=index"}
    assert doc.assess_coverage("anything", {})["verdict"] == "covered"
    assert doc.assess_coverage("Uses an LRU cache.", {"must_include_all": ["eviction"], "accepted_alternatives": [
        {"label": "lru", "must_include_all": ["lru cache"]}]})["verdict"] == "covered"
    assert doc.assess_coverage("Red and round.", {"must_include_all": ["apple"], "required_concepts": [
        {"label": "colour", "any_of": ["red", "green"]}, {"label": "shape", "any_of": ["round"]}]})["verdict"] == "covered"
    missing = doc.assess_coverage("Nothing here.", {"must_include_any": ["a b"], "must_include_all": ["c"]})
    assert missing["verdict"] == "missing"
    assert "missing_any=a b" in missing["evidence"] and "missing_all=c" in missing["evidence"]
    apart = "alpha here.\n\nbeta there."
    assert doc.assess_coverage(apart, {"must_include_all": ["alpha", "beta"]})["verdict"] == "covered"
    assert doc.assess_coverage(apart, {"must_include_all": ["alpha", "beta"]}, {"requireCoLocatedAll": True})[
        "verdict"] == "missing"
    assert doc.assess_coverage("x", {}, {"defaultMustIncludeAll": ["y"]})["verdict"] == "missing"


def test_candidate_segments():
    text = "Intro:\n- one\n- two\n\n| a | b |\n| c | d |\nPlain line\ncontinues here.\nNext."
    assert doc.candidate_segments(text) == ["Intro:\n- one\n- two", "| a | b |", "| c | d |",
                                            "Plain line\ncontinues here.", "Next."]


def test_grade_facts():
    findings = doc.grade_facts("The sky is blue.", {"facts": [
        {"id": "f1", "severity": "high", "must_include_all": ["sky is blue"]}, {"id": "f2", "must_include_all": ["grass"]}]})
    assert [(f["id"], f["kind"], f["severity"], f["verdict"]) for f in findings] == [
        ("f1", "fact", "high", "covered"), ("f2", "fact", "medium", "missing")]


def test_wrong_types_name_the_argument():
    with pytest.raises(TypeError, match="text must be a str"):
        doc.assess_coverage(None, {})
    with pytest.raises(TypeError, match="must_include_all must be a list of strings"):
        doc.assess_coverage("x", {"must_include_all": "x"})
    with pytest.raises(ValueError, match="'facts' list"):
        doc.grade_facts("x", {"fact": []})
    with pytest.raises(TypeError, match="policy must be a VerdictPolicy or a mapping"):
        doc.aggregate_verdict([{"verdict": "missing"}], None)
    with pytest.raises(TypeError, match="findings must be a list of mappings"):
        doc.aggregate_verdict("missing", {})
    with pytest.raises(TypeError, match=r"load_suite\(config=...\) must be a str or Path"):
        doc.load_suite(5)


def test_the_doc_page_example_runs_as_written(tmp_path):
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "doc.md").read_text(encoding="utf-8")
    block = page.split("```python\nfrom assay.doc import assess_coverage", 1)[1].split("```", 1)[0]
    code = "from assay.doc import assess_coverage" + block
    expected = [line.removeprefix("# ") for line in code.splitlines() if line.startswith("# {")]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected
