"""A deterministic sandbox agent that shows what a shared sandbox keeps between tasks: it says how many
notes it finds in $HOME and in the temporary folder, and whether the workdir still holds the file the
last task wrote there, then writes all three again."""

from assay.agent import Turn, complete_evidence_coverage, define_eval, define_sandbox_agent, includes, message

NOTE = """
home=$(cat "$HOME/notes.txt" 2>/dev/null | wc -l)
tmp=$(cat "${TMPDIR:-/tmp}/assay-shared-notes.txt" 2>/dev/null | wc -l)
if [ -e leftover.txt ]; then leftover=yes; else leftover=no; fi
echo "$1" >> "$HOME/notes.txt"
echo "$1" >> "${TMPDIR:-/tmp}/assay-shared-notes.txt"
echo "$1" > leftover.txt
echo "notes in home: $home; notes in tmp: $tmp; leftover in workdir: $leftover"
"""


async def send(turn_input, ctx):
    result = await ctx.sandbox.run_command("sh", "-c", NOTE, "note", ctx.eval_id)
    group = f" (group {ctx.eval_group.id})" if ctx.eval_group is not None else ""
    return Turn([message(result.stdout.strip() + group)])


def note_taker():
    return define_sandbox_agent(name="note-taker", send=send, evidence_coverage=complete_evidence_coverage)


def note_eval(description):
    """An eval that holds the workdir to its prepared state: the last task's file is gone."""

    @define_eval(description=description)
    async def test(t):
        t.check(await t.sandbox.read_text("README.md"), includes("prepared")).label("the prepared files are there")
        turn = await t.send("take a note")
        t.check(turn.message, includes("leftover in workdir: no")).label("the workdir starts as prepared")

    return test
