"""A `--config` that is a folder, or a default config that is not there, says which `--config` to give.
Before, `--config evals` said only `could not read config .../evals: Is a directory`, and running from
inside `evals/` said `config not found: .../evals/evals/eval-kit.config.json` with no word on why."""

from __future__ import annotations

from doc_suites import invoke, make_suite


def test_a_folder_given_as_config_names_the_config_file_in_it(tmp_path, monkeypatch):
    suite = make_suite(tmp_path)
    monkeypatch.chdir(suite.repo)
    for command in (["list-cases"], ["run-case", "--case", "case-one", "--candidate", "candidates/good.md"]):
        result = invoke(*command, "--config", "evals")
        assert result.exit_code == 2 and result.stdout == ""
        assert result.stderr.strip().endswith(
            "config evals is a folder; give the config file, e.g. --config evals/eval-kit.config.json"
        )
    assert not suite.results.exists()


def test_the_default_config_missing_says_it_is_relative_to_the_current_folder(tmp_path, monkeypatch):
    suite = make_suite(tmp_path)
    monkeypatch.chdir(suite.evals)  # inside evals/, where eval-kit.config.json is
    result = invoke("list-cases")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Execution failed: config not found: {suite.evals / 'evals' / 'eval-kit.config.json'} (the default --config "
        "evals/eval-kit.config.json is relative to the current folder; here, give --config eval-kit.config.json)"
    )
    assert invoke("list-cases", "--config", "eval-kit.config.json").stdout == "case-one\n"
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    result = invoke("run-case", "--case", "case-one", "--candidate", "c.md")
    assert result.exit_code == 2 and "create a suite with `assay doc init`" in result.stderr
    assert result.stderr.startswith("Error loading config: config not found: ")
