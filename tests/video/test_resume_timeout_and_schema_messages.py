"""`assay video` as its docs are used: a resumed run's checkpoint path, --adapter-timeout with a Python adapter, and
the schema messages of a block that is no mapping or a key that is a number."""

from __future__ import annotations

import os
from pathlib import Path

from video_evals import invoke, make_eval, number_eval, read_report, run_eval


def test_resume_by_bare_id_reports_the_checkpoint_path_absolute(tmp_path, monkeypatch):
    # `--resume <id>` looks the id up under the (relative, default) --eval-dir; the checkpoint path
    # it then prints and writes to the JSON report is absolute, as GlassKit's (spec §2.1, §16).
    flag = tmp_path / "still-broken"
    flag.write_text("x")
    eval_dir = number_eval(tmp_path, config=f'{{fail_at: [1], fail_while_exists: "{flag}"}}', until=0.3)
    monkeypatch.chdir(tmp_path)
    report_path = tmp_path / "r.json"
    first = run_eval(Path("eval"), "--keep-going", "--output-json", report_path)
    assert first.exit_code == 1, first.output
    checkpoint = read_report(report_path)["checkpoint"]["path"]
    assert os.path.isabs(checkpoint)
    # still failing: the hint printed after the resume names the absolute path
    again = invoke("video", "run", "--resume", Path(checkpoint).name)
    assert again.exit_code == 1, again.output
    assert f"Checkpoint: {checkpoint} " in again.flat
    assert read_report(report_path)["checkpoint"]["path"] == checkpoint
    flag.unlink()
    done = invoke("video", "run", "--resume", Path(checkpoint).name)
    assert done.exit_code == 0, done.output
    assert read_report(report_path)["checkpoint"] == {"path": checkpoint, "resumed": True, "resumable_adapter_errors": 0}
    assert eval_dir.resolve() / "runs" / "checkpoints" / Path(checkpoint).name == Path(checkpoint)


def test_a_block_that_is_not_a_mapping_is_named_without_pydantic_class_names(tmp_path):
    # `- at 2` (colon forgotten) is a string where a sample block belongs: the message says what was
    # found, not `instance of RawSampleBlock`.
    eval_dir = make_eval(
        tmp_path,
        """
        video: clip.mp4
        targets:
          number:
            samples:
              - at: 1
                expect: 10
              - at 2
        """,
    )
    result = run_eval(eval_dir)
    assert result.exit_code == 2
    assert (
        "invalid schema: targets.number.samples.1: Input should be a valid dictionary (a mapping of keys), "
        "got the text 'at 2'" in result.flat
    )
    assert "Raw" not in result.output


def test_adapter_timeout_with_a_python_adapter_is_refused_not_ignored(tmp_path):
    # The limit only applies to process adapters; accepting it silently would promise a limit
    # the run never enforces.
    eval_dir = number_eval(tmp_path)
    result = run_eval(eval_dir, "--adapter-timeout", "5")
    assert result.exit_code == 2, result.output
    assert "Eval failed: --adapter-timeout limits the calls of a process adapter (--adapter-command)" in result.flat
    seeded = invoke(
        "video", "seed", "--eval-dir", eval_dir, "--adapter", f"{eval_dir}/adapter.py:create_evaluator",
        "--adapter-timeout", "5",
    )
    assert seeded.exit_code == 2, seeded.output
    assert "Could not seed expectations: --adapter-timeout limits the calls of a process adapter" in seeded.flat


def test_an_unquoted_number_as_target_id_says_to_quote_it(tmp_path):
    eval_dir = make_eval(
        tmp_path,
        """
        video: clip.mp4
        targets:
          1:
            samples:
              - at: 0
                expect: 0
        """,
    )
    result = run_eval(eval_dir)
    assert result.exit_code == 2
    assert (
        "invalid schema: targets.1.[key]: Input should be a valid string, got the number 1; "
        'quote the key ("1") to keep it as text' in result.flat
    )
