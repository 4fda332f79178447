"""Console lines and number formatting of video runs (GlassKit's wording)."""

from __future__ import annotations

import io

from rich.console import Console

from assay.core.format import format_bytes, format_duration, format_latency, format_rate
from assay.video.model import SampleResult
from assay.core.format import short_repr
from assay.core.run_events import UnitDurable
from assay.video.report import VideoConsole, target_name
from assay.video.run import VideoUnit


def result(**changes):
    fields = dict(
        case="c", target="t", target_label="Step [bold]1[/bold]", sample_index=3, timestamp_s=2.0166666,
        status="failed", expected="red", observed={"x": 1}, observed_value="green", compare_mode=None,
        effective_mode="exact", field=None, reason="expected exact match", source="at",
    )
    fields.update(changes)
    return SampleResult(**fields)


def reporter(*, terminal=False, verbose=False):
    stream = io.StringIO()
    console = Console(file=stream, force_terminal=terminal, width=200, soft_wrap=True)
    return VideoConsole(console, verbose=verbose), stream


def durable(trial, repeat, sample_result):
    return UnitDurable(VideoUnit(trial, repeat, sample_result), lambda: None)


def test_failure_line_uses_reprs_g_format_and_literal_markup():
    report, stream = reporter()
    report.unit_durable(durable(1, 1, result()))
    assert stream.getvalue() == (
        "    FAILED Step [bold]1[/bold] (t) @2.01667s expected='red' observed='green' reason=expected exact match\n"
    )


def test_passed_lines_only_with_verbose_and_trials_are_prefixed():
    quiet, quiet_stream = reporter()
    quiet.unit_durable(durable(1, 1, result(status="passed", reason="matched")))
    assert quiet_stream.getvalue() == ""
    loud, loud_stream = reporter(verbose=True)
    loud.unit_durable(durable(2, 3, result(status="passed", reason="matched", target_label=None)))
    assert loud_stream.getvalue().startswith("    [2/3] PASSED t @2.01667s")


def test_values_are_truncated_to_80_characters():
    text = short_repr("x" * 200)
    assert len(text) == 80 and text.endswith("...")
    assert short_repr(True) == "True" and short_repr(None) == "None"


def test_target_names_show_the_label_only_when_it_differs():
    assert target_name("t", None) == "t"
    assert target_name("t", "t") == "t"
    assert target_name("t", "Step 1") == "Step 1 (t)"


def test_progress_bar_appears_only_on_a_terminal():
    from assay.core.report.progress import ProgressReporter
    from assay.core.run_events import RunFinished, RunStarted

    plain_stream = io.StringIO()
    plain = ProgressReporter(plain_stream, terminal=False, interval=60)
    plain.run_started(RunStarted("video", "r", total=4))
    assert plain._bar is None
    plain.close()
    live = ProgressReporter(io.StringIO(), terminal=True)
    live.run_started(RunStarted("video", "r", total=4))
    assert live._bar is not None
    live.unit_durable(durable(1, 1, result()))
    live.run_finished(RunFinished("video", "r", 1))
    assert live._bar is None  # transient: gone once the run is done


def test_number_formats():
    assert [format_duration(s) for s in (0.24, 125.5, 3723.0)] == ["0.2s", "2m 5.5s", "1h 2m 3.0s"]
    assert [format_latency(s) for s in (0.00022, 0.0456, 1.25, 12.0)] == ["0.22ms", "46ms", "1.25s", "12.0s"]
    assert format_rate(0.8571) == "85.7%"
    assert [format_bytes(n) for n in (0, 1023, 66458, 1258291)] == ["0 B", "1023 B", "64.9 KiB", "1.2 MiB"]
