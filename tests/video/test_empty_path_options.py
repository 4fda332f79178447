"""`--output-json` and `--artifacts-dir` are read as text (GlassKit's checkpoint keeps them as given), yet an
empty value is refused as the `<path>` options refuse it: `--output-json "$REPORT"` with REPORT unset in a CI
script must not write into the current folder, or be reported as a folder."""

from __future__ import annotations

import pytest
from video_evals import number_eval, run_eval


@pytest.mark.parametrize("flag", ["--output-json", "--artifacts-dir"])
def test_an_empty_path_is_a_usage_error_before_anything_runs(tmp_path, monkeypatch, flag):
    calls = tmp_path / "calls.txt"
    eval_dir = number_eval(tmp_path, f'{{calls_file: "{calls}"}}')  # every sample but the first fails
    monkeypatch.chdir(tmp_path)
    result = run_eval(eval_dir, "--save-failures", flag, "")
    assert result.exit_code == 2
    assert f"Invalid value for '{flag}': needs a path, and the value given is empty (an unset variable in a script?)" in result.flat
    assert "is a folder" not in result.flat
    assert not calls.exists()  # no adapter call, no run
    assert sorted(path.name for path in tmp_path.iterdir()) == ["eval"]  # nothing written into the current folder
