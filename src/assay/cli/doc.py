"""`assay doc`: eval-kit-compatible document evals (init, doctor, run-case, model judges, report).

Every failure prints one line to stderr with its stage prefix and exits 2; only a red verdict exits 1.
The options are declared in `assay.doc.command_line.DocOptions`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import sys
from collections.abc import Coroutine, Iterable
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from assay.cli import common
from assay.cli.options import JSON, JUNIT, Given, Param, command, group, params
from assay.doc.command_line import DocOptions
from assay.errors import EXIT_ERROR

try:  # recent typer ships its own copy of click; its errors are not click's classes
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - typer releases that use click itself
    from click import exceptions as click_errors

__all__ = ["doc_app"]

doc_app = group("Document evals: eval-kit suites (config, cases, adapters, deterministic grading, model judges).")


class EvalKitGroup(TyperGroup):
    """A command it does not know is eval-kit's `Unknown command: <name>` on stderr, then the help on
    stdout (exit 2, a usage error)."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            from assay.core.format import did_you_mean

            hint = did_you_mean(name, self.list_commands(ctx), form=" (did you mean {}?)", shown=str)
            typer.echo(f"Unknown command: {name}{hint}", err=True)
            typer.echo(ctx.get_help())
            raise typer.Exit(EXIT_ERROR)
        return super().resolve_command(ctx, args)


doc_app.info.cls = EvalKitGroup
DOC_JSON = JSON.but(help="Print NDJSON events (run_started, unit, run_finished) instead of lines.")
MODEL = "model provider effort"


def _failing(prefix: str = "Execution failed") -> Any:
    """eval-kit's failure: one line under its stage `prefix` on stderr, a bug by its message, exit 2."""
    return common.failing(prefix, exit_code=EXIT_ERROR, internal=None)


def _parse_message(error: Any) -> str:
    message = error.format_message()
    if isinstance(error, click_errors.BadOptionUsage) and "requires an argument" in message:
        return f"missing value for {error.option_name}"
    if isinstance(error, click_errors.NoSuchOption):  # a misspelt flag names the one meant, as a command does
        from assay.core.format import did_you_mean

        hint = did_you_mean(error.option_name, error.possibilities or (), form=" (did you mean {}?)", shown=str)
        return f"unknown option {error.option_name}{hint}"
    extra = re.match(r"Got unexpected extra argument(?:s|\(s\))? \((.*)\)", message)
    return f"unexpected positional argument {extra.group(1)}" if extra else message


class EvalKitCommand(TyperCommand):
    """Parse errors in eval-kit's words and exit code; a value that looks like a flag is a missing value."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        args = [arg for arg in args if arg != "--"]  # eval-kit skips a lone `--`
        takes_value = {name for param in self.params if not getattr(param, "is_flag", False) for name in param.opts}
        for position, token in enumerate(args):
            following = args[position + 1] if position + 1 < len(args) else None
            if token in takes_value and (following is None or following == "" or following.startswith("--")):
                common.fail("Error parsing arguments", f"missing value for {token}", stderr=True, exit_code=EXIT_ERROR)
        try:
            return super().parse_args(ctx, args)
        except click_errors.UsageError as error:
            common.fail("Error parsing arguments", _parse_message(error), stderr=True, exit_code=EXIT_ERROR)


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
        common.fail("Execution failed", error, stderr=True, exit_code=EXIT_ERROR)


def _suite(given: Given, method: str = "", prefix: str = "Error loading config") -> Any:
    """The suite a command runs in, with its `--hook-timeout`; a method is refused when the config does not enable it."""
    from assay.doc.command_line import hook_timeout_seconds
    from assay.doc.config import NoRepositoryRootError, load_suite
    from assay.doc.enabled_methods import check_config_method_gate, check_method_gate

    with _failing():
        seconds = hook_timeout_seconds(getattr(given, "hook_timeout", None))
    with _failing(prefix):
        try:
            suite = dataclasses.replace(load_suite(given.config), hook_timeout_s=seconds)
        except NoRepositoryRootError as error:
            # eval-kit had no such refusal (its root became `/`) and gated the method next: a method the
            # config switches off says so first, wherever the config lies.
            if method and error.raw is not None and error.config_path is not None:
                with _failing():
                    check_config_method_gate(error.raw, error.config_path, method)
            raise
    if method:
        with _failing():
            check_method_gate(suite, method)
    return suite


def _echo(lines: Iterable[str]) -> None:
    for line in lines:
        typer.echo(line)


def _command(name: str, help_text: str, *items: str | Param, only_reads: bool = False) -> Any:
    return command(doc_app, name, *params(DocOptions, *items), help=help_text, cls=EvalKitCommand, only_reads=only_reads)


def _method(name: str, help_text: str, *items: str | Param) -> None:
    """A method command: its request made from the options, run by the pipeline (one unit: no progress line)."""

    def run_method(given: Given) -> None:
        from assay.doc.command_line import method_request

        suite = _suite(given, name)
        request = _run(method_request(name, suite, vars(given)))
        common.run_and_exit("doc", request, given.outputs(quiet=True))

    _command(name, help_text, *items)(run_method)


def _written(lines: Any) -> None:
    """`lines` said once the files they name are written: a reader leaving then (`| head -1`) loses only lines."""
    from assay.core.stdout_guard import results_made

    results_made()
    _echo(lines)


@_command("init", "Write a starter suite under ./evals (config, adapter, cases and results folders).",
          "suite adapter_language dry_run force")
def init_command(given: Given) -> None:
    from assay.doc.bootstrap import init_suite, missing_repository_warning

    with _failing():
        lines = init_suite(Path.cwd(), suite=given.suite or "generic", adapter_language=given.adapter_language or "javascript",
                           dry_run=given.dry_run, force=given.force)
    _written(lines)
    # The files are still written (eval-kit's init never refused), but the fix is named now.
    warning = missing_repository_warning(Path.cwd())
    if warning:
        typer.echo(warning, err=True)


@_command("scaffold-case", "Write a starter case (manifest, input, expected items, rubric) under cases.root.",
          params(DocOptions, "case")[0].but(help="The new case id."), "config dry_run force")
def scaffold_case_command(given: Given) -> None:
    from assay.doc.bootstrap import plan_case, write_planned
    from assay.doc.paths import assert_safe_id

    if not given.case:
        common.fail("Execution failed", "missing required argument --case", stderr=True, exit_code=EXIT_ERROR)
    with _failing():
        assert_safe_id(given.case, "case id")  # before the config: `../x` never reaches the file system
    suite = _suite(given, prefix="Execution failed")
    with _failing():
        lines = write_planned(plan_case(suite, given.case), dry_run=given.dry_run, force=given.force)
    _written(lines)


@_command("doctor", "Check the suite: config, roots, adapter, manifests, fixtures, model setup.", "config hook_timeout",
          only_reads=True)
def doctor_command(given: Given) -> None:
    from assay.doc.command_line import hook_timeout_seconds
    from assay.doc.doctor import run_doctor

    with _failing():
        seconds = hook_timeout_seconds(given.hook_timeout)

    async def go() -> int:
        count = 0
        async for line in run_doctor(given.config, hook_timeout_s=seconds):
            typer.echo(line)
            count += 1
        return count

    typer.echo(f"Doctor passed ({_run(go())} checks).")


@_command("list-cases", "Print the suite's case ids, sorted.", "config", only_reads=True)
def list_cases_command(given: Given) -> None:
    from assay.doc.cases import discover_case_ids, left_out_note

    suite = _suite(given, prefix="Execution failed")
    skipped: list[str] = []
    with _failing():
        case_ids = discover_case_ids(suite, skipped)
        left_out = "" if case_ids else left_out_note(suite)
    typer.echo("\n".join(case_ids) if case_ids else "No cases found.")
    for reason in skipped:  # eval-kit skips them silently; a case that vanished over a typo should say so
        typer.echo(f"Skipped {reason} (`assay doc doctor` checks every manifest).", err=True)
    if left_out:  # none selected, yet there are cases: a misspelt `cases.include` is the likely cause
        typer.echo(f"{left_out[0].upper()}{left_out[1:]}.", err=True)


@_command("validate-fixtures", "Check every case manifest against its schema, then the adapter's validate_fixtures.",
          "config hook_timeout", only_reads=True)
def validate_fixtures_command(given: Given) -> None:
    from assay.doc.fixtures import validate_fixtures

    _run(validate_fixtures(_suite(given)))
    typer.echo("Fixtures validation completed successfully.")  # eval-kit's line


RUN_ID = params(DocOptions, "run_id")[0]
_method("run-case", "Grade a candidate deterministically and write a result bundle; exit 1 on red.", "case candidate",
        RUN_ID.but(help="Result bundle id (default deterministic-<time>)."), "config hook_timeout", JUNIT, DOC_JSON)
_method("generate", "Generate a candidate with the model (needs methods.generate.enabled=true).",
        f"case {MODEL} run_id config hook_timeout base_url cache_dir")
_method("judge-coverage", "Pointwise model judge: item-by-item coverage (advisory).", f"case candidate {MODEL}",
        RUN_ID.but(help="Result bundle id (default judge-coverage-<time>)."),
        "config hook_timeout base_url cache_dir fixture_label expected_outcome", DOC_JSON)
_method("judge-pairwise", "Pairwise model judge in a seeded order; --both-orders judges A/B and B/A.",
        f"case candidate_a candidate_b {MODEL} seed run_id config hook_timeout base_url cache_dir both_orders", DOC_JSON)
_method("report", "Compile a manual report from earlier runs with the adapter's compile_report.",
        RUN_ID.but(help="Result bundle id for the report."),
        "generate deterministic judge_coverage judge outcome config hook_timeout")
