"""`init` and `scaffold-case`: write a starter suite or a starter case, never overwriting by accident.

Both plan their files first, refuse existing ones without --force (even for --dry-run), then write.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from assay.core.fsutil import write_atomically
from assay.doc.artifacts import dump_json
from assay.doc.config import DEFAULT_CONFIG_PATH, DocSuite, find_repo_root
from assay.doc.paths import assert_safe_id, contained_path, relative_posix
from assay.errors import ConfigError, UsageError

__all__ = [
    "ADAPTER_LANGUAGES",
    "PlannedFile",
    "init_suite",
    "missing_repository_warning",
    "plan_case",
    "plan_suite",
    "write_planned",
]

TEMPLATES = Path(__file__).resolve().parent / "templates"
SUPPORTED_SUITES = ("generic",)
ADAPTER_LANGUAGES = {"javascript": "adapter.mjs", "python": "adapter.py"}
MODEL_JUDGE_CONFIG_PATH = "evals/eval-kit.model-judge.config.json"
# eval-kit's exact file (its bootstrap test pins the content, comment line included).
RESULTS_GITIGNORE = (
    "# Keep raw eval result bundles local unless a human curates a summary.\n*\n!README.md\n!.gitignore\n"
)


@dataclass(frozen=True, slots=True)
class PlannedFile:
    path: Path
    display: str  # relative path printed to the user
    content: str


def plan_suite(cwd: Path, *, suite: str = "generic", adapter_language: str = "javascript") -> list[PlannedFile]:
    if suite not in SUPPORTED_SUITES:
        raise UsageError(f"unsupported suite {suite}; supported suites: {', '.join(SUPPORTED_SUITES)}")
    if adapter_language not in ADAPTER_LANGUAGES:
        raise UsageError(f"unsupported adapter language {adapter_language}; use javascript or python")
    adapter_file = ADAPTER_LANGUAGES[adapter_language]
    config = {
        "schema_version": "eval-kit.config.v1",
        "suite_id": "generic",
        "suite_root": ".",
        "results_root": "results",
        "adapter": adapter_file,
        "cases": {"root": "cases", "include": ["*"]},
        "methods": {
            "deterministic": {"enabled": True, "grader": "generic-keyword", "reporter": "generic-markdown"},
            "generate": {"enabled": False},
            "judge_coverage": {"enabled": False},
            "judge_pairwise": {"enabled": False},
            "report": {"enabled": True},
        },
    }
    # Model judging lives in a config of its own, so the main one stays deterministic (and offline).
    model_judge_config = {
        **config,
        "methods": {
            "deterministic": {"enabled": False},
            "generate": {"enabled": True},
            "judge_coverage": {"enabled": True},
            "judge_pairwise": {"enabled": True},
            "report": {"enabled": False},
        },
    }
    files = {
        "evals/eval-kit.config.json": dump_json(config),
        f"evals/{adapter_file}": (TEMPLATES / adapter_file).read_text(encoding="utf-8"),
        MODEL_JUDGE_CONFIG_PATH: dump_json(model_judge_config),
        "evals/cases/README.md": (
            "# Cases\n\nOne directory per case, each with a `case-manifest.json`. Create one with\n"
            "`assay doc scaffold-case --case <id>`.\n"
        ),
        "evals/results/README.md": (
            "# Eval Results\n\nGenerated evaluation result bundles (one directory per run) are written here. Keep "
            "durable summaries, but do not commit raw transient outputs unless your repo policy requires them.\n\n"
            "The sibling `.gitignore` keeps run bundles local by default while preserving this README and curated "
            "files a human intentionally adds.\n"
        ),
        "evals/results/.gitignore": RESULTS_GITIGNORE,
    }
    return [PlannedFile(cwd / relative, relative, content) for relative, content in files.items()]


def plan_case(suite: DocSuite, case_id: str) -> list[PlannedFile]:
    assert_safe_id(case_id, "case id")
    cases = suite.raw.get("cases")
    if not isinstance(cases, dict) or not cases.get("root"):
        raise UsageError("config must define cases.root to scaffold cases")
    case_dir = contained_path(
        suite.suite_root, suite.resolver.resolve_suite_path(cases["root"], "cases.root") / case_id, "case directory"
    )
    manifest = {
        "schema_version": "eval-kit.case.v1",
        "case_id": case_id,
        "case_type": "generic-deterministic",
        "artifacts": [
            {"role": "generation_visible", "path": "input.md"},
            {"role": "grader_input", "path": "expected-items.json"},
            {"role": "rubric", "path": "rubric.md"},
        ],
        "metadata": {"purpose": "Replace with what this case checks."},
    }
    expected = {
        "items": [
            {
                "id": "expected-item-1",
                "kind": "generic",
                "severity": "medium",
                "required_text": "replace this required text",
            }
        ]
    }
    files = {
        "case-manifest.json": dump_json(manifest),
        "input.md": f"# {case_id} input\n\nReplace with the source material a candidate is written from.\n",
        "expected-items.json": dump_json(expected),
        "rubric.md": f"# {case_id} rubric\n\nReplace with what a good candidate must do.\n",
    }
    return [
        PlannedFile(case_dir / name, relative_posix(suite.repo_root, case_dir / name), content)
        for name, content in files.items()
    ]


def write_planned(files: list[PlannedFile], *, dry_run: bool, force: bool) -> list[str]:
    """The lines to print; raises before writing anything if a file exists and --force is absent."""
    for planned in files:
        _check_place(planned)
    existing = [planned.display for planned in files if os.path.lexists(planned.path)]
    if existing and not force:
        raise UsageError(f"refusing to overwrite existing files: {', '.join(existing)}")
    if dry_run:
        return [f"Would write {planned.display}" for planned in files]
    lines = []
    for planned in files:
        verb = "Overwrote" if os.path.lexists(planned.path) else "Wrote"
        if os.path.islink(planned.path):
            # --force replaces a file, never writes through a symlink to somewhere else.
            planned.path.unlink()
        planned.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(planned.path, planned.content)
        lines.append(f"{verb} {planned.display}")
    return lines


def _check_place(planned: PlannedFile) -> None:
    """A `UsageError` when the file cannot be written where it goes: a folder stands at its path, or a file where
    one of its folders goes (an `evals` file beside the suite `init` writes under `evals/`), which would otherwise
    fail half-way through the writes with an OSError."""
    if os.path.isdir(planned.path) and not os.path.islink(planned.path):
        raise UsageError(f"{planned.display} is a folder, where a file goes; move it away (--force replaces files only)")
    display = Path(planned.display)
    folders = list(zip(planned.path.parents, display.parents))[: len(display.parts) - 1]  # the deepest first
    for folder, shown in reversed(folders):
        if os.path.lexists(folder) and not folder.is_dir():
            raise UsageError(f"{shown.as_posix()} is a file, where the folder of {planned.display} goes; move it away "
                             "or rename it, then run the command again (--force replaces the files it writes, not a "
                             "file in their way)")


def init_suite(
    cwd: Path, *, suite: str = "generic", adapter_language: str = "javascript", dry_run: bool, force: bool
) -> list[str]:
    lines = write_planned(plan_suite(cwd, suite=suite, adapter_language=adapter_language), dry_run=dry_run, force=force)
    if not dry_run:
        lines.append("Next: run `assay doc doctor` to check the suite.")
    return lines


def missing_repository_warning(cwd: Path) -> str | None:
    """The warning `init` prints when the suite it writes would have no repository root, else None.

    eval-kit let such a suite run with `/` as its root; assay refuses it, so without this warning the
    user learns it only from the next command, after `init` appeared to succeed.
    """
    config_dir = (cwd / DEFAULT_CONFIG_PATH).parent
    try:
        find_repo_root(config_dir)
    except ConfigError:
        return (
            f"Warning: {cwd} is not inside a git repository, so every other `assay doc` command will fail "
            f'with "no repository root found"; run `git init` in {cwd} (or run `assay doc init` inside your '
            "repository), then `assay doc doctor`."
        )
    return None
