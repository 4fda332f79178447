"""Labelling throughput: how fast the next unit renders in the viewer's label mode on a 100,000-unit run.

Builds a store with one agent-shaped run of N units (each with a transcript, a check and a judge
assertion with its model and score), serves `assay view --label`'s app on 127.0.0.1, opens the label
page in Chromium and works through the queue from the keyboard: `j` (next) and answers (which save a
label, reveal the judge, then `j`). Reported per step: the page's own figure (key press to the next
frame after the unit is in the DOM, `data-render-ms`), the wall time Playwright sees until the new
unit is on the page, and Playwright's own round trip for comparison. Target: next unit ≤ 150 ms.

    python benchmarks/label_throughput.py [--units 100000] [--steps 200] [--filter all|judged]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # for tests/browser.py

from assay.core.record import RunManifest, UnitResult, write_record  # noqa: E402
from assay.core.results_store import SqliteRunStore  # noqa: E402


def judged_units(count: int) -> list[UnitResult]:
    units = []
    for index in range(count):
        score = (index * 37 % 100) / 100
        check = "matched" if index % 5 else "mismatched"
        units.append(UnitResult(
            unit_id=f"main/eval{index}#1", verdict="passed" if score >= 0.5 and check == "matched" else "failed",
            group=f"main/eval{index // 100}", duration_seconds=0.8,
            detail={
                "experiment_id": "main", "eval_id": f"eval{index}", "attempt": 1, "agent": "shop",
                "assertions": [
                    {"kind": "check", "scope": "t", "description": "check(includes('order'))", "status": check},
                    {"kind": "judge", "scope": "t", "description": "judge('Answers the order question politely.', threshold=0.5)",
                     "status": "matched", "value": score, "threshold": 0.5, "gated": True, "reason": f"graded {score}",
                     "judge": {"recipe": "rubric", "model": "judge-1", "cached": False, "prompt": "assay-agent-judge/1"}},
                ],
                "turns": [{"session": 0, "turn": 1, "input": f"Where is order {index}?", "status": "completed",
                           "events": [{"type": "message", "role": "assistant", "text": f"Order {index} ships on Monday."}]}],
            },
        ))
    return units


def build_store(folder: Path, count: int) -> tuple[Path, str, float]:
    database = folder / "assay.db"
    run_id = "agent-20261203T000000Z-bench000"
    manifest = RunManifest(run_id=run_id, kind="agent", created_at="2026-12-03T00:00:00Z", title="synthetic judged run")
    record = write_record(folder / "records", manifest, judged_units(count))
    started = time.perf_counter()
    from assay.core.record import iter_unit_lines

    with SqliteRunStore(database) as store:
        store.add_run(manifest, iter_unit_lines(record), str(record))
    return database, run_id, time.perf_counter() - started


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return f"median {statistics.median(ordered):.1f} ms, p95 {p95:.1f} ms, max {ordered[-1]:.1f} ms (n={len(ordered)})"


def measure(database: Path, run_id: str, steps: int, queue_filter: str) -> dict[str, list[float] | float]:
    from browser import launch, serving
    from playwright.sync_api import sync_playwright

    from assay.view.data import ViewData
    from assay.view.labelling import LabelSession
    from assay.view.server import create_view_app

    store = SqliteRunStore(database)
    data = ViewData(store)
    in_page: list[float] = []
    wall: list[float] = []
    overhead: list[float] = []
    try:
        with serving(lambda binding: create_view_app(data, binding, labelling=LabelSession(data, "bench"))) as origin, \
                sync_playwright() as playwright:
            browser = launch(playwright)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            started = time.perf_counter()
            page.goto(f"{origin}/#/label?scope={run_id}&filter={queue_filter}")
            page.wait_for_selector("#label-item[data-index='0']", state="attached", timeout=120_000)
            first_page = time.perf_counter() - started
            # Playwright's own cost: a key press that changes nothing, then waiting for what is on the page.
            index = page.locator("#label-item").get_attribute("data-index")
            for _ in range(20):
                began = time.perf_counter()
                page.keyboard.press("Shift")
                page.wait_for_selector(f"#label-item[data-index='{index}']", state="attached")
                overhead.append((time.perf_counter() - began) * 1000)
            for step in range(steps):
                index = int(page.locator("#label-item").get_attribute("data-index"))
                if step % 4 == 3:  # every fourth unit is answered: the label is saved and the judge revealed first
                    page.keyboard.press("pf"[step % 8 == 3])
                    page.wait_for_selector(f"#label-item[data-index='{index}'][data-revealed='true']", state="attached")
                began = time.perf_counter()
                page.keyboard.press("j")
                page.wait_for_selector(f"#label-item[data-index='{index + 1}'][data-render-ms]", state="attached")
                wall.append((time.perf_counter() - began) * 1000)
                in_page.append(float(page.locator("#label-item").get_attribute("data-render-ms")))
            browser.close()
    finally:
        store.close()
    return {"in_page": in_page, "wall": wall, "overhead": overhead, "first_page": first_page}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--filter", default="all", choices=("all", "judged", "disagree"))
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        database, run_id, indexed = build_store(Path(folder), arguments.units)
        print(f"indexed a {arguments.units:,}-unit judged agent run in {indexed:.2f} s")
        figures = measure(database, run_id, arguments.steps, arguments.filter)
        print(f"label page with its queue ({arguments.filter}) and first unit: {figures['first_page']:.2f} s")
        print(f"next unit, in the page (key press to the next frame): {summary(figures['in_page'])}")
        print(f"next unit, wall time seen by Playwright:               {summary(figures['wall'])}")
        print(f"Playwright's own round trip (a key that does nothing): {summary(figures['overhead'])}")
        worst = max(figures["in_page"])
        print("target ≤ 150 ms (in the page, every step):", "met" if worst <= 150 else f"NOT met (worst {worst:.1f} ms)")


if __name__ == "__main__":
    main()
