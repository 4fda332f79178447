"""Each sandbox assertion matched, mismatched and unavailable (over File Changes values), `command_succeeded`,
and their place on `t.sandbox`: post-run, with no `or_stop`, the same over every provider (local, Docker)."""

from __future__ import annotations

import re

import pytest
from sandbox_helpers import run_one_linked, sandbox_agent, sandbox_dir  # noqa: F401

from assay.agent import (
    Turn,
    command_succeeded,
    define_eval,
    equals,
    includes,
    message,
    pattern,
)
from assay.agent.assertions import (
    ChangedPaths,
    FileChanged,
    FileDeleted,
    NoChanges,
    NotInDiff,
)
from assay.agent.sandbox.changes import (
    Content,
    FileChange,
    FileChangesView,
    WindowDelta,
)
from assay.agent.sandbox.commands import CommandResult
from containers import docker_image, provider, sandbox_template  # noqa: F401  (fixtures)


def text(value: str) -> Content:
    return Content("blob-" + str(abs(hash(value)) % 10_000), len(value), value)


BINARY = Content("blob-bin", 4, None, "binary")


def view(*windows: tuple[str, list[FileChange]], complete: bool = True) -> FileChangesView:
    return FileChangesView(
        tuple(WindowDelta(label, 0, position + 1, "a", "b", tuple(changes)) for position, (label, changes) in enumerate(windows)),
        complete, "" if complete else "the change ledger stopped: git write-tree: disk full",
    )


EDITED = view(
    ("turn1", [FileChange("calc.py", "modified", text("return a - b\n"), text("return a + b\n")),
               FileChange("notes.md", "added", None, text("todo: ship\n"))]),
    ("turn2", [FileChange("notes.md", "deleted", text("todo: ship\n"), None)]),
)
INCOMPLETE = view(("turn1", [FileChange("calc.py", "modified", text("x\n"), text("y\n"))]), complete=False)
WITH_BINARY = view(("turn1", [FileChange("logo.png", "added", None, BINARY),
                              FileChange("calc.py", "modified", text("a\n"), text("b\n"))]))


def status(assertion, over) -> str:
    return assertion.evaluate(over).status


def test_changed_paths_and_no_changes():
    assert status(ChangedPaths(("calc.py", "notes.md")), EDITED) == "matched"
    mismatch = ChangedPaths(("calc.py",)).evaluate(EDITED)
    assert mismatch.status == "mismatched" and "unexpected changes: notes.md" in mismatch.reason
    assert "not changed: setup.py" in ChangedPaths(("calc.py", "notes.md", "setup.py")).evaluate(EDITED).reason
    assert status(ChangedPaths(("calc.py",)), INCOMPLETE) == "unavailable"
    assert status(ChangedPaths(()), INCOMPLETE) == "mismatched"  # a change seen decides it anyway
    assert status(NoChanges(), view(("turn1", []))) == "matched"
    assert status(NoChanges(), EDITED) == "mismatched"
    assert status(NoChanges(), view(complete=False)) == "unavailable"


def test_file_changed_needs_one_window_to_meet_every_condition():
    assert status(FileChanged("calc.py"), EDITED) == "matched"
    assert status(FileChanged("calc.py", "modified", includes("a - b"), includes("a + b")), EDITED) == "matched"
    assert status(FileChanged("notes.md", "deleted", before=includes("todo")), EDITED) == "matched"
    wrong_status = FileChanged("calc.py", "added").evaluate(EDITED)
    assert wrong_status.status == "mismatched" and "turn1: modified, not added" in wrong_status.reason
    wrong_after = FileChanged("calc.py", after=includes("a * b")).evaluate(EDITED)
    assert wrong_after.status == "mismatched" and wrong_after.reason.startswith("turn1: after:")
    # Conditions hold in different windows but never on the same change: still a mismatch.
    assert status(FileChanged("notes.md", "added", after=equals(None)), EDITED) == "mismatched"
    assert status(FileChanged("setup.py"), EDITED) == "mismatched"
    assert status(FileChanged("setup.py"), INCOMPLETE) == "unavailable"
    elided = FileChanged("logo.png", after=pattern(r"PNG")).evaluate(WITH_BINARY)
    assert elided.status == "unavailable" and "elided (binary)" in elided.reason
    assert status(FileChanged("logo.png", "added"), WITH_BINARY) == "matched"  # no content needed


def test_file_deleted():
    assert status(FileDeleted("notes.md"), EDITED) == "matched"
    missed = FileDeleted("calc.py").evaluate(EDITED)
    assert missed.status == "mismatched" and "turn1: modified" in missed.reason
    assert status(FileDeleted("calc.py"), INCOMPLETE) == "unavailable"


def test_not_in_diff_over_paths_and_added_or_removed_lines():
    assert status(NotInDiff(re.compile("password")), EDITED) == "matched"
    assert NotInDiff(re.compile(r"a \+ b"), "added").evaluate(EDITED).reason == "turn1: added line in calc.py matches"
    assert status(NotInDiff(re.compile(r"a \+ b"), "removed"), EDITED) == "matched"
    assert status(NotInDiff(re.compile(r"a - b"), "removed"), EDITED) == "mismatched"
    assert "the path notes.md matches" in NotInDiff(re.compile(r"notes")).evaluate(EDITED).reason
    elided = NotInDiff(re.compile("secret")).evaluate(WITH_BINARY)
    assert elided.status == "unavailable" and "logo.png (binary)" in elided.reason
    assert status(NotInDiff(re.compile("secret")), INCOMPLETE) == "unavailable"
    assert status(NotInDiff(re.compile("png")), WITH_BINARY) == "mismatched"  # the path decides before content


def test_command_succeeded():
    ok = CommandResult(("pytest",), 0, "2 passed", "", 0.1)
    failed = CommandResult(("pytest", "-q"), 1, "", "E   assert 3 == 4\n", 0.2)
    late = CommandResult(("pytest",), None, "", "", 30.0, timed_out=True)
    assert command_succeeded().evaluate(ok).status == "matched"
    assert command_succeeded().evaluate(failed).reason == "`pytest -q` exited with 1: E   assert 3 == 4"
    assert "timed out after 30.0s" in command_succeeded().evaluate(late).reason
    assert "expected the result of t.sandbox.run_command" in command_succeeded().evaluate(0).reason


def test_on_t_sandbox_they_are_decided_after_the_test_and_have_no_or_stop(provider):
    async def send(turn_input, ctx):
        await ctx.sandbox.write_text("answer.txt", "42\n")
        return Turn([message("done")])

    async def test(t):
        handle = t.sandbox.changed_paths(["answer.txt"])
        assert handle.status == "pending"
        await t.send("write the answer")  # registered before the send, decided on the whole run
        t.sandbox.file_changed("answer.txt", status="added", after="42\n").label("the answer")
        t.sandbox.not_in_diff(r"\bTODO\b", content="added").optional()
        t.check(await t.sandbox.run_command("grep", "-q", "42", "answer.txt"), command_succeeded())
        t.check(await t.sandbox.run_command("grep", "-q", "41", "answer.txt"), command_succeeded())
        with pytest.raises(Exception, match="no or_stop"):
            await handle.or_stop()

    result = run_one_linked(sandbox_agent(send), define_eval(test, sandbox=sandbox_template(provider)))
    assert [(a["kind"], a["status"]) for a in result.assertions] == [
        ("changed_paths", "matched"), ("file_changed", "matched"), ("not_in_diff", "matched"), ("check", "matched"),
        ("check", "mismatched"),
    ]
    assert result.assertions[1]["label"] == "the answer" and result.assertions[0]["scope"] == "t.sandbox"
    assert result.assertions[4]["reason"] == "`grep -q 41 answer.txt` exited with 1"
    assert result.verdict == "failed"


def test_paths_are_relative_to_the_workdir_and_bad_arguments_are_authoring_errors(provider):
    async def test(t):
        t.sandbox.file_changed(f"{t.sandbox.workdir}/./src/../main.py", status="added")
        await t.send("x")
        t.sandbox.file_changed("main.py", status="renamed")

    async def send(turn_input, ctx):
        await ctx.sandbox.write_text("main.py", "print()\n")
        return Turn([message("ok")])

    result = run_one_linked(sandbox_agent(send), define_eval(test, sandbox=sandbox_template(provider)))
    assert result.assertions[0]["status"] == "matched"
    assert result.error["code"] == "authoring-error" and "status must be one of" in result.error["message"]


@pytest.mark.parametrize(("assertion", "said"), [
    (lambda t: t.sandbox.file_changed("main.py", status="modifed"),
     "file_changed status must be one of added, modified, deleted, got 'modifed'; did you mean 'modified'?"),
    (lambda t: t.sandbox.not_in_diff("secret", content="bth"),
     "not_in_diff content must be one of added, removed, both, got 'bth'; did you mean 'both'?"),
    # An absolute path outside the workdir was an assertion that just failed ("/etc/passwd was not deleted").
    (lambda t: t.sandbox.file_deleted("/etc/passwd"), "'/etc/passwd' is outside the sandbox workdir ("),
])
def test_a_misspelt_status_or_side_and_a_path_outside_the_workdir_say_what_was_meant(assertion, said):
    async def test(t):
        await t.send("x")
        assertion(t)

    result = run_one_linked(sandbox_agent(), define_eval(test, sandbox=sandbox_template("local")))
    assert result.verdict == "errored" and result.error["code"] == "authoring-error", result.error
    assert said in result.error["message"], result.error["message"]
