"""A stranger's slips with an experiment's agent, `run_evals` and the people-in-the-loop docs: each one used to get
advice that does not work, or an error from deep inside the run, and now gets one line naming the fix."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from agent_projects import agent_project


def _run(project: Path, store: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay", "agent", *args, "--project", str(project)],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "ASSAY_STORE": str(store)})


def test_an_experiment_given_the_agents_send_says_to_wrap_it_in_define_agent(tmp_path, monkeypatch):
    """`Experiment(agent=send)`, the agent's own `async def send`, was told "call it (agent=send(...))", which would
    hand the experiment a coroutine: an async function is never an agent factory, so the fix is define_agent."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    project = agent_project(tmp_path / "project")
    (project / "experiments" / "base.py").write_text(textwrap.dedent("""
        from assay.agent import Experiment, Turn, message


        async def send(turn_input, ctx):
            return Turn([message("hello")])


        base = Experiment(agent=send)
    """))
    (project / "evals" / "hello_eval.py").write_text(
        "from assay.agent import define_eval\n\n\n@define_eval\nasync def test(t):\n    await t.send('hi')\n")
    for command in ("run", "list"):
        done = _run(project, tmp_path / "store.db", command)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        assert "call it" not in done.stderr, done.stderr
        assert ("agent=send is an async function (an agent's send), not an agent: wrap it, "
                "agent=define_agent(name=..., send=send, evidence_coverage=...)") in done.stderr, done.stderr
        assert "experiments/base.py" in done.stderr, done.stderr


def test_run_evals_refuses_an_eval_that_is_none_naming_its_id(tmp_path, monkeypatch):
    """`run_evals({"refund": None}, ...)` (an eval not written yet) went to define_eval(None), the decorator form,
    and the run failed with "'function' object has no attribute 'judge'"; it is now a UsageError naming the id.
    Evals given as a list (or one function) were refused with their repr, `[<function greets at 0x…>]`, and no
    word of the dict they go in: the refusal now writes it."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    script = tmp_path / "in_code.py"
    script.write_text(textwrap.dedent("""
        from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, define_eval, message
        from assay.agent.api import run_evals
        from assay.errors import UsageError


        async def send(turn_input, ctx):
            return Turn([message("hi")])


        async def greets(t):
            await t.send("hello")


        echo = define_agent(name="echo", send=send, evidence_coverage=complete_evidence_coverage)
        experiment = Experiment(agent=echo)
        for value in (None, 3):
            try:
                run_evals({"greets": greets, "refund": value}, experiment)
            except UsageError as error:
                print("UsageError:", error)
        for evals in ([greets], greets, define_eval(greets)):
            try:
                run_evals(evals, experiment)
            except UsageError as error:
                print("UsageError:", error)
        print([attempt.verdict for attempt in run_evals({"greets": greets}, experiment).attempts])
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "UsageError: evals['refund'] must be an eval (define_eval(...)) or an `async def test(t)`, got None",
        "UsageError: evals['refund'] must be an eval (define_eval(...)) or an `async def test(t)`, got 3",
        "UsageError: evals must map ids to what to run (define_eval(...)), got a list of evals, which have no ids: "
        "give each its id, run_evals({'greets': greets}, ...)",
        "UsageError: evals must map ids to what to run (define_eval(...)), got the eval greets, which has no id: "
        "give it one, run_evals({'greets': greets}, ...)",
        "UsageError: evals must map ids to what to run (define_eval(...)), got the eval greets, which has no id: "
        "give it one, run_evals({'greets': greets}, ...)",
        "['passed']",
    ], done.stdout


def test_evals_doc_says_what_succeeded_makes_of_a_request_a_send_passed_over(tmp_path, monkeypatch):
    """docs/agent/evals.md said both that `t.succeeded()` fails while a request is unanswered and that a `t.send`
    while the turn waits leaves it unanswered, yet succeeded() holds there (the new last turn completed). The page
    now says what succeeded() does, and this pins the behaviour it describes."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    doc = (Path(__file__).resolve().parents[2] / "docs" / "agent" / "evals.md").read_text()
    assert "`t.succeeded()` then judges the conversation by its new last turn" in doc
    project = agent_project(tmp_path / "project")
    (project / "experiments" / "base.py").write_text(textwrap.dedent("""
        from assay.agent import (
            Experiment, InputOption, InputRequest, InputRequested, Turn, complete_evidence_coverage, define_agent,
            message,
        )

        ASK = InputRequest("r1", "Refund?", None, "refund_order", {}, (InputOption("approve"), InputOption("deny")))


        async def send(turn_input, ctx):
            if "refund" in turn_input.text:
                return Turn([InputRequested(ASK)], "waiting")
            return Turn([message("ok")])


        base = Experiment(agent=define_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage))
    """))
    body = "from assay.agent import define_eval\n\n\n@define_eval\nasync def test(t):\n    await t.send('refund 1')\n"
    (project / "evals" / "passed_over_eval.py").write_text(body + "    await t.send('yes')\n    t.succeeded()\n")
    (project / "evals" / "left_waiting_eval.py").write_text(body + "    t.succeeded()\n")
    done = _run(project, tmp_path / "store.db", "run")
    assert "warning [send-while-waiting]" in done.stderr + done.stdout
    assert "FAILED  left_waiting" in done.stdout, done.stdout
    assert "FAILED  passed_over" not in done.stdout, done.stdout


AGENT = """
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message


async def send(turn_input, ctx):
    return Turn([message("hello")])


agent = define_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage)
"""
EVAL = "from assay.agent import define_eval\n\n\n@define_eval\nasync def test(t):\n    await t.send('hi')\n"


def _refused(tmp_path: Path, *, experiment: str = "base = Experiment(agent=agent)", eval_source: str = EVAL,
             pyproject: str = "") -> str:
    """What `assay agent run` and `assay agent list` both say of a project they refuse (exit 2, no traceback)."""
    project = agent_project(tmp_path / "project")
    (project / "experiments" / "base.py").write_text(AGENT + experiment + "\n")
    (project / "evals" / "hello_eval.py").write_text(eval_source)
    (project / "pyproject.toml").write_text(pyproject)
    said = []
    for command in ("run", "list"):
        done = _run(project, tmp_path / "store.db", command)
        assert done.returncode == 2, (done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
        said.append(done.stderr.strip())
    assert said[0] == said[1], said
    return said[0]


def test_a_misspelt_price_rate_names_the_rate_meant(tmp_path, monkeypatch):
    """`inptu = 0.4` in [tool.assay.pricing] listed the rates but not the one meant, unlike every other key there."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    said = _refused(tmp_path, pyproject='[tool.assay.pricing]\n"gpt-4.1-mini" = { inptu = 0.4, output = 1.6 }\n')
    assert said.endswith("[tool.assay] pricing.gpt-4.1-mini.inptu is unknown (did you mean 'input'?); "
                         "use input, output, cache_read, cache_creation"), said


def test_eval_metadata_that_is_no_mapping_is_refused(tmp_path, monkeypatch):
    """docs/agent/evals.md: `metadata` is "a JSON-like mapping ... (it is checked)", yet `metadata=["support"]`
    was taken as it was."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    said = _refused(tmp_path, eval_source=EVAL.replace("@define_eval\n", "@define_eval(metadata=['support'])\n"))
    assert "hello_eval.py (line 4): eval metadata must be a mapping of JSON values, like " in said, said
    assert said.endswith("got list"), said


def test_a_star_in_an_experiments_eval_prefixes_says_prefixes_are_plain_text(tmp_path, monkeypatch):
    """`evals=["*"]` (or `["hel*"]`) reads `*` as a wildcard, but prefixes are plain text: the error now says so,
    with what to write, instead of only that no eval id starts with it."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    said = _refused(tmp_path / "all", experiment='base = Experiment(agent=agent, evals=["*"])')
    assert ("evals prefix '*' matches no eval id; a prefix is plain text, not a pattern: write evals=\"*\" "
            "(the string, not in a list) (eval ids start with hello)") in said, said
    said = _refused(tmp_path / "some", experiment='base = Experiment(agent=agent, evals=["hel*"])')
    assert "evals prefix 'hel*' matches no eval id; a prefix is plain text, not a pattern: write evals=['hel']" in said


def test_an_evals_predicate_reading_a_misspelt_field_names_the_field_and_file(tmp_path, monkeypatch):
    """`evals=lambda d: "x" in d.tag` said only "'EvalDescriptor' object has no attribute 'tag'" under the
    experiment's id: Python's "Did you mean" comes with a traceback, which this one-line error has not."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    said = _refused(tmp_path, experiment='base = Experiment(agent=agent, evals=lambda d: "x" in d.tag)')
    assert "experiments/base.py): its evals predicate raised AttributeError: " in said, said
    assert said.endswith("has no attribute 'tag'; did you mean 'tags'? "
                         "(an eval descriptor has id, description, tags, kind, metadata)"), said


def test_an_experiment_hook_or_predicate_that_takes_no_ctx_is_refused_when_the_file_loads(tmp_path, monkeypatch):
    """`def setup():` (no `ctx`) loaded fine and then errored every attempt of the experiment at run time
    (`experiment-setup-failed: TypeError: setup() takes 0 positional arguments`, exit 1); `evals=lambda: True`
    was said only as the TypeError it raised. Both are now refused as the file loads (exit 2), saying what to write."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    for hook in ("setup", "teardown"):
        said = _refused(tmp_path / hook, experiment=f"def {hook}():\n    pass\n\n\n"
                                                     f"base = Experiment(agent=agent, {hook}={hook})")
        assert said.endswith(f"experiments/base.py (line 14): Experiment {hook} must take one argument, like "
                             f"def {hook}(ctx): ...; it takes ()"), said
    said = _refused(tmp_path / "evals", experiment="base = Experiment(agent=agent, evals=lambda: True)")
    assert said.endswith("Experiment evals must take one argument, like evals=lambda e: \"smoke\" in e.tags; "
                         "it takes ()"), said


def test_hooks_and_predicates_that_take_one_argument_still_load(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    project = agent_project(tmp_path / "project")
    (project / "experiments" / "base.py").write_text(AGENT + textwrap.dedent("""
        import functools


        async def setup(ctx, extra=None):
            ctx.progress("ready", 1, 1)


        def teardown(*args):
            pass


        def wanted(kind, descriptor):
            return descriptor.kind == kind


        base = Experiment(agent=agent, setup=setup, teardown=teardown, evals=functools.partial(wanted, "pass"))
    """))
    (project / "evals" / "hello_eval.py").write_text(EVAL)
    done = _run(project, tmp_path / "store.db", "run")
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "PASSED" in done.stdout, done.stdout


def test_a_misspelt_tool_assay_table_is_named_rather_than_ignored(tmp_path, monkeypatch):
    """`[tool.asay]` was taken for another tool's table: its `timeout` and `concurrency` were dropped without a word
    and the run went on with the defaults. Without a [tool.assay], a table spelt nearly so is now the error."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    said = _refused(tmp_path / "typo", pyproject="[tool.asay]\ntimeout = 30\n\n[tool.ruff]\nline-length = 100\n")
    assert said.endswith("pyproject.toml: [tool.asay] is not read by assay; did you mean [tool.assay]? "
                         "(rename the table so its settings apply)"), said
    project = agent_project(tmp_path / "other-tools" / "project")  # other tools' tables are still theirs
    (project / "experiments" / "base.py").write_text(AGENT + "base = Experiment(agent=agent)\n")
    (project / "evals" / "hello_eval.py").write_text(EVAL)
    (project / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n\n[tool.pytest.ini_options]\nx = 1\n")
    done = _run(project, tmp_path / "store.db", "list")
    assert done.returncode == 0, done.stderr


def test_an_import_of_a_misspelt_name_or_of_an_assertion_says_what_to_write(tmp_path, monkeypatch):
    """`from assay.agent import includs` said only "cannot import name" (Python 3.11 names no close match), and
    `from assay.agent import called_tool` (an assertion the docs show as `t.called_tool(...)`) said the same."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    said = _refused(tmp_path / "typo", eval_source=EVAL.replace("import define_eval", "import define_eval, includs"))
    assert said.endswith("; did you mean 'includes'?"), said
    assert "hello_eval.py (line 1): ImportError: cannot import name 'includs'" in said, said
    imports = EVAL.replace("import define_eval", "import called_tool, define_eval")
    said = _refused(tmp_path / "method", eval_source=imports)
    assert said.endswith("; called_tool is not imported: it is a method of the eval's `t`, called as "
                         "t.called_tool(...)"), said
    said = _refused(tmp_path / "api", eval_source="from assay.agent.api import run_evls\n" + EVAL)
    assert said.endswith("; did you mean 'run_evals'?"), said


def test_results_attempts_refuses_a_bad_index_in_its_own_words(tmp_path, monkeypatch):
    """docs/agent/python.md: `results.attempts` indexes "as on a tuple". Past its end it said "range object index
    out of range", and `attempts["repeats"]` "range indices must be integers", naming a range the caller never
    made; both now name the attempts (and `results.attempt(...)` for an eval id)."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.db"))
    script = tmp_path / "in_code.py"
    script.write_text(textwrap.dedent("""
        from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message
        from assay.agent.api import run_evals


        async def send(turn_input, ctx):
            return Turn([message("hi")])


        async def repeats(t):
            await t.send("hello")


        echo = define_agent(name="echo", send=send, evidence_coverage=complete_evidence_coverage)
        experiment = Experiment(agent=echo)
        attempts = run_evals({"repeats": repeats}, experiment, attempts=2).attempts
        print(attempts[-1].ordinal, attempts[True].ordinal, [a.ordinal for a in attempts[::-1]])
        for index in (2, -3, "repeats"):
            try:
                attempts[index]
            except (IndexError, TypeError) as error:
                print(type(error).__name__, error)
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "1 1 [1, 0]",
        "IndexError attempts index 2 out of range: the run has 2 attempt(s)",
        "IndexError attempts index -3 out of range: the run has 2 attempt(s)",
        "TypeError attempts indices must be integers or slices, not str; results.attempt(eval_id, attempt=n) finds "
        "an eval's attempt",
    ], done.stdout


def test_a_misspelt_keyword_of_an_official_agent_names_the_one_meant(tmp_path: Path) -> None:
    """`openai_chat_agent(modle=...)` said only "got an unexpected keyword argument 'modle'": the factories of
    `assay.agent.adapters` were not among the callables whose keywords are offered."""
    project = agent_project(tmp_path / "project")
    (project / "experiments" / "chat.py").write_text(
        "from assay.agent import Experiment\nfrom assay.agent.adapters import openai_chat_agent\n\n"
        "chat = Experiment(agent=openai_chat_agent(modle='x', base_url='http://127.0.0.1:9/v1'))\n")
    done = _run(project, tmp_path / "assay.db", "list")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "openai_chat_agent() got an unexpected keyword argument 'modle'; did you mean 'model'?" in done.stderr, done.stderr
