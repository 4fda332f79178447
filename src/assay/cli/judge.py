"""`assay judge …`: how far to trust a model judge — its agreement with human labels — and its call cache.

Exit codes: 0 ok; 2 a usage error or a store error.
"""

from __future__ import annotations

from pathlib import Path


from assay.cli import common
from assay.cli.options import JSON, Given, command, group, option

__all__ = ["judge_app"]

judge_app = group("Model judges: agreement with human labels (κ, α, Spearman), clearing the judge cache.")
cache_app = group("The judge's call cache.")
judge_app.add_typer(cache_app, name="cache")


@command(judge_app, "agreement", option("judge", str | None, None, "--judge", help="Only this judge model (or text of the judge's name)."),
         option("rubric", str | None, None, "--rubric", help="Only judgements whose rubric contains this text."),
         option("labeller", str | None, None, "--labeller", help="Only this labeller's labels."),
         option("by_rubric", bool, False, "--by-rubric", help="One row per judge and rubric, not per judge."),
         JSON.but(help="Print the figures as JSON."))
def agreement_command(given: Given) -> None:
    """How often each judge (model + prompt) agrees with the human labels: raw agreement, Cohen's κ with a
    bootstrap interval, the confusion matrix, and for scores Spearman's ρ and Krippendorff's α; between
    labellers too; and per judge model over time (drift)."""
    from assay.core.labels.agreement import AgreementFilter, agreement_report
    from assay.core.labels.report import agreement_lines
    from assay.core.labels.store import LabelBook

    with common.store() as store:
        labels = LabelBook(store).labels()
        report = agreement_report(store, labels, AgreementFilter(given.judge, given.rubric, given.labeller, given.by_rubric))
    common.show(given.json, report, agreement_lines(report))


@command(cache_app, "clear", option("project", Path, Path("."), "--project",
                                    help="The project whose cache to clear: <project>/.assay/cache/judge."),
         option("cache_dir", Path | None, None, "--cache-dir", help="A cache folder given to a doc command's --cache-dir instead."))
def cache_clear_command(given: Given) -> None:
    """Remove every cached judge answer (only the cache's own entries), so each judge is asked again."""
    from assay.judge.cache import clear_cache_line

    with common.failing():
        common.say(clear_cache_line(given.project, given.cache_dir))
