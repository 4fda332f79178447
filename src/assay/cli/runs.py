"""`assay runs …`: the run history in the results store — list, show, compare (with a CI gate), flaky, trend,
merge, reindex; import other tools' logs as runs and export a run as OpenTelemetry.

Exit codes: 0 ok, 1 `compare --fail-on-regression` found a regression (`--fail-on-inconclusive`: or could not
decide), or a merged run's gate failed; 2 usage or store error (including a damaged store file).
"""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer

from assay.cli import common

__all__ = ["runs_app"]

runs_app = typer.Typer(
    rich_markup_mode=None,  # plain help: flags shown as flags, options as `--name <type>`
    help="Run history across kinds: list, show, compare two runs (paired statistics), reindex.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)



def _fail(error: BaseException) -> NoReturn:
    common.fail("Error", error, stderr=True, internal="")


def _only_reads() -> None:
    from assay.cli.stdout_guard import nothing_to_keep

    nothing_to_keep()  # `assay runs … | head`: the closed-stdout line speaks of no results


def _open() -> Any:
    from assay.core.results_store import open_store
    from assay.errors import AssayError

    try:
        return open_store(read_only=True)
    except AssayError as error:
        _fail(error)


def _say(text: str) -> None:
    common.stdout_console().print(text, markup=False, highlight=False)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _counts_text(counts: dict[str, int]) -> str:
    return " ".join(f"{name} {counts[name]}" for name in ("passed", "failed", "errored", "skipped", "ignored") if counts.get(name))


def _git_text(manifest: Any) -> str:
    if not manifest.git_commit:
        return "-"
    return manifest.git_commit[:10] + ("+dirty" if manifest.git_dirty else "")


@runs_app.command("list")
def list_command(
    kind: str | None = typer.Option(None, "--kind", help="Only runs of this kind: video, agent, doc or imported."),
    search: str | None = typer.Option(None, "--search", help="Only runs whose id or title contains this."),
    limit: int = typer.Option(20, "--limit", callback=common.at_least(1), help="How many runs, newest first."),
    output_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List recorded runs, newest first."""
    _only_reads()
    from assay.core.run.kinds import kind_names

    if kind is not None and kind not in kind_names():
        common.bad_parameter("--kind", f"must be one of {', '.join(kind_names())}")
    from assay.errors import AssayError

    with _open() as store:
        try:
            runs = store.list_runs(kind=kind, search=search, limit=limit)
        except AssayError as error:
            _fail(error)
    if output_json:
        print(json.dumps({"runs": [run.to_json(with_groups=False) for run in runs]}, indent=2, ensure_ascii=False))
        return
    if not runs:
        if kind is None and search is None:
            from assay.core.results_store import unindexed_records_hint

            hint = unindexed_records_hint(store.path)
            _say(f"No runs in the index of {store.path}, but {hint}." if hint else "No runs recorded yet.")
        else:
            narrowing = " and ".join(filter(None, [f"of kind {kind}" if kind else "", f"matching {search!r}" if search else ""]))
            _say(f"No runs {narrowing}; `assay runs list` shows them all.")
        return
    from assay.core.report.table import render_table

    rows = [
        [
            run.run_id, run.manifest.kind, run.manifest.created_at, _git_text(run.manifest), str(run.unit_count),
            _percent(run.pass_rate), {True: "pass", False: "FAIL", None: "-"}[run.manifest.success], run.manifest.title,
        ]
        for run in runs
    ]
    _say(render_table(None, ["run", "kind", "created", "git", "units", "pass rate", "gates", "title"], rows))


@runs_app.command("show")
def show_command(
    run: str = typer.Argument("latest", help="Run id, unique prefix, latest or latest~N."),
    limit: int = typer.Option(20, "--limit", callback=common.at_least(0), help="Failing units to list."),
    output_json: bool = typer.Option(False, "--json", help="Print JSON (manifest, groups, failing units)."),
) -> None:
    """Show one run: identity, gates, per-target / per-eval table and its failing units."""
    _only_reads()
    from assay.errors import AssayError

    with _open() as store:
        try:
            stored = store.get_run(run)
            failing = store.unit_page(stored.run_id, verdict="failed,errored", limit=limit)
        except AssayError as error:
            _fail(error)
    if output_json:
        document = stored.to_json()
        document["failing_units"] = [unit.to_json() for unit in failing.units]
        document["failing_total"] = failing.total
        print(json.dumps(document, indent=2, ensure_ascii=False, default=str))
        return
    from assay.core.report.table import render_table

    manifest = stored.manifest
    _say(f"Run {manifest.run_id} ({manifest.kind}) {manifest.title}")
    _say(f"created {manifest.created_at} · git {_git_text(manifest)} · units {stored.unit_count} · pass rate {_percent(stored.pass_rate)}")
    if manifest.cost_usd is not None or manifest.usage:
        _say(f"usage {json.dumps(manifest.usage)} · cost ${manifest.cost_usd or 0:.4f}")
    for gate in manifest.gates:
        trial = f" [trial {gate['trial']}]" if gate.get("trial") is not None else ""
        _say(f"{'PASS' if gate.get('passed') else 'FAIL'} {gate.get('name')}{trial}: {gate.get('message', '')}")
    rows = []
    for name, counts in stored.groups.items():
        judged = counts["passed"] + counts["failed"] + counts["errored"]
        rows.append([name or "-", str(counts["passed"]), str(counts["failed"]), str(counts["errored"]),
                     str(counts["skipped"] + counts["ignored"]), _percent(counts["passed"] / judged if judged else None)])
    _say(render_table(None, ["group", "passed", "failed", "errored", "skipped/ignored", "pass rate"], rows))
    if failing.total:
        _say(f"Failing units ({failing.total}):")
        for unit in failing.units:
            _say(f"  {unit.verdict.upper()} {unit.unit_id} expected={json.dumps(unit.expected, default=str)} "
                 f"observed={json.dumps(unit.observed, default=str)} {unit.reason}".rstrip())
        if failing.total > len(failing.units):
            _say(f"  … {failing.total - len(failing.units)} more (--limit, or `assay view`)")


@runs_app.command("compare")
def compare_command(
    before: str = typer.Argument(..., help="Baseline run (id, prefix, latest~N)."),
    after: str | None = typer.Argument(
        None, help="Candidate run (default: latest). `compare latest` alone compares the latest run with the run "
        "of the same kind and project before it.",
    ),
    alpha: float = typer.Option(0.05, "--alpha", callback=common.between(0, 1), help="Significance level of every test (Holm-corrected together)."),
    margin: float = typer.Option(
        0.05, "--margin", callback=common.between(0, 1),
        help="A pass-rate change within ± this (a fraction: 0.05 is 5 points) counts as none, when shown by TOST.",
    ),
    history: int = typer.Option(
        10, "--history", callback=common.at_least(1, maximum=1000),
        help="Runs of history (the baseline's and the ones before it in its series) that say how flaky each unit is.",
    ),
    power: float = typer.Option(0.8, "--power", callback=common.between(0.5, 0.99), help="Power at which an inconclusive comparison says how many units would decide it."),
    group_depth: int = typer.Option(1, "--group-depth", callback=common.at_least(0, maximum=10), help="Group units by the first N parts of their group path (0: no groups)."),
    fail_on_regression: bool = typer.Option(False, "--fail-on-regression", help="Exit 1 when the verdict is `regressed`."),
    fail_on_inconclusive: bool = typer.Option(
        False, "--fail-on-inconclusive", help="Exit 1 when the verdict is `inconclusive` too (the strict gate)."
    ),
    limit: int = typer.Option(20, "--limit", callback=common.at_least(0), help="Unit ids to list per change kind."),
    maps: list[str] = typer.Option(
        [], "--map", help="Rename the baseline's unit ids before pairing: 'PATTERN=>REPLACEMENT' (a regular expression, "
        "repeatable, applied in order) or @FILE (JSON or CSV id pairs). For a baseline another tool wrote.",
    ),
    output_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Pair two runs unit by unit and say whether the change is real: regressed, improved, unchanged or inconclusive."""
    _only_reads()
    from assay.core.history.compare import compare_stored_runs
    from assay.core.history.report import comparison_lines
    from assay.core.history.verdict import VerdictSettings
    from assay.core.interop.unit_map import Pairing, UnitIdMap
    from assay.errors import AssayError

    settings = VerdictSettings(alpha=alpha, margin=margin, power=power)
    try:
        id_map = UnitIdMap.parse(maps)
    except AssayError as error:
        _fail(error)
    with _open() as store:
        try:
            first, second, baseline_note = _pair(store, before, after)
            if id_map:
                comparison = _compare_mapped(store, first, second, id_map, settings, group_depth)
            else:
                comparison = compare_stored_runs(store, first, second, settings=settings, history=history,
                                                 group_depth=group_depth)
        except AssayError as error:
            _fail(error)
    removed, new = len(comparison.units["removed"]), len(comparison.units["new"])
    pairing = Pairing(first.unit_count - removed, removed, new, id_map.given)
    if output_json:
        document = comparison.to_json(unit_limit=limit)
        if baseline_note:
            document["baseline_chosen"] = baseline_note
        document["pairing"] = pairing.to_json()
        print(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        if baseline_note:
            _say(baseline_note)
        if id_map or first.manifest.kind != second.manifest.kind or (pairing.paired == 0 and first.unit_count):
            hint = "" if id_map or pairing.paired else " The runs name their units differently: --map renames the baseline's ids."
            _say(pairing.sentence() + hint)
        for line in comparison_lines(comparison, limit):
            _say(line)
    failing = comparison.verdict == "regressed" and fail_on_regression
    failing = failing or (comparison.verdict == "inconclusive" and fail_on_inconclusive)
    raise typer.Exit(1 if failing else 0)


@runs_app.command("flaky")
def flaky_command(
    kind: str | None = typer.Option(None, "--kind", help="Only this kind's series (video, agent, doc, imported)."),
    last: int = typer.Option(10, "--last", callback=common.at_least(2, maximum=1000), help="Runs of each series to read."),
    limit: int = typer.Option(50, "--limit", callback=common.at_least(0), help="Units to list per series."),
    output_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Units whose verdicts disagree over the last runs of each series, with pass rate and a Wilson interval."""
    _only_reads()
    from assay.core.history.report import flaky_lines
    from assay.core.history.series import flaky_units, latest_series

    with _open() as store:
        found = [(title, ids, flaky_units(store, ids, kind=title.split(" ")[0]))
                 for title, ids in latest_series(store, kind=kind, last=last)]
    if output_json:
        print(json.dumps({"series": [{"title": title, "runs": ids, "flaky": [unit.to_json() for unit in units]}
                                     for title, ids, units in found]}, indent=2, ensure_ascii=False))
    elif not found:
        _say("No runs recorded yet." if kind is None else f"No {kind} runs recorded yet.")
    else:
        for line in flaky_lines(found, limit):
            _say(line)


@runs_app.command("trend")
def trend_command(
    group: str | None = typer.Argument(None, help="A group (its units and its subgroups'); default: the whole run."),
    kind: str | None = typer.Option(None, "--kind", help="The series of the newest run of this kind (default: the newest run's)."),
    last: int = typer.Option(10, "--last", callback=common.at_least(1, maximum=1000), help="Runs to show."),
    output_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """The pass rate over the last runs of a series (with its interval), flaky units marked."""
    _only_reads()
    from assay.core.history.report import trend_lines
    from assay.core.history.series import flaky_units, trend_points
    from assay.errors import UsageError

    with _open() as store:
        newest = store.list_runs(kind=kind, limit=1)
        if not newest:
            _fail(UsageError("No runs recorded yet." if kind is None else f"no {kind} runs are recorded"))
        ids = store.series(newest[0].manifest)[:last]
        points = trend_points(store, ids, group=group)
        flaky = {unit.unit: unit for unit in flaky_units(store, ids, group=group)}
    if group and not any(point.passed + point.failed for point in points):
        _fail(UsageError(f"no unit of the group {group!r} was judged in the last {len(ids)} runs of "
                         f"{newest[0].manifest.kind} (`assay runs show latest` lists its groups)"))
    title = f"{newest[0].manifest.kind} {group or '(all units)'}"
    if output_json:
        print(json.dumps({"group": group, "kind": newest[0].manifest.kind, "points": [p.to_json() for p in points],
                          "flaky": [unit.to_json() for unit in flaky.values()]}, indent=2, ensure_ascii=False))
    else:
        for line in trend_lines(title, points, flaky):
            _say(line)


def _compare_mapped(store: Any, first: Any, second: Any, id_map: Any, settings: Any, group_depth: int) -> Any:
    """`first` → `second` with the baseline's unit ids renamed by `--map`. The baseline's history is
    named the old way, so it is not read: the baseline run is the only history, as in a plain paired
    comparison; groups are the candidate's."""
    from assay.core.history.store import run_tallies
    from assay.core.run_diff import compare_verdicts

    groups = {subject: group for subject, (group, _, _) in run_tallies(store, second.run_id).items()}
    return compare_verdicts(
        first.run_id, id_map.map_verdicts(store.verdicts(first.run_id)), second.run_id, store.verdicts(second.run_id),
        alpha=settings.alpha, confidence=settings.confidence, settings=settings, groups=groups, group_depth=group_depth,
    )


def _pair(store: Any, before: str, after: str | None) -> tuple[Any, Any, str]:
    """The two runs to compare, and a sentence when the baseline was chosen here, not named.

    One reference that names the latest run itself (`compare latest`) would compare that run with
    itself; the baseline is then the run of the same kind and project before it."""
    from assay.errors import UsageError

    first = store.get_run(before)
    second = store.get_run(after or "latest")
    if first.run_id != second.run_id:
        return first, second, ""
    if after is not None:
        raise UsageError(f"both references name the run {first.run_id}; a run compared with itself has no changes: "
                         "give two different runs")
    previous = store.previous_run(second)
    kind = second.manifest.kind
    if previous is None:
        raise UsageError(f"{second.run_id} is the only {kind} run of its project in the store, so there is no run "
                         "before it to compare it with; give a baseline run: `assay runs compare BEFORE AFTER`")
    return previous, second, f"Baseline: {previous.run_id}, the {kind} run of the same project before {second.run_id}."


def _shard_record(reference: str) -> tuple[Any, list[Any]]:
    """A record folder (as CI jobs upload them) or a run in the store (id, prefix, latest~N)."""
    from pathlib import Path

    from assay.core.record import read_record

    folder = Path(reference).expanduser()
    if (folder / "manifest.json").is_file():
        return read_record(folder)
    with _open() as store:
        stored = store.get_run(reference)
        if stored.record_path and (Path(stored.record_path) / "manifest.json").is_file():
            return read_record(Path(stored.record_path))
        page = store.unit_page(stored.run_id, limit=stored.unit_count + 1)
        return stored.manifest, page.units


@runs_app.command("merge")
def merge_command(
    runs: list[str] = typer.Argument(..., help="Every shard run of one invocation: run ids (or prefixes) or record folders."),
    output_json: str | None = typer.Option(None, "--output-json", help="Write the merged run's JSON report here (video)."),
) -> None:
    """Combine `--shard i/n` runs into one run, with the gates and summary of the unsharded run."""
    from assay.core.run import pipeline
    from assay.core.run.request import Outputs
    from assay.errors import AssayError

    try:
        result = pipeline.merge([_shard_record(reference) for reference in runs], Outputs(output_json=output_json, quiet=True))
    except (AssayError, OSError, ValueError, KeyError) as error:
        _fail(error)
    raise typer.Exit(result.exit_code)


@runs_app.command("import")
def import_command(
    files: list[str] = typer.Argument(..., help="Log files another tool wrote (each becomes one run of kind imported)."),
    format_name: str | None = typer.Option(
        None, "--format", help="junit, inspect, pydantic-evals, deepeval or promptfoo (default: told from each file's content).",
    ),
    output_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Import other tools' results as runs: JUnit XML, Inspect AI logs, pydantic-evals reports, DeepEval test runs,
    promptfoo results."""
    from pathlib import Path

    from assay.core.interop.importing import import_log, plan_imports
    from assay.errors import AssayError

    try:
        planned = plan_imports([Path(name).expanduser() for name in files], format_name)
    except AssayError as error:
        _fail(error)
    outcomes, failures = [], []
    for path, log_format in planned:
        try:
            outcomes.append(import_log(path, log_format))
        except AssayError as error:
            failures.append(error)
            print(f"Error: {error}", file=sys.stderr)
        except (OSError, ValueError) as error:
            failures.append(error)
            print(f"Error: {path}: {type(error).__name__}: {error}", file=sys.stderr)
    if output_json:
        print(json.dumps({"imported": [outcome.to_json() for outcome in outcomes]}, indent=2, ensure_ascii=False))
    else:
        for outcome in outcomes:
            tool = "" if outcome.tool == outcome.format else f", {outcome.tool}"
            version = f" {outcome.tool_version}" if outcome.tool_version else ""
            verb = "Already imported as" if outcome.already else "Imported"
            _say(f"{verb} {outcome.run_id}: {outcome.path.name} ({outcome.format}{tool}{version}), "
                 f"{outcome.unit_count} units: {_counts_text(outcome.counts) or 'none'}")
    raise typer.Exit(2 if failures else 0)


@runs_app.command("export")
def export_command(
    run: str = typer.Argument("latest", help="Run id, unique prefix, latest or latest~N."),
    otlp: str = typer.Option(..., "--otlp", help="The OTLP/HTTP endpoint's base URL, e.g. http://127.0.0.1:4318 "
                             "(the run's span goes to /v1/traces, one event per unit to /v1/logs)."),
    timeout: float = typer.Option(10.0, "--timeout", callback=common.between(0.1, 600), help="Seconds per request."),
    output_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Send a run to an OpenTelemetry collector: one span, and one gen_ai.evaluation.result event per unit."""
    _only_reads()
    from pathlib import Path

    from assay.core.interop.otlp_export import check_endpoint, export_run
    from assay.core.record import iter_units
    from assay.errors import AssayError

    try:
        endpoint = check_endpoint(otlp)
    except AssayError as error:
        _fail(error)
    with _open() as store:
        try:
            stored = store.get_run(run)
            record = Path(stored.record_path) if stored.record_path else None
            if record is not None and (record / "manifest.json").is_file():
                units: Any = iter_units(record)
            else:
                units = (unit for offset in range(0, stored.unit_count, 1000)
                         for unit in store.unit_page(stored.run_id, offset=offset, limit=1000).units)
            exported = export_run(stored.manifest, units, endpoint, timeout=timeout)
        except AssayError as error:
            _fail(error)
    if output_json:
        print(json.dumps(exported.to_json(), indent=2))
    else:
        _say(f"Exported {exported.run_id} to {exported.endpoint}: 1 span (trace {exported.trace_id}) and "
             f"{exported.events} gen_ai.evaluation.result event(s), {exported.linked} in the unit's own trace")


@runs_app.command("reindex")
def reindex_command() -> None:
    """Rebuild the store's index from the run records beside it."""
    from assay.core.record import store_path
    from assay.core.results_store import reindex

    try:
        outcome = reindex()
    except Exception as error:  # noqa: BLE001 - any failure is one line and exit 2
        _fail(error)
    if outcome.set_aside is not None:
        _say(f"The results store was damaged ({outcome.damage}); moved it aside to {outcome.set_aside}")
    _say(f"Indexed {outcome.runs} run(s) into {store_path()}")
    for record in outcome.unreadable:
        _say(f"Skipped an unreadable run record: {record}")
    for line in outcome.skipped_lines:
        _say(f"Skipped an unreadable unit line (the rest of its run is indexed): {line}")
