"""The run history as `assay runs` shows it: its options, and each read-back of the store as a JSON
document and as lines.

The command line chooses one (`--json`) and prints it; the text of a comparison, the flaky units and
a trend is `report.py`'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from assay.core.run.request import at_least, between, not_empty, option
from assay.errors import UsageError

__all__ = [
    "RunsOptions", "Shown", "compared", "exported", "flaky_shown", "import_line", "imported", "reindex_lines", "run_shown", "runs_listed",
    "shard_record", "trend_shown",
]


def _known_kind(kind: str | None) -> None:
    """`--kind`'s check: a kind the store records (every `runs` command refuses another alike)."""
    if kind is None:
        return
    from assay.core.format import did_you_mean
    from assay.core.run.kinds import kind_names

    if kind not in kind_names():
        raise ValueError(f"must be one of {', '.join(kind_names())}{did_you_mean(kind, kind_names())}")


def _given(value: str | None, name: str, left_out: str | None,
           what: str = "a run id, a unique prefix of one, latest or latest~N") -> None:
    """An argument given empty (`"$RUN"` of an unset variable) is refused, not read as left out."""
    if value is not None and not value.strip():
        leave = f", or leave {name} out for {left_out}" if left_out else ""
        raise UsageError(f"{name} is empty (an unset variable in a script?); give {what}{leave}")


def _fraction(low: float, high: float, example: float, unit: str) -> Callable[[Any], None]:
    """`between(low, high)` for an option given as a fraction, whose docs speak in points and percent: a value
    such as 5 or 80 is answered with the fraction it meant (`0.05 is 5 points`)."""
    within = between(low, high)

    def check(value: Any) -> None:
        try:
            within(value)
        except ValueError as error:
            if value is not None and value > 1 and low <= value / 100 <= high:
                raise ValueError(f"{error}; it is a fraction ({example:g} is {example * 100:g}{unit}): for {value:g}{unit}, "
                                 f"give {value / 100:g}") from None
            raise

    return check


@dataclass(frozen=True, kw_only=True)
class RunsOptions:
    """Every `assay runs` option and argument, declared once (`assay.cli.options.params` makes them)."""

    run: str = option("latest", argument=True, help="Run id, unique prefix, latest or latest~N.")
    before: str = option(argument=True, help="Baseline run (id, prefix, latest~N).")
    after: str | None = option(None, argument=True, help="Candidate run (default: latest). `compare latest` alone compares "
                               "the latest run with the run of the same kind and project before it.")
    group: str | None = option(None, argument=True, help="A group (its units and its subgroups'); default: the whole run.")
    runs: tuple[str, ...] = option(argument=True, help="Every shard run of one invocation: run ids (or prefixes) or record folders.")
    files: tuple[str, ...] = option(argument=True, help="Log files another tool wrote (each becomes one run of kind imported).")
    kind: str | None = option(None, flag="--kind", check=_known_kind, help="Only runs of this kind: video, agent, doc or imported.")
    search: str | None = option(None, flag="--search", check=not_empty("every run"), help="Only runs whose id or title contains this.")
    # Above 0.5 a test would call most noise a change (and TOST's verdict reads backwards); below 1e-6 the
    # Holm-corrected levels leave the normal quantiles' domain.
    alpha: float = option(0.05, flag="--alpha", check=between(1e-6, 0.5),
                          help="Significance level of every test (Holm-corrected together), from 1e-6 to 0.5.")
    margin: float = option(0.05, flag="--margin", check=_fraction(0, 1, 0.05, " points"), help="A pass-rate change within ± this (a fraction: "
                           "0.05 is 5 points) counts as none, when shown by TOST.")
    history: int = option(10, flag="--history", check=at_least(1, maximum=1000), help="Runs of history (the baseline's and the "
                          "ones before it in its series) that say how flaky each unit is.")
    power: float = option(0.8, flag="--power", check=_fraction(0.5, 0.99, 0.8, " %"),
                          help="Power at which an inconclusive comparison says how many units would decide it.")
    group_depth: int = option(1, flag="--group-depth", check=at_least(0, maximum=10),
                              help="Group units by the first N parts of their group path (0: the whole run as one group, named \"\").")
    fail_on_regression: bool = option(False, flag="--fail-on-regression", help="Exit 1 when the verdict is `regressed`.")
    fail_on_inconclusive: bool = option(False, flag="--fail-on-inconclusive",
                                        help="Exit 1 when the verdict is `inconclusive` too (the strict gate).")
    maps: tuple[str, ...] = option((), flag="--map", help="Rename the baseline's unit ids before pairing: 'PATTERN=>REPLACEMENT' "
                                   "(a regular expression, repeatable, applied in order) or @FILE (JSON or CSV id pairs). "
                                   "For a baseline another tool wrote.")
    last: int = option(10, flag="--last", check=at_least(1, maximum=1000), help="Runs to show.")
    of_run: str | None = option(None, flag="--run", check=not_empty("the newest run's series"),
                                help="The series this run belongs to, up to it (id, prefix, latest~N; default: the newest "
                                "run's): for a store holding several projects or imported tools.")
    format_name: str | None = option(None, flag="--format", help="junit, inspect, pydantic-evals, deepeval or promptfoo "
                                     "(default: told from each file's content).")
    otlp: str | None = option(None, flag="--otlp", help="The OTLP/HTTP endpoint's base URL, e.g. http://127.0.0.1:4318 (the "
                              "run's span goes to /v1/traces, one event per unit to /v1/logs); default: where every run is "
                              "exported ($ASSAY_OTLP_EXPORT, or [tool.assay.export] of the pyproject.toml here).")
    timeout: float = option(10.0, flag="--timeout", check=between(0.1, 600), help="Seconds per request.")


class Shown(NamedTuple):
    """One read-back: `document` for `--json`, `lines` for a person."""

    document: Any
    lines: Iterable[str]


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _git_text(manifest: Any) -> str:
    if not manifest.git_commit:
        return "-"
    return manifest.git_commit[:10] + ("+dirty" if manifest.git_dirty else "")


def _title(manifest: Any) -> str:
    """A run's title, with the shard it is (`--shard 2/4`): a shard looks like a whole run otherwise, and
    `assay runs merge` is given them by id."""
    shard = (manifest.options or {}).get("shard")
    return f"{manifest.title} [shard {shard}]" if isinstance(shard, str) and shard else manifest.title


def runs_listed(store: Any, kind: str | None, search: str | None, limit: int) -> Shown:
    """`assay runs list`: the newest runs (of a kind, matching a search) as a table."""
    runs = store.list_runs(kind=kind, search=search, limit=limit)
    return Shown({"runs": [run.to_json(with_groups=False) for run in runs]}, _list_lines(store, runs, kind, search))


def _list_lines(store: Any, runs: Sequence[Any], kind: str | None, search: str | None) -> Iterator[str]:
    from assay.core.report.table import render_table

    if not runs and kind is None and search is None:
        from assay.core.results_store import unindexed_records_hint

        hint = unindexed_records_hint(store.path)
        yield f"No runs in the index of {store.path}, but {hint}." if hint else "No runs recorded yet."
    elif not runs:
        narrowing = " and ".join(filter(None, [f"of kind {kind}" if kind else "", f"matching {search!r}" if search else ""]))
        yield f"No runs {narrowing}; `assay runs list` shows them all."
    else:
        rows = [[run.run_id, run.manifest.kind, run.manifest.created_at, _git_text(run.manifest), str(run.unit_count),
                 _percent(run.pass_rate), {True: "pass", False: "FAIL", None: "-"}[run.manifest.success], _title(run.manifest)]
                for run in runs]
        yield render_table(None, ["run", "kind", "created", "git", "units", "pass rate", "gates", "title"], rows)


def run_shown(store: Any, ref: str, limit: int) -> Shown:
    """`assay runs show`: one run's identity, gates, groups and failing units."""
    _given(ref, "RUN", "the latest run")
    stored = store.get_run(ref, with_groups=True)
    failing = store.unit_page(stored.run_id, verdict="failed,errored", limit=limit)
    document = stored.to_json()
    document["failing_units"] = [unit.to_json() for unit in failing.units]
    document["failing_total"] = failing.total
    return Shown(document, _show_lines(stored, failing))


def _show_lines(stored: Any, failing: Any) -> Iterator[str]:
    from assay.core.report.table import render_table

    manifest = stored.manifest
    yield f"Run {manifest.run_id} ({manifest.kind}) {_title(manifest)}"  # (a shard says so, as in `runs list`)
    yield (f"created {manifest.created_at} · git {_git_text(manifest)} · units {stored.unit_count} · "
           f"pass rate {_percent(stored.pass_rate)}")
    if manifest.cost_usd is not None or manifest.usage:
        yield f"usage {json.dumps(manifest.usage)} · cost ${manifest.cost_usd or 0:.4f}"
    judge_usage = (manifest.summary or {}).get("judge_usage")
    if judge_usage and isinstance(judge_usage, dict):
        from assay.agent.report import judge_spend_lines

        yield from judge_spend_lines(judge_usage)
    for gate in manifest.gates:
        trial = f" [trial {gate['trial']}]" if gate.get("trial") is not None else ""
        yield f"{'PASS' if gate.get('passed') else 'FAIL'} {gate.get('name')}{trial}: {gate.get('message', '')}"
    rows = []
    for name, counts in stored.groups.items():
        judged = counts["passed"] + counts["failed"] + counts["errored"]
        rows.append([name or "-", str(counts["passed"]), str(counts["failed"]), str(counts["errored"]),
                     str(counts["skipped"] + counts["ignored"]), _percent(counts["passed"] / judged if judged else None)])
    yield render_table(None, ["group", "passed", "failed", "errored", "skipped/ignored", "pass rate"], rows)
    if failing.total:
        yield f"Failing units ({failing.total}):"
        for unit in failing.units:
            yield (f"  {unit.verdict.upper()} {unit.unit_id} expected={json.dumps(unit.expected, default=str)} "
                   f"observed={json.dumps(unit.observed, default=str)} {_first_line(unit.reason)}").rstrip()
        if failing.total > len(failing.units):
            yield f"  … {failing.total - len(failing.units)} more (--limit, or `assay view`)"


def _first_line(text: str | None) -> str:
    """A reason kept to its unit's one line (a JUnit failure message can run to a whole assertion diff)."""
    head, _, rest = (text or "").strip().partition("\n")
    return f"{head.rstrip()} …" if rest.strip() else head


def compared(store: Any, before: str, after: str | None, id_map: Any, settings: Any, *, history: int,
             group_depth: int, limit: int) -> tuple[Shown, str]:
    """`assay runs compare`: the two runs paired unit by unit (the baseline's ids renamed by `--map`,
    a `UnitIdMap`), and the verdict."""
    from assay.core.history.compare import compare_stored_runs
    from assay.core.history.report import comparison_lines
    from assay.core.interop.unit_map import Pairing
    from assay.core.labels.trust import judges_behind, judges_lines

    first, second, baseline_note = _pair(store, before, after)
    if first is None:
        return _no_baseline(second, baseline_note, settings, id_map.given), "inconclusive"
    named_both_ways = None if id_map else _verdicts_naming_units_both_ways(store, first, second)
    mapped = bool(id_map) or named_both_ways is not None  # paired here (`pair_by_unit`), not by the store's equal ids
    if mapped:
        comparison, paired = _compare_mapped(store, first, second, id_map, settings, group_depth, named_both_ways)
    else:
        comparison = compare_stored_runs(store, first, second, settings=settings, history=history, group_depth=group_depth)
        paired = first.unit_count - len(comparison.units["removed"])  # (ids pair one to one)
    removed, new = len(comparison.units["removed"]), len(comparison.units["new"])
    pairing = Pairing(paired, removed, new, id_map.given)
    document = comparison.to_json(unit_limit=limit)
    # Every group's verdict: `--limit` bounds the unit ids listed, not the groups (the first 20 of them would
    # drop a regressed group the text names, while `group_counts` still counts it).
    document["judgement"]["groups"] = {name: verdict.to_json() for name, verdict in comparison.judgement.groups.items()}
    if baseline_note:
        document["baseline_chosen"] = baseline_note
    document["pairing"] = pairing.to_json()
    lines = [baseline_note] if baseline_note else []
    kinds = (first.manifest.kind, second.manifest.kind)
    if mapped or kinds[0] != kinds[1] or (pairing.paired == 0 and first.unit_count):
        hint = "" if mapped or pairing.paired else " The runs name their units differently: --map renames the baseline's ids."
        shards = (_shard(first.manifest), _shard(second.manifest))
        if not mapped and not pairing.paired and not second.unit_count:
            hint = f" {second.run_id} has no unit at all: there is nothing to pair."
        elif not mapped and not pairing.paired and any(shards) and shards[0] != shards[1]:
            hint = (" " + " and ".join(f"{run.run_id} is shard {shard}" for run, shard in zip((first, second), shards) if shard)
                    + ": a shard holds a part of the suite, so compare two runs of one shard, or the whole runs `assay "
                    "runs merge` makes of the shards.")
        if not mapped and kinds[0] != kinds[1] and "imported" not in kinds:
            hint = (f" These are runs of two kinds ({kinds[0]}, then {kinds[1]}), whose units never pair: compare two runs of"
                    " one kind (`assay runs compare latest` takes the run of the latest's kind and project before it).")
        elif not mapped and not pairing.paired and second.unit_count and _projects_differ(first, second):
            # (not "the runs name their units differently: --map": two projects' suites are not one suite renamed)
            projects = [run.manifest.identity["project"] for run in (first, second)]
            hint = (f" These are runs of two projects ({projects[0]}, then {projects[1]}), which share no unit: compare two "
                    "runs of one project (`assay runs compare latest` takes the run of the latest's kind and project "
                    "before it).")
        lines.append(pairing.sentence() + hint)
    if kinds[0] == kinds[1]:
        lines += _order_and_project_notes(first, second, document, paired=bool(pairing.paired))
    why = nothing_judged_in_both(store, comparison, document, (first.run_id, second.run_id))
    # Units judged in both runs fewer than the paired ones: trials, or units one run carried (the head says which).
    judged = sum(comparison.judgement.families.values())
    carried = judged != comparison.counts.total and any(
        store.carried_units(run_id) for run_id in (first.run_id, second.run_id))
    behind = judges_behind(store, first, second, comparison.units)
    if behind:
        document["judges_behind"] = behind
    judges = judges_lines(behind, limit)
    return Shown(document, [*lines, *comparison_lines(comparison, limit, why=why, carried=carried, judges=judges)]), comparison.verdict


def _projects_differ(first: Any, second: Any) -> bool:
    """Two runs of one kind recorded for two projects (imported logs have none to speak of: comparing two tools' is
    what importing them is for)."""
    projects = [(run.manifest.identity or {}).get("project") for run in (first, second)]
    return bool(all(projects) and projects[0] != projects[1] and first.manifest.kind != "imported")


def _order_and_project_notes(first: Any, second: Any, document: dict[str, Any], *, paired: bool = True) -> list[str]:
    """What a comparison of two runs of one kind said nothing of: a BEFORE recorded after AFTER (`compare latest
    latest~1`) reads every change backwards, so a regression since AFTER reads as fixes and passes
    `--fail-on-regression`; two projects whose units happen to share names pair as if they were one suite, judged with
    the baseline project's history (imported logs excepted: comparing two tools' is what importing them is for). Each
    is said in a line (and in `--json`'s `notes`); either may be meant."""
    notes = []
    if first.manifest.created_at > second.manifest.created_at:
        notes.append(f"Note: BEFORE ({first.run_id}) was recorded after AFTER ({second.run_id}), so what changed is read "
                     f"backwards: a unit that broke since AFTER counts as a fix. `assay runs compare {second.run_id} "
                     f"{first.run_id}` reads it forwards.")
    projects = [(run.manifest.identity or {}).get("project") for run in (first, second)]
    # (Imported logs of two tools, or two tasks, are compared on purpose: that is what importing them is for.) When
    # no unit pairs, the pairing line has said that the projects share none.
    if paired and _projects_differ(first, second):
        notes.append(f"Note: the runs are of two projects ({projects[0]}, then {projects[1]}); their units pair by name "
                     f"and are judged with the history of {projects[0]}.")
    if notes:
        document["notes"] = notes
    return notes


def nothing_judged_in_both(store: Any, comparison: Any, document: dict[str, Any], run_ids: tuple[str, str]) -> str:
    """Why units that pair were judged in both runs none of the time, when the reason is carry: a carried unit
    repeats an earlier verdict, it is no new observation (`compare latest` right after an agent run that
    changed nothing). Said in one line under an inconclusive verdict and as `carried` (run id -> units) in the
    document."""
    if comparison.judgement.run.paired_units or not comparison.counts.total:
        return ""
    carried = {run_id: store.carried_units(run_id) for run_id in run_ids}
    if not any(carried.values()):
        return ""
    document["carried"] = carried
    if comparison.verdict != "inconclusive":  # decided by the units' history (a stable unit fails now): nothing to rerun
        return ""
    which = " and ".join(f"{run_id} carried {count} of its units" for run_id, count in carried.items() if count)
    return (f"Why: {which} from earlier runs, and a carried unit repeats an earlier verdict, it is not judged again. "
            "Run them again to compare (`assay agent run --rerun all`).")


def _compare_mapped(store: Any, first: Any, second: Any, id_map: Any, settings: Any, group_depth: int,
                    verdicts: tuple[dict[str, str], dict[str, str]] | None = None) -> tuple[Any, int]:
    """`first` → `second` with the baseline's unit ids renamed by `--map`, and how many pairs of ids that
    makes. The baseline's history is named the old way, so it is not read: the baseline run is the only
    history, as in a plain paired comparison; groups are the candidate's.

    Another tool may name a unit without trials (DeepEval's `france`) where the other run has its trials
    (Inspect's `france#1`, `france#2`): each trial pairs with that unit (`pair_by_unit`), as the verdict,
    which weighs a unit's trials together, pairs them; so every count says the same pairing. `verdicts`: the two
    runs' verdicts when they were read already."""
    from assay.core.history.store import run_tallies
    from assay.core.run_diff import compare_verdicts, pair_by_unit

    groups = {subject: group for subject, (group, _, _) in run_tallies(store, second.run_id).items()}
    before, after = verdicts or (store.verdicts(first.run_id), store.verdicts(second.run_id))
    before = id_map.map_verdicts(before)
    comparison = compare_verdicts(first.run_id, before, second.run_id, after, settings=settings, groups=groups,
                                  group_depth=group_depth, by_unit=True)
    pairs, _ = pair_by_unit(before, after)
    return comparison, sum(1 for _, _, new in pairs if new is not None)


def _verdicts_naming_units_both_ways(store: Any, first: Any, second: Any) -> tuple[dict[str, str], dict[str, str]] | None:
    """The two runs' verdicts when a trial of one (`france#1`) pairs with a unit the other names without trials
    (`france`), else None. The verdict weighs a unit's trials together, so it pairs them; the store pairs equal
    ids only, so every other count said those units had no partner ("0 unit(s) paired" beside a verdict "over 3
    paired units"). Only another tool's log names a unit both ways (assay's kinds name their trials alike in
    every run), so the verdicts are read only when an imported run is compared; runs so paired are judged as
    with `--map` (the baseline run is the only history)."""
    from assay.core.run_diff import pairs_trials_with_units

    if "imported" not in (first.manifest.kind, second.manifest.kind) or not first.unit_count or not second.unit_count:
        return None
    verdicts = store.verdicts(first.run_id), store.verdicts(second.run_id)
    return verdicts if pairs_trials_with_units(*verdicts) else None


def _pair(store: Any, before: str, after: str | None) -> tuple[Any, Any, str]:
    """The two runs to compare, and a sentence when the baseline was chosen here, not named (no first run and
    why, when `compare latest` finds none).

    One reference that names the latest run itself (`compare latest`) would compare that run with
    itself; the baseline is then the run of the same kind and project before it."""
    _given(before, "BEFORE", None)
    _given(after, "AFTER", "the latest run")
    first = store.get_run(before)  # (without its groups: a comparison reads them from the units)
    second = store.get_run("latest" if after is None else after)
    if first.run_id != second.run_id:
        return first, second, ""
    if after is not None:
        raise UsageError(f"both references name the run {first.run_id}; a run compared with itself has no changes: "
                         "give two different runs")
    previous = store.previous_run(second)
    kind = second.manifest.kind
    shard = _shard(second.manifest)
    if previous is None:  # (the first CI job of a pipeline, or one whose cached store was evicted)
        if shard:  # a shard's series is that shard's runs: it has no baseline among whole runs (nor other shards)
            article = "an" if kind[:1] in "aeiou" else "a"
            return None, second, (f"{second.run_id} is shard {shard} of {article} {kind} run, and no earlier run of "
                                  f"shard {shard} of its project is in the store to compare it with; compare the whole "
                                  "run once `assay runs merge` has combined its shards, or give a baseline run: "
                                  "`assay runs compare BEFORE AFTER`")
        return None, second, (f"{second.run_id} is the only {kind} run of its project in the store, so there is no "
                              "run before it to compare it with. Keep the store between CI jobs (cache .assay/ or "
                              "set ASSAY_STORE), or give a baseline run: `assay runs compare BEFORE AFTER`")
    which = f"{kind} run of shard {shard}" if shard else f"{kind} run"
    return previous, second, f"Baseline: {previous.run_id}, the {which} of the same project before {second.run_id}."


def _no_baseline(second: Any, why: str, settings: Any, rules: Any = ()) -> Shown:
    """`compare latest` with no earlier run to compare: inconclusive, not an error, so the first CI job of a
    pipeline (or one whose cached store was evicted) passes `--fail-on-regression`, nothing having regressed,
    and fails only the strict `--fail-on-inconclusive`."""
    sentence = f"Inconclusive: no baseline. {why}"
    from assay.core.history.verdict import VERDICTS
    from assay.core.run_diff import CHANGE_KINDS

    # The fields a comparison's document has, empty: a script reading `history_runs` or `counts` of every CI job's
    # compare met a KeyError on the first job's (so did one reading `paired`, `test`, `pairing` or the judgement's
    # `tests` and `groups`). Nothing was tested: a statistic is null, never a made-up p = 1.
    judgement = {"verdict": "inconclusive", "scope": "run", "sentence": sentence, "evidence": "none", "paired_units": 0,
                 "difference": None, "interval": None, "confidence": settings.confidence, "t_test_p_value": None,
                 "equivalence": {"test": "TOST (two one-sided paired t-tests)", "margin": settings.margin, "p_value": None},
                 "tests": [], "units_needed": None, "settings": settings.to_json(), "suite_flaky_share": None,
                 "unit_families": {"stable": 0, "flaky": 0, "short": 0}, "groups": {},
                 "group_counts": dict.fromkeys(VERDICTS, 0)}
    counts = {**dict.fromkeys(CHANGE_KINDS[:3], 0), "still_passing": 0, **dict.fromkeys(CHANGE_KINDS[3:], 0)}
    paired = {"units": 0, "both_passed": 0, "regressions": 0, "fixes": 0, "both_failed": 0, "difference": None}
    test = {"p_value": None, "mid_p_value": None, "chi_square": None, "chi_square_p_value": None, "difference": None,
            "interval": None, "confidence": settings.confidence}
    document = {"before": None, "after": second.run_id, "before_pass_rate": None, "after_pass_rate": second.pass_rate,
                "pass_rate_difference": None, "paired": paired, "test": test, "alpha": settings.alpha,
                "regression": False, "verdict": "inconclusive", "sentence": sentence, "history_runs": 0,
                "judgement": judgement, "counts": counts, "units": {kind: [] for kind in CHANGE_KINDS},
                "pairing": {"paired": 0, "unpaired_before": 0, "unpaired_after": 0, "map": list(rules)}}
    return Shown(document, [sentence])


def _shard(manifest: Any) -> str:
    """The `--shard i/n` a run was made with ("" for a whole run, or one `runs merge` made)."""
    shard = (manifest.options or {}).get("shard")
    return shard if isinstance(shard, str) else ""


def _series_of(store: Any, ref: str, kind: str | None, last: int) -> tuple[Any, list[str]]:
    """`--run`: the run and the ids of its series' last `last` runs up to it, newest first."""
    from assay.core.history.store import series_before

    stored = store.get_run(ref)
    if kind is not None and stored.manifest.kind != kind:
        raise UsageError(f"--run {ref!r} is a run of kind {stored.manifest.kind}, not {kind}: leave out --kind, or give a "
                         f"run of kind {kind}")
    return stored, series_before(store, stored, last)


def _nothing_recorded(store: Any, kind: str | None) -> str:
    """What `flaky` and `trend` say when the store has no run (of `kind`): an index emptied or replaced while the
    records of earlier runs lie beside it is not "no runs yet" (as `runs list` says it, with the remedy)."""
    from assay.core.results_store import unindexed_records_hint

    hint = "" if store.list_runs(limit=1) else unindexed_records_hint(store.path)
    if hint:
        return f"No runs in the index of {store.path}, but {hint}."
    return "No runs recorded yet." if kind is None else f"No {kind} runs recorded yet."


def flaky_shown(store: Any, kind: str | None, last: int, limit: int, of_run: str | None = None) -> Shown:
    """`assay runs flaky`: per series (the newest run of each kind, or `of_run`'s), the units whose verdicts disagree."""
    from assay.core.history.report import flaky_lines
    from assay.core.history.series import flaky_units, latest_series

    if of_run is not None:
        stored, ids = _series_of(store, of_run, kind, last)
        series = [(f"{stored.manifest.kind} ({stored.manifest.title or stored.run_id})", ids)]
    else:
        series = latest_series(store, kind=kind, last=last)
    found = [(title, ids, flaky_units(store, ids, kind=title.split(" ")[0])) for title, ids in series]
    document = {"series": [{"title": title, "runs": ids, "flaky": [unit.to_json() for unit in units]}
                           for title, ids, units in found]}
    if not found:
        return Shown(document, [_nothing_recorded(store, kind)])
    return Shown(document, flaky_lines(found, limit))


def trend_shown(store: Any, group: str | None, kind: str | None, last: int, of_run: str | None = None) -> Shown:
    """`assay runs trend`: the pass rate over the last runs of a series (the newest run's, or `of_run`'s up to
    it), flaky units marked."""
    from assay.core.history.report import trend_lines
    from assay.core.history.series import flaky_units, trend_points

    _given(group, "GROUP", "the whole run", "a group (`assay runs show latest` lists them)")
    if of_run is not None:
        stored, ids = _series_of(store, of_run, kind, last)
        series_kind = stored.manifest.kind
    else:
        newest = store.list_runs(kind=kind, limit=1)
        if not newest:  # as `runs list` and `runs flaky` say it: nothing to show is not an error (it was exit 2)
            return Shown({"group": group, "kind": kind, "points": [], "flaky": []}, [_nothing_recorded(store, kind)])
        series_kind = newest[0].manifest.kind
        ids = store.series(newest[0].manifest)[:last]
    points = trend_points(store, ids, group=group)
    flaky = {unit.unit: unit for unit in flaky_units(store, ids, kind=series_kind, group=group)}
    if group and not any(point.passed + point.failed for point in points):
        from assay.core.format import did_you_mean

        # A misspelt group is the usual cause: the groups of the series' runs and the folders above them are the
        # choices (all of them: the newest may hold none, an empty `--shard 9/9` run).
        known = {part for run_id in ids for name in store.get_run(run_id, with_groups=True).groups if name
                 for part in ("/".join(name.split("/")[:end]) for end in range(1, name.count("/") + 2))}
        # A group is a path from the top (`traffic-light/lamp_color`): the evaluator or eval name the run's console
        # table shows (`lamp_color`) is its last part, which difflib does not find close.
        ends = sorted(name for name in known if name.endswith(f"/{group}"))
        hint = (f"; did you mean {' or '.join(map(repr, ends[:3]))}{' (…)' if len(ends) > 3 else ''}? A group is named by "
                "its whole path") if ends else did_you_mean(group, sorted(known))
        if not hint:  # a misspelt last part (`lamp_colr`)
            last_parts = {name.rsplit("/", 1)[-1]: name for name in sorted(known, reverse=True) if "/" in name}
            near = did_you_mean(group, sorted(last_parts), form="{}", shown=str)
            hint = f"; did you mean {last_parts[near]!r}? A group is named by its whole path" if near else ""
        raise UsageError(f"no unit of the group {group!r} was judged in the last {len(ids)} runs of "
                         f"{series_kind}{hint} (`assay runs show {_reference(store, ids[0])}` lists its groups)")
    document = {"group": group, "kind": series_kind, "points": [point.to_json() for point in points],
                "flaky": [unit.to_json() for unit in flaky.values()]}
    return Shown(document, trend_lines(f"{series_kind} {group or '(all units)'}", points, flaky, group=group))


def _reference(store: Any, run_id: str) -> str:
    """How to name a run to `runs show`: `latest` when it is the latest run of the store, else its id (the series of
    `--kind` or `--run` is not always the latest run's, and `runs show latest` would list another run's groups)."""
    newest = store.list_runs(limit=1)
    return "latest" if newest and newest[0].run_id == run_id else run_id


def shard_record(reference: str, open_store: Callable[[], Any]) -> tuple[Any, list[Any]]:
    """A shard's record for `assay runs merge`: a record folder (as CI jobs upload them) or a run in
    the store (id, prefix, latest~N; the store is opened only then)."""
    from assay.core.record import MANIFEST_FILE

    if not reference.strip():  # Path("") would be the current folder
        raise UsageError("a shard run given is empty (an unset variable in a script?); give the shards' run ids or "
                         "record folders")
    folder = Path(reference).expanduser()
    if folder.name == MANIFEST_FILE and folder.is_file():  # `records/*/manifest.json`: the record it is the manifest of
        folder = folder.parent
    if (folder / MANIFEST_FILE).is_file():
        _refuse_checkpoint(folder, reference)
        return _shard_record_read(folder)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{reference} is a file, not a run record folder: give the folder a record's {MANIFEST_FILE} is in")
    if folder.is_dir():  # a folder, but no record: the folder the records are in, most likely
        if any((child / "manifest.json").is_file() for child in folder.iterdir()):
            raise UsageError(f"{reference} holds run records rather than being one: give each shard's record "
                             f"({reference.rstrip('/')}/*)")
        raise UsageError(f"{reference} is a folder but no run record (a run record folder holds manifest.json)")
    if "/" in reference:  # no run id, prefix or latest~N has one: a record folder that is not there
        raise UsageError(f"no run record folder {reference}: it does not exist (the shards' records are the folders "
                         "their runs wrote, or give their run ids: `assay runs list` shows them)")
    with open_store() as store:
        stored = store.get_run(reference)
        if stored.record_path and (Path(stored.record_path) / MANIFEST_FILE).is_file():
            return _shard_record_read(Path(stored.record_path))
        return stored.manifest, store.unit_page(stored.run_id, limit=stored.unit_count + 1).units


def _refuse_checkpoint(folder: Path, reference: str) -> None:
    """A checkpoint folder (the path a run prints as `Checkpoint:`) given for a record: say which it is and what to
    give instead, rather than call it a damaged record to copy again."""
    from assay.core.journal import JOURNAL_FILE_NAME, MANIFEST_FILE_NAME, STATUS_COMPLETE

    if not (folder / JOURNAL_FILE_NAME).is_file():
        return
    try:
        checkpoint = json.loads((folder / MANIFEST_FILE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        checkpoint = {}
    if not isinstance(checkpoint, dict):
        checkpoint = {}
    run_id = str(checkpoint.get("id") or folder.name)
    command = "agent" if checkpoint.get("kind") == "agent" else "video"
    if command == "video" and run_id.startswith("run-"):  # (checkpoint run-X records as video-X)
        run_id = "video-" + run_id.removeprefix("run-")
    if checkpoint.get("status") == STATUS_COMPLETE:
        then = f"the run finished, so give its run id ({run_id}) or its record folder"
    else:
        then = (f"the run did not finish: `assay {command} run --resume {reference}` finishes it (run it where the shard "
                "ran), then give its run id or record folder")
    raise UsageError(f"{reference} is the checkpoint of run {run_id}, not its record (a run record is the folder "
                     f"records/<run id>/ beside the results store, written when the run finishes); {then}")


def _shard_record_read(folder: Path) -> tuple[Any, list[Any]]:
    """A shard's record folder, read whole: a file of it that cannot be read is named, line and all."""
    from assay.core.record import UNITS_FILE, UnreadableRecord, read_record

    try:
        manifest, units = read_record(folder)
        # Cut at a line boundary, every line left reads whole: the manifest's count says what is missing.
        expected = _recorded_units(manifest)
        if expected is not None and len(units) < expected:
            missing = expected - len(units)
            raise UnreadableRecord(f"{folder / UNITS_FILE}: {missing} of its {expected} unit(s) missing after line "
                                   f"{len(units)}")
    except UnreadableRecord as error:
        raise UsageError(f"the run record {folder} cannot be read ({error}): copy it again from the shard's job, "
                         "or run that shard again") from None
    return manifest, units


def _recorded_units(manifest: Any) -> int | None:
    """How many units a shard's manifest says its record holds; None when its kind or the manifest does not say."""
    from assay.core.run.kinds import KINDS, kind_named

    if not KINDS.get(manifest.kind):
        return None  # (a kind only imported, or unknown: `runs merge` refuses it by name)
    merge = kind_named(manifest.kind).merge
    return merge.recorded_units(manifest) if merge is not None else None


def imported(planned: Iterable[tuple[Path, Any]]) -> tuple[Shown, int, bool]:
    """`assay runs import`: each planned file imported as a run; one that cannot be is an `Error:` line on
    stderr as it fails, and the rest still go in. What was imported (with, for `--json`, each file that failed
    and why: a script reading only stdout sees it), how many files failed, and whether Ctrl-C stopped it (said
    on stderr: the files before were imported, and importing again resumes)."""
    import sys

    from assay.core.interop.importing import RecordedThenInterrupted, import_log
    from assay.core.interop.otlp_export import ExportInterrupted
    from assay.errors import AssayError, show_tracebacks

    planned = list(planned)
    again = "(a file already imported is recognised, not imported twice)"
    outcomes, failed, interrupted = [], [], False
    for position, (path, log_format) in enumerate(planned, 1):
        try:
            outcomes.append(import_log(path, log_format))
        except (AssayError, OSError, ValueError) as error:
            if show_tracebacks():  # `assay --debug`: the traceback too, as every other error has it
                import traceback

                traceback.print_exception(error, file=sys.stderr)
            if isinstance(error, PermissionError) and error.filename:
                message = (f"{path}: no permission to write {error.filename}: give this user write access to it, or set "
                           "ASSAY_STORE to a store this user may write")
            else:
                message = str(error) if isinstance(error, AssayError) else f"{path}: {type(error).__name__}: {error}"
            failed.append({"file": str(path.resolve()), "error": message})  # (as `imported` names its files)
            print(f"Error: {message}", file=sys.stderr)
        except KeyboardInterrupt as interruption:
            interrupted, rest = True, len(planned) - position
            if isinstance(interruption, ExportInterrupted):  # the file's run is recorded: only its export stopped
                print(f"Interrupted after importing {path} (its run is recorded; the warning above says how to export "
                      "it)" + (f": run the same command again to import the other {rest} file(s) {again}" if rest else ""),
                      file=sys.stderr)
            elif isinstance(interruption, RecordedThenInterrupted):  # recorded, then stopped while it was read back
                print(f"Interrupted after importing {path} (its run {interruption.run_id} is recorded)"
                      + (f": run the same command again to import the other {rest} file(s) {again}" if rest else ""),
                      file=sys.stderr)
            else:
                print(f"Interrupted while importing {path}: run the same command again to finish {again}", file=sys.stderr)
            # `--json`: a script reading only the document must not take the files left out as imported (`failed` is
            # empty only when every file went in).
            recorded = isinstance(interruption, (ExportInterrupted, RecordedThenInterrupted))
            for left, _ in planned[position if recorded else position - 1 :]:
                failed.append({"file": str(left.resolve()), "interrupted": True, "error": (
                    f"{left}: not imported: interrupted (Ctrl-C) {'while importing it' if left == path else 'before it'}; "
                    f"run the same command again {again}")})
            break
    shown = Shown({"imported": [outcome.to_json() for outcome in outcomes], "failed": failed},
                  [import_line(outcome) for outcome in outcomes])
    return shown, len(failed), interrupted


def import_line(outcome: Any) -> str:
    """What `assay runs import` says of one file it imported."""
    counts = " ".join(f"{name} {outcome.counts[name]}" for name in ("passed", "failed", "errored", "skipped", "ignored")
                      if outcome.counts.get(name))
    tool = "" if outcome.tool == outcome.format else f", {outcome.tool}"
    version = f" {outcome.tool_version}" if outcome.tool_version else ""
    verb = "Already imported as" if outcome.already else "Imported"
    return (f"{verb} {outcome.run_id}: {outcome.path.name} ({outcome.format}{tool}{version}), "
            f"{outcome.unit_count} unit{'' if outcome.unit_count == 1 else 's'}: {counts or 'none'}")


def exported(store: Any, ref: str, endpoint: str, timeout: float) -> Shown:
    """`assay runs export`: the run sent to an OTLP collector (its units streamed from its record)."""
    from assay.core.interop.otlp_export import export_record, export_run

    _given(ref, "RUN", "the latest run")  # (it said "a run reference is … latest or latest~N; got ''")
    stored = store.get_run(ref)
    record = Path(stored.record_path) if stored.record_path else None
    if record is not None and (record / "manifest.json").is_file():
        done = export_record(stored.manifest, record, endpoint, timeout=timeout)
    else:
        units = (unit for offset in range(0, stored.unit_count, 1000)
                 for unit in store.unit_page(stored.run_id, offset=offset, limit=1000).units)
        done = export_run(stored.manifest, units, endpoint, timeout=timeout)
    return Shown(done.to_json(), [
        f"Exported {done.run_id} to {done.endpoint}: 1 span (trace {done.trace_id}) and "
        f"{done.events} gen_ai.evaluation.result event(s), {done.linked} in the unit's own trace"
    ])


def reindex_lines(outcome: Any, index: Path) -> Iterator[str]:
    """What `assay runs reindex` says of the index it rebuilt (at `index`)."""
    if outcome.set_aside is not None:
        yield f"The results store was damaged ({outcome.damage}); moved it aside to {outcome.set_aside}"
    labels = f" and {outcome.labels} label(s)" if outcome.labels or outcome.skipped_labels else ""
    yield f"Indexed {outcome.runs} run(s){labels} into {index}"
    yield from (f"Skipped an unreadable run record: {record} ({why})"
                for record, why in zip(outcome.unreadable, outcome.unreadable_why, strict=True))
    yield from (f"Skipped an unreadable unit line (the rest of its run is indexed): {line}" for line in outcome.skipped_lines)
    yield from (f"Skipped an unreadable label line: {line}" for line in outcome.skipped_labels)
