"""Real logs, written once per session by the real tools: pytest's --junitxml, Inspect AI with its
mock model, pydantic-evals, DeepEval (telemetry off) and promptfoo (its offline echo provider).

Each generator runs in a subprocess and writes, beside the log, what the tool itself said the run
came to (`summary.json`), so a test can hold assay's imported totals against the tool's own. A tool
that is not installed skips its tests, saying how to install it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TOOLS = Path(__file__).parent / "tools"
PROMPTFOO_HOME = Path.home() / ".cache" / "assay-tests" / "promptfoo"

JUNIT_TESTS = '''
import pytest

@pytest.fixture
def broken():
    raise RuntimeError("fixture down")

@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown down")

def test_passes():
    assert 1 + 1 == 2

def test_fails():
    assert "Paris" == "Lima", "wrong capital"

def test_errors_in_setup(broken):
    pass

def test_fails_then_errors_in_teardown(bad_teardown):
    assert False

@pytest.mark.skip(reason="not today")
def test_skipped():
    pass

@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert False

@pytest.mark.parametrize("n", [1, 2, 3])
def test_param(n):
    assert n != 2

class TestGroup:
    def test_method(self):
        pass
'''


@dataclass(frozen=True)
class ToolLog:
    path: Path
    summary: dict[str, Any]  # what the tool itself said


def _needs(module: str, install: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed in this environment: {install}")


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 240) -> None:
    done = subprocess.run(command, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout, check=False)
    if done.returncode != 0:
        raise AssertionError(f"{command[:3]} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


@pytest.fixture(scope="session")
def junit_log(tmp_path_factory: pytest.TempPathFactory) -> ToolLog:
    folder = tmp_path_factory.mktemp("junit")
    (folder / "test_capitals.py").write_text(JUNIT_TESTS)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit2",
         "--junitxml=junit.xml", "test_capitals.py"],
        cwd=folder, capture_output=True, text=True, timeout=120, check=False,
        env={key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")},
    )
    assert done.returncode == 1, done.stdout[-2000:]  # some tests fail, as written
    return ToolLog(folder / "junit.xml", {"terminal": done.stdout.strip().splitlines()[-1]})


@pytest.fixture(scope="session")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ToolLog]:
    _needs("inspect_ai", "pip install -e '.[test]' (inspect-ai)")
    folder = tmp_path_factory.mktemp("inspect")
    _run([sys.executable, str(TOOLS / "inspect_logs.py"), str(folder)], folder, {"INSPECT_LOG_LEVEL": "error"})
    summary = json.loads((folder / "summary.json").read_text())
    return {name: ToolLog(Path(found["path"]), found) for name, found in summary.items()}


@pytest.fixture(scope="session")
def pydantic_evals_report(tmp_path_factory: pytest.TempPathFactory) -> ToolLog:
    _needs("pydantic_evals", "pip install -e '.[test]' (pydantic-evals)")
    folder = tmp_path_factory.mktemp("pydantic-evals")
    _run([sys.executable, str(TOOLS / "pydantic_evals_report.py"), str(folder)], folder)
    return ToolLog(folder / "report.json", json.loads((folder / "summary.json").read_text()))


DEEPEVAL_HOME = Path.home() / ".cache" / "assay-tests" / "deepeval"


def deepeval_python() -> str | None:
    """An interpreter with DeepEval: `$ASSAY_TEST_DEEPEVAL_PYTHON`, the environment .ci/run makes for it
    (`~/.cache/assay-tests/deepeval`: DeepEval pins rich<15 and click<8.4, so it cannot share assay's), or
    this one if it has DeepEval; None when there is none."""
    candidates = [os.environ.get("ASSAY_TEST_DEEPEVAL_PYTHON"), str(DEEPEVAL_HOME / "bin" / "python")]
    for candidate in filter(None, candidates):
        if Path(candidate).exists():
            return candidate
    return sys.executable if importlib.util.find_spec("deepeval") is not None else None


@pytest.fixture(scope="session")
def deepeval_run(tmp_path_factory: pytest.TempPathFactory) -> ToolLog:
    python = deepeval_python()
    if python is None:
        pytest.skip("DeepEval is not installed: .ci/run makes its own environment for it "
                    f"(python3.11 -m venv {DEEPEVAL_HOME} && {DEEPEVAL_HOME}/bin/pip install 'deepeval>=4.0'), "
                    "or pip install -e '.[interop-test]' in an environment of its own")
    folder = tmp_path_factory.mktemp("deepeval")
    results = folder / "results"
    _run([python, str(TOOLS / "deepeval_run.py"), str(folder)], folder, {
        "DEEPEVAL_TELEMETRY_OPT_OUT": "YES", "DEEPEVAL_RESULTS_FOLDER": str(results), "DEEPEVAL_DISABLE_DOTENV": "1",
        "DEEPEVAL_UPDATE_WARNING_OPT_OUT": "YES", "HOME": str(folder), "ERROR_REPORTING": "NO",
    })
    (saved,) = results.glob("test_run_*.json")
    return ToolLog(saved, json.loads((folder / "summary.json").read_text()))


def promptfoo_command() -> list[str] | None:
    """promptfoo installed for the tests (`npm install --prefix ~/.cache/assay-tests/promptfoo promptfoo`,
    as .ci/run does), or `$ASSAY_TEST_PROMPTFOO`, or one on PATH; None when there is none."""
    given = os.environ.get("ASSAY_TEST_PROMPTFOO")
    for candidate in (given, str(PROMPTFOO_HOME / "node_modules" / ".bin" / "promptfoo"), shutil.which("promptfoo")):
        if candidate and Path(candidate).is_file() and shutil.which("node"):
            return [candidate]
    return None


@pytest.fixture(scope="session")
def promptfoo_eval() -> Callable[[Path, list[str]], None]:
    """Runs `promptfoo eval` of tools/promptfooconfig.yaml in a folder, writing each of the `--output` files named
    (promptfoo picks the format by extension); skips when promptfoo is not installed."""
    command = promptfoo_command()
    if command is None:
        pytest.skip(f"promptfoo is not installed: npm install --prefix {PROMPTFOO_HOME} promptfoo (it runs offline "
                    "with its echo provider; the registry is needed only to install it)")

    def run(folder: Path, outputs: list[str]) -> None:
        shutil.copy(TOOLS / "promptfooconfig.yaml", folder)
        _run([*command, "eval", "-c", "promptfooconfig.yaml", "--no-write", "--no-cache",
              *(argument for output in outputs for argument in ("--output", output))], folder, {
            "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1", "PROMPTFOO_CONFIG_DIR": str(folder / "home"),
            "PROMPTFOO_DISABLE_SHARING": "1", "NO_COLOR": "1", "PROMPTFOO_FAILED_TEST_EXIT_CODE": "0",
        }, timeout=180)

    return run


@pytest.fixture(scope="session")
def promptfoo_results(tmp_path_factory: pytest.TempPathFactory, promptfoo_eval) -> ToolLog:
    folder = tmp_path_factory.mktemp("promptfoo")
    promptfoo_eval(folder, ["results.json"])
    document = json.loads((folder / "results.json").read_text())
    return ToolLog(folder / "results.json", document["results"]["stats"])


@pytest.fixture
def own_store(tmp_path, monkeypatch):
    """A store of the test's own (`pytestmark = pytest.mark.usefixtures("own_store")`): the session's shared one may
    hold a run another test imported from the same bytes, which an import then finds "Already imported"."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "own-store" / "assay.db"))
