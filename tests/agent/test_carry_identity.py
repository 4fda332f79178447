"""A slot's execution identity, component by component: after a published run, changing one thing
reruns exactly the slots it is part of, and the plan names it as the reason (`assay.agent.api.plan`,
which is `assay agent run --dry`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from agent_helpers import forget_modules_under
import pytest

from assay.agent import api

EXPERIMENT = """
from agents.simple import simple_agent
from assay.agent import Experiment

main = Experiment(agent=simple_agent(NAME), model=MODEL, flags=FLAGS, EXTRA)
"""

AGENT = """
import asyncio
from assay.agent import Turn, complete_evidence_coverage, define_agent, message


def simple_agent(name):
    async def send(turn_input, ctx):
        if "slow" in turn_input.text:
            await asyncio.sleep(0.3)
        return Turn([message("yes")])

    return define_agent(name=name, send=send, evidence_coverage=complete_evidence_coverage)
"""

FILES = {
    "agents/simple.py": AGENT,
    "evals/_lib/words.py": 'WORD = "yes"\n',
    "evals/_lib/prompts.py": "from evals._lib.words import WORD\n\n\ndef ask():\n    return f'say {WORD}'\n",
    "evals/helped_eval.py": """
        from assay.agent import define_eval, includes
        from evals._lib.prompts import ask

        @define_eval
        async def test(t):
            await t.send(ask())
            t.check(t.reply, includes("yes"))
    """,
    "evals/alone_eval.py": """
        import json

        import pydantic

        from assay.agent import define_eval, includes

        @define_eval
        async def test(t):
            await t.send(json.dumps({"slow": True}))
            t.check(t.reply, includes("yes"))
    """,
    "evals/loaded_eval.py": """
        from assay.agent import define_eval, includes
        from assay.agent.loaders import load_text

        QUESTION = load_text("data/question.txt")

        @define_eval
        async def test(t):
            await t.send(QUESTION)
            t.check(t.reply, includes("yes"))
    """,
    "evals/data/question.txt": "Is it?\n",
    "evals/sent_eval.py": """
        from assay.agent import define_eval, includes

        @define_eval
        async def test(t):
            await t.send_file("data/attachment.txt", "read this")
            t.check(t.reply, includes("yes"))
    """,
    "evals/data/attachment.txt": "an attachment\n",
    "evals/judged_eval.py": """
        from assay.agent import define_eval, includes

        @define_eval(judge=True)
        async def test(t):
            await t.send("judge me later")
            t.check(t.reply, includes("yes"))
    """,
}


def write_experiment(root: Path, *, name: str = "simple", model: str = "m1", flags: str = '{"tone": "plain"}',
                     extra: str = "") -> None:
    text = EXPERIMENT.replace("NAME", repr(name)).replace("MODEL", repr(model)).replace("FLAGS", flags)
    (root / "experiments" / "main.py").write_text(text.replace(", EXTRA", f", {extra}" if extra else ""))


@pytest.fixture
def identity_project(tmp_path, fake_openai):
    root = tmp_path / "ident"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    (root / "experiments").mkdir()
    write_experiment(root)
    (root / "pyproject.toml").write_text(
        f'[tool.assay.judge]\nmodel = "judge-1"\nbase_url = "{fake_openai.base_url}"\napi_key_env = ""\n'
    )
    published = api.run(root)
    assert published.exit_code == 0, (published.error, [a.error for a in published.attempts])
    yield root
    forget_modules_under(tmp_path)


def decisions(root: Path, **options) -> dict[str, tuple[str, str, str]]:
    planned = api.plan(root, **options)
    return {
        planned.plan[index].eval.id: (decision.action, decision.reason.code, decision.reason.message)
        for index, decision in enumerate(planned.carry.decisions)
    }


def executed(root: Path, **options) -> dict[str, tuple[str, str]]:
    return {eval_id: (code, message) for eval_id, (action, code, message) in decisions(root, **options).items()
            if action == "execute"}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_nothing_changed_carries_every_slot(identity_project):
    assert {action for action, _, _ in decisions(identity_project).values()} == {"carry"}


def test_the_identity_has_a_digest_and_one_per_component(identity_project):
    planned = api.plan(identity_project)
    identity = planned.carry.decisions[0].identity
    assert set(identity.components) == {
        "source", "loaded", "agent", "model", "effort", "flags", "judge", "sandbox", "timeout",
    }
    assert len(identity.digest) == 16
    assert api.plan(identity_project).carry.decisions[0].identity.digest == identity.digest  # stable
    whole = {slot.eval.id: d.identity.digest for slot, d in zip(planned.plan, planned.carry.decisions)}
    for eval_id in whole:  # a slot's identity does not depend on what else the plan holds
        narrowed = api.plan(identity_project, evals=[eval_id])
        assert [d.identity.digest for d in narrowed.carry.decisions] == [whole[eval_id]]


def test_the_source_closure_holds_project_modules_only(identity_project):
    planned = api.plan(identity_project)
    files = {slot.eval.id: d.identity.files["source"] for slot, d in zip(planned.plan, planned.carry.decisions)}
    assert set(files["helped"]) == {"evals/helped_eval.py", "evals/_lib/prompts.py", "evals/_lib/words.py"}
    assert set(files["alone"]) == {"evals/alone_eval.py"}  # json and pydantic are not the project's
    agent_files = planned.carry.decisions[0].identity.files["agent"]
    assert set(agent_files) == {"experiments/main.py", "agents/simple.py"}


def test_editing_an_eval_reruns_that_eval_only(identity_project):
    (identity_project / "evals" / "alone_eval.py").write_text(
        (identity_project / "evals" / "alone_eval.py").read_text() + "\n# edited\n"
    )
    assert executed(identity_project) == {"alone": ("eval-source-changed", "eval source changed (evals/alone_eval.py)")}


def test_editing_a_helper_reruns_the_evals_that_import_it_even_indirectly(identity_project):
    edit(identity_project / "evals" / "_lib" / "words.py", '"yes"', '"yes" if True else "no"')
    assert executed(identity_project) == {"helped": ("helper-changed", "helper changed (evals/_lib/words.py)")}


def test_text_an_eval_loads_or_sends_is_part_of_its_identity(identity_project):
    (identity_project / "evals" / "data" / "question.txt").write_text("Is it really?\n")
    (identity_project / "evals" / "data" / "attachment.txt").write_text("another attachment\n")
    assert executed(identity_project) == {
        "loaded": ("loaded-file-changed", "loaded file changed (evals/data/question.txt)"),
        "sent": ("loaded-file-changed", "loaded file changed (evals/data/attachment.txt)"),
    }


@pytest.mark.parametrize("change, code, message", [
    (dict(model="m2"), "model-changed", "model changed (m1 → m2)"),
    (dict(flags='{"tone": "formal"}'), "flags-changed", "flags changed"),
    (dict(extra='reasoning_effort="high"'), "effort-changed", "reasoning effort changed (None → high)"),
    (dict(name="renamed"), "agent-changed", "agent changed (simple → renamed)"),
    (dict(extra='setup=lambda ctx: None'), "experiment-changed", "experiment changed (experiments/main.py)"),
])
def test_each_experiment_setting_is_named_when_it_changes(identity_project, change, code, message):
    write_experiment(identity_project, **change)
    found = executed(identity_project)
    assert set(found) == set(FILES_EVALS)
    assert {found_code for found_code, _ in found.values()} == {code}
    assert {found_message for _, found_message in found.values()} == {message}


FILES_EVALS = {"helped", "alone", "loaded", "sent", "judged"}


def test_experiment_settings_that_are_not_what_an_attempt_comes_to_rerun_nothing(identity_project):
    """Raising `attempts=` or `budget=` in the experiment file (or its description, concurrency, early exit, a
    comment) reran, and paid again for, every slot the experiment had: the whole file was hashed. Only its code
    (and the settings with a component of their own) is now; a new attempt is the only slot to run."""
    text = (identity_project / "experiments" / "main.py").read_text()
    (identity_project / "experiments" / "main.py").write_text(text.replace(
        ", EXTRA", "").rstrip().rstrip(")") + ', attempts=2, budget=5.0, description="new words", concurrency=2, '
        'early_exit=False)  # a comment\n')
    planned = api.plan(identity_project)
    found = {(slot.eval.id, slot.ordinal): (decision.action, decision.reason.message)
             for slot, decision in zip(planned.plan, planned.carry.decisions)}
    assert {key: value for key, value in found.items() if key[1] == 0 and value[0] != "carry"} == {}, found
    assert {value for key, value in found.items() if key[1] == 1} == {("execute", "new attempt #2")}
    edit(identity_project / "experiments" / "main.py", "# a comment", "\nimport os  # code: it counts")
    assert set(executed(identity_project, attempts=1).values()) == {
        ("experiment-changed", "experiment changed (experiments/main.py)")}


def test_a_run_recorded_when_the_whole_experiment_file_was_hashed_is_carried_while_the_file_is_the_same(
        identity_project):
    """Runs recorded before (the whole file's content digest) are not all run again, and paid for, after the
    upgrade: the same file is the same experiment. A file changed since is, as it always was."""
    from assay.agent.identity import ExecutionIdentity, IdentityBuilder, _digest, same_file_hashed_whole
    from assay.agent.source_closure import content_hash

    planned = api.plan(identity_project)
    slot = planned.plan[0]
    new = IdentityBuilder(identity_project).of(slot)
    own = new.values["experiment_file"]
    whole = content_hash((identity_project / own).read_bytes())
    assert new.values["experiment_file_whole"] == whole and new.files["agent"][own] != whole
    files = {**new.files["agent"], own: whole}
    components = {**new.components, "agent": _digest({"name": new.values["agent"], "files": files})}
    old = ExecutionIdentity(_digest(components), components, {**new.files, "agent": files}, dict(new.values))
    assert same_file_hashed_whole(old, new)
    other = {**files, own: content_hash(b"another file")}
    changed = ExecutionIdentity("x", {**components, "agent": "y"}, {**new.files, "agent": other}, dict(new.values))
    assert not same_file_hashed_whole(changed, new)
    also_model = ExecutionIdentity("x", {**components, "model": "z"}, {**new.files, "agent": files}, dict(new.values))
    assert not same_file_hashed_whole(also_model, new)


def test_editing_the_agent_module_reruns_every_eval_of_its_experiments(identity_project):
    edit(identity_project / "agents" / "simple.py", "await asyncio.sleep(0.3)", "await asyncio.sleep(0.31)")
    found = executed(identity_project)
    assert set(found) == FILES_EVALS
    assert set(found.values()) == {("agent-changed", "agent changed (agents/simple.py)")}


def test_a_judge_change_reruns_only_the_evals_that_declare_a_judge(identity_project):
    edit(identity_project / "pyproject.toml", 'model = "judge-1"', 'model = "judge-2"')
    assert executed(identity_project) == {"judged": ("judge-changed", "judge changed")}


def test_a_shorter_timeout_reruns_only_attempts_that_took_longer(identity_project):
    assert executed(identity_project, timeout=60) == {}  # every attempt fits a new, longer timeout
    found = executed(identity_project, timeout=0.2)
    assert set(found) == {"alone"}  # the one that took 0.3 s
    code, message = found["alone"]
    assert code == "timeout-changed" and message.startswith("timeout changed (the attempt took 0.3s")


def test_rerun_choices_and_new_slots_have_their_reasons(identity_project):
    assert set(executed(identity_project, rerun="all").values()) == {("rerun-all", "--rerun all")}
    assert executed(identity_project, rerun="failed") == {}  # nothing failed: everything is carried
    planned = api.plan(identity_project, attempts=2)
    first, second = (decision for slot, decision in zip(planned.plan, planned.carry.decisions)
                     if slot.eval.id == "helped")
    assert first.action == "carry"
    assert (second.action, second.reason.message) == ("execute", "new attempt #2")
    (identity_project / "evals" / "fresh_eval.py").write_text(
        "from assay.agent import define_eval\n\n@define_eval\nasync def test(t):\n    t.succeeded()\n"
    )
    assert executed(identity_project)["fresh"] == ("new-eval", "new eval")


def test_a_carried_attempt_whose_run_left_the_store_runs_again(identity_project):
    from assay.core.record import store_path
    from assay.core.results_store import SqliteRunStore

    with SqliteRunStore(store_path(identity_project), read_only=True) as store:
        first = store.get_run("latest").run_id
    api.run(identity_project)  # all carried: the latest run only references the first one
    with SqliteRunStore(store_path(identity_project)) as store:
        store.delete_run(first)
    found = executed(identity_project)
    assert set(found) == FILES_EVALS
    assert {code for code, _ in found.values()} == {"carried-run-missing"}


def test_skipped_and_unfinished_attempts_are_not_carried(tmp_path):
    root = tmp_path / "skips"
    (root / "evals").mkdir(parents=True)
    (root / "experiments").mkdir()
    (root / "experiments" / "main.py").write_text(textwrap.dedent("""
        from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

        async def send(turn_input, ctx):
            return Turn([message("yes")])

        main = Experiment(agent=define_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage))
    """))
    (root / "evals" / "later_eval.py").write_text(
        "from assay.agent import define_eval\n\n@define_eval\nasync def test(t):\n    t.skip('not today')\n"
    )
    (root / "evals" / "points_eval.py").write_text(
        "from assay.agent import define_score_eval\n\n@define_score_eval\nasync def test(t):\n"
        "    await t.send('x')\n    t.score(2)\n"
    )
    assert api.run(root).exit_code == 0
    found = decisions(root)
    assert found["later"] == ("execute", "previously-skipped", "previously skipped")
    assert found["points"][0] == "carry"  # a completed score is carried like a pass


def test_sandbox_layers_and_their_fixtures_are_part_of_the_identity(tmp_path):
    root = tmp_path / "boxed"
    (root / "evals" / "repo").mkdir(parents=True)
    (root / "experiments").mkdir()
    (root / "evals" / "repo" / "main.py").write_text("print('hi')\n")
    (root / "experiments" / "main.py").write_text(textwrap.dedent("""
        from assay.agent import Experiment, Turn, complete_evidence_coverage, define_sandbox_agent, message

        async def send(turn_input, ctx):
            return Turn([message("done")])

        main = Experiment(agent=define_sandbox_agent(name="worker", send=send,
                                                     evidence_coverage=complete_evidence_coverage))
    """))
    boxed = root / "evals" / "boxed_eval.py"
    boxed.write_text(textwrap.dedent("""
        from assay.agent import define_eval, local_sandbox
        from assay.agent.sandbox import shell, upload

        box = local_sandbox(isolation="none").prepare(upload("repo"), shell("true"))

        @define_eval(sandbox=box)
        async def test(t):
            await t.send("work")
            t.succeeded()
    """))
    published = api.run(root)
    assert published.exit_code == 0, [a.error for a in published.attempts]
    assert decisions(root)["boxed"][0] == "carry"
    carried = api.run(root)  # no sandbox is made for a carried slot
    assert [attempt.eval_id for attempt in carried.carried()] == ["boxed"] and carried.attempts[0].sandbox is None
    assert api.plan(root).carry.decisions[0].identity.files["loaded"] == {
        "evals/repo/main.py": api.plan(root).carry.decisions[0].identity.files["loaded"]["evals/repo/main.py"],
    }
    from assay.agent.request import AgentRunRequest
    from assay.agent.run_kind import dry_run

    kept = dry_run(AgentRunRequest(project=root.resolve(), keep_sandbox="all")).carry.decisions[0]
    assert (kept.action, kept.reason.code) == ("execute", "keep-sandbox")

    (root / "evals" / "repo" / "main.py").write_text("print('hello')\n")
    assert executed(root) == {"boxed": ("loaded-file-changed", "loaded file changed (evals/repo/main.py)")}
    (root / "evals" / "repo" / "main.py").write_text("print('hi')\n")
    edit(boxed, 'shell("true")', 'shell("true && true")')
    found = executed(root)
    assert found["boxed"][0] == "eval-source-changed"
    assert "sandbox-changed" in {reason.code for reason in api.plan(root).carry.decisions[0].reasons}


@pytest.mark.parametrize("outcome, verdict, score_state, rerun, expected", [
    ("executed", "passed", None, "failed", None),
    ("executed", "failed", None, None, None),
    ("executed", "failed", None, "failed", "previously-failed"),
    ("executed", "errored", None, None, "previously-errored"),
    ("executed", "skipped", None, None, "previously-skipped"),
    ("executed", "scored", "complete", "failed", None),
    ("executed", "scored", "unavailable", None, "previously-unrankable"),
    ("interrupted", None, None, None, "previously-interrupted"),
    ("not_dispatched", None, None, None, "previously-not-dispatched"),
])
def test_which_published_outcomes_can_be_adopted(outcome, verdict, score_state, rerun, expected):
    from assay.agent.carry import _outcome_reason
    from assay.agent.slot_result import SlotResult

    previous = SlotResult("exp", "e", 0, "run/exp/e/1", outcome, verdict, "a", score_state=score_state)
    reason = _outcome_reason(previous, rerun)
    assert (reason.code if reason is not None else None) == expected
