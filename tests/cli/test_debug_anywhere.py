"""`--debug` is the root's option, and users give it where they give every other option: after the command
(`assay agent run --debug`), which click refused as "No such option"."""

from __future__ import annotations

from pathlib import Path

from assay_cli import assay_cli


def test_debug_after_the_command_shows_the_traceback_as_before_it_does(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-project")
    for arguments in (["--debug", "agent", "run", "--project", missing], ["agent", "run", "--project", missing, "--debug"],
                      ["agent", "--debug", "run", "--project", missing]):
        done = assay_cli(*arguments, cwd=tmp_path)
        assert done.returncode == 2, (arguments, done.stderr)
        assert "Traceback (most recent call last)" in done.stderr, (arguments, done.stderr)
        assert done.stderr.rstrip().endswith(f"Error: project folder does not exist: {missing}"), done.stderr
    plain = assay_cli("agent", "run", "--project", missing, cwd=tmp_path)
    assert plain.returncode == 2 and plain.stderr == f"Error: project folder does not exist: {missing}\n", plain.stderr


def test_a_debug_after_a_double_dash_is_left_to_the_command(tmp_path: Path) -> None:
    done = assay_cli("agent", "run", "--project", str(tmp_path / "none"), "--", "--debug", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
