"""`assay runs …`: the run history in the results store — list, show, compare (with a CI gate), flaky, trend,
merge, reindex; import other tools' logs as runs and export a run as OpenTelemetry.

Exit codes: 0 ok, 1 `compare --fail-on-regression` found a regression (`--fail-on-inconclusive`: or could not
decide), or a merged run's gate failed; 2 usage or store error (including a damaged store file). The options
are declared in `assay.core.history.shown.RunsOptions`, the read-backs are that module's.
"""

from __future__ import annotations

import os
from typing import Any

import typer

from assay.cli import common
from assay.cli.options import LIMIT, OUTPUT_JSON, PRINT_JSON, Given, Param, command, group, params
from assay.core import stdout_guard
from assay.core.history.shown import RunsOptions
from assay.core.run.request import at_least
from assay.errors import AssayError, UsageError

__all__ = ["runs_app"]

runs_app = group("Run history across kinds: list, show, compare two runs (paired statistics), trend, flaky; import other tools' "
                 "results, export to OpenTelemetry, merge shards, reindex.")
KIND = params(RunsOptions, "kind")[0]


def _command(name: str, *items: str | Param, only_reads: bool = True) -> Any:
    return command(runs_app, name, *params(RunsOptions, *items), only_reads=only_reads)


@_command("list", "kind search", LIMIT.but(check=at_least(1), help="How many runs, newest first."),
          PRINT_JSON.but(help="Print JSON instead of a table."))
def list_command(given: Given) -> None:
    """List recorded runs, newest first."""
    from assay.core.history.shown import runs_listed

    with common.store() as store:
        common.show(given.json, *runs_listed(store, given.kind, given.search, given.limit))


@_command("show", "run", LIMIT.but(help="Failing units to list."), PRINT_JSON.but(help="Print JSON (manifest, groups, failing units)."))
def show_command(given: Given) -> None:
    """Show one run: identity, gates, per-target / per-eval table and its failing units."""
    from assay.core.history.shown import run_shown

    with common.store() as store:
        common.show(given.json, *run_shown(store, given.run, given.limit), default=str)


@_command("compare", "before after alpha margin history power group_depth fail_on_regression fail_on_inconclusive",
          LIMIT.but(help="Unit ids to list per change kind."), "maps", PRINT_JSON)
def compare_command(given: Given) -> None:
    """Pair two runs unit by unit and say whether the change is real: regressed, improved, unchanged or inconclusive."""
    from assay.core.history.shown import compared
    from assay.core.history.verdict import VerdictSettings
    from assay.core.interop.unit_map import UnitIdMap

    with common.failing():
        id_map = UnitIdMap.parse(list(given.maps or ()))
    with common.store() as store:
        shown, verdict = compared(store, given.before, given.after, id_map, VerdictSettings(**given.pick("alpha", "margin", "power")),
                                  history=given.history, group_depth=given.group_depth, limit=given.limit)
    common.show(given.json, *shown)
    failing = (verdict == "regressed" and given.fail_on_regression) or (verdict == "inconclusive" and given.fail_on_inconclusive)
    raise typer.Exit(1 if failing else 0)


@_command("flaky", KIND.but(help="Only this kind's series (video, agent, doc, imported)."),
          params(RunsOptions, "last")[0].but(check=at_least(2, maximum=1000), help="Runs of each series to read."),
          LIMIT.but(default=50, help="Units to list per series."), "of_run", PRINT_JSON)
def flaky_command(given: Given) -> None:
    """Units whose verdicts disagree over the last runs of each series, with pass rate and a Wilson interval."""
    from assay.core.history.shown import flaky_shown

    with common.store() as store:
        common.show(given.json, *flaky_shown(store, given.kind, given.last, given.limit, given.of_run))


@_command("trend", "group", KIND.but(help="The series of the newest run of this kind (default: the newest run's)."), "last",
          "of_run", PRINT_JSON)
def trend_command(given: Given) -> None:
    """The pass rate over the last runs of a series (with its interval), flaky units marked."""
    from assay.core.history.shown import trend_shown

    with common.store() as store:
        common.show(given.json, *trend_shown(store, given.group, given.kind, given.last, given.of_run))


@_command("merge", "runs", OUTPUT_JSON.but(help="Write the merged run's JSON report here (video)."), only_reads=False)
def merge_command(given: Given) -> None:
    """Combine `--shard i/n` runs into one run, with the gates and summary of the unsharded run."""
    from assay.core.history.shown import shard_record
    from assay.core.results_store import open_store
    from assay.core.run import pipeline

    with common.failing(catch=(AssayError, OSError, ValueError, KeyError)):
        records = [shard_record(reference, lambda: open_store(read_only=True)) for reference in given.runs]
        for manifest, _ in records:
            if manifest.kind == "imported":  # (pipeline.merge knows only the kinds assay runs: "unknown kind 'imported'")
                raise UsageError(f"run {manifest.run_id} is not a shard run: it is another tool's log, imported with "
                                 "`assay runs import`; give the runs `assay video|agent run --shard i/n` recorded")
        result = pipeline.merge(records, given.outputs(quiet=True))
    raise typer.Exit(result.exit_code)


@_command("import", "files format_name", PRINT_JSON, only_reads=False)
def import_command(given: Given) -> None:
    """Import other tools' results as runs: JUnit XML, Inspect AI logs, pydantic-evals reports, DeepEval test runs,
    promptfoo results."""
    from assay.core.history.shown import imported
    from assay.core.interop.importing import ImportRefused, plan_named

    with common.failing():
        try:
            planned = plan_named(given.files, given.format_name)
        except ImportRefused as refused:  # nothing imported: with --json the document still says so, file by file
            if not given.json:
                raise
            try:  # the `Error:` line first, so that a reader gone from stdout loses only the document
                common.fail("Error", refused, stderr=True, internal="")
            finally:
                common.show(True, refused.document(given.files), ())
    shown, failures, interrupted = imported(planned)
    stdout_guard.results_made()
    common.show(given.json, *shown)
    raise typer.Exit(130 if interrupted else 2 if failures else 0)


@_command("export", "run otlp timeout", PRINT_JSON)
def export_command(given: Given) -> None:
    """Send a run to an OpenTelemetry collector: one span, and one gen_ai.evaluation.result event per unit."""
    from assay.core.history.shown import exported
    from pathlib import Path

    from assay.core.interop.export_endpoint import export_command_endpoint

    with common.failing():
        endpoint = export_command_endpoint(given.otlp, Path.cwd())
    with common.store() as store:
        shown = exported(store, given.run, endpoint, given.timeout)
    stdout_guard.results_made()  # sent: a reader leaving now does not make it exit 130
    common.show(given.json, *shown, ensure_ascii=True)


@_command("reindex", only_reads=False)
def reindex_command(given: Given) -> None:
    """Rebuild the store's index from the run records beside it."""
    from assay.core.history.shown import reindex_lines
    from assay.core.labels.store import labels_file
    from assay.core.record import STORE_ENVIRONMENT, records_dir, store_path, unpublished_dir
    from assay.core.results_store import reindex

    with common.failing(catch=Exception):  # any failure is one line and exit 2
        database = store_path()
        if not os.environ.get(STORE_ENVIRONMENT) and not any(
                path.exists() for path in (database, records_dir(database), labels_file(database), unpublished_dir(database))):
            # (run in another folder, it made an empty store there and said it had indexed 0 runs)
            raise UsageError(f"no results store at {database} and no run records in {records_dir(database)}: nothing to "
                             "index; run it in the repository whose runs to index (or set ASSAY_STORE to its store)")
        outcome = reindex()
    common.say(*reindex_lines(outcome, store_path()))
    common.say(*(f"Skipped a copy of a run record: {copy} (the same run as {kept}, which is indexed)"
                 for copy, kept in outcome.copies))
