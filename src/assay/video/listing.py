"""`assay video list-samples`: one table of every expanded sample, in case, target and sample order."""

from __future__ import annotations

from typing import Any

from assay.video.model import EvalDirectory


def _short_repr(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def print_sample_table(console: Any, directory: EvalDirectory) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"Samples: {escape(str(directory.path))}")
    for header in ("Case", "Target", "Time", "Expected", "Mode", "Field", "Ignored", "Source"):
        table.add_column(header, overflow="fold")
    for case in directory.cases:
        for target in case.targets:
            name = escape(target.display_name)
            for sample in target.samples:
                table.add_row(
                    escape(case.name),
                    name,
                    f"{sample.timestamp_s:g}s",
                    escape(_short_repr(sample.expected)) if sample.has_expectation else "",
                    sample.compare.mode or "",
                    escape(sample.field or ""),
                    escape(sample.ignore or ""),
                    sample.source,
                )
    console.print(table)
