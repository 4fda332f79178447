"""`assay video list-samples`: one table of every expanded sample, in case, target and sample order."""

from __future__ import annotations

import sys

from assay.core.format import short_repr
from assay.core.report.table import render_table
from assay.video.model import EvalDirectory

HEADERS = ("Case", "Target", "Time", "Expected", "Mode", "Field", "Ignored", "Source")


def sample_rows(directory: EvalDirectory) -> list[tuple[str, ...]]:
    rows = []
    for case in directory.cases:
        for target in case.targets:
            name = target.display_name
            for sample in target.samples:
                rows.append(
                    (
                        case.name,
                        name,
                        f"{sample.timestamp_s:g}s",
                        short_repr(sample.expected),  # an ignored block without expect shows None, as in GlassKit
                        sample.compare.mode or "",  # the declared mode only; blank when inferred
                        sample.field or "",
                        sample.ignore or "",
                        sample.source,
                    )
                )
    return rows


def print_sample_table(directory: EvalDirectory) -> None:
    text = render_table(f"Samples: {directory.path}", HEADERS, sample_rows(directory))
    sys.stdout.write(text + "\n")
