"""Delivering an agent run: the console (progress bar, results, summary), NDJSON lines with the receipt,
and the `--dry` plan (every slot: carried, executed or not dispatched, with its reason).

The first two are reporters on the run events (`assay.core.run_events`); JUnit and the results store
are the pipeline's own reporters.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from assay.agent.record import EXECUTED, INTERRUPTED, NOT_DISPATCHED, REUSED, AttemptResult
from assay.agent.slot_result import CARRIED, is_early_exit
from assay.core.format import format_duration, format_latency, format_rate, format_usd
from assay.core.gates import pass_rate
from assay.core.report.table import render_table

_MARKS = {"passed": "✓", "scored": "◆", "failed": "✗", "errored": "!", "skipped": "-"}


def attempt_title(result: AttemptResult) -> str:
    """`weather/brooklyn [local-agent/demo-model]`, plus `#n` for attempts after the first."""
    configuration = result.agent if not result.model else f"{result.agent}/{result.model}"
    suffix = f" #{result.ordinal + 1}" if result.ordinal else ""
    return f"{result.eval_id}{suffix} [{configuration}]"


def verdict_label(result: AttemptResult) -> str:
    if result.outcome == NOT_DISPATCHED:
        return "not dispatched (early exit)" if is_early_exit(result) else "not dispatched"
    if result.outcome == INTERRUPTED:
        return "interrupted"
    if result.verdict == "scored":
        if result.score_state == "unavailable":
            label = "unrankable"
        else:
            label = f"scored {result.score:g}"
    else:
        label = result.verdict or "?"
    return f"{label} (carried)" if result.outcome == CARRIED else label


def carried_line(result: Any) -> str | None:
    """`carried from run X` for a carried slot (its verdict is that run's attempt's), else None."""
    origin = getattr(result, "carried_from", None)
    return f"carried from run {origin['run_id']}" if origin else None


def failure_lines(result: AttemptResult) -> list[str]:
    """Why an attempt did not pass, one line per failing or unavailable assertion (named, with its reason)."""
    lines = []
    if result.error is not None:
        where = f" ({result.error['where']})" if result.error.get("where") else ""
        lines.append(f"{result.error['code']}: {result.error['message']}{where}")
    for assertion in result.assertions:
        if not shown_in_failure_lines(assertion):
            continue
        status = assertion["status"]
        name = assertion.get("label") or assertion.get("key") or assertion["description"]
        optional = " (optional)" if assertion.get("optional") else ""
        scope = "" if assertion["scope"] == "t" else f" [{assertion['scope']}]"
        reason = assertion.get("reason") or ""
        if status == "matched":  # a scored assertion (a judge's) that answered with too low a score: it fails
            status, reason = "below threshold", f"score {assertion['value']:.3f} below {assertion['threshold']:g}"
        lines.append(f"{status}{optional}: {name}{scope}" + (f": {reason}" if reason else ""))
    return lines


def indented(lines: Sequence[str], prefix: str) -> list[str]:
    """`lines` under `prefix`, a line holding several (a command's stderr tail in a message) continued two
    spaces further in instead of at the margin."""
    out = []
    for line in lines:
        first, *rest = line.split("\n")
        out.append(f"{prefix}{first}")
        out.extend(f"{prefix}  {more}" for more in rest)
    return out


def shown_in_failure_lines(assertion: dict[str, Any]) -> bool:
    """Whether `failure_lines` has a line for this assertion: any not matched, or scored below its threshold."""
    return assertion["status"] != "matched" or _below(assertion)


def _below(assertion: dict[str, Any]) -> bool:
    threshold = assertion.get("threshold")
    value = assertion.get("value")
    return threshold is not None and value is not None and value < threshold


def run_title(results: Sequence[AttemptResult], interrupted: bool, budget_exhausted: Sequence[str]) -> str:
    if interrupted:
        return "INTERRUPTED"
    verdicts = {result.verdict for result in results}
    if "errored" in verdicts:
        return "ERRORED"
    if budget_exhausted or any(result.outcome == NOT_DISPATCHED and not is_early_exit(result) for result in results):
        return "INCOMPLETE"
    if "failed" in verdicts:
        return "FAILED"
    if "scored" in verdicts and "passed" not in verdicts:
        return "SCORED"
    if verdicts <= {"skipped"}:
        return "COMPLETED"
    return "PASSED"


def experiment_rows(results: Sequence[AttemptResult]) -> list[list[str]]:
    groups: dict[str, list[AttemptResult]] = {}
    for result in results:
        groups.setdefault(result.experiment_id, []).append(result)
    rows = []
    for experiment_id, members in groups.items():
        first = members[0]
        counts = {name: sum(1 for r in members if r.verdict == name) for name in _MARKS}
        graded = counts["passed"] + counts["failed"] + counts["errored"]
        durations = [r.duration_seconds for r in members if r.outcome in (EXECUTED, REUSED) and r.verdict]
        tokens = [_tokens(r) for r in members]
        token_text = str(sum(t for t in tokens if t is not None)) if any(t is not None for t in tokens) else "-"
        rate = pass_rate(counts["passed"], counts["failed"], counts["errored"], when_empty=None)
        passes = f"{counts['passed']}/{graded} ({format_rate(rate)})" if rate is not None else ""
        if counts["scored"]:
            # Score evals beside pass/fail ones: both, or the pass count would be nowhere.
            scores = [r.score for r in members if r.verdict == "scored" and r.score_state == "complete"]
            score = f"score {sum(scores):g} over {len(scores)}" if scores else "unrankable"
            headline = f"{passes} · {score}" if passes else score
        else:
            headline = passes or "-"
        rows.append([
            experiment_id,
            first.agent if not first.model else f"{first.agent}/{first.model}",
            headline,
            str(counts["failed"]),
            str(counts["errored"]),
            str(counts["skipped"]),
            str(sum(1 for r in members if r.outcome in (NOT_DISPATCHED, INTERRUPTED))),
            format_latency(sum(durations) / len(durations)) if durations else "-",
            token_text,
        ])
    return rows


def _tokens(result: AttemptResult) -> int | None:
    usage = result.usage
    if not usage or ("input_tokens" not in usage and "output_tokens" not in usage):
        return None
    return sum(usage.get(name, 0) for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens"))


class ConsoleReporter:
    """The plan, each failed or errored attempt as it finishes (every attempt with --verbose), then
    the results and a summary. Progress is the shared reporter's, on stderr."""

    name = "console"

    def __init__(self, console: Any, *, verbose: bool = False) -> None:
        self.console = console  # a core.console.LineWriter: `print(line)` as written
        self.verbose = verbose
        self._done = 0
        self._total = 0

    def _say(self, text: str) -> None:
        self.console.print(text)

    def run_started(self, event: Any) -> None:
        plan, reused = event.native, event.reused
        carried, skipped = getattr(plan, "carried", 0), getattr(plan, "skipped", 0)
        self._total = len(plan)
        # A CI log of one shard names it, and the whole plan it is a part of.
        line = plan_head(plan, getattr(plan, "shard", None))
        if reused:
            line += f" · {reused} reused from the checkpoint"
        if carried:
            line += f" · {carried} carried from earlier runs"
        if carried or skipped:
            line += f" · {len(plan) - carried - reused - skipped} to run"
        if skipped:
            line += f" · {skipped} not dispatched"  # as `--dry` counts them
        self._say(line)
        self._done = reused

    def unit_durable(self, event: Any) -> None:
        result = event.native
        self._done += 1
        if self.verbose or result.verdict in ("failed", "errored"):
            mark = _MARKS.get(result.verdict or "", "?")
            self._say(f"[{self._done}/{self._total}] {mark} {verdict_label(result)}  {attempt_title(result)}")

    def warning(self, event: Any) -> None:
        self._say(f"warning [{event.code}]: {event.message}")

    def run_finished(self, event: Any) -> None:
        if event.outcome is not None:
            self.summary(event.outcome, resume_lines=event.resume_lines if event.checkpoint_kept else ())
            return
        if event.error is not None:
            print(f"Error: {event.error}", file=sys.stderr)  # results go to stdout, errors to stderr
            return
        self._say("Interrupted.")
        for line in event.resume_lines:
            self._say(line)

    def summary(self, outcome: Any, *, resume_lines: Sequence[str] = ()) -> None:
        results = outcome.summaries  # verdicts, titles and failing lines: the transcripts are not needed
        problems = [r for r in results if r.verdict in ("failed", "errored") or (self.verbose and r.verdict)]
        if problems:
            self._say("")
            self._say("RESULTS")
            for result in problems:
                mark = _MARKS.get(result.verdict or "", "?")
                self._say(f"  {mark} {verdict_label(result).upper()}  {attempt_title(result)}")
                for line in indented(failure_lines(result), "      "):
                    self._say(line)
                carried = carried_line(result)
                if carried is not None:
                    self._say(f"      {carried} (assay agent show {result.locator}; --rerun runs it again)")
                if result.verdict == "errored":
                    self._say(f"      details: assay agent show {result.locator}")
        interrupted = [r for r in results if r.outcome == INTERRUPTED]
        if interrupted:
            unstarted = sum(1 for r in interrupted if (getattr(r, "decision", None) or {}).get("code") == "interrupted")
            said = [f"{len(interrupted) - unstarted} attempt(s) interrupted before they finished"] if len(interrupted) > unstarted else []
            if unstarted:
                said.append(f"{unstarted} not started")
            self._say("; ".join(said))
        self._say("")
        headers = ["experiment", "agent/model", "passed", "failed", "errored", "skipped", "not run", "mean", "tokens"]
        self._say(render_table(None, headers, experiment_rows(results)))
        for experiment, row in stability(results).items():
            k = row["attempts"]
            self._say(
                f"{experiment}: pass@{k} {row['pass_at_k']}/{row['evals']} evals · pass^{k} {row['pass_all_k']}/"
                f"{row['evals']} · flaky {row['flaky']}"
            )
        retries = {reason: count for reason, count in (getattr(outcome, "judge_retries", None) or {}).items() if count}
        if retries:  # requests the judges sent again: a repair of a badly formed answer, a rate limit waited out
            self._say("judge retries: " + ", ".join(f"{reason} {count}" for reason, count in sorted(retries.items())))
        for line in judge_spend_lines(getattr(outcome, "judge_usage", None) or {}):
            self._say(line)
        carried = sum(1 for r in results if r.outcome == CARRIED)
        if carried:
            self._say(f"{carried} of {len(results)} attempt(s) carried from earlier runs, not sent to the agent "
                      "(--rerun reruns failed ones, --rerun all every one)")
        title = run_title(results, outcome.interrupted, outcome.budget_exhausted)
        self._say(f"{title}  in {format_duration(outcome.duration_seconds)}")
        for line in resume_lines:
            self._say(line)


def judge_spend_lines(spend: dict[str, dict[str, Any]]) -> list[str]:
    """`judge <model>: 12 call(s), 3 read from the cache; 4,512 input and 380 output tokens; est. $0.0031`,
    one line per judge model the run asked or read from the cache (`assay.agent.judging.judge_spend`)."""
    lines = []
    for model, given in spend.items():
        if not isinstance(given, dict):
            continue  # (a record written by hand)
        counts = {name: given.get(name) if type(given.get(name)) is int else 0
                  for name in ("calls", "cached", "no_usage", "input_tokens", "output_tokens", "cache_read_tokens")}
        counts["estimated_cost_usd"] = given.get("estimated_cost_usd")
        priced = "estimated_cost_usd" in given  # (a document judge's record has no price table to estimate with)
        said = [f"{counts['calls']:,} call(s)" + (f", {counts['cached']:,} read from the cache" if counts["cached"] else "")]
        if counts["calls"] > counts["no_usage"]:
            cached = f" (+{counts['cache_read_tokens']:,} from the provider's prompt cache)" if counts["cache_read_tokens"] else ""
            said.append(f"{counts['input_tokens']:,} input{cached} and {counts['output_tokens']:,} output tokens")
        if counts["no_usage"]:
            said.append(f"{counts['no_usage']:,} call(s) reported no token usage")
        cost = counts["estimated_cost_usd"]
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            said.append(f"est. {format_usd(cost)}")
        elif priced and counts["calls"] and not counts["no_usage"]:
            reason = given.get("unpriced")  # (a merge of shards keeps none)
            said.append(f"no cost estimate: {reason if isinstance(reason, str) else f'[tool.assay.pricing] has no price for {model!r}'}")
        lines.append(f"judge {model}: " + "; ".join(said))
    return lines


class NdjsonReporter:
    """One JSON object per line on stdout; the last line is the receipt."""

    def __init__(self, stream: TextIO | None = None, invocation_id: str = "") -> None:
        self.stream = stream or sys.stdout
        self.invocation_id = invocation_id
        self._done = 0
        self._total = 0
        self.started_at = time.time()

    def _line(self, document: dict[str, Any]) -> None:
        self.stream.write(json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n")

    name = "NDJSON"

    def run_started(self, event: Any) -> None:
        self.invocation_id = event.run_id
        self._total = event.total
        self._done = reused = event.reused
        self._line({"type": "progress", "invocation_id": self.invocation_id, "message": "planned", "current": reused,
                    "total": self._total})

    def unit_durable(self, event: Any) -> None:
        result = event.native
        self._done += 1
        document = result.to_json()
        document["locator"] = result.locator
        self._line({"type": "attempt", "attempt": document})
        self._line({"type": "progress", "invocation_id": self.invocation_id, "message": attempt_title(result),
                    "current": self._done, "total": self._total})

    def warning(self, event: Any) -> None:
        fields = dict(event.fields)
        document = {"event": "warning", "code": event.code, "level": fields.pop("level", "warning"), "message": event.message}
        document.update(fields)
        self._line(document)

    def close(self) -> None:
        self.stream.flush()

    def run_finished(self, event: Any) -> None:
        if event.outcome is not None:
            self.receipt(event.outcome, exit_code=event.exit_code, checkpoint=str(event.checkpoint))
        elif event.error is not None:
            # Before the invocation exists, errors go to stderr (NiceEval); NDJSON stays machine-readable.
            print(f"Error: {event.error}", file=sys.stderr)
        self.stream.flush()

    def receipt(self, outcome: Any, *, exit_code: int, checkpoint: str | None) -> None:
        results = outcome.summaries
        completion = "interrupted" if outcome.interrupted else "completed"
        counts = {name: sum(1 for r in results if r.verdict == name) for name in _MARKS}
        counts["not_dispatched"] = sum(1 for r in results if r.outcome == NOT_DISPATCHED)
        counts["interrupted"] = sum(1 for r in results if r.outcome == INTERRUPTED)
        counts["carried"] = sum(1 for r in results if r.outcome == CARRIED)
        self._line({"type": "receipt", "receipt": {
            "invocation_id": self.invocation_id,
            # NiceEval makes a run per experiment; here one run holds them all: its id is what `assay runs show`,
            # `runs compare` and the viewer take (the experiments' ids were listed here as if they were run ids).
            "run_ids": [self.invocation_id] if self.invocation_id else [],
            "experiments": sorted({r.experiment_id for r in results}),
            "started_at": self.started_at,
            "completed_at": time.time(),
            "completion": completion,
            "title": run_title(results, outcome.interrupted, outcome.budget_exhausted),
            "counts": counts,
            "exit_code": exit_code,
            "checkpoint": checkpoint,
            "stability": stability(results),
            "judge_retries": dict(getattr(outcome, "judge_retries", None) or {}),
            "judge_usage": dict(getattr(outcome, "judge_usage", None) or {}),
        }})
        self.stream.flush()


# ---------------------------------------------------------------------------------------------
# `--dry`: the plan with a reason for every slot


def _slot_title(planned: Any) -> str:
    experiment = planned.experiment.experiment
    configuration = experiment.agent.name if not experiment.model else f"{experiment.agent.name}/{experiment.model}"
    suffix = f" #{planned.ordinal + 1}" if planned.ordinal else ""
    return f"{planned.eval.id}{suffix} [{configuration}]"


def plan_head(plan: Sequence[Any], shard: tuple[str, int] | None) -> str:
    """`PLAN  12 attempts · 6 evals × 2 experiments`; a shard's names the shard and the whole plan."""
    experiments = {planned.experiment.id for planned in plan}
    evals = {planned.eval.id for planned in plan}
    attempts = f"shard {shard[0]}: {len(plan)} of {shard[1]}" if shard else f"{len(plan)}"
    return f"PLAN  {attempts} attempts · {len(evals)} evals × {len(experiments)} experiments"


def dry_plan_lines(plan: Sequence[Any], carry: Any, shard: tuple[str, int] | None = None) -> list[str]:
    """What `assay agent run --dry` prints: the counts, then one line per slot with its action and reason."""
    counts = {action: carry.count(action) for action in ("carry", "execute", "not-dispatched")}
    head = f"{plan_head(plan, shard)} · {counts['carry']} carried · {counts['execute']} to run"
    if counts["not-dispatched"]:
        head += f" · {counts['not-dispatched']} not dispatched"
    lines = [head]
    lines += [f"warning [{warning.code}]: {warning.message}" for warning in carry.warnings]
    width = max((len(_slot_title(planned)) for planned in plan), default=0)
    labels = {"carry": "carry", "execute": "run", "not-dispatched": "skip"}
    for planned in plan:
        decision = carry.at(planned.index)
        locator = f"  {decision.carried.locator(planned)}" if decision.carried is not None else ""
        lines.append(f"  {labels.get(decision.action, decision.action):<5} {_slot_title(planned):<{width}}  "
                     f"{decision.reason.message}{locator}")
    lines.append("Nothing was run or written (--dry).")
    return lines


def dry_plan_document(plan: Sequence[Any], carry: Any) -> dict[str, Any]:
    """`--dry --json`: the counts and every slot with its action, reason code and message."""
    slots = []
    for planned in plan:
        decision = carry.at(planned.index)
        row: dict[str, Any] = {
            "experiment_id": planned.experiment.id, "eval_id": planned.eval.id, "attempt": planned.ordinal + 1,
            "action": decision.action, "code": decision.reason.code, "reason": decision.reason.message,
            "reasons": [reason.to_json() for reason in decision.reasons or (decision.reason,)],
            "identity": decision.identity.digest,
        }
        if decision.carried is not None:
            row["locator"] = decision.carried.locator(planned)
            row["carried_from"] = decision.carried.carried_from(planned)
            row["verdict"] = decision.carried.verdict
        slots.append(row)
    return {
        "type": "plan", "dry": True,
        "counts": {action: carry.count(action) for action in ("carry", "execute", "not-dispatched")},
        "warnings": [warning.to_json() for warning in carry.warnings], "slots": slots,
    }


def stability(results: Sequence[AttemptResult]) -> dict[str, dict[str, int]]:
    """Per experiment with more than one attempt per eval: evals passed at least once (pass@k), in every
    attempt (pass^k), and flaky ones (passed and failed); only attempts with a pass/fail verdict count."""
    verdicts: dict[str, dict[str, list[bool]]] = {}
    for result in results:
        if result.verdict in ("passed", "failed", "errored"):
            verdicts.setdefault(result.experiment_id, {}).setdefault(result.eval_id, []).append(result.verdict == "passed")
    summary = {}
    for experiment, evals in verdicts.items():
        if max(len(attempts) for attempts in evals.values()) < 2:
            continue
        summary[experiment] = {
            "evals": len(evals),
            "attempts": max(len(attempts) for attempts in evals.values()),
            "pass_at_k": sum(1 for attempts in evals.values() if any(attempts)),
            "pass_all_k": sum(1 for attempts in evals.values() if all(attempts)),
            "flaky": sum(1 for attempts in evals.values() if any(attempts) and not all(attempts)),
        }
    return summary



__all__ = [
    "ConsoleReporter", "NdjsonReporter", "attempt_title", "carried_line", "dry_plan_document", "dry_plan_lines",
    "experiment_rows", "failure_lines", "indented", "run_title", "shown_in_failure_lines", "stability", "verdict_label",
]
