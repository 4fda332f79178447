"""How far to trust the model judges behind what changed between two runs.

`assay runs compare` names each model judge that failed a unit that regressed (in the later run) or had failed a
unit that was fixed (in the earlier one), with what people's labels say of that judge (`assay judge agreement`'s
figures), or that nobody has labelled its verdicts yet. A regression a judge decided is only as good as the judge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["MOST_UNITS_READ", "judges_behind", "judges_lines"]

MOST_UNITS_READ = 200  # of each list: a judge's share of the changes is told from the first ones, and said so


def judges_behind(store: Any, first: Any, second: Any, units: Mapping[str, Sequence[str]]) -> dict[str, Any] | None:
    """The model judges behind `units["regressions"]` (read in `second`) and `units["fixes"]` (read in `first`), each
    with how many of them it failed, what people who labelled those very units said of them (`confirmed`: a
    labellers' majority of fail, `disputed`: of pass), and its agreement with the human labels overall (None: no
    labelled unit it judged). None when no model judge failed any of them (deterministic checks, or units of a kind
    without judges)."""
    from assay.core.labels.agreement import CHECKS_PROMPT, agreement_report, human_verdicts
    from assay.core.labels.store import LabelBook
    from assay.core.labels.units import judged_candidates

    failed_by: dict[str, list[tuple[str, Any]]] = {}  # judge -> (change, stored unit) it failed
    models: dict[str, str | None] = {}
    read: dict[str, int] = {}
    for change, run in (("regressions", second), ("fixes", first)):
        ids = list(units.get(change, ()))[:MOST_UNITS_READ]
        read[change] = len(ids)
        for stored in judged_candidates(store, run, ids):
            for judgement in {judgement.judge: judgement for judgement in stored.judgements.judgements
                              if judgement.verdict == "fail" and judgement.prompt != CHECKS_PROMPT}.values():
                failed_by.setdefault(judgement.judge, []).append((change, stored))
                models[judgement.judge] = judgement.model
    if not failed_by:
        return None
    labels = LabelBook(store).labels()
    rows = {row["judge"]: row for row in agreement_report(store, labels)["judges"]} if labels else {}
    people = human_verdicts(labels)
    judges = []
    for key, failed in failed_by.items():
        row = rows.get(key)
        verdicts = [people.get(stored.item) for _, stored in failed] if people else []
        judges.append({
            "judge": key, "model": models[key],
            "regressions": sum(1 for change, _ in failed if change == "regressions"),
            "fixes": sum(1 for change, _ in failed if change == "fixes"),
            "confirmed": verdicts.count("fail"), "disputed": verdicts.count("pass"),
            "labelled_units": row["units"] if row else 0, "agreement": row["binary"] if row else None,
        })
    judges.sort(key=lambda entry: (-entry["regressions"] - entry["fixes"], entry["judge"]))
    return {"judges": judges, "units_read": read,
            "units": {change: len(units.get(change, ())) for change in ("regressions", "fixes")}}


def _share(count: int, read: int, total: int, noun: str) -> str:
    if not count:
        return ""
    of = f"{total}" if read == total else f"the first {read} of {total}"
    return f"{count} of {of} {noun}"


def judges_lines(behind: dict[str, Any] | None, limit: int) -> list[str]:
    """The text: a heading and a line per judge (at most `limit`, the rest counted)."""
    if not behind:
        return []
    read, total = behind["units_read"], behind["units"]
    lines = ["Judges behind these changes (how far to trust each: what people's labels say of it):"]
    shown = behind["judges"] if limit <= 0 else behind["judges"][:limit]
    for entry in shown:
        shares = [part for part in (
            _share(entry["regressions"], read["regressions"], total["regressions"], "regressions"),
            _share(entry["fixes"], read["fixes"], total["fixes"], "fixes (in the earlier run)"),
        ) if part]
        said = []
        labelled = entry["confirmed"] + entry["disputed"]
        if labelled:
            said.append(f"people labelled {labelled} of these: {entry['confirmed']} failing as the judge said, "
                        f"{entry['disputed']} passing")
        said.append(_overall(entry))
        lines.append(f"  {entry['judge']}: failed {' and '.join(shares)}; {'; '.join(said)}")
    if len(shown) < len(behind["judges"]):
        lines.append(f"  … {len(behind['judges']) - len(shown)} more judge(s) (--limit, --json)")
    return lines


def _overall(entry: Mapping[str, Any]) -> str:
    from assay.core.labels.report import figure, percent

    binary = entry["agreement"]
    if binary:
        interval = binary["kappa_interval"]
        kappa = ("κ undefined (one answer throughout)" if binary["kappa"] is None else
                 f"κ {figure(binary['kappa'])}" + (f" [{figure(interval[0])}, {figure(interval[1])}]" if interval else ""))
        return f"over all {binary['units']} labelled unit(s) it agrees with people on {percent(binary['agreement'])}, {kappa}"
    if entry["labelled_units"]:
        return f"{entry['labelled_units']} labelled unit(s), none with both a person's and its pass/fail verdict"
    return "nobody has labelled its verdicts yet, so how far to trust it is unknown (`assay view --label`)"
