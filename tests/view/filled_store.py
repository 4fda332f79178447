"""A results store filled by real runs of each kind (video, agent, doc), shared by the viewer tests.

Runs go through the real `assay` commands into a temporary store (`ASSAY_STORE`), twice per kind
where a compare needs a before and an after.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
for folder in (TESTS, TESTS / "video", HERE):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from video_evals import make_eval, run_eval

from assay.cli.app import app
from assay.cli.runs import runs_app
from assay.cli.view import view_command

REPO = TESTS.parent
TIMES = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]


def case_yaml(offset: int) -> str:
    """Eight samples expecting the drawn frame number (+ offset: nonzero makes every sample fail)."""
    samples = "\n".join(f"      - at: {t}\n        expect: {round(t * 10) + offset}" for t in TIMES)
    return f"video: clip.mp4\ntargets:\n  number:\n    label: Frame number\n    samples:\n{samples}\n"


def runs_cli() -> typer.Typer:
    """`assay runs …` and `assay view` as app.py mounts them."""
    root = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    root.add_typer(runs_app, name="runs")
    root.command("view")(view_command)
    return root


def invoke_runs(*args: str) -> object:
    return CliRunner().invoke(runs_cli(), [str(arg) for arg in args], catch_exceptions=False)


@dataclass(frozen=True)
class FilledStore:
    database: Path
    root: Path
    video_before: str
    video_after: str
    agent: str
    doc_before: str
    doc_after: str
    video_junit: Path
    doc_junit: Path
    video_path: Path


def _latest(database: Path) -> str:
    from assay.core.results_store import SqliteRunStore

    with SqliteRunStore(database, read_only=True) as store:
        return store.resolve("latest")


@pytest.fixture(scope="session")
def filled_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FilledStore]:
    root = tmp_path_factory.mktemp("filled")
    database = root / "store" / "assay.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ASSAY_STORE", str(database))

        # video: all pass, then every sample expects the wrong number
        eval_dir = make_eval(root / "video", case_yaml(0), case_name="numbers", frames=12, fps=10)
        video_junit = root / "video-junit.xml"
        first = run_eval(eval_dir, "--min-pass-rate", "1")
        assert first.exit_code == 0, first.output
        video_before = _latest(database)
        (eval_dir / "cases" / "numbers.yaml").write_text(case_yaml(100), encoding="utf-8")
        second = run_eval(eval_dir, "--min-pass-rate", "1", "--junit", str(video_junit))
        assert second.exit_code == 1, second.output
        video_after = _latest(database)

        # doc: good (green), then weak (red), on a copy of the example suite
        repo = root / "docrepo"
        (repo / ".git").mkdir(parents=True)
        shutil.copytree(REPO / "examples" / "doc", repo / "examples" / "doc", ignore=shutil.ignore_patterns("results"))
        patch.chdir(repo)
        config = "examples/doc/evals/eval-kit.config.json"
        runner = CliRunner()
        good = runner.invoke(app, ["doc", "run-case", "--config", config, "--case", "release-notes-v1",
                                   "--candidate", "examples/doc/candidates/good.md"])
        assert good.exit_code == 0, good.output
        doc_before = _latest(database)
        doc_junit = root / "doc-junit.xml"
        weak = runner.invoke(app, ["doc", "run-case", "--config", config, "--case", "release-notes-v1",
                                   "--candidate", "examples/doc/candidates/weak.md", "--junit", str(doc_junit)])
        assert weak.exit_code == 1, weak.output
        doc_after = _latest(database)

        # agent: the example project (one eval fails on purpose), in a subprocess like a user runs it
        project = root / "agentproject"
        shutil.copytree(REPO / "examples" / "agent", project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
        completed = subprocess.run(
            [sys.executable, "-m", "assay", "agent", "run", "--project", str(project)],
            capture_output=True, text=True, timeout=120, cwd=project, check=False,
        )
        assert completed.returncode == 1, completed.stdout + completed.stderr
        agent = _latest(database)
    # Built, its ASSAY_STORE and folder are given back: left set for the session, every later test that
    # records a run (an import, a run in-process) wrote into this store, and the counts below changed with
    # the order the tests ran in. A test that needs the store as ASSAY_STORE asks for `store_env`.
    yield FilledStore(
        database=database, root=root, video_before=video_before, video_after=video_after, agent=agent,
        doc_before=doc_before, doc_after=doc_after, video_junit=video_junit, doc_junit=doc_junit,
        video_path=eval_dir / "cases" / "clip.mp4",
    )


@pytest.fixture
def store_env(filled_store: FilledStore, monkeypatch: pytest.MonkeyPatch) -> FilledStore:
    monkeypatch.setenv("ASSAY_STORE", str(filled_store.database))
    return filled_store
