"""How `assay judge agreement` reads as text: each judge's agreement with the human labels, between
labellers, and per judge model over time (drift)."""

from __future__ import annotations

from typing import Any

__all__ = ["agreement_lines", "figure", "percent"]


def figure(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    text = f"{value:.{digits}f}"
    # κ -0.004 is no agreement, not a hint of disagreement: "-0.00" read as one
    return text[1:] if text.startswith("-") and not float(text) else text


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _binary_lines(binary: dict[str, Any] | None) -> list[str]:
    if not binary:
        return ["  pass/fail: no unit with both a human and a judge verdict"]
    interval = binary["kappa_interval"]
    if binary["kappa"] is None:  # every answer on one side: chance agreement is total, κ is 0/0
        kappa = "Cohen's κ undefined (both gave the same one answer throughout)"
    else:
        shown = f" [{figure(interval[0])}, {figure(interval[1])}] (95% bootstrap)" if interval else ""
        kappa = f"Cohen's κ {figure(binary['kappa'])}{shown}"
    (pp, pf), (fp, ff) = binary["confusion"]["matrix"]
    return [
        f"  pass/fail: {binary['units']} unit(s), agreement {percent(binary['agreement'])}, {kappa}",
        "    human \\ judge   pass   fail",
        f"    pass           {pp:>5}  {pf:>5}",
        f"    fail           {fp:>5}  {ff:>5}",
    ]


def agreement_lines(report: dict[str, Any]) -> list[str]:
    """The text of an `agreement_report` (a hint where to label when there are no labels yet)."""
    if not report["labels"]:
        return ["No labels yet: label units in the viewer with `assay view --label` (or `assay labels import FILE`)."]
    labellers = report["labellers"]
    lines = [f"Agreement with {report['labels']} human label(s) of {report['items']} unit(s) "
             f"(labellers: {', '.join(labellers['labellers']) or '-'})"]
    for row in report["judges"]:
        lines.append("")
        lines.append(f"{row['judge']}: {row['units']} labelled unit(s) in {row['runs']} run(s), "
                     f"{row['first_run_at'][:10]} … {row['last_run_at'][:10]}")
        lines += _binary_lines(row["binary"])
        scores = row["scores"]
        if scores:
            lines.append(f"  scores: {scores['units']} unit(s), Spearman ρ {figure(scores['spearman'])}, "
                         f"Krippendorff's α ({scores['alpha_level']}) {figure(scores['alpha'])}")
    if len(labellers["labellers"]) > 1:
        lines += ["", f"Between labellers ({labellers['units_with_several_labellers']} unit(s) with several): "
                      f"α pass/fail (nominal) {figure(labellers['alpha_verdict'])}, "
                      f"α scores ({labellers['alpha_score_level']}) {figure(labellers['alpha_score'])}"]
        for pair in labellers["pairs"]:
            binary = pair["binary"]
            if binary:
                interval = binary["kappa_interval"]
                shown = f" [{figure(interval[0])}, {figure(interval[1])}]" if interval else ""
                lines.append(f"  {' – '.join(pair['labellers'])}: {binary['units']} unit(s), agreement "
                             f"{percent(binary['agreement'])}, κ {figure(binary['kappa'])}{shown}")
    for drift in report["drift"]:
        rubric = f", rubric {drift['rubric']}" if drift.get("rubric") else ""
        lines += ["", f"Judge drift ({drift['prompt']}{rubric}), models in the order they first judged:"]
        for model in drift["models"]:
            lines.append(f"  {model['model']} (from {model['first_run_at'][:10]}): {model['units']} unit(s), "
                         f"agreement {percent(model['agreement'])}, κ {figure(model['kappa'])}")
    return lines
