"""`assay judge …`: how far to trust a model judge — its agreement with human labels — and its call cache.

Exit codes: 0 ok; 2 a usage error or a store error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import typer

from assay.cli import common

__all__ = ["judge_app"]

judge_app = typer.Typer(
    rich_markup_mode=None,
    help="Model judges: agreement with human labels (κ, α, Spearman), clearing the judge cache.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
cache_app = typer.Typer(
    rich_markup_mode=None, help="The judge's call cache.", no_args_is_help=True, add_completion=False,
    pretty_exceptions_enable=False,
)
judge_app.add_typer(cache_app, name="cache")


def _fail(error: BaseException) -> NoReturn:
    common.fail("Error", error, stderr=True, internal="")


def _say(text: str) -> None:
    common.stdout_console().print(text, markup=False, highlight=False)


def _number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _binary_lines(binary: dict[str, Any] | None) -> list[str]:
    if not binary:
        return ["  pass/fail: no unit with both a human and a judge verdict"]
    interval = binary["kappa_interval"]
    shown = f" [{_number(interval[0])}, {_number(interval[1])}]" if interval else ""
    (pp, pf), (fp, ff) = binary["confusion"]["matrix"]
    return [
        f"  pass/fail: {binary['units']} unit(s), agreement {_percent(binary['agreement'])}, "
        f"Cohen's κ {_number(binary['kappa'])}{shown} (95% bootstrap)",
        "    human \\ judge   pass   fail",
        f"    pass           {pp:>5}  {pf:>5}",
        f"    fail           {fp:>5}  {ff:>5}",
    ]


def _text(report: dict[str, Any]) -> list[str]:
    labellers = report["labellers"]
    lines = [f"Agreement with {report['labels']} human label(s) of {report['items']} unit(s) "
             f"(labellers: {', '.join(labellers['labellers']) or '-'})"]
    for row in report["judges"]:
        lines.append("")
        lines.append(f"{row['judge']}: {row['units']} labelled unit(s) in {row['runs']} run(s), "
                     f"{row['first_run_at'][:10]} … {row['last_run_at'][:10]}")
        lines += _binary_lines(row["binary"])
        scores = row["scores"]
        if scores:
            lines.append(f"  scores: {scores['units']} unit(s), Spearman ρ {_number(scores['spearman'])}, "
                         f"Krippendorff's α ({scores['alpha_level']}) {_number(scores['alpha'])}")
    if len(labellers["labellers"]) > 1:
        lines += ["", f"Between labellers ({labellers['units_with_several_labellers']} unit(s) with several): "
                      f"α pass/fail (nominal) {_number(labellers['alpha_verdict'])}, "
                      f"α scores ({labellers['alpha_score_level']}) {_number(labellers['alpha_score'])}"]
        for pair in labellers["pairs"]:
            binary = pair["binary"]
            if binary:
                interval = binary["kappa_interval"]
                shown = f" [{_number(interval[0])}, {_number(interval[1])}]" if interval else ""
                lines.append(f"  {' – '.join(pair['labellers'])}: {binary['units']} unit(s), agreement "
                             f"{_percent(binary['agreement'])}, κ {_number(binary['kappa'])}{shown}")
    for drift in report["drift"]:
        lines += ["", f"Judge drift ({drift['prompt']}), models in the order they first judged:"]
        for model in drift["models"]:
            lines.append(f"  {model['model']} (from {model['first_run_at'][:10]}): {model['units']} unit(s), "
                         f"agreement {_percent(model['agreement'])}, κ {_number(model['kappa'])}")
    return lines


@judge_app.command("agreement")
def agreement_command(
    judge: str | None = typer.Option(None, "--judge", help="Only this judge model (or text of the judge's name)."),
    rubric: str | None = typer.Option(None, "--rubric", help="Only judgements whose rubric contains this text."),
    labeller: str | None = typer.Option(None, "--labeller", help="Only this labeller's labels."),
    by_rubric: bool = typer.Option(False, "--by-rubric", help="One row per judge and rubric, not per judge."),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
) -> None:
    """How often each judge (model + prompt) agrees with the human labels: raw agreement, Cohen's κ with a
    bootstrap interval, the confusion matrix, and for scores Spearman's ρ and Krippendorff's α; between
    labellers too; and per judge model over time (drift)."""
    from assay.core.labels.agreement import AgreementFilter, agreement_report
    from assay.core.labels.store import LabelBook
    from assay.core.results_store import open_store
    from assay.errors import AssayError

    try:
        with open_store(read_only=True) as store:
            labels = LabelBook(store).labels()
            report = agreement_report(store, labels, AgreementFilter(judge, rubric, labeller, by_rubric))
    except AssayError as error:
        _fail(error)
    if as_json:
        sys.stdout.write(json.dumps(report, ensure_ascii=False, indent=2) + "\n")
        return
    if not labels:
        _say("No labels yet: label units in the viewer with `assay view --label` (or `assay labels import FILE`).")
        return
    for line in _text(report):
        _say(line)


@cache_app.command("clear")
def cache_clear_command(
    project: Path = typer.Option(Path("."), "--project", help="The project whose cache to clear: <project>/.assay/cache/judge."),  # noqa: B008
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="A cache folder given to a doc command's --cache-dir instead."),  # noqa: B008
) -> None:
    """Remove every cached judge answer (only the cache's own entries), so each judge is asked again."""
    from assay.core.record import state_folder
    from assay.errors import AssayError, UsageError
    from assay.judge.cache import clear_directory_cache

    try:
        if cache_dir is not None:
            folder = cache_dir.expanduser()
        else:
            if not project.is_dir():
                raise UsageError(f"--project {project}: no such folder")
            folder = state_folder(project.expanduser()) / "cache" / "judge"
        if not folder.is_dir():
            _say(f"No judge cache at {folder}; nothing to clear.")
            return
        cleared = clear_directory_cache(folder)
    except AssayError as error:
        _fail(error)
    except OSError as error:
        _fail(OSError(f"could not clear the judge cache: {error}"))
    _say(f"Removed {cleared.entries} cached judge answer(s) ({cleared.bytes / 1024:.1f} KiB) from {folder}.")
