"""`assay judge …`: how far to trust a model judge — its agreement with human labels — and its call cache.

Exit codes: 0 ok; 2 a usage error or a store error.
"""

from __future__ import annotations

from assay.cli import common
from assay.cli.options import JSON, Given, command, group, params
from assay.core.labels.options import LabelOptions, labeller_given

__all__ = ["judge_app"]

judge_app = group("Model judges: agreement with human labels (κ, α, Spearman), clearing the judge cache.")
cache_app = group("The judge's call cache.")
judge_app.add_typer(cache_app, name="cache")


@command(judge_app, "agreement", *params(LabelOptions, "judge rubric labeller by_rubric",
                                         JSON.but(help="Print the figures as JSON.")), only_reads=True)
def agreement_command(given: Given) -> None:
    """How often each judge (model + prompt) agrees with the human labels: raw agreement, Cohen's κ with a
    bootstrap interval, the confusion matrix, and for scores Spearman's ρ and Krippendorff's α; between
    labellers too; and per judge model over time (drift)."""
    from assay.core.labels.agreement import AgreementFilter, checked_agreement_report
    from assay.core.labels.report import agreement_lines
    from assay.core.labels.store import LabelBook

    with common.store() as store:
        selection = AgreementFilter(given.judge, given.rubric, labeller_given(given.labeller), given.by_rubric)
        book = LabelBook(store)
        report = checked_agreement_report(store, book, selection)
    common.skipped_label_lines(book.skipped)
    common.show(given.json, report, agreement_lines(report))


# It keeps no results: a reader that leaves (`| head -0`) stops it as Ctrl-C would, without "finished results are kept".
@command(cache_app, "clear", *params(LabelOptions, "project cache_dir"), only_reads=True)
def cache_clear_command(given: Given) -> None:
    """Remove every cached judge answer (only the cache's own entries), so each judge is asked again."""
    from assay.judge.cache import clear_cache_line

    with common.failing():
        common.say(clear_cache_line(given.project, given.cache_dir))
