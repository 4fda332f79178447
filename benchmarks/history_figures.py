"""History read and the four-way verdict for two 100,000-unit runs with 10 runs of history behind them.

`python benchmarks/history_figures.py [--units 100000] [--runs 12] [--rounds 3]` indexes `--runs` runs of
one series into a fresh store (one trial per unit, 20% of units flaky), then times `assay runs compare
latest~1 latest --json` in-process (history read in one query, NPMLE prior, every test, JSON) and the
history query alone. Target: ≤ 2 s for read + verdicts.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy

from assay.core.history.compare import compare_stored_runs
from assay.core.history.store import history_tallies, series_before
from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import SqliteRunStore, publish_run


def build(database: Path, units: int, runs: int) -> None:
    rng = numpy.random.default_rng(5)
    rates = numpy.where(numpy.arange(units) < units // 5, 0.5, 1.0)
    for index in range(runs):
        passes = rng.random(units) < rates
        records = (
            UnitResult(f"exp/e{unit // 1000}/u{unit}#1", "passed" if passes[unit] else "failed", group=f"exp/e{unit // 1000}")
            for unit in range(units)
        )
        manifest = RunManifest(f"agent-{index:03d}", "agent", f"2026-12-{1 + index // 24:02d}T{index % 24:02d}:00:00Z",
                               identity={"project": "/bench"})
        publish_run(manifest, records, database=database)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        database = Path(scratch) / "assay.db"
        started = time.perf_counter()
        build(database, arguments.units, arguments.runs)
        print(f"indexed {arguments.runs} runs of {arguments.units:,} units in {time.perf_counter() - started:.1f} s")
        reads, verdicts = [], []
        for _ in range(arguments.rounds):
            with SqliteRunStore(database, read_only=True) as store:
                first, second = store.get_run("latest~1"), store.get_run("latest")
                started = time.perf_counter()
                history_tallies(store, series_before(store, first, 10))
                reads.append(time.perf_counter() - started)
                started = time.perf_counter()
                comparison = compare_stored_runs(store, first, second)
                comparison.to_json(unit_limit=20)
                verdicts.append(time.perf_counter() - started)
        print(f"history query alone (10 runs): median {statistics.median(reads):.2f} s")
        print(f"compare with history (read, pairing, prior, tests, groups, JSON): median {statistics.median(verdicts):.2f} s "
              f"({', '.join(f'{value:.2f}' for value in verdicts)}); verdict: {comparison.verdict}")


if __name__ == "__main__":
    main()
