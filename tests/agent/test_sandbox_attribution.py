"""Change attribution across send windows (spec §5.4), with real git, over every provider (local and Docker,
the same table): eval-side writes are never the agent's, a change reverted within its window leaves no
delta, one reverted in a later window stays visible, binary or oversized content is elided, and what is
stored has the sandbox's sensitive values redacted.

The table's evals run as one run per provider (each attempt in its own fresh sandbox, four at a time);
each test below reads its eval's attempt."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from sandbox_helpers import no_sandbox_left, run_linked, sandbox_agent, sandbox_dir  # noqa: F401

from assay.agent import Turn, define_eval, includes, message
from assay.agent.run_options import RunOptions
from assay.agent.sandbox.local import bubblewrap_works
from containers import docker_containers, docker_image, provider, sandbox_template  # noqa: F401  (fixtures)


@dataclass(frozen=True)
class Case:
    """One eval of the table: its body, and what the agent does on each send (a shell script it runs in
    the workdir, or a function of the sandbox)."""

    test: Any
    steps: tuple[Any, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)  # more define_eval(...) arguments


CASES: dict[str, Case] = {}


def case(*steps: Any, **options: Any):
    def register(test):
        CASES[test.__name__] = Case(test, steps, options)
        return test
    return register


def _table_agent():
    """A sandbox agent that, on its n-th send in an eval, takes that eval's n-th step."""
    sent: dict[str, int] = {}

    async def send(turn_input, ctx):
        position = sent.get(ctx.eval_id, 0)
        sent[ctx.eval_id] = position + 1
        step = CASES[ctx.eval_id].steps[position]
        if callable(step):
            await step(ctx.sandbox)
        elif step:
            await ctx.sandbox.run_shell_or_raise(step)
        return Turn([message("ok")])

    return sandbox_agent(send)


@pytest.fixture(scope="module")
def attempts(provider, tmp_path_factory):
    """Every case's attempt on this provider (one run), and that the run left no sandbox behind."""
    base = tmp_path_factory.mktemp(f"sandboxes-{provider}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ASSAY_SANDBOX_DIR", str(base))
        outcome = run_linked(_table_agent(), {
            name: define_eval(entry.test, sandbox=sandbox_template(provider), **entry.options)
            for name, entry in CASES.items()
        }, options=RunOptions(concurrency=4))
    assert no_sandbox_left(base)
    if provider == "docker":
        ids = {result.sandbox["sandbox_id"] for result in outcome.results}
        assert not [container for container in docker_containers() if container.labels["assay.sandbox"] in ids]
    return {result.eval_id: result for result in outcome.results}


def _windows(result):
    return {
        window["window"]: sorted((change["path"], change["status"]) for change in window["changes"])
        for window in result.sandbox["file_changes"]["windows"]
    }


@case("echo a > agent1.txt", "echo b > agent2.txt")
async def eval_side_writes(t):
    await t.sandbox.write_text("fixture.txt", "written by the eval\n")
    await t.send("one")
    await t.sandbox.write_text("between.txt", "also the eval\n")
    await t.sandbox.run_shell("echo more >> fixture.txt")
    await t.send("two")
    t.sandbox.changed_paths(["agent1.txt", "agent2.txt"])


def test_eval_side_writes_before_and_between_sends_are_not_the_agents(attempts):
    result = attempts["eval_side_writes"]
    assert result.verdict == "passed", result.assertions
    assert _windows(result) == {"turn1": [("agent1.txt", "added")], "turn2": [("agent2.txt", "added")]}


def test_the_record_names_the_provider_and_the_isolation_used(attempts, provider):
    recorded = {(result.sandbox["provider"], result.sandbox["isolation"]) for result in attempts.values()}
    assert recorded == ({("docker", "docker")} if provider == "docker" else
                        {("local", "bubblewrap")} if bubblewrap_works() else {("local", "process-group")})


@case("echo mode=dev > config.ini; touch scratch; rm scratch; echo mode=prod > config.ini")
async def reverted_within(t):
    await t.sandbox.write_text("config.ini", "mode=prod\n")
    await t.send("flip and flip back")
    t.sandbox.no_changes()


def test_a_change_reverted_within_its_window_leaves_no_delta(attempts):
    result = attempts["reverted_within"]
    assert result.verdict == "passed", result.assertions
    assert _windows(result) == {"turn1": []}


@case("echo 'DEBUG = True' > app.py; echo todo > notes.md", "echo 'DEBUG = False' > app.py; rm notes.md")
async def reverted_later(t):
    await t.sandbox.write_text("app.py", "DEBUG = False\n")
    await t.send("turn debugging on")
    await t.send("turn it off again")
    t.sandbox.changed_paths(["app.py", "notes.md"])
    t.sandbox.file_changed("app.py", before="DEBUG = False\n", after="DEBUG = True\n")
    t.sandbox.file_changed("app.py", before="DEBUG = True\n", after="DEBUG = False\n")
    t.sandbox.file_deleted("notes.md")


def test_a_change_reverted_in_a_later_window_stays_visible_in_both(attempts):
    result = attempts["reverted_later"]
    assert result.verdict == "passed", result.assertions
    assert _windows(result) == {
        "turn1": [("app.py", "modified"), ("notes.md", "added")],
        "turn2": [("app.py", "modified"), ("notes.md", "deleted")],
    }
    first = result.sandbox["file_changes"]["windows"][0]["changes"][0]
    assert "-DEBUG = False\n+DEBUG = True" in first["diff"]


@case("printf '\\x89PNG\\x00\\x01' > image.bin; head -c 1200000 /dev/zero | tr '\\0' x > huge.txt")
async def elided(t):
    await t.send("write a binary and a huge file")
    t.sandbox.changed_paths(["image.bin", "huge.txt"])
    t.sandbox.file_changed("image.bin", status="added")
    t.sandbox.file_changed("image.bin", after=includes("PNG"))
    t.sandbox.file_changed("huge.txt", after=includes("x"))
    t.sandbox.not_in_diff("password")


def test_binary_and_oversized_content_is_elided_and_content_checks_are_unavailable(attempts):
    result = attempts["elided"]
    assert [a["status"] for a in result.assertions] == ["matched", "matched", "unavailable", "unavailable", "unavailable"]
    assert "elided (binary)" in result.assertions[2]["reason"]
    assert "elided (oversized)" in result.assertions[3]["reason"]
    assert result.verdict == "errored"  # a required unavailable assertion is never a pass
    changes = {change["path"]: change for change in result.sandbox["file_changes"]["windows"][0]["changes"]}
    assert changes["image.bin"]["elided"] == "binary" and "diff" not in changes["image.bin"]
    assert changes["huge.txt"]["elided"] == "oversized" and changes["huge.txt"]["after"]["size"] == 1200000


@case("mkdir -p node_modules/pkg src/__pycache__ dist logs && echo 1 > node_modules/pkg/index.js && "
      "echo 2 > src/__pycache__/main.pyc && echo 'print(1)' > src/main.py && echo '*' > .gitignore && "
      "echo keep > dist/keep.txt && echo drop > dist/other.txt && echo noise > logs/run.log",
      diff={"ignore": ["logs"], "include": ["dist/keep.txt"]})
async def excludes(t):
    await t.send("work")
    t.sandbox.changed_paths([".gitignore", "src/main.py", "dist/keep.txt"])


def test_default_excludes_diff_rules_and_gitignore_files(attempts):
    result = attempts["excludes"]
    assert result.verdict == "passed", result.assertions  # `*` in .gitignore hid nothing


@case("echo feature > feature.txt && git add feature.txt && "
      "git -c user.name=a -c user.email=a@b commit -qm feature && git log --oneline | wc -l")
async def own_git(t):
    await t.sandbox.run_shell_or_raise("git init -q && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m start")
    await t.send("commit a change")
    t.sandbox.changed_paths(["feature.txt"])


def test_the_agents_own_git_repository_is_its_business(attempts):
    result = attempts["own_git"]
    assert result.verdict == "passed", (result.assertions, result.error)


@case("echo m > main.txt", "echo s > side.txt")
async def sessions(t):
    await t.send("main")
    other = t.new_session()
    await other.send("side")
    t.sandbox.changed_paths(["main.txt", "side.txt"])


def test_each_session_line_has_its_own_window_label(attempts):
    result = attempts["sessions"]
    assert result.verdict == "passed"
    assert _windows(result) == {"turn1": [("main.txt", "added")], "session1/turn1": [("side.txt", "added")]}


async def _write_then_crash(sandbox):
    await sandbox.write_text("half-done.txt", "partial")
    raise RuntimeError("agent crashed")


@case(_write_then_crash)
async def crashed(t):
    await t.send("go")


def test_a_send_that_raises_still_closes_its_window(attempts):
    result = attempts["crashed"]
    assert result.error["code"] == "agent-send-failed"
    assert _windows(result) == {"turn1": [("half-done.txt", "added")]}


SECRET = "sk-live-7f3a9c2e"


async def _use_a_secret(sandbox):
    used = await sandbox.run_shell('echo "token=$API_KEY"; echo "$API_KEY" > used.txt; test "$API_KEY" = ' + SECRET,
                                   env={"API_KEY": SECRET}, sensitive_values=[SECRET])
    assert used.ok and used.stdout == "token=[redacted]\n", used


@case(_use_a_secret)
async def secret(t):
    await t.send("use the key")
    t.sandbox.changed_paths(["used.txt"])


def test_sensitive_values_reach_the_command_and_never_what_is_stored(attempts):
    result = attempts["secret"]
    assert result.verdict == "passed", (result.error, result.assertions)  # the command saw the real value
    stored = json.dumps(result.sandbox)
    assert SECRET not in stored
    [logged] = [entry for entry in result.sandbox["commands"] if "API_KEY" in entry["command"]]
    assert logged["stdout_tail"] == "token=[redacted]"
    [used] = result.sandbox["file_changes"]["windows"][0]["changes"]
    assert "+[redacted]" in used["diff"]
