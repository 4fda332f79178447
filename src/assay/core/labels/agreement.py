"""Judge–human agreement from the labels in a store: per judge, between labellers, and over judge models.

A label is about an item: a unit's content (kind, subject, content digest), wherever it appears. Its
humans' answer is the labellers' majority verdict (a tie decides nothing) and their median score;
each judge's answer is the one recorded in a labelled run (what the person saw), else in the newest
run that holds the same item — so a judge model that re-judged the same content is measured against
the same labels, which is what shows drift.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.core.labels.model import ANSWERS, SCORES, Judgement, Label, latest_labels, made_at
from assay.core.labels.statistics import confusion_matrix, kappa_from_matrix, kappa_interval, krippendorff_alpha, spearman
from assay.core.labels.units import stored_unit

__all__ = ["AgreementFilter", "agreement_report", "checked_agreement_report", "human_verdicts"]

Item = tuple[str, str, str]  # (kind, subject, content digest)
CHECKS_PROMPT = "deterministic checks"


@dataclass(frozen=True)
class AgreementFilter:
    judge: str | None = None  # a model name, or text of the judge identity
    rubric: str | None = None  # text of the rubric
    labeller: str | None = None  # only this labeller's labels
    by_rubric: bool = False  # one row per (judge, rubric) instead of per judge


@dataclass
class _Found:
    """One judge's answer about one item, and the run it came from."""

    judgement: Judgement
    run_id: str
    run_created_at: str
    labelled_run: bool  # the run a person labelled the item in


@dataclass
class _Item:
    labels: dict[str, Label] = field(default_factory=dict)  # labeller -> latest label
    found: dict[str, _Found] = field(default_factory=dict)  # row key -> the answer that counts

    def human_verdict(self) -> str | None:
        votes = [label.verdict for label in self.labels.values() if label.verdict is not None]
        passes, fails = votes.count("pass"), votes.count("fail")
        return "pass" if passes > fails else "fail" if fails > passes else None

    def human_score(self) -> float | None:
        import numpy

        scores = [label.score for label in self.labels.values() if label.score is not None]
        return float(numpy.median(scores)) if scores else None


def _items(labels: Iterable[Label]) -> dict[Item, _Item]:
    items: dict[Item, _Item] = {}
    for label in sorted(latest_labels(labels).values(), key=made_at):
        entry = items.setdefault(label.item, _Item())
        entry.labels[label.labeller] = label
    return items


def human_verdicts(labels: Iterable[Label]) -> dict[Item, str]:
    """Each labelled item's verdict by its labellers' majority (each labeller's latest label counts once), as
    agreement weighs it; items without one (a tie, scores only) are left out."""
    verdicts = {item: entry.human_verdict() for item, entry in _items(labels).items()}
    return {item: verdict for item, verdict in verdicts.items() if verdict is not None}


def _row_key(judgement: Judgement, by_rubric: bool) -> str:
    return f"{judgement.judge} · {judgement.rubric}" if by_rubric and judgement.rubric else judgement.judge


def _wanted(judgement: Judgement, selection: AgreementFilter) -> bool:
    if selection.judge and selection.judge != judgement.model and selection.judge not in judgement.judge:
        return False
    return not selection.rubric or selection.rubric in judgement.rubric


def _checks(kind: str, verdict: str | None) -> Judgement | None:
    if verdict is None:
        return None
    return Judgement(f"{CHECKS_PROMPT} ({kind})", None, CHECKS_PROMPT, "", verdict)


def _combined(judgements: list[Judgement]) -> Judgement:
    """One judge's answer about a unit it graded against several rubrics (two `t.judge` calls, say): it passes the
    unit when it passed every rubric, which is what the labeller is asked ("does the reply meet each rubric?"),
    and scores it with the mean of its scores (when they share one scale)."""
    if len(judgements) == 1:
        return judgements[0]
    verdicts = {judgement.verdict for judgement in judgements} - {None}
    scored = [judgement for judgement in judgements if judgement.score is not None]
    scales = {judgement.score_range for judgement in scored}
    score = sum(judgement.score for judgement in scored) / len(scored) if scored and len(scales) == 1 else None
    first = judgements[0]
    return Judgement(
        first.judge, first.model, first.prompt, "; ".join(dict.fromkeys(item.rubric for item in judgements if item.rubric)),
        "fail" if "fail" in verdicts else "pass" if verdicts else None, score,
        next(iter(scales)) if score is not None else None, "; ".join(item.reason for item in judgements if item.reason),
    )


def _offer(entry: _Item, judgements: Iterable[Judgement | None], source: tuple[str, str, bool],
           selection: AgreementFilter) -> None:
    """What one run (or one label's record of it) says about an item, one answer per row: every judgement of
    a row's judge counts, not only its first (a unit's second rubric was dropped without a word). `source` is
    the run's id and time, and whether a person labelled the item in it."""
    by_row: dict[str, list[Judgement]] = {}
    for judgement in judgements:
        if judgement is None or (judgement.verdict is None and judgement.score is None):
            continue  # a judge that could not judge (judge-error, unavailable) graded nothing
        if judgement.prompt == CHECKS_PROMPT:
            if selection.judge or selection.rubric:  # a judge or rubric was asked for: the checks are not one
                continue
        elif not _wanted(judgement, selection):
            continue
        by_row.setdefault(_row_key(judgement, selection.by_rubric), []).append(judgement)
    for key, graded in by_row.items():
        answer = _Found(_combined(graded), *source)
        current = entry.found.get(key)
        # An answer from a labelled run beats any other; then the newest run.
        if current is None or (answer.labelled_run, answer.run_created_at) > (current.labelled_run, current.run_created_at):
            entry.found[key] = answer


def _collect(store: Any, items: dict[Item, _Item], selection: AgreementFilter) -> None:
    """Each item's judges' answers: from the labels' own records of them, then from every stored run
    that holds a labelled unit id with the same content."""
    run_times: dict[str, str] = {}
    for entry in items.values():
        for label in entry.labels.values():
            when = run_times.get(label.run_id) or _run_time(store, label.run_id) or label.created_at
            run_times[label.run_id] = when
            _offer(entry, (*label.judgements, _checks(label.kind, label.checks)),
                   (label.run_id, when, True), selection)
    labelled_runs = {(label.run_id, label.unit_id) for entry in items.values() for label in entry.labels.values()}
    unit_ids = sorted({unit_id for _, unit_id in labelled_runs})
    by_run: dict[str, list[str]] = {}
    for start in range(0, len(unit_ids), 500):
        chunk = unit_ids[start : start + 500]
        rows = store.read(f"SELECT run_id, unit_id FROM units WHERE unit_id IN ({','.join('?' * len(chunk))})", chunk)
        for run_id, unit_id in rows:
            if (run_id, unit_id) not in labelled_runs:
                by_run.setdefault(run_id, []).append(unit_id)
    for run_id, ids in by_run.items():
        run = store.get_run(run_id)
        for unit in store.units_by_id(run_id, ids).values():
            stored = stored_unit(run, unit)
            entry = items.get(stored.item)
            if entry is None:
                continue
            _offer(entry, (*stored.judgements.judgements, _checks(stored.kind, stored.judgements.checks)),
                   (run_id, run.manifest.created_at, False), selection)


def _run_time(store: Any, run_id: str) -> str | None:
    rows = store.read("SELECT created_at FROM runs WHERE run_id = ?", (run_id,)).fetchall()
    return rows[0][0] if rows else None


def _binary(pairs: Sequence[tuple[str, str]], rows: str = "human", columns: str = "judge") -> dict[str, Any] | None:
    """Agreement of the pairs' first answers (the matrix's `rows`) with their second (its `columns`)."""
    if not pairs:
        return None
    matrix = confusion_matrix([human for human, _ in pairs], [judge for _, judge in pairs], ANSWERS)
    interval = kappa_interval(matrix)
    return {
        "units": len(pairs), "agreement": float(matrix.trace() / matrix.sum()), "kappa": kappa_from_matrix(matrix),
        "kappa_interval": list(interval) if interval else None,
        "confusion": {"rows": rows, "columns": columns, "labels": list(ANSWERS), "matrix": matrix.tolist()},
    }


def _on_label_scale(judgement: Judgement) -> float | None:
    """A judge's score on the labels' 1–5 scale (linear in its own range), for α."""
    if judgement.score is None:
        return None
    low, high = judgement.score_range or (min(SCORES), max(SCORES))
    if high == low:
        return None
    return min(SCORES) + (judgement.score - low) * (max(SCORES) - min(SCORES)) / (high - low)


def _scores(pairs: Sequence[tuple[float, float]]) -> dict[str, Any] | None:
    if not pairs:
        return None
    humans, judges = [human for human, _ in pairs], [judge for _, judge in pairs]
    return {
        "units": len(pairs), "spearman": spearman(humans, judges),
        # The judge's scale is continuous once mapped, so the interval metric (squared difference).
        "alpha": krippendorff_alpha([[human, judge] for human, judge in pairs], "interval"), "alpha_level": "interval",
    }


def _judge_rows(items: dict[Item, _Item]) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for entry in items.values():
        verdict, score = entry.human_verdict(), entry.human_score()
        for key, found in entry.found.items():
            row = rows.setdefault(key, {
                "judge": key, "kind": "checks" if found.judgement.prompt == CHECKS_PROMPT else "judge",
                "model": found.judgement.model, "prompt": found.judgement.prompt,
                # `--by-rubric`: a row per judge and rubric (its key names both), and drift is told per rubric
                "rubric": found.judgement.rubric if key != found.judgement.judge else None,
                "units": 0, "binary": [], "scores": [],
                "first_run_at": found.run_created_at, "last_run_at": found.run_created_at, "runs": set(),
            })
            row["units"] += 1
            row["runs"].add(found.run_id)
            row["first_run_at"] = min(row["first_run_at"], found.run_created_at)
            row["last_run_at"] = max(row["last_run_at"], found.run_created_at)
            if verdict is not None and found.judgement.verdict is not None:
                row["binary"].append((verdict, found.judgement.verdict))
            judge_score = _on_label_scale(found.judgement)
            if score is not None and judge_score is not None:
                row["scores"].append((score, judge_score))
    result = []
    for row in sorted(rows.values(), key=lambda row: (row["kind"] != "judge", row["prompt"], row["first_run_at"], row["judge"])):
        row["binary"] = _binary(row["binary"])
        row["scores"] = _scores(row["scores"])
        row["runs"] = len(row["runs"])
        result.append(row)
    return result


def _labellers(items: dict[Item, _Item]) -> dict[str, Any]:
    names = sorted({name for entry in items.values() for name in entry.labels})
    pairs = []
    for position, first in enumerate(names):
        for second in names[position + 1 :]:
            both = [(entry.labels[first].verdict, entry.labels[second].verdict) for entry in items.values()
                    if first in entry.labels and second in entry.labels
                    and entry.labels[first].verdict is not None and entry.labels[second].verdict is not None]
            scored = [(entry.labels[first].score, entry.labels[second].score) for entry in items.values()
                      if first in entry.labels and second in entry.labels
                      and entry.labels[first].score is not None and entry.labels[second].score is not None]
            if both or scored:
                pairs.append({"labellers": [first, second], "binary": _binary(both, first, second),
                              "spearman": spearman([a for a, _ in scored], [b for _, b in scored]) if scored else None,
                              "scored_units": len(scored)})
    verdict_rows = [[entry.labels[name].verdict if name in entry.labels else None for name in names] for entry in items.values()]
    score_rows = [[entry.labels[name].score if name in entry.labels else None for name in names] for entry in items.values()]
    return {
        "labellers": names, "pairs": pairs,
        "alpha_verdict": krippendorff_alpha(verdict_rows, "nominal") if len(names) > 1 else None,
        "alpha_score": krippendorff_alpha(score_rows, "ordinal", SCORES) if len(names) > 1 else None,
        "alpha_score_level": "ordinal",
        "units_with_several_labellers": sum(1 for entry in items.values() if len(entry.labels) > 1),
    }


def _drift(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per prompt (and rubric, with `--by-rubric`), the judge models that used it, in the order they first
    judged: agreement per model."""
    by_prompt: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    for row in rows:
        if row["kind"] == "judge":
            by_prompt.setdefault((row["prompt"], row.get("rubric")), []).append(row)
    drift = []
    for (prompt, rubric), models in by_prompt.items():
        if len({row["model"] for row in models}) < 2:
            continue
        drift.append({"prompt": prompt, "rubric": rubric, "models": [
            {"model": row["model"], "judge": row["judge"], "first_run_at": row["first_run_at"], "last_run_at": row["last_run_at"],
             "units": (row["binary"] or {}).get("units", 0), "agreement": (row["binary"] or {}).get("agreement"),
             "kappa": (row["binary"] or {}).get("kappa")}
            for row in sorted(models, key=lambda row: row["first_run_at"])
        ]})
    return drift


def agreement_report(store: Any, labels: Iterable[Label], selection: AgreementFilter = AgreementFilter()) -> dict[str, Any]:
    """Everything `assay judge agreement --json` prints and the viewer's agreement page shows."""
    labels = [label for label in labels if selection.labeller is None or label.labeller == selection.labeller]
    items = _items(labels)
    _collect(store, items, selection)
    rows = _judge_rows(items)
    return {
        # the labels that count: each labeller's latest of each unit (a relabelling replaces, it is not one more)
        "labels": sum(len(entry.labels) for entry in items.values()), "items": len(items),
        "filter": {"judge": selection.judge, "rubric": selection.rubric, "labeller": selection.labeller,
                   "by_rubric": selection.by_rubric},
        "judges": rows, "labellers": _labellers(items), "drift": _drift(rows),
    }


def checked_agreement_report(
    store: Any, book: Any, selection: AgreementFilter, option: Callable[[str], str] = "--{}".format,
) -> dict[str, Any]:
    """`assay judge agreement`'s report (see `agreement_report`), with `--labeller`, `--judge` or `--rubric`
    that match nothing in a store that has labels refused (a typo, not an empty result), naming what would.
    `book` is the store's `LabelBook`; `option` spells a filter's name as the reader gave it (the viewer's
    agreement page: "the judge filter")."""
    from assay.core.format import join_first
    from assay.errors import UsageError

    book.check_labeller(selection.labeller, option("labeller"))
    labels = book.labels()
    report = agreement_report(store, labels, selection)
    if report["judges"] or not report["items"] or not (selection.judge or selection.rubric):
        return report
    by_rubric = selection.rubric is not None
    everyone = agreement_report(store, labels, AgreementFilter(labeller=selection.labeller, by_rubric=by_rubric))
    judged_by = sorted({row["judge"] for row in everyone["judges"] if not row["judge"].startswith(CHECKS_PROMPT)})
    judge, rubric = option("judge"), option("rubric")
    given = [name for name, value in ((judge, selection.judge), (rubric, selection.rubric)) if value]
    asked = " and ".join(f"{name} {value!r}" for name, value in ((judge, selection.judge), (rubric, selection.rubric))
                         if value)
    if not judged_by:
        # "their judges: none" read as a contradiction beside the report's "deterministic checks" rows.
        raise UsageError(f"{asked}: no model judge graded the labelled units, only their deterministic checks, which "
                         f"{judge} and {rubric} do not select; leave {' and '.join(given)} out to see the checks' "
                         "agreement", "--judge" if selection.judge else "--rubric")
    shown = join_first(judged_by, separator="; ")
    raise UsageError(f"{asked}: no judge of the labelled units matches ({judge} takes a model name or part of a "
                     f"judge's, {rubric} part of a rubric); their judges{' · rubrics' if by_rubric else ''}: {shown}",
                     "--judge" if selection.judge else "--rubric")

