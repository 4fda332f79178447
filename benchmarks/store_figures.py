"""The results-store figures: index a 100,000-unit run, compare two, render the viewer's run page.

Synthetic video-shaped units (ids, group, expected/observed, reason, detail); run with
`python benchmarks/store_figures.py [--units N]`. Targets: index ≤ 5 s, compare ≤ 2 s, page ≤ 1.5 s.

`--agent-units` measures on real agent units instead (issue 35): it runs examples/agent once with
`assay agent run` (offline, ~3 KB bodies with transcripts) and replicates its unit bodies under new ids
into two runs of one series (the second with 0.5 % of its units flipped), then times, in interleaved
rounds (medians), `assay runs compare A B` as a process against a bare SQL join of the two runs' unit
verdicts in a bare Python process (wall, CPU, peak RSS), and the viewer's run page in Chromium.
Targets: compare ≤ 1.5× the join, first rows of the run page ≤ 0.3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sqlite3
import subprocess
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


# Set before the page's own scripts run: when its units table first has rows (navigation start = 0), after
# the frame that paints them.
FIRST_ROWS = """
new MutationObserver((_, observer) => {
  if (document.querySelector("#units-table tbody tr")) {
    observer.disconnect();
    requestAnimationFrame(() => { window.__firstRowsMs = performance.now(); });
  }
}).observe(document, { childList: true, subtree: true });
"""


def measure_page(database: Path, run_id: str, repeats: int = 3, *, in_page: list[float] | None = None) -> list[float]:
    """Seconds from navigation to the 100th unit row, as Playwright sees it; `in_page` gets the page's
    own figure (navigation start to the frame after the first rows are in the DOM)."""
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
            page.add_init_script(FIRST_ROWS)
            for _ in range(repeats):
                page.goto("about:blank")
                started = time.perf_counter()
                page.goto(f"{origin}/#/run/{run_id}")
                page.wait_for_selector("body[data-ready=true]")
                page.wait_for_selector("#units-table tbody tr:nth-child(100)")
                timings.append(time.perf_counter() - started)
                if in_page is not None:
                    page.wait_for_function("window.__firstRowsMs !== undefined")
                    in_page.append(page.evaluate("window.__firstRowsMs") / 1000)
            browser.close()
    finally:
        store.close()
    return timings


ROOT = Path(__file__).resolve().parent.parent
BARE_JOIN = """
import sqlite3, sys
connection = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
units = sys.argv[4] if len(sys.argv) > 4 else "units"
rows = connection.execute(
    f"SELECT a.unit_id, a.verdict, b.verdict FROM {units.replace('units', 'units a', 1)} JOIN {units.replace('units', 'units b', 1)} "
    "ON b.run_id = ?2 AND b.unit_id = a.unit_id WHERE a.run_id = ?1", sys.argv[2:4]).fetchall()
print(len(rows), sum(1 for _, old, new in rows if old != new))
"""


def real_agent_lines(folder: Path) -> tuple[dict, list[dict]]:
    """One real `assay agent run` of examples/agent (its telemetry off, as most projects run):
    its manifest and its units' JSON, as the store holds them."""
    project = folder / "project"
    shutil.copytree(ROOT / "examples" / "agent", project, ignore=shutil.ignore_patterns("sandbox", "__pycache__"))
    config = project / "pyproject.toml"
    config.write_text(config.read_text().replace("[tool.assay.telemetry]", ""))
    environment = {**os.environ, "ASSAY_STORE": str(folder / "seed.db")}
    subprocess.run([sys.executable, "-m", "assay", "agent", "run"], cwd=project, env=environment,
                   capture_output=True, check=False, timeout=300)
    [record] = (folder / "records").iterdir()
    manifest = json.loads((record / "manifest.json").read_text())
    units = [json.loads(line) for line in (record / "units.jsonl").read_text().splitlines() if line.strip()]
    return manifest, units


def agent_run_lines(templates: list[dict], count: int, run_id: str, *, flip_every: int = 0):
    """`count` agent units replicated from the real ones under new eval ids; every `flip_every`-th
    unit's verdict turned over (a regression or a fix)."""
    from assay.core.record import UnitLine

    for index in range(count):
        unit = json.loads(json.dumps(templates[index % len(templates)]))
        detail = unit["detail"]
        eval_id = f"{detail['eval_id']}-{index}"
        verdict = unit["verdict"]
        if flip_every and index % flip_every == flip_every // 2:
            verdict = "failed" if verdict == "passed" else "passed"
        unit_id = f"{detail['experiment_id']}/{eval_id}#1"
        unit.update(unit_id=unit_id, verdict=verdict, group=f"{detail['experiment_id']}/{eval_id}")
        detail.update(eval_id=eval_id, verdict=verdict, attempt_id=f"{run_id}/{detail['experiment_id']}/{eval_id}/1")
        yield UnitLine(unit_id, unit["group"], verdict, json.dumps(unit, separators=(",", ":")))


def timed_process(command: list[str], environment: dict[str, str]) -> tuple[float, float, float, str]:
    """wall seconds, CPU seconds, peak RSS (MiB) and stdout of one process, as GNU time (a small C
    program) sees it: a child forked from this big Python process would count its memory too."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as figures:
        started = time.perf_counter()
        done = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", figures.name, *command], env=environment,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
        wall = time.perf_counter() - started
        _, user, system, kilobytes = figures.read().split()[-4:]
    return wall, float(user) + float(system), int(kilobytes) / 1024, done.stdout.decode()


def baseline_page(source: str, database: Path, run_id: str, rounds: int) -> dict:
    """The run page served by another checkout's viewer (`measure_page` in a child that imports it)."""
    script = ("import json, sys; from pathlib import Path; import store_figures; in_page = []; "
              f"walls = store_figures.measure_page(Path({str(database)!r}), {run_id!r}, {rounds + 1}, in_page=in_page)[1:]; "
              "print(json.dumps([walls, in_page[1:]]))")
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([source, str(ROOT / "benchmarks")])}
    done = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True, check=True)
    walls, in_page = json.loads(done.stdout.splitlines()[-1])
    return {"first_rows_in_page_median": statistics.median(in_page), "wall_to_100th_row_median": statistics.median(walls),
            "first_rows_in_page": [round(value, 3) for value in in_page], "walls": [round(value, 3) for value in walls]}


def agent_figures(arguments: argparse.Namespace) -> dict:
    from assay.core.record import RunManifest

    folder = Path(tempfile.mkdtemp(prefix="assay-agent-store-figures-"))
    database = folder / "assay.db"
    results: dict = {"units": arguments.units, "load_before": os.getloadavg()[0]}
    try:
        manifest, templates = real_agent_lines(folder)
        results["template_units"] = len(templates)
        runs = ("agent-20261203T000000Z-before00", "agent-20261203T010000Z-after000")
        bytes_total = 0
        with SqliteRunStore(database) as store:
            for position, run_id in enumerate(runs):
                lines = list(agent_run_lines(templates, arguments.units, run_id, flip_every=200 if position else 0))
                bytes_total += sum(len(line.text) for line in lines)
                run_manifest = RunManifest.from_json({**manifest, "run_id": run_id, "created_at": f"2026-12-03T0{position}:00:00Z"})
                store.add_run(run_manifest, lines)
        results["mean_body_bytes"] = round(bytes_total / (2 * arguments.units))
        # "join_by_id" (below) reads a copy of the store with the index stores made before had, never the
        # store itself: with that index there, SQLite would read the floor's join through it too.
        by_id = folder / "by-id" / "assay.db"
        by_id.parent.mkdir()
        shutil.copy(database, by_id)
        with sqlite3.connect(by_id) as connection:
            connection.execute("CREATE UNIQUE INDEX IF NOT EXISTS units_by_id ON units (run_id, unit_id)")
        connection.close()
        environment = {**os.environ, "ASSAY_STORE": str(database)}
        environment.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed package runs: bytecode cached
        compare = [sys.executable, "-m", "assay", "runs", "compare", *runs]
        join = [sys.executable, "-c", BARE_JOIN, str(database), *runs]
        # The floor reads the store as it is: SQLite joins the two runs from `units_verdicts` alone (no unit row).
        # "join_by_id" is the same join as a store made before that index reads it (every unit row).
        join_by_id = [sys.executable, "-c", BARE_JOIN, str(by_id), *runs, "units INDEXED BY units_by_id"]
        commands = {"join": join, "join_by_id": join_by_id, "compare": compare,
                    "compare_json": [*compare, "--json"]}
        if arguments.baseline_src:  # the same command from another checkout, in the same rounds
            commands["baseline_compare"] = ["env", f"PYTHONPATH={arguments.baseline_src}", *compare]
        timed_process(compare, environment)  # (uncounted: writes the bytecode)
        figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
        outputs = {}
        for _ in range(arguments.rounds):
            for name, command in commands.items():
                wall, cpu, rss, outputs[name] = timed_process(command, environment)
                figures[name].append((wall, cpu, rss))
        results["compare_verdict"] = json.loads(outputs["compare_json"])["verdict"]
        if arguments.baseline_src:
            results["baseline_output_identical"] = outputs["baseline_compare"] == outputs["compare"]
        for name, rows in figures.items():
            results[name] = {
                "wall_median": statistics.median(row[0] for row in rows), "cpu_median": statistics.median(row[1] for row in rows),
                "peak_rss_mib": max(row[2] for row in rows), "walls": [round(row[0], 3) for row in rows],
            }
        for name in [name for name in commands if not name.startswith("join")]:
            results[f"{name}_over_join_wall"] = results[name]["wall_median"] / results["join"]["wall_median"]
            results[f"{name}_over_join_cpu"] = results[name]["cpu_median"] / results["join"]["cpu_median"]
            results[f"{name}_over_join_by_id_wall"] = results[name]["wall_median"] / results["join_by_id"]["wall_median"]
        if not arguments.no_browser:
            in_page: list[float] = []
            walls = measure_page(database, runs[0], repeats=arguments.rounds + 1, in_page=in_page)[1:]  # (the first: cold)
            if arguments.baseline_src:
                results["baseline_run_page"] = baseline_page(arguments.baseline_src, database, runs[0], arguments.rounds)
            results["run_page"] = {"first_rows_in_page_median": statistics.median(in_page[1:]),
                                   "wall_to_100th_row_median": statistics.median(walls),
                                   "first_rows_in_page": [round(value, 3) for value in in_page[1:]], "walls": [round(value, 3) for value in walls]}
        results["load_after"] = os.getloadavg()[0]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--agent-units", action="store_true", help="Real agent units (issue 35), compare against a bare join.")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline-src", help="With --agent-units: also time compare and the run page from this checkout's src/.")
    arguments = parser.parse_args()
    if arguments.agent_units:
        print(json.dumps(agent_figures(arguments), indent=2))
        return
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
