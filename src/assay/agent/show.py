"""`assay agent show`: the attempts of a recorded run (the latest, or the one `--run` names) as a table
with their failures, or one attempt — found by its locator in any run of the project — in detail: its
assertions, conversation, evidence coverage, usage and diagnostics, or its phase tree (`--timing`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.agent.record import AttemptResult
from assay.errors import AssayError, UsageError

__all__ = ["ShownRun", "find_shown"]


@dataclass(frozen=True)
class ShownRun:
    """What `show` shows: the run's checkpoint folder and its attempts (one, when a locator was given)."""

    path: Path
    attempts: list[AttemptResult]
    one: bool  # a locator named the attempt

    def document(self) -> dict[str, Any]:
        documents = []
        for result in self.attempts:
            document = result.to_json()
            document["locator"] = result.locator
            documents.append(document)
        return {"run": self.path.name, "attempts": documents}

    def lines(self) -> list[str]:
        if self.one:
            return attempt_lines(self.attempts[0])
        from assay.agent.report import attempt_title, experiment_rows, failure_lines, indented, verdict_label
        from assay.core.report.table import render_table

        results = self.attempts
        lines = [f"Run {self.path.name}"]
        rows = [[result.locator, verdict_label(result), attempt_title(result)] for result in results]
        lines.append(render_table(None, ["locator", "verdict", "attempt"], rows))
        for result in results:
            if result.verdict in ("failed", "errored"):
                lines.append(f"{result.locator} {verdict_label(result).upper()}  {attempt_title(result)}")
                lines.extend(indented(failure_lines(result), "    "))
        headers = ["experiment", "agent/model", "passed", "failed", "errored", "skipped", "not run", "mean", "tokens"]
        lines.append(render_table(None, headers, experiment_rows(results)))
        return lines

    def timing_document(self) -> dict[str, Any]:
        result = self.attempts[0]
        return {"locator": result.locator, "attempt_id": result.attempt_id, "timing": result.timing or []}

    def timing_lines(self) -> list[str]:
        from assay.agent.timing import timing_lines

        result = self.attempts[0]
        lines = [f"{result.locator}  timing of {result.experiment_id}/{result.eval_id} attempt {result.ordinal + 1}"]
        if not result.timing:
            lines.append("  no timing recorded (an attempt from before assay recorded its phases, or one never run)")
            return lines
        return lines + [f"  {line}" for line in timing_lines(result.timing)]


def _run_by_prefix(root: Path, run: str) -> Path:
    """`--run` given as the start of a run id (as `assay runs show` takes one), or a typo: the one run it
    names, else a message listing the runs there are."""
    from assay.agent.checkpoint import list_checkpoints
    from assay.core.format import did_you_mean

    folders = {path.name: path for path, _ in list_checkpoints(root)}  # oldest first
    ids = list(folders)
    if run == "latest" or run.startswith("latest~"):  # as `assay runs` takes a run
        back = run[len("latest~"):] if "~" in run else "0"
        if not (back.isascii() and back.isdigit()):
            raise UsageError(f"--run {run!r}: write latest or latest~N", "--run")
        if int(back) >= len(ids):
            held = f"it holds {len(ids)} agent run(s), and latest~{len(ids) - 1} is the oldest" if ids else \
                "no agent run is recorded there yet"
            raise UsageError(f"no run {run!r} in {root}: {held}", "--run")
        return folders[ids[-1 - int(back)]]
    starting = [name for name in ids if name.startswith(run)] if "/" not in run else []
    if len(starting) == 1:
        return folders[starting[0]]
    if starting:
        raise UsageError(f"--run {run!r} starts {len(starting)} runs' ids in {root}: give more of it (the newest: "
                         f"{', '.join(reversed(starting[-3:]))})", "--run")
    newest = ", ".join(reversed(ids[-3:]))
    there = f"the newest: {newest}" if ids else "no agent run is recorded there yet"
    raise UsageError(f"no run {run!r} in {root}{did_you_mean(run, ids)} ({there})", "--run")


def _from_store(root: Path, read: Callable[[Any, list[str]], Any]) -> Any:
    """`read(store, ids)` over the results store, read only, and the ids of the project's agent runs in it, newest
    first: where a run that has no checkpoint here is (a run `assay runs merge` made of shards, or one recorded on
    another machine and merged into this store). None when the store holds no such run or cannot be read."""
    from assay.core.record import store_path
    from assay.core.results_store import SqliteRunStore, StoreError

    try:
        database = store_path(root)
        if not database.is_file():
            return None
        with SqliteRunStore(database, read_only=True) as store:
            ids = store.runs_of("agent", {"project": str(root.resolve())})
            return read(store, ids) if ids else None
    except (StoreError, OSError, AssayError):
        return None


def _slot_results(store: Any, run_id: str, unit_ids: list[str]) -> list[Any]:
    """These attempts of a stored run, in this order, as recorded (a carried one keeps its reference); a unit that
    is not an attempt's record is left out."""
    from assay.agent.slot_result import SlotResult

    units = store.units_by_id(run_id, unit_ids, adopted=False)
    results = []
    for unit_id in unit_ids:
        unit = units.get(unit_id)
        if unit is not None and isinstance(unit.detail, dict):
            try:
                results.append(SlotResult.from_json(unit.detail))
            except (KeyError, TypeError, ValueError, AttributeError):
                continue
    return results


def _stored_run(root: Path, run: str) -> tuple[Path, list[Any]] | None:
    """A run of this project that only the results store holds (`_from_store`): `run` is its id, a prefix of it, or
    latest / latest~N among the project's agent runs; None when there is none."""

    def read(store: Any, ids: list[str]) -> tuple[Path, list[Any]] | None:
        if run == "latest" or run.startswith("latest~"):
            back = run[len("latest~"):] if "~" in run else "0"
            chosen = ids[int(back)] if back.isascii() and back.isdigit() and int(back) < len(ids) else None
        else:
            starting = [run_id for run_id in ids if run_id.startswith(run)]
            chosen = run if run in ids else starting[0] if len(starting) == 1 else None
        return None if chosen is None else (Path(chosen), _slot_results(store, chosen, list(store.verdicts(chosen))))

    return _from_store(root, read)


def _stored_attempt(root: Path, locator: str) -> tuple[Path, Any] | None:
    """The attempt with this locator among the project's runs in the results store, newest first: a locator is
    its attempt id's, `<run id>/<experiment>/<eval>/<n>`, so only unit ids are read to find it."""
    from assay.agent.record import attempt_locator

    selects, wanted = _by_locator(locator), _wanted_locator(locator)

    def read(store: Any, ids: list[str]) -> tuple[Path, Any] | None:
        for run_id in ids:
            for unit_id in store.verdicts(run_id):
                pair, _, number = unit_id.rpartition("#")
                experiment_id, _, eval_id = pair.partition("/")
                if attempt_locator(f"{run_id}/{experiment_id}/{eval_id}/{number}").startswith(wanted):
                    matching = [result for result in _slot_results(store, run_id, [unit_id]) if selects(result)]
                    if matching:
                        return Path(run_id), matching[0]
        return None

    return _from_store(root, read)


def _by_locator(locator: str) -> Callable[[Any], bool]:
    wanted = _wanted_locator(locator)
    return lambda result: result.locator.startswith(wanted)


def _wanted_locator(locator: str) -> str:
    """A locator as given (`@8F2K…`, `8f2k…`) as locators are written: `@` and upper case."""
    return (locator if locator.startswith("@") else "@" + locator).upper()


def _by_unit_id(unit_id: str) -> Callable[[Any], bool]:
    """`experiment/eval#n` as `runs compare` and the viewer name an attempt; `experiment/eval`: each attempt of
    that eval (one is shown, several are listed)."""
    if "#" in unit_id:
        return lambda result: _unit_id(result) == unit_id
    return lambda result: f"{result.experiment_id}/{result.eval_id}" == unit_id


def _unit_id(result: Any) -> str:
    from assay.agent.units import agent_unit_id

    return agent_unit_id(result.experiment_id, result.eval_id, result.ordinal)


def find_shown(root: Path, locator: str | None, run: str | None, *, timing: bool = False) -> ShownRun:
    """The attempts `show` is asked for; a UsageError when there is no such run or attempt. A locator
    printed by an earlier run (a carried line names its origin's) is looked for in the newest other
    run that holds it, and a carried attempt is shown as the published attempt it adopts."""
    from assay.agent.checkpoint import list_checkpoints, read_results
    from assay.agent.project import checkpoints_base, nearby_project_hint
    from assay.core.journal import resolve_checkpoint_ref

    if locator is not None and not locator.strip().lstrip("@"):
        raise UsageError(f"attempt locator {locator!r} is empty: give @ and its first characters, "
                         "or leave it out to list the run's locators")
    found: list[tuple[Path, Any]] = []
    stored: tuple[Path, list[Any]] | None = None  # a run only the results store holds (a merged run, say)
    if run is not None:
        path = resolve_checkpoint_ref(run, checkpoints_base(root), Path.cwd())
        if not path.is_dir():
            try:
                path = _run_by_prefix(root, run)
            except UsageError:
                stored = _stored_run(root, run)
                if stored is None:
                    raise
                path = stored[0]
    else:
        found = list_checkpoints(root)
        if not found:
            stored = _stored_run(root, "latest") if locator is None else None
            if stored is None and (locator is None or not _from_store(root, lambda _store, ids: ids)):
                raise UsageError(f"no agent runs recorded in {root}; "
                                 + (nearby_project_hint(root) or "run `assay agent run` first"))
        path = found[-1][0] if found else (stored[0] if stored is not None else root)
    if timing and locator is None:
        raise UsageError("--timing shows one attempt: give its locator (assay agent show @XXXX --timing)", "--timing")
    results = stored[1] if stored is not None else read_results(path) if found or run is not None else []
    if locator is None:
        return ShownRun(path, results, one=False)
    selects = _by_unit_id(locator.strip()) if "/" in locator else _by_locator(locator)
    matching = [result for result in results if selects(result)]
    if not matching and run is None:
        for other, _ in reversed(found[:-1]):
            matching = [result for result in read_results(other) if selects(result)]
            if matching:
                path = other
                break
    if not matching and run is None and "/" not in locator:
        # Not in any checkpoint here: an attempt a shard ran on another machine (CI), whose record was merged
        # into this store, or one whose checkpoint was deleted; the store's runs of the project hold it.
        located = _stored_attempt(root, locator)
        if located is not None:
            path, matching = located[0], [located[1]]
    if not matching:
        where = f"run {path.name}" if run is not None else f"any run of {root}"
        if "/" in locator:
            from assay.core.format import did_you_mean

            known = [_unit_id(result) for result in results]
            hint = did_you_mean(locator.strip(), known) or "; `assay agent show` lists the latest run's attempts"
            raise UsageError(f"no attempt with the unit id {locator} in {where}{hint}")
        raise UsageError(f"no attempt {locator} in {where}; `assay agent show` lists the latest run's locators")
    if len(matching) > 1:
        if "/" in locator:
            units = ", ".join(_unit_id(result) for result in matching)
            raise UsageError(f"{locator} has {len(matching)} attempts ({units}); name one of them")
        raise UsageError(f"attempt locator {locator} is ambiguous ({len(matching)} attempts); give more characters")
    from assay.agent.carry import adopted_attempt

    return ShownRun(path, [adopted_attempt(root, matching[0])], one=True)


def attempt_lines(result: Any) -> list[str]:
    """One attempt in detail, as `show @LOCATOR` prints it."""
    from assay.agent.report import attempt_title, failure_lines, indented, verdict_label

    lines = [
        f"{result.locator}  {verdict_label(result).upper()}  {attempt_title(result)}",
        f"experiment {result.experiment_id} · attempt {result.ordinal + 1} · {result.duration_seconds:.3f}s",
    ]
    group = getattr(result, "eval_group", None)
    shared = (result.sandbox or {}).get("shared") if isinstance(getattr(result, "sandbox", None), dict) else None
    if group:
        lines.append(f"eval group {group['id']} (definition {group['definition_hash']})")
    if shared:
        lines.append(f"shared sandbox: task {shared['task']} of {shared['pool']}")
    origin = getattr(result, "carried_from", None)
    if origin:
        lines.append(f"carried from run {origin['run_id']} (unit {origin['unit_id']}): not sent to the agent in this run")
    decision = getattr(result, "decision", None)
    if decision and decision.get("action") == "execute":
        lines.append(f"executed: {decision.get('message')}")
    elif decision and decision.get("action") == "not-dispatched" and decision.get("message"):
        lines.append(f"not run: {decision['message']}")  # a budget, an early exit, a Ctrl-C before it started
    if result.verdict == "errored" and result.score_state == "partial" and result.score is not None:
        lines.append(f"partial score {result.score:g} (a lower bound: the attempt errored before it finished)")
    if getattr(result, "skip_reason", None):
        lines.append(f"skipped: {result.skip_reason}")
    lines.extend(indented(failure_lines(result), "  "))
    if result.assertions:
        lines.append("Assertions:")
        lines.extend(_assertion_lines(result.assertions))
    if result.turns:
        lines.append("Conversation:")
        for turn in result.turns:
            prefix = "" if turn["session"] == 0 else f"session {turn['session']} "
            lines.append(f"  {prefix}turn {turn['turn']} ({turn['status']}) user: {turn['input']}")
            lines.extend(f"    {event_line(event)}" for event in turn["events"])
            if "data" in turn:
                received = "data (not matching the output schema)" if turn.get("output_error") else "data"
                lines.append(f"    {received}: {json.dumps(turn['data'], ensure_ascii=False)}")
            if turn.get("output_error"):
                lines.append(f"    output error: {turn['output_error']}")
    if result.coverage:
        partial = {k: v for k, v in result.coverage.items() if v != "complete"}
        if partial:
            lines.append(f"Evidence coverage: {json.dumps(partial)}")
    if result.usage:
        lines.append(f"Usage: {json.dumps(result.usage)}")
    lines.extend(f"{diagnostic['level']} [{diagnostic['code']}]: {diagnostic['message']}" for diagnostic in result.diagnostics)
    if result.error and result.error.get("traceback"):
        lines.append("Traceback:")
        lines.append(result.error["traceback"].rstrip())
    return lines


def _assertion_lines(assertions: list[dict[str, Any]]) -> list[str]:
    """The attempt's assertions, one a line: those with no `.group(title)` in order, then each group under its
    title (in the order the groups were first used); an assertion's `.label(text)` is shown before the call."""
    ungrouped = [assertion for assertion in assertions if not assertion.get("group")]
    groups: dict[str, list[dict[str, Any]]] = {}
    for assertion in assertions:
        if assertion.get("group"):
            groups.setdefault(str(assertion["group"]), []).append(assertion)
    lines = [_assertion_line(assertion, "  ") for assertion in ungrouped]
    for title, members in groups.items():
        lines.append(f"  {title}:")
        lines.extend(_assertion_line(assertion, "    ") for assertion in members)
    return lines


def _assertion_line(assertion: dict[str, Any], indent: str) -> str:
    reason = f" — {assertion['reason']}" if assertion.get("reason") else ""
    status, value, threshold = assertion["status"], assertion.get("value"), assertion.get("threshold")
    score = ""
    if status == "matched" and isinstance(value, (int, float)) and not isinstance(value, bool):
        score = f" score {value:.3f}"
        if isinstance(threshold, (int, float)):
            met = value >= threshold
            score += f" {'≥' if met else '<'} {threshold:g}"
            status = status if met else "below"
        at_least = assertion.get("at_least")
        if isinstance(at_least, (int, float)) and not isinstance(at_least, bool):  # shown, never a verdict
            score += f" (at least {at_least:g}: {'met' if value >= at_least else 'below'})"
    label = assertion.get("label")
    shown = f"{label} ({assertion['description']})" if label else assertion["description"]
    return f"{indent}{status:<11} {shown} [{assertion['scope']}]{score}{reason}"


def _command_shown(projection: Any) -> str:
    """What `command_match` reads of a call's command: its logical command, or why there is none to read."""
    if projection is None:
        return ""
    from assay.agent.logical_command import read_command

    state, read = read_command(projection)
    if state == "command":
        program, args = read
        return f" (ran: {' '.join([program, *args])})"
    if state == "opaque":
        return f" (ran a command that cannot be read: {read})"
    return ""


def event_line(event: dict[str, Any]) -> str:
    """One recorded event of a turn, on one line."""
    kind = event["type"]
    if kind == "message":
        return f"{event['role']}: {event['text']}"
    if kind == "operation.started":
        operation = event["operation"]
        line = f"→ {operation['kind']} {operation['name']} #{event['operation_id']} {json.dumps(operation.get('input'))}"
        return line + _command_shown(operation.get("command"))
    if kind == "operation.finished":
        output = f" {json.dumps(event['output'])}" if "output" in event else ""
        return f"← #{event['operation_id']} {event['status']}{output}"
    if kind == "input.requested":
        request = event["request"]
        options = ", ".join(option["id"] for option in request.get("options", []))
        return f"? input requested {request.get('id', '')}: {request.get('prompt', '')} [{options}]"
    if kind == "error":
        return f"error: {event['message']}"
    if kind == "thinking":
        return f"thinking: {event['text']}"
    return json.dumps(event, ensure_ascii=False)
