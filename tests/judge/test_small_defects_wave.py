"""Small user-facing defects of `assay judge`, each pinned where it was found."""

from __future__ import annotations

from typer.testing import CliRunner

from assay.cli.app import app


def test_a_cache_dir_that_does_not_exist_is_a_usage_error_with_the_near_folder(tmp_path, monkeypatch):
    """`--cache-dir judgecahe` (a typo) said `No judge cache at judgecahe; nothing to clear.` and exited 0."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    (tmp_path / "judgecache").mkdir()
    result = CliRunner().invoke(app, ["judge", "cache", "clear", "--cache-dir", str(tmp_path / "judgecahe")])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (f"Error: --cache-dir {tmp_path / 'judgecahe'}: no such folder "
                                     f"(did you mean {tmp_path / 'judgecache'}?)")
    far = CliRunner().invoke(app, ["judge", "cache", "clear", "--cache-dir", str(tmp_path / "elsewhere" / "x")])
    assert far.exit_code == 2 and far.output.strip() == f"Error: --cache-dir {tmp_path / 'elsewhere' / 'x'}: no such folder"
    assert not (tmp_path / "judgecahe").exists()
