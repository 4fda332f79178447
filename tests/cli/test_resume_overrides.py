"""`--resume` restores what the run was asked; combined with other options, the message names them."""

from __future__ import annotations

from typer.testing import CliRunner

from assay.cli.app import app


def test_video_run_seed_and_agent_run_name_the_options_given_with_resume(tmp_path):
    runner = CliRunner()
    video = runner.invoke(app, ["video", "run", "--resume", "x", "--case", "c", "--repeat", "2"])
    assert video.exit_code == 2 and "(given: --case, --repeat)" in " ".join(video.output.split())
    seed = runner.invoke(app, ["video", "seed", "--resume", "x", "--replace"])
    assert seed.exit_code == 2 and "(given: --replace)" in " ".join(seed.output.split())
    agent = runner.invoke(app, ["agent", "run", "--project", str(tmp_path), "--resume", "x", "--attempts", "3"])
    assert agent.exit_code == 2 and "(given: --attempts)" in agent.output
