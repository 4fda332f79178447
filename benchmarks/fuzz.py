"""Fuzzed user files through the real CLI: tracebacks, hangs, wall time and peak memory per format.

`python benchmarks/fuzz.py [--variants 10000] [--format NAME ...] [--seed 0]` mutates each format's valid
seed (tests/fuzz/fuzz_formats.py) and runs every variant through the command that reads it, in-process, in a
worker subprocess per format. The parent watches each variant: one that runs over `--hang-limit` seconds
(10) is a hang, its worker is killed and restarted after it. Prints one row per format (tracebacks, hangs,
other problems such as an error naming no file, the slowest variant, the worker's peak RSS) and exits 1 on
any traceback, hang or other problem, or a peak RSS over `--max-rss-mb` (300).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
for path in (TESTS, TESTS / "fuzz"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


def variant_random(seed: int, format_name: str, index: int) -> random.Random:
    return random.Random(f"{seed}:{format_name}:{index}")


# --- worker: runs variants in-process and reports each on stdout -----------------------------------


def worker(format_name: str, start: int, stop: int, seed: int, work: Path) -> None:
    os.environ.setdefault("ASSAY_STORE", str(work / "store.db"))
    from fuzz_formats import FORMATS, mutate, prepare, problem_with

    fmt = FORMATS[format_name]
    prepare(fmt, work)
    out = sys.__stdout__
    for index in range(start, stop):
        data, operators = mutate(fmt.seed, fmt.syntax, variant_random(seed, format_name, index))
        out.write(json.dumps({"start": index, "operators": operators}) + "\n")
        out.flush()
        outcome = fmt.run(work, data)
        problem = problem_with(fmt, work, outcome)
        out.write(json.dumps({
            "done": index, "seconds": outcome.seconds, "exit": outcome.exit_code, "problem": problem,
            "operators": operators,
        }) + "\n")
        out.flush()


# --- parent: one worker per format at a time, restarted after a hang ---------------------------------


def _memory_mb(pid: int, field: str) -> float:
    """`VmHWM` (peak) or `VmRSS` (current) of a process, in MB; 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_format(
    format_name: str, variants: int, seed: int, hang_limit: float, kill_rss_mb: float, batch: int
) -> dict:
    stats = {"format": format_name, "variants": 0, "tracebacks": 0, "hangs": 0, "other_problems": 0,
             "max_wall_s": 0.0, "peak_rss_mb": 0.0, "examples": [], "seconds": 0.0}
    began = time.perf_counter()
    next_index = 0
    with tempfile.TemporaryDirectory(prefix=f"assay-fuzz-{format_name}-") as temporary:
        while next_index < variants:
            work = Path(temporary) / f"w{next_index}"
            process = subprocess.Popen(
                [sys.executable, __file__, "--worker", format_name, "--start", str(next_index),
                 "--stop", str(min(variants, next_index + batch)), "--seed", str(seed), "--work", str(work)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True, text=True,
            )
            assert process.stdout is not None
            current: dict | None = None
            started_at = time.perf_counter()
            buffer = ""
            killed_for = None
            while True:
                limit = hang_limit if current is not None else 120.0  # the first one includes start-up
                ready, _, _ = select.select([process.stdout], [], [], 0.05)
                if ready:
                    chunk = os.read(process.stdout.fileno(), 65536).decode()
                    if not chunk:
                        break
                    buffer += chunk
                    while "\n" in buffer:
                        line, buffer = buffer.split("\n", 1)
                        record = json.loads(line)
                        if "start" in record:
                            current = record
                            started_at = time.perf_counter()
                            continue
                        current = None
                        stats["variants"] += 1
                        stats["max_wall_s"] = max(stats["max_wall_s"], record["seconds"])
                        next_index = record["done"] + 1
                        problem = record["problem"]
                        if problem:
                            key = "tracebacks" if problem.startswith("traceback") else "other_problems"
                            stats[key] += 1
                            if len(stats["examples"]) < 8:
                                stats["examples"].append({"index": record["done"], "operators": record["operators"],
                                                          "problem": problem})
                    stats["peak_rss_mb"] = max(stats["peak_rss_mb"], _memory_mb(process.pid, "VmHWM"))
                    continue
                stats["peak_rss_mb"] = max(stats["peak_rss_mb"], _memory_mb(process.pid, "VmHWM"))
                elapsed = time.perf_counter() - started_at
                if current is not None and _memory_mb(process.pid, "VmRSS") > kill_rss_mb:
                    killed_for = f"memory over {kill_rss_mb:.0f} MB"
                elif elapsed > limit:
                    killed_for = f"over {limit:g} s" if current is not None else "worker did not start"
                if killed_for:
                    os.killpg(process.pid, signal.SIGKILL)
                    break
                if process.poll() is not None and not ready:
                    break
            process.wait()
            if killed_for is None and current is None and next_index >= variants:
                break
            if current is None:
                if killed_for == "worker did not start" or process.returncode not in (0, None):
                    raise SystemExit(f"{format_name}: the worker failed (exit {process.returncode}, {killed_for})")
                continue
            # The variant in flight hung, blew the memory limit, or killed its worker: count it, go on after it.
            index = current["start"]
            stats["variants"] += 1
            stats["hangs" if killed_for else "tracebacks"] += 1
            stats["max_wall_s"] = max(stats["max_wall_s"], time.perf_counter() - started_at)
            if len(stats["examples"]) < 8:
                stats["examples"].append({"index": index, "operators": current["operators"],
                                          "problem": killed_for or f"worker died (exit {process.returncode})"})
            next_index = index + 1
    stats["seconds"] = time.perf_counter() - began
    return stats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", type=int, default=10_000, help="variants per format (default 10,000)")
    parser.add_argument("--format", action="append", help="only this format (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hang-limit", type=float, default=10.0, help="seconds after which a variant is a hang")
    parser.add_argument("--max-rss-mb", type=float, default=300.0, help="required peak RSS per worker")
    parser.add_argument("--kill-rss-mb", type=float, default=1500.0, help="kill a variant's worker above this RSS")
    parser.add_argument(
        "--batch", type=int, default=500,
        help="variants per worker process (default 500): each CLI command is its own process in real use, so a "
        "worker is not kept for thousands of commands whose module caches only a long-lived process would accumulate",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--stop", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.worker:
        worker(arguments.worker, arguments.start, arguments.stop, arguments.seed, arguments.work)
        return 0

    from fuzz_formats import FORMATS

    names = arguments.format or list(FORMATS)
    unknown = [name for name in names if name not in FORMATS]
    if unknown:
        parser.error(f"unknown format {', '.join(unknown)}; formats: {', '.join(FORMATS)}")
    header = f"{'format':22} {'variants':>8} {'tracebacks':>10} {'hangs':>5} {'other':>5} {'max wall s':>10} {'peak RSS MB':>11} {'total s':>8}"
    print(header, flush=True)
    results = []
    failed = False
    for name in names:
        stats = run_format(
            name, arguments.variants, arguments.seed, arguments.hang_limit, arguments.kill_rss_mb, arguments.batch
        )
        results.append(stats)
        print(
            f"{name:22} {stats['variants']:>8} {stats['tracebacks']:>10} {stats['hangs']:>5} {stats['other_problems']:>5} "
            f"{stats['max_wall_s']:>10.2f} {stats['peak_rss_mb']:>11.0f} {stats['seconds']:>8.0f}",
            flush=True,
        )
        for example in stats["examples"]:
            print(f"    #{example['index']} {'+'.join(example['operators'])}: {example['problem'][:200]}", flush=True)
        failed = failed or bool(
            stats["tracebacks"] or stats["hangs"] or stats["other_problems"] or stats["peak_rss_mb"] > arguments.max_rss_mb
        )
    if arguments.json:
        arguments.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
