"""The results-store figures: index a 100,000-unit run, compare two, render the viewer's run page.

Synthetic video-shaped units (ids, group, expected/observed, reason, detail); run with
`python benchmarks/store_figures.py [--units N]`. Targets: index ≤ 5 s, compare ≤ 2 s, page ≤ 1.5 s.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from typer.testing import CliRunner

from assay.cli.runs import runs_app
from assay.core.record import RunManifest, UnitResult, write_record
from assay.core.results_store import SqliteRunStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # for tests/browser.py


def synthetic_units(count: int, *, fail_every: int, seed_offset: int = 0) -> list[UnitResult]:
    units = []
    for index in range(count):
        case, target, sample = f"case{index // 10_000}", f"target{index % 10}", index // 10
        failed = (index + seed_offset) % fail_every == 0
        units.append(
            UnitResult(
                unit_id=f"{case}/{target}/{sample}@{sample * 0.5:g}s#1",
                verdict="failed" if failed else "passed",
                group=f"{case}/{target}",
                expected=index % 7,
                observed=(index % 7) + (1 if failed else 0),
                reason="numeric difference 1 exceeds tolerance 0" if failed else "matched",
                duration_seconds=0.004,
                artifacts={"video": f"/videos/{case}.mp4", "timestamp_s": sample * 0.5},
                detail={"case": case, "target": target, "sample_index": sample, "trial": 1, "compare_mode": "exact"},
            )
        )
    return units


def manifest(run_id: str, created_at: str) -> RunManifest:
    return RunManifest(run_id=run_id, kind="video", created_at=created_at, title=f"synthetic {run_id}", success=True)


def measure_page(database: Path, run_id: str, repeats: int = 3) -> list[float]:
    from browser import launch, serving
    from playwright.sync_api import sync_playwright

    from assay.view.data import ViewData
    from assay.view.server import create_view_app

    store = SqliteRunStore(database, read_only=True)
    timings = []
    try:
        with serving(lambda binding: create_view_app(ViewData(store), binding)) as origin, sync_playwright() as playwright:
            browser = launch(playwright)
            page = browser.new_page()
            for _ in range(repeats):
                page.goto("about:blank")
                started = time.perf_counter()
                page.goto(f"{origin}/#/run/{run_id}")
                page.wait_for_selector("body[data-ready=true]")
                page.wait_for_selector("#units-table tbody tr:nth-child(100)")
                timings.append(time.perf_counter() - started)
            browser.close()
    finally:
        store.close()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--no-browser", action="store_true")
    arguments = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="assay-store-figures-"))
    database = folder / "assay.db"
    results: dict[str, float | list[float] | int] = {"units": arguments.units}
    try:
        before = synthetic_units(arguments.units, fail_every=20)
        after = synthetic_units(arguments.units, fail_every=19, seed_offset=3)

        started = time.perf_counter()
        write_record(folder / "runs", manifest("video-before", "2026-01-01T00:00:00Z"), before)
        results["write_record_seconds"] = time.perf_counter() - started

        with SqliteRunStore(database) as store:
            started = time.perf_counter()
            store.add_run(manifest("video-before", "2026-01-01T00:00:00Z"), before)
            results["index_seconds"] = time.perf_counter() - started
            store.add_run(manifest("video-after", "2026-01-02T00:00:00Z"), after)

        import os

        os.environ["ASSAY_STORE"] = str(database)
        compare_times = []
        for _ in range(3):
            started = time.perf_counter()
            outcome = CliRunner().invoke(runs_app, ["compare", "video-before", "video-after", "--json"])
            compare_times.append(time.perf_counter() - started)
            assert outcome.exit_code == 0, outcome.output
        results["compare_seconds"] = compare_times
        summary = json.loads(outcome.output)
        results["compare_regressions"] = summary["counts"]["regressions"]
        results["compare_fixes"] = summary["counts"]["fixes"]

        if not arguments.no_browser:
            results["run_page_seconds"] = measure_page(database, "video-before")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
