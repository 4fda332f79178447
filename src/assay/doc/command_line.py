"""The `assay doc` options, declared once, and what a method command makes of them before it runs.

`DocOptions` is the table every doc command takes its options from (help in eval-kit's words). A
method's request is made by `method_request`, with eval-kit's checks in its order: every missing
required argument at once (with the adapter hook a model command needs), then the method's own
values (the calibration outcome, the seed), then the model settings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.core.run.request import option
from assay.errors import UsageError

__all__ = ["DocOptions", "hook_timeout_seconds", "method_request"]


def _text(flag: str, text: str) -> Any:
    return option(None, flag=flag, help=text)


@dataclass(frozen=True)
class DocOptions:
    """Every `assay doc` option (all optional to the parser: a method says what it requires, eval-kit's way)."""

    case: str | None = _text("--case", "Case id.")
    candidate: str | None = _text("--candidate", "Candidate file, relative to the repo root.")
    candidate_a: str | None = _text("--candidate-a", "First candidate, relative to the repo root.")
    candidate_b: str | None = _text("--candidate-b", "Second candidate, relative to the repo root.")
    model: str | None = _text("--model", "Model name sent to the endpoint.")
    provider: str | None = _text(
        "--provider", "openai or openai:<label> (recorded in the results; the endpoint is always OpenAI-compatible)."
    )
    effort: str | None = _text("--effort", "Reasoning effort: low, medium or high.")
    seed: str | None = _text("--seed", "Integer seed for the display order.")
    run_id: str | None = _text("--run-id", "Result bundle id.")
    config: str | None = _text("--config", "Suite config (default evals/eval-kit.config.json).")
    hook_timeout: str | None = _text(
        "--hook-timeout", "Seconds one call of an adapter.mjs hook may take (default 600, or $ASSAY_DOC_HOOK_TIMEOUT; 0: no limit)."
    )
    base_url: str | None = _text("--base-url", "OpenAI-compatible endpoint (default $ASSAY_JUDGE_BASE_URL).")
    cache_dir: str | None = _text("--cache-dir", "Reuse identical model calls from this directory cache.")
    fixture_label: str | None = _text("--fixture-label", "Calibration: the fixture's label.")
    expected_outcome: str | None = _text(
        "--expected-outcome", "Calibration: expected-good or expected-bad (flags possible false pass/fail)."
    )
    both_orders: bool = option(False, flag="--both-orders", help="Judge both display orders; disagreement counts as a tie.")
    generate: str | None = _text("--generate", "Run id of a generate run.")
    deterministic: str | None = _text("--deterministic", "Run id of a run-case run.")
    judge_coverage: str | None = _text("--judge-coverage", "Run id of a judge-coverage run.")
    judge: str | None = _text("--judge", "Run id of a judge-pairwise run.")
    outcome: str | None = _text("--outcome", "Run id of an outcome run.")
    suite: str | None = _text("--suite", "Suite template (generic).")
    adapter_language: str | None = _text("--adapter-language", "javascript (default) or python.")
    dry_run: bool = option(False, flag="--dry-run", help="Print the files that would be written.")
    force: bool = option(False, flag="--force", help="Overwrite existing files.")


def hook_timeout_seconds(value: str | None) -> float | None:
    """`--hook-timeout` in seconds (0: no limit), or None when not given."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not (math.isfinite(seconds) and seconds >= 0):
        raise UsageError(f"--hook-timeout must be a number of seconds (0 for no limit), got {value}")
    return seconds


_HOOKS = {"generate": "generation", "judge-coverage": "pointwise", "judge-pairwise": "pairwise"}


async def _missing(command: str, suite: Any, values: Mapping[str, Any]) -> None:
    """Every missing required argument in one line (eval-kit's wording for one), and with them the
    hook a model command needs when the adapter lacks it: one try tells everything that is missing."""
    missing = [f"--{option.replace('_', '-')}" for option, value in values.items() if value is None or value == ""]
    if not missing:
        return
    message = f"missing required argument{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    if command in _HOOKS:
        from assay.doc.session import missing_hook

        lacking = await missing_hook(suite, _HOOKS[command], command)
        if lacking:
            message += f"; and {lacking}"
    raise UsageError(message)


def _settings(given: Mapping[str, Any]) -> Any:
    """The model a method calls: where calls go (the "auth check"), its effort, the call cache."""
    from assay.doc.model_run import ModelSettings, check_effort, normalize_provider
    from assay.judge.cache import DirectoryCallCache
    from assay.judge.client import JudgeEndpoint

    endpoint = JudgeEndpoint.from_environment(base_url=given["base_url"])
    cache = DirectoryCallCache(_cache_folder(given["cache_dir"])) if given["cache_dir"] else None
    return ModelSettings(given["model"], normalize_provider(given["provider"]), check_effort(given["effort"]), endpoint, cache)


def _cache_folder(value: str) -> Path:
    """`--cache-dir`: a folder, or one that can be made (checked now, not as a crash after the model answered)."""
    folder = Path(value).expanduser()
    existing = next((path for path in (folder, *folder.parents) if path.exists()), None)
    if existing is not None and not existing.is_dir():
        where = "" if existing == folder else f" ({existing} is a file)"
        raise UsageError(f"--cache-dir {value}: not a folder{where}")
    return folder


def _junit_target(suite: Any, given: Mapping[str, Any]) -> None:
    """`--junit` may not name a file the run reads: the report is written over it at the end, so
    `--junit candidate.md` (a slip for `--candidate`) replaced the user's document with XML, exit 0."""
    import os

    junit = given.get("junit")
    if not junit:
        return
    target = Path(os.path.realpath(Path(junit).expanduser()))
    read = {"the --candidate file": given.get("candidate"), "the suite config": str(suite.config_path)}
    adapter = suite.raw.get("adapter")
    if isinstance(adapter, str) and adapter:
        from assay.errors import AssayError

        try:
            read["the adapter"] = str(suite.module_path(adapter, "adapter"))
        except AssayError:  # the run says what is wrong with it, in its own turn
            pass
    for what, value in read.items():
        if not value:
            continue
        path = Path(value) if os.path.isabs(value) or what != "the --candidate file" else suite.repo_root / value
        if Path(os.path.realpath(path)) == target:
            raise UsageError(f"--junit {junit} is {what}, which the run reads; give the report its own file, "
                             "e.g. --junit junit.xml", option="--junit")
    bundle = _bundle_folder(suite, given.get("run_id"))
    if bundle is not None and target.is_relative_to(bundle):
        # The report is written after the bundle's manifest: `--junit evals/results/<run-id>/report.md` (or
        # `manifest.json`) replaced a file the manifest had just hashed, so the finished bundle lied, exit 0.
        raise UsageError(f"--junit {junit} is inside this run's result bundle "
                         f"{suite.resolver.relative_to_repo(bundle)}, which the run writes; give the report a file "
                         "outside it, e.g. --junit junit.xml", option="--junit")
    cases = suite.raw.get("cases")
    if not (isinstance(cases, Mapping) and isinstance(cases.get("root"), str) and cases["root"]):
        return  # legacy `case_manifests`: their files are named one by one, and rarely given by mistake
    cases_root = Path(os.path.realpath(suite.suite_root / cases["root"]))
    if target.is_file() and target.is_relative_to(cases_root):
        raise UsageError(f"--junit {junit} is a case file, which the run reads; give the report its own file, "
                         "e.g. --junit junit.xml", option="--junit")


def _bundle_folder(suite: Any, run_id: str | None) -> Path | None:
    """The real path of the result bundle `--run-id` names; None without one, or when the id is refused
    (the run says why, in its own turn)."""
    import os

    from assay.errors import AssayError

    if not run_id:
        return None
    try:
        return Path(os.path.realpath(suite.resolver.resolve_run_dir(run_id)))
    except AssayError:
        return None


def _run_case(suite: Any, given: Mapping[str, Any], recorded: dict[str, Any]) -> Any:
    from assay.doc.methods import RunCaseRequest

    _junit_target(suite, given)
    return RunCaseRequest(suite, given["case"], given["candidate"], given["run_id"] or None, recorded)


def _generate(suite: Any, given: Mapping[str, Any], recorded: dict[str, Any]) -> Any:
    from assay.doc.methods import GenerateRequest

    return GenerateRequest(suite, _settings(given), given["case"], given["run_id"])


def _coverage(suite: Any, given: Mapping[str, Any], recorded: dict[str, Any]) -> Any:
    from assay.doc.methods import CoverageRequest

    if given["expected_outcome"] not in (None, "expected-good", "expected-bad"):
        raise UsageError(f"--expected-outcome must be expected-good or expected-bad, got {given['expected_outcome']}")
    return CoverageRequest(suite, _settings(given), given["case"], given["candidate"], given["run_id"] or None,
                           given["fixture_label"], given["expected_outcome"], recorded)


def _pairwise(suite: Any, given: Mapping[str, Any], recorded: dict[str, Any]) -> Any:
    from assay.doc.methods import PairwiseRequest
    from assay.doc.pairwise import parse_seed

    seed = parse_seed(given["seed"])
    return PairwiseRequest(suite, _settings(given), given["case"], given["candidate_a"], given["candidate_b"], seed,
                           given["run_id"], given["both_orders"], recorded)


def _report(suite: Any, given: Mapping[str, Any], recorded: dict[str, Any]) -> Any:
    from assay.doc.methods import ReportRequest

    runs = {key: given[key.replace("-", "_")] for key in ("generate", "deterministic", "judge-coverage", "judge", "outcome")}
    for key, run_id in runs.items():
        # The report's bundle is cleared and written in place: `report --run-id r1 --deterministic r1` replaced
        # the graded run it was to read (its manifest deleted, its report.md overwritten), exit 0.
        if run_id and run_id == given["run_id"]:
            raise UsageError(f"--run-id {run_id} is also the --{key} run the report reads, and the report would be "
                             f"written over it; give the report an id of its own, e.g. --run-id report-{run_id}")
    return ReportRequest(suite, given["run_id"], {key: value for key, value in runs.items() if value})


# command: (its request from the options, the options it requires, the options its run record keeps as given)
_METHODS: dict[str, tuple[Callable[[Any, Mapping[str, Any], dict[str, Any]], Any], str, str]] = {
    "run-case": (_run_case, "case candidate", "case candidate run_id config"),
    "generate": (_generate, "case model provider effort run_id", ""),
    "judge-coverage": (_coverage, "case candidate model provider effort",
                       "case candidate run_id config provider effort fixture_label expected_outcome"),
    "judge-pairwise": (_pairwise, "case candidate_a candidate_b model provider effort seed run_id",
                       "case candidate_a candidate_b run_id config provider effort seed both_orders"),
    "report": (_report, "run_id", ""),
}


async def method_request(command: str, suite: Any, given: Mapping[str, Any]) -> Any:
    """The request of the doc method `command` from the options given (`UsageError` in eval-kit's words)."""
    make, required, recorded = _METHODS[command]
    await _missing(command, suite, {name: given[name] for name in required.split()})
    return make(suite, given, {name: given[name] for name in recorded.split()})
