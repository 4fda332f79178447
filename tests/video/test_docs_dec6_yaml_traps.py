"""The YAML traps of docs/video/case-files.md, typed as a stranger types them: an unquoted `on:` or `1:` key
in `expect` is refused with GlassKit's words and then the fix (quote it), as a target id already was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from media import make_numbered_video


@pytest.fixture
def eval_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    folder = tmp_path / "eval"
    (folder / "cases").mkdir(parents=True)
    make_numbered_video(folder / "cases" / "lamp.mp4", 10, fps=10)
    return folder


def _validate(eval_dir: Path, block: str) -> subprocess.CompletedProcess[str]:
    (eval_dir / "cases" / "lamp.yaml").write_text(
        f"video: lamp.mp4\ntargets:\n  answer:\n    samples:\n      - at: 0.5\n        {block}\n", encoding="utf-8"
    )
    return subprocess.run([sys.executable, "-m", "assay", "video", "validate", "--eval-dir", str(eval_dir)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "400"})


def test_an_unquoted_on_key_in_expect_says_yaml_made_it_a_boolean_and_to_quote_it(eval_dir):
    done = _validate(eval_dir, "expect: {lamp: {on: true}}")
    assert done.returncode == 1, done.stdout + done.stderr
    assert ("targets.answer.samples.0.expect: Value error, expect.lamp keys must be strings; YAML reads an "
            'unquoted on, yes or true as a boolean: quote the key as you wrote it, e.g. "on"') in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_an_unquoted_no_key_inside_a_list_names_the_false_words(eval_dir):
    done = _validate(eval_dir, "expect: [a, {x: 1, no: 2}]")
    assert done.returncode == 1
    assert ("expect[1] keys must be strings; YAML reads an unquoted off, no or false as a boolean: "
            'quote the key as you wrote it, e.g. "off"') in done.stdout


def test_a_number_key_in_expect_says_to_quote_it_and_nan_gets_no_hint(eval_dir):
    done = _validate(eval_dir, "expect: {1: a}")
    assert 'expect keys must be strings; quote the key ("1") to keep it as text' in done.stdout
    # the first problem is the NaN, which quoting does not fix: no hint about the later `on` key
    done = _validate(eval_dir, "expect: {a: .nan, on: 1}")
    assert done.returncode == 1
    assert "expect.a must be finite" in done.stdout and "YAML reads" not in done.stdout


def test_an_on_key_in_a_target_config_is_not_told_to_be_quoted_as_true(eval_dir):
    (eval_dir / "cases" / "lamp.yaml").write_text(
        "video: lamp.mp4\ntargets:\n  answer:\n    config: {on: 1}\n    samples:\n      - at: 0.5\n        expect: 1\n",
        encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "assay", "video", "validate", "--eval-dir", str(eval_dir)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "400"})
    assert done.returncode == 1
    assert ('Input should be a valid string, got the boolean true; YAML reads an unquoted on, yes or true as a '
            'boolean: quote the key as you wrote it, e.g. "on"') in done.stdout
