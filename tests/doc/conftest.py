"""Make the doc test helpers (`doc_suites`, `doc_judges`) importable as top-level modules."""

import sys
from pathlib import Path

import pytest

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from servers.fake_openai import fake_openai  # noqa: E402,F401  (the shared fake OpenAI-compatible server fixture)


@pytest.fixture
def model_suite(tmp_path, monkeypatch):
    """A suite with every model method enabled, as the current directory, its judge reached only through
    ASSAY_JUDGE_BASE_URL (no OpenAI variable of the machine's) with two attempts a call."""
    from doc_suites import make_suite

    built = make_suite(tmp_path)
    built.enable("generate", "judge_coverage", "judge_pairwise")
    monkeypatch.chdir(built.repo)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("ASSAY_JUDGE_MAX_ATTEMPTS", "2")
    return built
