"""Change attribution across send windows (spec §5.4), with real git: eval-side writes are never the agent's,
a change reverted within its window leaves no delta, one reverted in a later window stays visible, and
binary or oversized content is elided."""

from __future__ import annotations

from sandbox_helpers import run_one_linked, sandbox_agent, sandbox_dir  # noqa: F401

from assay.agent import Turn, define_eval, includes, local_sandbox, message


def _scripted(steps):
    """A sandbox agent that, on its n-th send, runs the n-th shell script in the workdir."""
    queue = list(steps)

    async def send(turn_input, ctx):
        script = queue.pop(0)
        if script:
            await ctx.sandbox.run_shell_or_raise(script)
        return Turn([message("ok")])

    return sandbox_agent(send)


def _windows(result):
    return {
        window["window"]: sorted((change["path"], change["status"]) for change in window["changes"])
        for window in result.sandbox["file_changes"]["windows"]
    }


def test_eval_side_writes_before_and_between_sends_are_not_the_agents():
    async def test(t):
        await t.sandbox.write_text("fixture.txt", "written by the eval\n")
        await t.send("one")
        await t.sandbox.write_text("between.txt", "also the eval\n")
        await t.sandbox.run_shell("echo more >> fixture.txt")
        await t.send("two")
        t.sandbox.changed_paths(["agent1.txt", "agent2.txt"])

    agent = _scripted(["echo a > agent1.txt", "echo b > agent2.txt"])
    result = run_one_linked(agent, define_eval(test, sandbox=local_sandbox()))
    assert result.verdict == "passed", result.assertions
    assert _windows(result) == {"turn1": [("agent1.txt", "added")], "turn2": [("agent2.txt", "added")]}


def test_a_change_reverted_within_its_window_leaves_no_delta():
    async def test(t):
        await t.sandbox.write_text("config.ini", "mode=prod\n")
        await t.send("flip and flip back")
        t.sandbox.no_changes()

    agent = _scripted(["echo mode=dev > config.ini; touch scratch; rm scratch; echo mode=prod > config.ini"])
    result = run_one_linked(agent, define_eval(test, sandbox=local_sandbox()))
    assert result.verdict == "passed", result.assertions
    assert _windows(result) == {"turn1": []}


def test_a_change_reverted_in_a_later_window_stays_visible_in_both():
    async def test(t):
        await t.sandbox.write_text("app.py", "DEBUG = False\n")
        await t.send("turn debugging on")
        await t.send("turn it off again")
        t.sandbox.changed_paths(["app.py", "notes.md"])
        t.sandbox.file_changed("app.py", before="DEBUG = False\n", after="DEBUG = True\n")
        t.sandbox.file_changed("app.py", before="DEBUG = True\n", after="DEBUG = False\n")
        t.sandbox.file_deleted("notes.md")

    agent = _scripted(["echo 'DEBUG = True' > app.py; echo todo > notes.md", "echo 'DEBUG = False' > app.py; rm notes.md"])
    result = run_one_linked(agent, define_eval(test, sandbox=local_sandbox()))
    assert result.verdict == "passed", result.assertions
    assert _windows(result) == {
        "turn1": [("app.py", "modified"), ("notes.md", "added")],
        "turn2": [("app.py", "modified"), ("notes.md", "deleted")],
    }
    first = result.sandbox["file_changes"]["windows"][0]["changes"][0]
    assert "-DEBUG = False\n+DEBUG = True" in first["diff"]


def test_binary_and_oversized_content_is_elided_and_content_checks_are_unavailable():
    async def test(t):
        await t.send("write a binary and a huge file")
        t.sandbox.changed_paths(["image.bin", "huge.txt"])
        t.sandbox.file_changed("image.bin", status="added")
        t.sandbox.file_changed("image.bin", after=includes("PNG"))
        t.sandbox.file_changed("huge.txt", after=includes("x"))
        t.sandbox.not_in_diff("password")

    agent = _scripted(["printf '\\x89PNG\\x00\\x01' > image.bin; head -c 1200000 /dev/zero | tr '\\0' x > huge.txt"])
    result = run_one_linked(agent, define_eval(test, sandbox=local_sandbox()))
    assert [a["status"] for a in result.assertions] == ["matched", "matched", "unavailable", "unavailable", "unavailable"]
    assert "elided (binary)" in result.assertions[2]["reason"]
    assert "elided (oversized)" in result.assertions[3]["reason"]
    assert result.verdict == "errored"  # a required unavailable assertion is never a pass
    changes = {change["path"]: change for change in result.sandbox["file_changes"]["windows"][0]["changes"]}
    assert changes["image.bin"]["elided"] == "binary" and "diff" not in changes["image.bin"]
    assert changes["huge.txt"]["elided"] == "oversized" and changes["huge.txt"]["after"]["size"] == 1200000


def test_default_excludes_diff_rules_and_gitignore_files():
    async def test(t):
        await t.send("work")
        t.sandbox.changed_paths([".gitignore", "src/main.py", "dist/keep.txt"])

    script = ("mkdir -p node_modules/pkg src/__pycache__ dist logs && echo 1 > node_modules/pkg/index.js && "
              "echo 2 > src/__pycache__/main.pyc && echo 'print(1)' > src/main.py && echo '*' > .gitignore && "
              "echo keep > dist/keep.txt && echo drop > dist/other.txt && echo noise > logs/run.log")
    definition = define_eval(test, sandbox=local_sandbox(), diff={"ignore": ["logs"], "include": ["dist/keep.txt"]})
    result = run_one_linked(_scripted([script]), definition)
    assert result.verdict == "passed", result.assertions  # `*` in .gitignore hid nothing


def test_the_agents_own_git_repository_is_its_business():
    async def test(t):
        await t.sandbox.run_shell_or_raise(
            "git init -q && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m start")
        await t.send("commit a change")
        t.sandbox.changed_paths(["feature.txt"])

    agent = _scripted(["echo feature > feature.txt && git add feature.txt && "
                       "git -c user.name=a -c user.email=a@b commit -qm feature && git log --oneline | wc -l"])
    result = run_one_linked(agent, define_eval(test, sandbox=local_sandbox()))
    assert result.verdict == "passed", (result.assertions, result.error)


def test_each_session_line_has_its_own_window_label():
    async def test(t):
        await t.send("main")
        other = t.new_session()
        await other.send("side")
        t.sandbox.changed_paths(["main.txt", "side.txt"])

    agent = _scripted(["echo m > main.txt", "echo s > side.txt"])
    result = run_one_linked(agent, define_eval(test, sandbox=local_sandbox()))
    assert result.verdict == "passed"
    assert _windows(result) == {"turn1": [("main.txt", "added")], "session1/turn1": [("side.txt", "added")]}


def test_a_send_that_raises_still_closes_its_window():
    async def send(turn_input, ctx):
        await ctx.sandbox.write_text("half-done.txt", "partial")
        raise RuntimeError("agent crashed")

    async def test(t):
        await t.send("go")

    result = run_one_linked(sandbox_agent(send), define_eval(test, sandbox=local_sandbox()))
    assert result.error["code"] == "agent-send-failed"
    assert _windows(result) == {"turn1": [("half-done.txt", "added")]}
