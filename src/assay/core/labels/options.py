"""The options of `assay labels …` and `assay judge …`, declared once with `option(...)` as every command's are
(`assay.cli.options.params` makes them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from assay.core.run.request import not_empty, option

__all__ = ["LabelOptions", "labeller_given"]


def _one_labeller(given: list[str] | None) -> None:
    """`--labeller`'s check: one labeller, not empty (the commands read one labeller's labels, or everyone's)."""
    if given and len(given) > 1:
        raise ValueError(f"given {len(given)} times ({', '.join(map(repr, given))}); it takes one labeller: give it "
                         "once, or leave it out for every labeller's labels")
    for value in given or ():
        not_empty("every labeller's labels")(value)


@dataclass(frozen=True, kw_only=True)
class LabelOptions:
    """Every option and argument of `labels export|import`, `judge agreement` and `judge cache clear`."""

    output: Path | None = option(None, flag="--output", names=("--output", "-o"), help="Write to this file instead of stdout (`-`: stdout).")
    # A tuple only so that a second --labeller is seen and refused: click would keep the last one silently.
    labeller: tuple[str, ...] = option((), flag="--labeller", check=_one_labeller, help="Only this labeller's labels.")
    run: str | None = option(None, flag="--run", check=not_empty("every run's labels"), help="Only labels of units of this run (id, prefix, latest, latest~N).")
    source: str = option(argument=True, help="A JSONL file of labels (as `assay labels export` writes), or - for stdin.")
    judge: str | None = option(None, flag="--judge", check=not_empty("every judge"), help="Only this judge model (or text of the judge's name).")
    rubric: str | None = option(None, flag="--rubric", check=not_empty("every rubric"), help="Only judgements whose rubric contains this text.")
    by_rubric: bool = option(False, flag="--by-rubric", help="One row per judge and rubric, not per judge.")
    project: Path | None = option(None, flag="--project", help="The project whose cache to clear: <project>/.assay/cache/judge (default: the current folder).")
    cache_dir: Path | None = option(None, flag="--cache-dir", help="A cache folder given to a doc command's --cache-dir instead.")


def labeller_given(given: list[str] | None) -> str | None:
    """The one `--labeller` given (its check refused more), None when it was left out."""
    return given[0] if given else None
