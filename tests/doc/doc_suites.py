"""Build temporary document suites for tests: a repo with a `.git` marker, a config, cases and candidates."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from assay.cli.doc import doc_app

FIXTURES = Path(__file__).resolve().parent / "fixtures"

EXPECTED_ITEMS = {
    "items": [
        {"id": "goal", "kind": "goal", "severity": "critical", "required_text": "ship the importer"},
        {"id": "limit", "kind": "constraint", "severity": "medium", "required_text": "no new services"},
    ]
}
GOOD = "# Plan\n\nWe ship the importer this quarter, with no new services.\n"
PARTIAL = "# Plan\n\nWe ship the importer this quarter.\n"
BAD = "# Plan\n\nWe rewrite everything.\n"


@dataclass
class Suite:
    repo: Path
    evals: Path
    config_path: Path

    @property
    def results(self) -> Path:
        return self.evals / "results"

    def config(self) -> dict[str, Any]:
        return json.loads(self.config_path.read_text())

    def update_config(self, **changes: Any) -> None:
        config = self.config()
        for key, value in changes.items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value
        self.config_path.write_text(json.dumps(config, indent=2))

    def enable(self, *methods: str) -> None:
        config = self.config()
        for method in methods:
            config.setdefault("methods", {}).setdefault(method, {})["enabled"] = True
        self.config_path.write_text(json.dumps(config, indent=2))

    def add_case(self, case_id: str, directory: str | None = None, items: dict | None = None) -> Path:
        case_dir = self.evals / "cases" / (directory or case_id)
        case_dir.mkdir(parents=True, exist_ok=True)
        (case_dir / "input.md").write_text("The team will ship the importer. Constraint: no new services.\n")
        (case_dir / "rubric.md").write_text("Keep the goal and the constraint.\n")
        (case_dir / "expected-items.json").write_text(json.dumps(items or EXPECTED_ITEMS))
        manifest = {
            "schema_version": "eval-kit.case.v1",
            "case_id": case_id,
            "artifacts": [
                {"role": "generation_visible", "path": "input.md"},
                {"role": "grader_input", "path": "expected-items.json"},
                {"role": "rubric", "path": "rubric.md"},
            ],
        }
        (case_dir / "case-manifest.json").write_text(json.dumps(manifest, indent=2))
        return case_dir


def make_suite(root: Path, *, adapter: str = "full_adapter.py", methods: dict | None = None) -> Suite:
    repo = root / "repo"
    (repo / ".git").mkdir(parents=True)
    evals = repo / "evals"
    evals.mkdir()
    if adapter:
        shutil.copy(FIXTURES / adapter, evals / adapter)
    config: dict[str, Any] = {
        "schema_version": "eval-kit.config.v1",
        "suite_id": "fake-suite",
        "suite_root": ".",
        "results_root": "results",
        "cases": {"root": "cases", "include": ["*"]},
        "methods": methods or {"deterministic": {"enabled": True}, "report": {"enabled": True}},
    }
    if adapter:
        config["adapter"] = adapter
    config_path = evals / "eval-kit.config.json"
    config_path.write_text(json.dumps(config, indent=2))
    suite = Suite(repo, evals, config_path)
    suite.add_case("case-one")
    candidates = repo / "candidates"
    candidates.mkdir()
    (candidates / "good.md").write_text(GOOD)
    (candidates / "partial.md").write_text(PARTIAL)
    (candidates / "bad.md").write_text(BAD)
    return suite


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


def invoke(*args: str, env: dict[str, str] | None = None) -> CliResult:
    result = CliRunner().invoke(doc_app, [str(arg) for arg in args], env=env, catch_exceptions=False)
    return CliResult(result.exit_code, result.stdout, result.stderr)
