"""Video run reporting: live console lines, the closing summary, and the JSON report.

The console follows GlassKit's wording line for line (users and tests compare it); the JSON
report has GlassKit's schema (`report_type: eval_run`, schema_version 1).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from assay.core.fsutil import names_a_stream, remove_stale_temporaries_of, write_atomically, write_into_stream
from assay.core.gates import pass_rate
from assay.core.format import format_duration, format_latency, format_rate, short_repr
from assay.errors import EXIT_ERROR
from assay.video.model import RunOutcome, SampleResult

@dataclass(frozen=True)
class VideoConclusion:
    """A finished video run (or merge) as its reporters see it."""

    run: RunOutcome
    summary: Mapping[str, Any]
    resumable: int  # adapter errors a resume would retry
    checkpoint_entry: Mapping[str, Any] | None  # the JSON report's `checkpoint`


STATUS_WORD = {"passed": "PASSED", "failed": "FAILED", "error": "ERROR", "ignored": "IGNORED"}
TIMING_LABELS = {
    "individual": ("Avg evaluation latency", "Avg latency"),
    "batch_amortized": ("Avg amortized batch time", "Avg batch/sample"),
    "mixed": ("Avg evaluation time", "Avg eval/sample"),
}


def target_name(target_id: str, label: str | None) -> str:
    return f"{label} ({target_id})" if label and label != target_id else target_id


class VideoConsole:
    """GlassKit's console as a run reporter: a line per result as it becomes durable (failures, or
    all with --verbose), then the closing summary. (Progress is the shared reporter's, on stderr.)"""

    name = "console"

    def __init__(self, console: Console, *, verbose: bool) -> None:
        self.console = console
        self.verbose = verbose

    def _say(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False)

    @staticmethod
    def _prefix(trial: int, repeat: int) -> str:
        return f"[{trial}/{repeat}] " if repeat > 1 else ""

    def section_started(self, event: Any) -> None:
        # As GlassKit prints them: the case and target headings without the trial's `[i/N]` (only result
        # lines carry it), and a blank line before each trial's heading (and before the summary).
        section = event.native
        if section.case is None:
            if section.repeat > 1:
                self._say("")
                self._say(f"Trial {section.trial}/{section.repeat}")
        elif section.target is None:
            self._say(f"Case {section.case.name} ({event.count} samples, video={section.case.video.display_name})")
        else:
            self._say(f"  target {section.target.display_name}: {event.count} samples")

    def unit_durable(self, event: Any) -> None:
        unit = event.native
        result = unit.result
        if result.status == "passed" and not self.verbose:
            return
        name = target_name(result.target, result.target_label)
        # Every status has the same shape, IGNORED included (its expected is the block's, or None).
        line = (
            f"{STATUS_WORD[result.status]} {name} @{result.timestamp_s:g}s "
            f"expected={short_repr(result.expected)} observed={short_repr(result.observed_value)} "
            f"reason={result.reason}"
        )
        self._say(f"    {self._prefix(unit.trial, unit.repeat)}{line}")

    def warning(self, event: Any) -> None:
        # On stderr, as progress is: stdout keeps GlassKit's lines (and their order) as they were.
        from assay.core.console import printable, write_escaped

        write_escaped(sys.stderr, f"Warning: {printable(event.message)}\n")
        sys.stderr.flush()

    def run_finished(self, event: Any) -> None:
        if event.interrupted:
            self._say("Eval interrupted: progress was saved" if event.checkpoint_kept else "Eval interrupted: no reusable progress was saved")
        elif event.error is not None:
            self._say(f"Eval failed: {event.error}")
            for note in getattr(event.error, "__notes__", None) or []:
                self._say(note)
        else:
            print_summary(self.console, event.outcome.run, event.outcome.summary)
            if event.resume_lines:
                errors = "error" if event.outcome.resumable == 1 else "errors"
                self._say(f"{event.outcome.resumable} adapter {errors} can be retried without rerunning completed samples.")
        for line in event.resume_lines:
            self._say(line)



class VideoJsonReport:
    """`--output-json FILE`: GlassKit's JSON report of a finished run."""

    name = "JSON report"

    def __init__(self, path: str) -> None:
        self.path = path

    def run_finished(self, event: Any) -> None:
        if event.outcome is None:
            return
        conclusion = event.outcome
        try:
            write_json_report(self.path, build_report(conclusion.run, conclusion.summary, conclusion.checkpoint_entry))
        except OSError as error:
            # A report CI asked for and did not get is a broken run (as for `--junit`), not a warning beside exit 0:
            # a full disk or a folder that cannot be made left the gates' verdict with no file to read it from.
            reason = error.strerror or str(error)
            where = f" ({error.filename})" if error.filename and str(error.filename) != self.path else ""
            print(f"Error: could not write JSON report {self.path}: {reason}{where}", file=sys.stderr)
            event.require(EXIT_ERROR)


def _timing_mode(results: list[SampleResult]) -> str | None:
    modes = {r.evaluation_timing_mode for r in results if r.status != "ignored" and r.evaluation_timing_mode}
    if not modes:
        return None
    return modes.pop() if len(modes) == 1 else "mixed"


def _average_duration(results: list[SampleResult]) -> float | None:
    durations = [
        r.evaluation_duration_seconds
        for r in results
        if r.status != "ignored" and r.evaluation_duration_seconds is not None
    ]
    return sum(durations) / len(durations) if durations else None


def _counts(results: list[SampleResult]) -> dict[str, int]:
    counts = {"passed": 0, "failed": 0, "error": 0, "ignored": 0}
    for result in results:
        counts[result.status] += 1
    return counts


def _evaluation_time(seconds: float) -> str:
    """GlassKit's per-sample time: ms below 1 s, `1.25s` below 10 s, then as a duration (`1m 5.0s`)."""
    return format_latency(seconds) if seconds < 10 else format_duration(seconds)


def _by_target_table(trial_results: list[list[SampleResult]], show_timing: bool) -> Table:
    """A single run's table: rates and counts per target id (sorted, cases merged); the timing column
    only when the run timed any evaluation."""
    results = trial_results[0]
    table = Table(title="By target")
    for header in ("Target", "Pass rate", "Passed", "Failed", "Errors", "Ignored"):
        table.add_column(header, overflow="fold")
    if show_timing:
        table.add_column(TIMING_LABELS.get(_timing_mode(results) or "mixed", TIMING_LABELS["mixed"])[1], overflow="fold")
    grouped: dict[str, list[SampleResult]] = defaultdict(list)
    for result in results:
        grouped[result.target].append(result)
    for target_id in sorted(grouped):
        rows = grouped[target_id]
        counts = _counts(rows)
        label = next((row.target_label for row in rows if row.target_label), None)
        cells = [
            escape(target_name(target_id, label)),
            format_rate(pass_rate(counts["passed"], counts["failed"], counts["error"])),
            str(counts["passed"]), str(counts["failed"]), str(counts["error"]), str(counts["ignored"]),
        ]
        if show_timing:
            average = _average_duration(rows)
            cells.append(_evaluation_time(average) if average is not None else "n/a")
        table.add_row(*cells)
    return table


def _repeated_by_target_table(outcome: RunOutcome) -> Table:
    """A repeated run's table: per target id, its trials' pass rates and how its samples fared across them."""
    from assay.video.gates import stability_rows

    trials = [trial.results for trial in outcome.trials]
    table = Table(title="By target")
    for header in ("Target", "Pass min / mean / max", "Samples", "Pass all", "Fail all", "Flaky", "Errors"):
        table.add_column(header, overflow="fold")
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in stability_rows(trials):
        grouped[row["target"]].append(row)
    for target_id in sorted(grouped):
        rows = grouped[target_id]
        rates = []
        for results in trials:
            counts = _counts([result for result in results if result.target == target_id])
            rates.append(pass_rate(counts["passed"], counts["failed"], counts["error"]))
        label = next((row["target_label"] for row in rows if row["target_label"]), None)
        rate_text = f"{min(rates) * 100:.1f}/{sum(rates) / len(rates) * 100:.1f}/{max(rates) * 100:.1f}%" if rates else "n/a"
        table.add_row(
            escape(target_name(target_id, label)),
            rate_text,
            str(sum(1 for row in rows if not row["ignored"])),
            str(sum(1 for row in rows if row["consistently_passed"])),
            str(sum(1 for row in rows if row["consistently_failed"])),
            str(sum(1 for row in rows if row["flaky"])),
            str(sum(1 for row in rows if row["errors"])),
        )
    return table


def print_summary(console: Console, outcome: RunOutcome, summary: dict[str, Any]) -> None:
    out = lambda text: console.print(text, markup=False, highlight=False)  # noqa: E731
    repeat = outcome.repeat
    out("")  # GlassKit's blank line between the results and the summary
    out(f"Eval: {outcome.eval_directory.path}")
    out(f"Cases: {len(outcome.eval_directory.cases)}")
    if repeat == 1:
        trial = outcome.trials[0]
        counts = _counts(trial.results)
        evaluated = counts["passed"] + counts["failed"] + counts["error"]
        out(
            f"Samples: {evaluated} evaluated, {counts['passed']} passed, {counts['failed']} failed, "
            f"{counts['error']} errors, {counts['ignored']} ignored"
        )
        out(f"Pass rate: {format_rate(pass_rate(counts['passed'], counts['failed'], counts['error']))}")
    else:
        out(
            f"Trials: {repeat} total, {summary['successful_trials']} passed gates, "
            f"{repeat - summary['successful_trials']} failed gates"
        )
        out(f"Samples: {summary['evaluated_samples']} evaluated per trial, {summary['ignored_samples']} ignored")
        out(
            f"Attempts: {summary['evaluated_attempts']} evaluated, {summary['passed_attempts']} passed, "
            f"{summary['failed_attempts']} failed, {summary['error_attempts']} errors"
        )
        out(
            "Trial pass rate (min / mean / max): "
            f"{format_rate(summary['minimum_trial_pass_rate'])} / {format_rate(summary['mean_trial_pass_rate'])} / "
            f"{format_rate(summary['maximum_trial_pass_rate'])}"
        )
        out(
            f"Stability: {summary['consistently_passed_samples']} consistently passed, "
            f"{summary['consistently_failed_samples']} consistently failed, {summary['flaky_samples']} flaky, "
            f"{summary['error_samples']} with errors"
        )
    out(f"Duration: {format_duration(outcome.duration_seconds)}")
    mode = summary["evaluation_timing_mode"]
    average = summary["average_evaluation_seconds_per_attempt"]
    item = "sample" if repeat == 1 else "attempt"  # a repeated run times attempts
    if average is not None:
        label = TIMING_LABELS.get(mode or "mixed", TIMING_LABELS["mixed"])[0]
        out(f"{label}: {_evaluation_time(average)}/{item}")
        out(_throughput_line(outcome, summary, item))
    if repeat > 1:
        by_trial = Table(title="By trial")
        for header in ("Trial", "Pass rate", "Passed", "Failed", "Errors", "Gates", "Duration"):
            by_trial.add_column(header)
        for trial in outcome.trials:
            counts = _counts(trial.results)
            by_trial.add_row(
                str(trial.trial),
                format_rate(pass_rate(counts["passed"], counts["failed"], counts["error"])),
                str(counts["passed"]), str(counts["failed"]), str(counts["error"]),
                "passed" if trial.success else "failed", format_duration(trial.duration_seconds),
            )
        console.print(by_trial)
    failed_gates = [(f"Trial {trial.trial}", gate) for trial in outcome.trials for gate in trial.gates if not gate.passed]
    failed_gates += [("Stability", gate) for gate in outcome.gates if not gate.passed]
    if failed_gates:
        table = Table(title="Failed gates")
        if repeat > 1:
            table.add_column("Scope")
        table.add_column("Gate", overflow="fold")
        table.add_column("Detail", overflow="fold")
        for scope, gate in failed_gates:
            cells = [escape(gate.name), escape(gate.message)]
            table.add_row(*([scope] if repeat > 1 else []), *cells)
        console.print(table)
    if repeat == 1:
        console.print(_by_target_table([trial.results for trial in outcome.trials], show_timing=average is not None))
    else:
        console.print(_repeated_by_target_table(outcome))
        _print_unstable(console, outcome)


def _throughput_line(outcome: RunOutcome, summary: Mapping[str, Any], item: str = "sample") -> str:
    """GlassKit's line; after a resume it counts only the attempts this run evaluated, and says so."""
    reused = outcome.reused_attempts
    if not reused:
        return f"Throughput: {summary['throughput_attempts_per_second']:.2f} {item}s/s"
    evaluated = summary["evaluated_attempts"] - reused
    duration = outcome.duration_seconds
    rate = evaluated / duration if evaluated and duration > 0 else 0.0
    return f"Throughput: {rate:.2f} {item}s/s ({evaluated} evaluated in this run, {reused} reused from the checkpoint)"


def _finding(row: Mapping[str, Any]) -> str:
    """Every finding of an unstable or failing sample, as GlassKit lists them."""
    findings = []
    if row["flaky"]:
        findings.append("flaky")
    if row["consistently_failed"]:
        findings.append("failed every trial")
    if row["errors"]:
        findings.append("adapter/comparison errors")
    return ", ".join(findings)


def _print_unstable(console: Console, outcome: RunOutcome) -> None:
    from assay.video.gates import stability_rows

    rows = [
        row for row in stability_rows([trial.results for trial in outcome.trials])
        if row["flaky"] or row["consistently_failed"] or row["errors"]
    ]
    if not rows:
        return
    table = Table(title="Unstable and failing samples")
    for header in ("Case", "Target", "Time", "Outcomes", "Finding"):
        table.add_column(header, overflow="fold")
    letters = {"passed": "P", "failed": "F", "error": "E", "ignored": "I"}
    for row in rows:
        table.add_row(
            escape(row["case"]), escape(target_name(row["target"], row["target_label"])),
            f"{row['timestamp_s']:g}s", "/".join(letters[s] for s in row["statuses"]), _finding(row),
        )
    console.print(table)


def build_report(outcome: RunOutcome, summary: dict[str, Any], checkpoint: dict[str, Any] | None) -> dict[str, Any]:
    from assay.video.gates import stability_rows, summarize_trial

    return {
        "schema_version": 1,
        "report_type": "eval_run",
        "eval_dir": str(outcome.eval_directory.path),
        "cases": [case.name for case in outcome.eval_directory.cases],
        "repeat_count": outcome.repeat,
        "success": outcome.success,
        "checkpoint": checkpoint,
        "summary": summary,
        "gates": [gate.to_json() for gate in outcome.gates],
        "trials": [
            {
                "trial": trial.trial,
                "success": trial.success,
                "summary": summarize_trial(trial.results, trial.duration_seconds),
                "gates": [gate.to_json() for gate in trial.gates],
                "results": [result.to_report() for result in trial.results],
            }
            for trial in outcome.trials
        ],
        "stability": stability_rows([trial.results for trial in outcome.trials]),
    }


def write_json_report(path: str, report: dict[str, Any]) -> None:
    target = Path(path)
    text = json.dumps(report, indent=2, sort_keys=True, ensure_ascii=True) + "\n"
    if names_a_stream(target):  # `--output-json /dev/stdout`, a pipe: written into, as GlassKit does
        write_into_stream(target, text.encode("utf-8"))
        return
    if target.is_symlink():  # a link to the report (kept elsewhere) stays a link: the file it names is replaced
        target = target.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries_of(target)  # what a run killed while writing this report left beside it
    write_atomically(target, text)
