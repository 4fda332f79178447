"""A command that only reads or checks (`runs compare`, `doc doctor`), whose reader leaves while it is
still writing: its closed-stdout line says it stopped, and nothing about results kept (it has none)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS / "doc") not in sys.path:
    sys.path.insert(0, str(TESTS / "doc"))

from agent_projects import agent_project  # noqa: E402
from doc_suites import make_suite  # noqa: E402
from reader_pipes import reader_leaves  # noqa: E402

STOPPED = "assay: standard output was closed, so the command stopped as on Ctrl-C."


def _reader_leaves_after_one_line(*args: object, cwd: Path, store: Path, lines: int = 1) -> tuple[int, str]:
    """`assay ARGS | head -1`: read one line (or `lines`), close the pipe, and let the command find out."""
    read, code, stderr = reader_leaves([sys.executable, "-m", "assay", *map(str, args)], lines=lines, cwd=cwd,
                                       env={**os.environ, "ASSAY_STORE": str(store)})
    assert all(read)
    return code, stderr


def test_runs_compare_cut_short_by_its_reader_speaks_of_no_results(tmp_path: Path) -> None:
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    store = tmp_path / "store" / "assay.db"
    before = [UnitResult(f"case/unit-{index:05d}", "passed") for index in range(6000)]
    after = [UnitResult(unit.unit_id, "failed") for unit in before]
    publish_run(RunManifest("video-before", "video", "2026-01-01T00:00:00Z"), before, database=store)
    publish_run(RunManifest("video-after", "video", "2026-01-02T00:00:00Z"), after, database=store)
    # 6,000 listed regressions: far more than a pipe holds, so compare is still writing when the reader goes.
    code, stderr = _reader_leaves_after_one_line(
        "runs", "compare", "video-before", "video-after", "--limit", "6000", cwd=tmp_path, store=store
    )
    assert code == 130, stderr
    assert stderr.splitlines()[-1] == STOPPED, stderr
    assert "Traceback" not in stderr


def test_doc_doctor_cut_short_by_its_reader_speaks_of_no_results(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    adapter = suite.evals / "full_adapter.py"
    adapter.write_text(adapter.read_text() + "\n\nimport asyncio\n_checked = validate_fixtures\n\n"
                       "async def validate_fixtures(fixtures):\n"
                       "    await asyncio.sleep(30)  # still checking when the reader goes\n"
                       "    return _checked(fixtures)\n")  # fmt: skip
    code, stderr = _reader_leaves_after_one_line("doc", "doctor", cwd=suite.repo, store=tmp_path / "store" / "assay.db")
    assert code == 130, stderr
    assert stderr.splitlines()[-1] == STOPPED, stderr


def test_agent_list_whose_reader_is_gone_speaks_of_no_results(tmp_path: Path) -> None:
    """`assay agent list` into a pipe nobody reads any more. (A reader that leaves after one line cannot pin
    this here: the list is one write, and on this kernel a write blocked on a full pipe can complete when
    its reader leaves, so the command rightly ends 0 having said nothing.)"""
    project = tmp_path / "agent"
    agent_project(project)
    (project / "evals" / "many_eval.py").write_text(
        "from assay.agent import define_eval\n\n\nasync def test(t):\n    pass\n\n\n"
        "evals = {f'eval-number-{index:05d}': define_eval(test, description='x' * 20) for index in range(200)}\n"
    )
    # gone before the command writes anything
    code, stderr = _reader_leaves_after_one_line("agent", "list", "--project", project, cwd=tmp_path,
                                                 store=tmp_path / "store.db", lines=0)
    assert code == 130, stderr
    assert stderr.splitlines()[-1] == STOPPED, stderr


def test_a_dry_agent_run_whose_reader_is_gone_speaks_of_no_results(tmp_path: Path) -> None:
    """`assay agent run --dry | head -1` runs and writes nothing, so it keeps no results to speak of."""
    project = tmp_path / "agent"
    agent_project(project)
    (project / "experiments" / "echo.py").write_text(
        "from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message\n\n\n"
        "async def send(turn_input, ctx):\n    return Turn([message('ok')])\n\n\n"
        "echo = Experiment(agent=define_agent(name='echo', send=send, evidence_coverage=complete_evidence_coverage))\n"
    )
    (project / "evals" / "many_eval.py").write_text(
        "from assay.agent import define_eval\n\n\nasync def test(t):\n    pass\n\n\n"
        "evals = {f'eval-number-{index:05d}': define_eval(test) for index in range(200)}\n"
    )
    code, stderr = _reader_leaves_after_one_line("agent", "run", "--dry", "--project", project, cwd=tmp_path,
                                                 store=tmp_path / "store.db", lines=0)
    assert code == 130, stderr
    assert stderr.splitlines()[-1] == STOPPED, stderr


def test_help_read_by_a_reader_that_leaves_early_is_not_a_stopped_command(tmp_path: Path) -> None:
    """`assay judge --help | head -1`: help is printed before any command starts, so a reader that
    leaves early only drops the rest of it: exit 0, nothing on stderr (it used to say results were kept)."""
    for args in (("judge", "--help"), ("runs", "--help"), ("--help",)):
        code, stderr = _reader_leaves_after_one_line(*args, cwd=tmp_path, store=tmp_path / "assay.db")
        assert (code, stderr) == (0, ""), (args, code, stderr)


def test_judge_agreement_whose_reader_is_gone_speaks_of_no_results(tmp_path: Path) -> None:
    """It only reads the store: it used to add "finished results are kept", as a run does."""
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    store = tmp_path / "store" / "assay.db"
    publish_run(RunManifest("video-one", "video", "2026-01-01T00:00:00Z"), [UnitResult("case/unit", "passed")], database=store)
    code, stderr = _reader_leaves_after_one_line("judge", "agreement", "--json", cwd=tmp_path, store=store, lines=0)
    assert code == 130, stderr
    assert stderr.splitlines()[-1] == STOPPED, stderr


def test_agent_sandbox_list_whose_reader_is_gone_speaks_of_no_results(tmp_path: Path, monkeypatch) -> None:
    """`assay agent sandbox list | head -1` only reads the machine's sandbox records: it said "finished results are
    kept", as a run does."""
    monkeypatch.setenv("ASSAY_SANDBOX_DIR", str(tmp_path / "sandboxes"))
    code, stderr = _reader_leaves_after_one_line("agent", "sandbox", "list", cwd=tmp_path, store=tmp_path / "store.db",
                                                 lines=0)
    assert code == 130, stderr
    assert stderr.splitlines()[-1] == STOPPED, stderr


def test_sandbox_commands_whose_reader_is_gone_speak_of_no_results(tmp_path: Path, monkeypatch) -> None:
    """`assay agent sandbox prune | head -1` removes sandboxes; it makes no results, so it keeps none."""
    monkeypatch.setenv("ASSAY_SANDBOX_DIR", str(tmp_path / "sandboxes"))  # never the machine's own sandboxes
    for command in (("prune",), ("stop", "--all")):
        code, stderr = _reader_leaves_after_one_line("agent", "sandbox", *command, cwd=tmp_path,
                                                     store=tmp_path / "store.db", lines=0)
        assert code == 130, (command, stderr)
        assert stderr.splitlines()[-1] == STOPPED, (command, stderr)


# A command that only reads, as `command(..., only_reads=True)` makes one: it writes its whole answer, then
# (closing the store, leaving the process) does a moment's more work; `WORDS` then says what it wrote next.
READ_ONLY_COMMAND = """
import sys, time
import typer
from assay.cli.options import command
from assay.core.process import run_as_process

app = typer.Typer(add_completion=False)

@command(app, "answer", only_reads=True)
def answer(given):
    print("the whole answer")
    sys.stdout.flush()
    time.sleep(1.0)  # the reader reads it and leaves meanwhile
    for word in WORDS:
        print(word)

@command(app, "other")
def other(given):
    pass

run_as_process(app)
"""


@pytest.mark.parametrize(("words", "code"), [((), 0), (("more",), 130)], ids=["all written", "cut short"])
def test_a_command_that_only_reads_keeps_its_exit_code_when_its_reader_leaves_after_the_whole_answer(
    tmp_path: Path, words: tuple[str, ...], code: int
) -> None:
    """`assay judge agreement | head -1` of a one-line answer ended 130 or 0 by chance: the reader leaving as the
    process closed stopped it as Ctrl-C would, though every write had succeeded (`runs list` too). A command that
    only reads now stops at its next write, as any tool does: 0 when there is none, 130 when its output is cut."""
    script = READ_ONLY_COMMAND.replace("WORDS", repr(words))
    read, exit_code, stderr = reader_leaves([sys.executable, "-c", script, "answer"], cwd=tmp_path)
    assert read == [b"the whole answer\n"]
    assert exit_code == code, stderr
    assert stderr.strip() == ("" if code == 0 else STOPPED), stderr
