"""claude_code_agent(skills=[…]): local skill folders copied into the sandbox's `~/.claude/skills/<name>/`, where
the real CLI (the one the claude-agent-sdk wheel bundles) lists them to the model with its `Skill` tool and loads
their instructions when the model calls it (against the fake Messages API); the copies are outside the workdir, so
not in the diff, and `agent-setup.json` names them. A path that is no skill folder, two skills of one folder name,
or a path given without its list is refused when the experiment file is loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from agent_projects import agent_project
from sandbox_helpers import run_one_linked, sandbox_dir  # noqa: F401

from assay.agent import define_eval, includes, local_sandbox
from assay.agent.adapters.claude_code import claude_code_agent
from assay.errors import ConfigError

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "agents"))
from fake_coding_model_api import FakeCodingModelApi  # noqa: E402

import claude_agent_sdk  # noqa: E402

REAL_CLI = str(Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude")
KEY = "sk-ant-test-claude-code-skills-0123"
MODEL = "claude-sonnet-4-5"
INSTRUCTIONS = "Always start release notes with the word PELICAN."
pytestmark = pytest.mark.timeout(90)


def skill(folder: Path, name: str | None = None, instructions: str = INSTRUCTIONS) -> Path:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name or folder.name}\ndescription: Write release notes for this "
                                     f"project. Use when asked for release notes.\n---\n\n{instructions}\n")
    return folder


# -- refused when the experiment is loaded ------------------------------------------------------------------------

def test_a_skill_path_given_without_its_list_is_refused_naming_the_fix():
    for given in ("skills/release-notes", Path("skills/release-notes")):
        with pytest.raises(ConfigError) as raised:
            claude_code_agent(skills=given)
        assert ("skills is a list of skill folders, like skills=[\"skills/release-notes\"]; got the single path "
                "'skills/release-notes': give skills=['skills/release-notes']") in str(raised.value)


def test_a_skills_list_of_something_else_than_paths_is_refused():
    with pytest.raises(ConfigError) as raised:
        claude_code_agent(skills=[{"path": "skills/release-notes"}])
    assert "skills is a list of skill folder paths (strings)" in str(raised.value)


def test_a_missing_skill_folder_is_refused_naming_the_path_resolved_beside_the_calling_file():
    with pytest.raises(ConfigError) as raised:
        claude_code_agent(skills=["no-such-skill-folder"])
    said = str(raised.value)
    assert f"skills path {str(HERE / 'no-such-skill-folder')!r} does not exist" in said, said
    assert "give the folder of a Claude Code skill (one holding a SKILL.md)" in said


def test_a_file_is_no_skill_folder(tmp_path):
    (tmp_path / "notes.md").write_text("x")
    with pytest.raises(ConfigError) as raised:
        claude_code_agent(skills=[tmp_path / "notes.md"])
    assert f"skills path {str(tmp_path / 'notes.md')!r} is not a folder" in str(raised.value)


def test_a_skill_md_given_for_its_folder_is_refused_naming_the_folder(tmp_path):
    folder = skill(tmp_path / "release-notes")
    with pytest.raises(ConfigError) as raised:
        claude_code_agent(skills=[str(folder / "SKILL.md")])
    assert f"a SKILL.md file: give the folder holding it (skills=[{str(folder)!r}])" in str(raised.value)


def test_a_folder_without_skill_md_is_refused(tmp_path):
    (tmp_path / "release-notes").mkdir()
    (tmp_path / "release-notes" / "skill.txt").write_text("instructions")
    with pytest.raises(ConfigError) as raised:
        claude_code_agent(skills=[tmp_path / "release-notes"])
    said = str(raised.value)
    assert f"skill folder {str(tmp_path / 'release-notes')!r} has no SKILL.md" in said, said
    assert "front matter with name and description" in said


def test_two_skills_of_one_folder_name_are_refused(tmp_path):
    first, second = skill(tmp_path / "a" / "release-notes"), skill(tmp_path / "b" / "release-notes")
    with pytest.raises(ConfigError) as raised:
        claude_code_agent(skills=[first, second])
    said = str(raised.value)
    assert f"two folders named 'release-notes' ({str(first)!r} and {str(second)!r})" in said, said
    assert "~/.claude/skills/release-notes" in said and "rename one of them" in said


def test_skill_folders_are_accepted(tmp_path):
    claude_code_agent(skills=[skill(tmp_path / "release-notes"), str(skill(tmp_path / "changelog"))])
    claude_code_agent(skills=None)


def test_a_misshapen_skill_is_exit_2_naming_the_path_resolved_beside_the_experiment_file(tmp_path):
    project = agent_project(tmp_path / "project")
    (project / "experiments" / "skills" / "release-notes").mkdir(parents=True)
    (project / "experiments" / "claude.py").write_text(textwrap.dedent("""
        from assay.agent import Experiment
        from assay.agent.adapters import claude_code_agent

        claude = Experiment(agent=claude_code_agent(skills=["skills/release-notes"]), model="claude-sonnet-4-5")
    """))
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project)],
                          capture_output=True, text=True, timeout=80, check=False, cwd=tmp_path,
                          env={**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db")})
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert f"{str(project / 'experiments' / 'skills' / 'release-notes')!r} has no SKILL.md" in said, said
    assert "Traceback" not in said


# -- the real CLI ------------------------------------------------------------------------------------------------

@pytest.mark.skipif(not os.access(REAL_CLI, os.X_OK), reason="the claude-agent-sdk wheel bundles no CLI here")
def test_a_skill_is_offered_and_loaded_by_the_real_cli_outside_the_diff_and_named_in_the_setup(tmp_path):
    folder = skill(tmp_path / "skills" / "release-notes")
    (folder / "template.md").write_text("## Changes\n")  # (a file the skill uses travels with it)

    async def test(t):
        turn = await t.send("skill: release-notes")
        t.succeeded()
        t.check(turn.message, includes("The skill said: Launching skill: release-notes"))
        t.check(turn.message, includes(INSTRUCTIONS))  # (the CLI read the SKILL.md copied into the sandbox)
        t.sandbox.no_changes()  # (the skill is in the sandbox's home, not the workdir)
        listed = await t.send("run: ls ~/.claude/skills/release-notes")
        t.check(listed.message, includes("The command said: SKILL.md"))

    with FakeCodingModelApi() as api:
        agent = claude_code_agent(command_name=REAL_CLI, install=(), api_key=KEY, base_url=api.url, skills=[folder])
        result = run_one_linked(agent, define_eval(test, sandbox=local_sandbox()), model=MODEL, timeout=60)
        first = api.requests[0]
    assert result.verdict == "passed", (result.error, [a for a in result.assertions if a["status"] != "matched"])
    assert "Skill" in {tool["name"] for tool in first["tools"]}
    assert "- release-notes: Write release notes for this project." in json.dumps(first["messages"])  # offered
    loaded = [event for event in result.turns[0]["events"] if event["type"] == "skill.loaded"]
    assert [event["skill"] for event in loaded] == ["release-notes"], result.turns[0]["events"]
    assert result.sandbox["artifacts"]["agent-setup.json"]["skills"] == ["release-notes"]
