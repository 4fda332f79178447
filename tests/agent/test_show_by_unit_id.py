"""`assay agent show experiment/eval#n`: the unit id `runs compare` and the viewer print names an attempt too
(before, only its @locator did, and the unit id was "no attempt … in any run")."""

from __future__ import annotations

import json
import subprocess
import sys

from agent_projects import replying_project


def assay(*arguments, cwd):
    return subprocess.run([sys.executable, "-m", "assay", *arguments], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_an_attempt_is_shown_by_its_unit_id_and_a_misspelt_or_ambiguous_one_says_what_to_give(tmp_path):
    project = replying_project(tmp_path, reply="yes")
    (project / "evals" / "ask_eval.py").write_text(
        "from assay.agent import define_eval, includes\n\n"
        "async def test(t):\n    await t.send('ok?')\n    t.check(t.reply, includes('yes'))\n\n"
        "ask = define_eval(test)\n"
    )
    ran = assay("agent", "run", "--attempts", "2", cwd=project)
    assert ran.returncode == 0, ran.stdout + ran.stderr

    shown = assay("agent", "show", "e/ask#2", cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0].endswith("PASSED  ask #2 [a]")
    by_json = assay("agent", "show", "e/ask#1", "--json", cwd=project)
    assert by_json.returncode == 0, by_json.stderr
    [attempt] = json.loads(by_json.stdout)["attempts"]
    assert (attempt["eval_id"], attempt["attempt"]) == ("ask", 1)

    misspelt = assay("agent", "show", "e/ack#1", cwd=project)
    assert misspelt.returncode == 2
    assert misspelt.stderr.strip().endswith(
        f"no attempt with the unit id e/ack#1 in any run of {project}; did you mean 'e/ask#1'?")
    several = assay("agent", "show", "e/ask", cwd=project)
    assert several.returncode == 2
    assert several.stderr.strip().endswith("e/ask has 2 attempts (e/ask#1, e/ask#2); name one of them")
