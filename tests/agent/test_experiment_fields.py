"""An experiment's fields as a stranger writes them: a value of the wrong shape is refused where the
experiment file is read, with the file named and the fix given, before anything runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message
from assay.errors import ConfigError
from traced_projects import write_project


async def _send(turn_input, ctx):
    return Turn([message("ok")])


AGENT = define_agent(name="stub", send=_send, evidence_coverage=complete_evidence_coverage)


def test_one_prefix_given_as_a_string_is_refused_with_the_list_it_meant():
    # A string is no list of prefixes, so it is refused; the message said only what evals may be, not how
    # to write the one prefix that was meant.
    with pytest.raises(ConfigError, match=re.escape(
            "Experiment evals must be \"*\", a list of eval id prefixes, or a predicate, got the string 'judges/': "
            "for one prefix write evals=['judges/']")):
        Experiment(agent=AGENT, evals="judges/")
    assert Experiment(agent=AGENT, evals="*").evals == "*"
    assert Experiment(agent=AGENT, evals=["judges/"]).evals == ["judges/"]


def test_the_command_line_names_the_experiment_file_and_exits_2(tmp_path):
    project = write_project(tmp_path / "project", {
        "pyproject.toml": "[tool.assay]\n",
        "experiments/judged.py": """
            from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

            async def send(turn_input, ctx):
                return Turn([message("ok")])

            judged = Experiment(agent=define_agent(name="stub", send=send, evidence_coverage=complete_evidence_coverage),
                                evals="judges/")
        """,
        "evals/judges/one_eval.py": """
            from assay.agent import define_eval

            @define_eval()
            async def test(t):
                await t.send("a")
        """,
    })
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")}
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--dry"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        f"Error: {project / 'experiments' / 'judged.py'} (line 6): Experiment evals must be \"*\", a list of eval id prefixes, "
        "or a predicate, got the string 'judges/': for one prefix write evals=['judges/']"
    ]
