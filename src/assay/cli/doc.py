"""`assay doc`: eval-kit-compatible document evals (init, doctor, run-case, model judges, report).

Every failure prints one line to stderr with its stage prefix and exits 2; only a red verdict exits 1.
"""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any, Callable, Coroutine, NoReturn, Optional, TypeVar

import typer
from typer.core import TyperCommand

from assay.cli import common
from assay.errors import EXIT_ERROR, EXIT_GATE_FAILED, AssayError

try:  # recent typer ships its own copy of click; its errors are not click's classes
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - typer releases that use click itself
    from click import exceptions as click_errors

__all__ = ["doc_app"]

# eval-kit exits 1 for everything; CI needs "the candidate is bad" (red) apart from "the eval is broken".
EXIT_RED_VERDICT = EXIT_GATE_FAILED
EXIT_FAILURE = EXIT_ERROR

doc_app = typer.Typer(
    rich_markup_mode=None,  # plain help: flags shown as flags, options as `--name <type>`
    help="Document evals: eval-kit suites (config, cases, adapters, deterministic grading, model judges).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _fail(prefix: str, error: BaseException | str) -> NoReturn:
    common.fail(prefix, error, stderr=True, exit_code=EXIT_FAILURE)  # eval-kit: any failure, one line, the same way


def _parse_message(error: Any) -> str:
    message = error.format_message()
    if isinstance(error, click_errors.BadOptionUsage) and "requires an argument" in message:
        return f"missing value for {error.option_name}"
    if isinstance(error, click_errors.NoSuchOption):
        return f"unknown option {error.option_name}"
    extra = re.match(r"Got unexpected extra argument(?:s|\(s\))? \((.*)\)", message)
    if extra:
        return f"unexpected positional argument {extra.group(1)}"
    return message


class EvalKitCommand(TyperCommand):
    """Parse errors in eval-kit's words and exit code; a value that looks like a flag is a missing value."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        args = [arg for arg in args if arg != "--"]  # eval-kit skips a lone `--`
        self._check_option_values(args)
        try:
            return super().parse_args(ctx, args)
        except click_errors.UsageError as error:
            _fail("Error parsing arguments", _parse_message(error))

    def _check_option_values(self, args: list[str]) -> None:
        takes_value = {name for param in self.params if not getattr(param, "is_flag", False) for name in param.opts}
        position = 0
        while position < len(args):
            token = args[position]
            if token in takes_value:
                following = args[position + 1] if position + 1 < len(args) else None
                if following is None or following == "" or following.startswith("--"):
                    _fail("Error parsing arguments", f"missing value for {token}")
                position += 1
            position += 1


def _only_checks() -> None:
    from assay.cli.stdout_guard import nothing_to_keep

    nothing_to_keep()  # `assay doc doctor | head`: the closed-stdout line speaks of no results


def _command(name: str, help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return doc_app.command(name, help=help_text, cls=EvalKitCommand)


Result = TypeVar("Result")


def _checked(call: Callable[..., Result], *arguments: Any, prefix: str = "Execution failed", **keywords: Any) -> Result:
    """`call(...)`, its `AssayError` one line under eval-kit's stage `prefix`."""
    try:
        return call(*arguments, **keywords)
    except AssayError as error:
        _fail(prefix, error)


def _run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    try:
        return asyncio.run(coroutine)
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        if not getattr(sys.stdout, "closed_by_reader", False):  # else the closed-stdout line says it
            typer.echo("Interrupted.", err=True)
        raise typer.Exit(130) from None
    except Exception as error:  # eval-kit reports any exception the same way; --debug shows the traceback
        _fail("Execution failed", error)


def _hook_timeout(value: Optional[str]) -> float | None:
    """`--hook-timeout` in seconds (0: no limit), or None when not given."""
    import math

    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not (math.isfinite(seconds) and seconds >= 0):
        _fail("Execution failed", f"--hook-timeout must be a number of seconds (0 for no limit), got {value}")
    return seconds


def _load_config(
    config: Optional[str], *, prefix: str = "Error loading config", hook_timeout: Optional[str] = None
) -> Any:
    import dataclasses

    from assay.doc.config import load_suite

    seconds = _hook_timeout(hook_timeout)
    return dataclasses.replace(_checked(load_suite, config, prefix=prefix), hook_timeout_s=seconds)


def _suite(config: Optional[str], hook_timeout: Optional[str], command: str) -> Any:
    """The suite a method command runs in, refused when its config does not enable `command`."""
    from assay.doc.enabled_methods import check_method_gate

    suite = _load_config(config, hook_timeout=hook_timeout)
    _checked(check_method_gate, suite, command)
    return suite


_HOOKS = {"generate": "generation", "judge-coverage": "pointwise", "judge-pairwise": "pairwise"}


def _require(*, command: str = "", suite: Any = None, **values: Optional[str]) -> None:
    """Every missing required argument in one line (eval-kit's wording for one), and with them the
    hook a model command needs when the adapter lacks it: one try tells everything that is missing."""
    missing = [f"--{option.replace('_', '-')}" for option, value in values.items() if value is None or value == ""]
    if not missing:
        return
    message = f"missing required argument{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    hook = _HOOKS.get(command)
    if hook is not None and suite is not None:
        from assay.doc.session import missing_hook

        lacking = _run(missing_hook(suite, hook, command))
        if lacking:
            message += f"; and {lacking}"
    _fail("Execution failed", message)


def _model_settings(
    model: str, provider: Optional[str], effort: str, base_url: Optional[str], cache_dir: Optional[str]
) -> Any:
    from assay.doc.model_run import ModelSettings, check_effort, normalize_provider
    from assay.judge.cache import DirectoryCallCache
    from assay.judge.client import JudgeEndpoint

    def settings() -> ModelSettings:
        endpoint = JudgeEndpoint.from_environment(base_url=base_url)  # the "auth check": where calls go
        return ModelSettings(
            model, normalize_provider(provider), check_effort(effort), endpoint,
            DirectoryCallCache(Path(cache_dir)) if cache_dir else None,
        )

    return _checked(settings)


ConfigOption = typer.Option(None, "--config", help="Suite config (default evals/eval-kit.config.json).")
DryRunOption = typer.Option(False, "--dry-run", help="Print the files that would be written.")
ForceOption = typer.Option(False, "--force", help="Overwrite existing files.")
ModelOption = typer.Option(None, "--model", help="Model name sent to the endpoint.")
ProviderOption = typer.Option(None, "--provider", help="openai (default) or openai:<label>.")
EffortOption = typer.Option(None, "--effort", help="Reasoning effort: low, medium or high.")
BaseUrlOption = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint (default $ASSAY_JUDGE_BASE_URL).")
CacheDirOption = typer.Option(None, "--cache-dir", help="Reuse identical model calls from this directory cache.")
HookTimeoutOption = typer.Option(
    None, "--hook-timeout",
    help="Seconds one call of an adapter.mjs hook may take (default 600, or $ASSAY_DOC_HOOK_TIMEOUT; 0: no limit).",
)
JsonOption = typer.Option(False, "--json", help="Print NDJSON events (run_started, unit, run_finished) instead of lines.")


@_command("init", "Write a starter suite under ./evals (config, adapter, cases and results folders).")
def init_command(
    suite: Optional[str] = typer.Option(None, "--suite", help="Suite template (generic)."),
    adapter_language: Optional[str] = typer.Option(None, "--adapter-language", help="javascript (default) or python."),
    dry_run: bool = DryRunOption,
    force: bool = ForceOption,
) -> None:
    from assay.doc.bootstrap import init_suite, missing_repository_warning

    lines = _checked(
        init_suite, Path.cwd(), suite=suite or "generic", adapter_language=adapter_language or "javascript",
        dry_run=dry_run, force=force,
    )
    for line in lines:
        typer.echo(line)
    # The files are still written (eval-kit's init never refused), but the fix is named now.
    warning = missing_repository_warning(Path.cwd())
    if warning:
        typer.echo(warning, err=True)


@_command("scaffold-case", "Write a starter case (manifest, input, expected items, rubric) under cases.root.")
def scaffold_case_command(
    case: Optional[str] = typer.Option(None, "--case", help="The new case id."),
    config: Optional[str] = ConfigOption,
    dry_run: bool = DryRunOption,
    force: bool = ForceOption,
) -> None:
    from assay.doc.bootstrap import plan_case, write_planned
    from assay.doc.paths import assert_safe_id

    _require(case=case)
    _checked(assert_safe_id, case, "case id")  # before the config: `../x` never reaches the file system
    suite = _load_config(config, prefix="Execution failed")
    for line in _checked(lambda: write_planned(plan_case(suite, case), dry_run=dry_run, force=force)):
        typer.echo(line)


@_command("doctor", "Check the suite: config, roots, adapter, manifests, fixtures, model setup.")
def doctor_command(config: Optional[str] = ConfigOption, hook_timeout: Optional[str] = HookTimeoutOption) -> None:
    _only_checks()
    from assay.doc.doctor import run_doctor

    seconds = _hook_timeout(hook_timeout)

    async def go() -> int:
        count = 0
        async for line in run_doctor(config, hook_timeout_s=seconds):
            typer.echo(line)
            count += 1
        return count

    count = _run(go())
    typer.echo(f"Doctor passed ({count} checks).")


@_command("list-cases", "Print the suite's case ids, sorted.")
def list_cases_command(config: Optional[str] = ConfigOption) -> None:
    _only_checks()
    from assay.doc.cases import discover_case_ids

    case_ids = _checked(discover_case_ids, _load_config(config, prefix="Execution failed"))
    typer.echo("\n".join(case_ids) if case_ids else "No cases found.")


@_command("validate-fixtures", "Check every case manifest against its schema, then the adapter's validate_fixtures.")
def validate_fixtures_command(
    config: Optional[str] = ConfigOption, hook_timeout: Optional[str] = HookTimeoutOption
) -> None:
    _only_checks()
    from assay.doc.fixtures import validate_fixtures

    suite = _load_config(config, hook_timeout=hook_timeout)
    count = _run(validate_fixtures(suite))
    typer.echo(f"Fixtures valid ({count} case manifest(s)).")


@_command("run-case", "Grade a candidate deterministically and write a result bundle; exit 1 on red.")
def run_case_command(
    case: Optional[str] = typer.Option(None, "--case", help="Case id."),
    candidate: Optional[str] = typer.Option(None, "--candidate", help="Candidate file, relative to the repo root."),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Result bundle id (default deterministic-<time>)."),
    config: Optional[str] = ConfigOption,
    hook_timeout: Optional[str] = HookTimeoutOption,
    junit: Optional[str] = typer.Option(None, "--junit", help="Also write a JUnit XML report here."),
    output_json: bool = JsonOption,
) -> None:
    from assay.doc.methods import RunCaseRequest

    suite = _suite(config, hook_timeout, "run-case")
    _require(case=case, candidate=candidate)
    recorded = {"case": case, "candidate": candidate, "run_id": run_id, "config": config}
    _run_method(RunCaseRequest(suite, case, candidate, run_id or None, recorded), junit=junit, json=output_json)


def _run_method(request: Any, *, junit: Optional[str] = None, json: bool = False) -> None:
    from assay.core.run.request import Outputs

    # One unit: a progress line would say nothing the result does not.
    common.run_and_exit("doc", request, Outputs(json=json, junit=junit, quiet=True))


@_command("generate", "Generate a candidate with the model (needs methods.generate.enabled=true).")
def generate_command(
    case: Optional[str] = typer.Option(None, "--case", help="Case id."),
    model: Optional[str] = ModelOption,
    provider: Optional[str] = ProviderOption,
    effort: Optional[str] = EffortOption,
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Result bundle id."),
    config: Optional[str] = ConfigOption,
    hook_timeout: Optional[str] = HookTimeoutOption,
    base_url: Optional[str] = BaseUrlOption,
    cache_dir: Optional[str] = CacheDirOption,
) -> None:
    from assay.doc.methods import GenerateRequest

    suite = _suite(config, hook_timeout, "generate")
    _require(command="generate", suite=suite, case=case, model=model, provider=provider, effort=effort, run_id=run_id)
    _run_method(GenerateRequest(suite, _model_settings(model, provider, effort, base_url, cache_dir), case, run_id))


@_command("judge-coverage", "Pointwise model judge: item-by-item coverage (advisory).")
def judge_coverage_command(
    case: Optional[str] = typer.Option(None, "--case", help="Case id."),
    candidate: Optional[str] = typer.Option(None, "--candidate", help="Candidate file, relative to the repo root."),
    model: Optional[str] = ModelOption,
    provider: Optional[str] = ProviderOption,
    effort: Optional[str] = EffortOption,
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Result bundle id (default judge-coverage-<time>)."),
    config: Optional[str] = ConfigOption,
    hook_timeout: Optional[str] = HookTimeoutOption,
    base_url: Optional[str] = BaseUrlOption,
    cache_dir: Optional[str] = CacheDirOption,
    fixture_label: Optional[str] = typer.Option(None, "--fixture-label", help="Calibration: the fixture's label."),
    expected_outcome: Optional[str] = typer.Option(
        None, "--expected-outcome", help="Calibration: expected-good or expected-bad (flags possible false pass/fail)."
    ),
    output_json: bool = JsonOption,
) -> None:
    suite = _suite(config, hook_timeout, "judge-coverage")
    _require(
        command="judge-coverage", suite=suite, case=case, candidate=candidate, model=model, provider=provider, effort=effort
    )
    if expected_outcome not in (None, "expected-good", "expected-bad"):
        _fail("Execution failed", f"--expected-outcome must be expected-good or expected-bad, got {expected_outcome}")
    from assay.doc.methods import CoverageRequest

    recorded = {"case": case, "candidate": candidate, "run_id": run_id, "config": config, "provider": provider,
                "effort": effort, "fixture_label": fixture_label, "expected_outcome": expected_outcome}
    settings = _model_settings(model, provider, effort, base_url, cache_dir)
    request = CoverageRequest(suite, settings, case, candidate, run_id or None, fixture_label, expected_outcome, recorded)
    _run_method(request, json=output_json)


@_command("judge-pairwise", "Pairwise model judge in a seeded order; --both-orders judges A/B and B/A.")
def judge_pairwise_command(
    case: Optional[str] = typer.Option(None, "--case", help="Case id."),
    candidate_a: Optional[str] = typer.Option(None, "--candidate-a", help="First candidate, relative to the repo root."),
    candidate_b: Optional[str] = typer.Option(None, "--candidate-b", help="Second candidate, relative to the repo root."),
    model: Optional[str] = ModelOption,
    provider: Optional[str] = ProviderOption,
    effort: Optional[str] = EffortOption,
    seed: Optional[str] = typer.Option(None, "--seed", help="Integer seed for the display order."),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Result bundle id."),
    config: Optional[str] = ConfigOption,
    hook_timeout: Optional[str] = HookTimeoutOption,
    base_url: Optional[str] = BaseUrlOption,
    cache_dir: Optional[str] = CacheDirOption,
    both_orders: bool = typer.Option(False, "--both-orders", help="Judge both display orders; disagreement counts as a tie."),
    output_json: bool = JsonOption,
) -> None:
    from assay.doc.methods import PairwiseRequest
    from assay.doc.pairwise import parse_seed

    suite = _suite(config, hook_timeout, "judge-pairwise")
    _require(
        command="judge-pairwise", suite=suite, case=case, candidate_a=candidate_a, candidate_b=candidate_b, model=model,
        provider=provider, effort=effort, seed=seed, run_id=run_id,
    )
    parsed_seed = _checked(parse_seed, seed)

    recorded = {"case": case, "candidate_a": candidate_a, "candidate_b": candidate_b, "run_id": run_id, "config": config,
                "provider": provider, "effort": effort, "seed": seed, "both_orders": both_orders}
    settings = _model_settings(model, provider, effort, base_url, cache_dir)
    request = PairwiseRequest(suite, settings, case, candidate_a, candidate_b, parsed_seed, run_id, both_orders, recorded)
    _run_method(request, json=output_json)


@_command("report", "Compile a manual report from earlier runs with the adapter's compile_report.")
def report_command(
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Result bundle id for the report."),
    generate: Optional[str] = typer.Option(None, "--generate", help="Run id of a generate run."),
    deterministic: Optional[str] = typer.Option(None, "--deterministic", help="Run id of a run-case run."),
    judge_coverage: Optional[str] = typer.Option(None, "--judge-coverage", help="Run id of a judge-coverage run."),
    judge: Optional[str] = typer.Option(None, "--judge", help="Run id of a judge-pairwise run."),
    outcome: Optional[str] = typer.Option(None, "--outcome", help="Run id of an outcome run."),
    config: Optional[str] = ConfigOption,
    hook_timeout: Optional[str] = HookTimeoutOption,
) -> None:
    from assay.doc.methods import ReportRequest

    suite = _suite(config, hook_timeout, "report")
    _require(run_id=run_id)
    given = {"generate": generate, "deterministic": deterministic, "judge-coverage": judge_coverage, "judge": judge,
             "outcome": outcome}
    _run_method(ReportRequest(suite, run_id, {key: value for key, value in given.items() if value}))
