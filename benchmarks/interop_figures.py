"""The interop figures: import JUnit and Inspect logs of 100,000 samples (rate, peak RSS) and export
a 100,000-unit run as OpenTelemetry.

Run with `python benchmarks/interop_figures.py [--units N] [--rounds R] [--baseline-src DIR]` (needs
the test extra: Inspect writes the log the 100,000-sample logs are copied from, and the OpenTelemetry
SDK exports). Each measurement runs in a process of its own, its peak RSS measured by a launcher
(tests/peak_rss.py); "read" is the importer alone (every unit converted and encoded, nothing stored),
"import" the whole command path (`import_log`: the log read, in a forked process where a second core is
free, while the record is written and indexed; CPU and peak RSS count that reader too), "export" sends the
imported JUnit run to a receiver (another process) that decodes every request. With
`--baseline-src` (another checkout's `src`, e.g. of `git worktree add /tmp/base HEAD`) every
measurement is also made with that code, the two interleaved round by round (which goes first
alternates), and the medians of both are printed. Targets: import ≥ 50,000 units/s with peak RSS
≤ 150 MB; export ≤ 5 s.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # for tests/peak_rss.py


# ---------------------------------------------------------------------------------------------
# Logs of N samples


def make_junit(path: Path, count: int) -> None:
    """One suite of `count` testcases across 100 classes, one in ten failing with a message and text."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write('<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests">')
        failures = count // 10
        handle.write(f'<testsuite name="pytest" errors="0" failures="{failures}" skipped="0" tests="{count}" time="12.5" '
                     'timestamp="2026-12-03T08:00:00+00:00" hostname="ci">')
        for index in range(count):
            head = f'<testcase classname="tests.test_module{index % 100}.TestCase" name="test_case[{index}]" time="0.001"'
            if index % 10 == 0:
                handle.write(head + '><failure message="AssertionError: assert 41 == 42">def test_case(n):\n&gt;       '
                             'assert compute(n) == 42\nE       assert 41 == 42\n\ntests/test_module.py:12: AssertionError'
                             '</failure></testcase>')
            else:
                handle.write(head + " />")
        handle.write("</testsuite></testsuites>")


def real_inspect_log(folder: Path) -> Path:
    """A small .eval log written by Inspect itself (mock model): its members are the templates."""
    subprocess.run([sys.executable, str(ROOT / "tests" / "interop" / "tools" / "inspect_logs.py"), str(folder)],
                   check=True, capture_output=True, timeout=300)
    return next((folder / "eval").glob("*.eval"))


def _templates(source: Path) -> tuple[dict[str, bytes], list[tuple[dict, dict]]]:
    """The log's header members, and each sample with its summary (Inspect's `summaries.json` row)."""
    from assay.core.interop.zipstream import iter_members, read_members

    members = read_members(source, {"header.json", "_journal/start.json", "reductions.json", "summaries.json"})
    summaries = {(str(row["id"]), row["epoch"]): row for row in json.loads(members.pop("summaries.json"))}
    samples = [json.loads(content) for _, content in iter_members(source, lambda name: name.startswith("samples/"))]
    return members, [(sample, summaries[str(sample["id"]), sample["epoch"]]) for sample in samples]


def _samples(templates: list[tuple[dict, dict]], count: int):
    """`count` (sample, summary) pairs from the templates: the scored ones in turn, one in a hundred an
    errored one (whose member, with its traceback in the events, is 13 times larger)."""
    scored = [pair for pair in templates if not pair[0].get("error")] or templates
    errored = [pair for pair in templates if pair[0].get("error")] or scored
    for index, template in zip(range(count), itertools.cycle(scored)):
        sample, summary = errored[0] if index % 100 == 99 else template
        sample, summary = dict(sample), dict(summary)
        sample["id"] = summary["id"] = f"sample-{index}"
        sample["epoch"] = summary["epoch"] = 1
        yield sample, summary


def make_inspect_eval(path: Path, source: Path, count: int) -> str:
    """`count` samples laid out as Inspect 0.3 writes a finished `.eval`: `_journal/start.json`, the
    sample members with a journal of their summaries every 10 samples (its buffer for a large local
    log), then `summaries.json` (every summary), `reductions.json` and `header.json`; zstd as
    Inspect compresses them, when zipfile_zstd is there."""
    try:
        import zipfile_zstd  # noqa: F401 - patches zipfile with ZIP_ZSTANDARD, as Inspect does
        method, name = zipfile.ZIP_ZSTANDARD, "zstd"  # type: ignore[attr-defined]
    except ImportError:
        method, name = zipfile.ZIP_DEFLATED, "deflate"
    members, templates = _templates(source)

    def compact(value: object) -> str:
        return json.dumps(value, separators=(",", ":"))

    summaries: list[dict] = []
    with zipfile.ZipFile(path, "w", compression=method) as archive:
        archive.writestr("_journal/start.json", members["_journal/start.json"])
        batch: list[dict] = []
        for sample, summary in _samples(templates, count):
            archive.writestr(f"samples/{sample['id']}_epoch_1.json", compact(sample))
            batch.append(summary)
            if len(batch) == 10:
                archive.writestr(f"_journal/summaries/{len(summaries) // 10 + 1}.json", compact(batch))
                summaries += batch
                batch = []
        if batch:
            archive.writestr(f"_journal/summaries/{len(summaries) // 10 + 1}.json", compact(batch))
            summaries += batch
        archive.writestr("summaries.json", compact(summaries))
        for member in ("reductions.json", "header.json"):
            if member in members:
                archive.writestr(member, members[member])
    return name


def make_inspect_json(path: Path, source: Path, count: int) -> None:
    """The same samples as one `.json` document, laid out as Inspect writes it (indented by two)."""
    members, templates = _templates(source)
    header = json.loads(members["header.json"])

    def nested(value: object, depth: int) -> str:
        return json.dumps(value, indent=2).replace("\n", "\n" + "  " * depth)

    with open(path, "w", encoding="utf-8") as handle:
        handle.write("{\n")
        for key in ("version", "status", "eval", "plan", "results", "stats"):
            handle.write(f"  {json.dumps(key)}: {nested(header.get(key), 1)},\n")
        handle.write('  "samples": [\n')
        for index, (sample, _) in enumerate(_samples(templates, count)):
            handle.write((",\n" if index else "") + "    " + nested(sample, 2))
        handle.write('\n  ],\n  "reductions": [\n    {"scorer": "includes", "samples": [')
        handle.write(", ".join(json.dumps({"value": 1.0, "sample_id": f"sample-{index}"}) for index in range(count)))
        handle.write("]}\n  ]\n}\n")


# ---------------------------------------------------------------------------------------------
# One measurement per process


def child(mode: str, path: str, database: str) -> None:
    """Import `path` (mode `read` or `import`), or export the one run in `database` to the receiver
    at `path` (mode `export`); prints the figures as one line of JSON."""
    from assay.core.gcpolicy import collection_sized_for_runs
    from assay.core.interop.formats import detect_format
    from assay.core.interop.importing import import_log

    if mode == "export":
        export_child(path, Path(database))
        return
    import resource

    def children_cpu() -> float:  # the log's reader, forked by the import where a second core is free
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    started, cpu, reader = time.perf_counter(), time.process_time(), children_cpu()
    log_format = detect_format(Path(path))
    if mode == "read":
        with collection_sized_for_runs():  # as import_log reads
            units = sum(1 for _ in log_format.read(Path(path)).units)
    else:
        units = import_log(Path(path), log_format, database=Path(database)).unit_count
    print(json.dumps({"units": units, "seconds": time.perf_counter() - started,
                      "cpu_seconds": time.process_time() - cpu + children_cpu() - reader}))


def export_child(url: str, database: Path) -> None:
    """`assay runs export RUN --otlp URL`'s path: the run's units read from its record and sent. Its CPU
    includes the export's worker processes (a big record is sent by several); `worker_peak_mib` is the
    largest worker's peak RSS (0 when none ran)."""
    import resource

    from assay.core.history.shown import exported
    from assay.core.results_store import SqliteRunStore

    def workers_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    with SqliteRunStore(database, read_only=True) as store:
        run_id = store.list_runs(limit=1)[0].run_id
        started, cpu, before = time.perf_counter(), time.process_time(), workers_cpu()
        done = exported(store, run_id, url, 10.0)
    print(json.dumps({"units": done.document["events"], "seconds": time.perf_counter() - started,
                      "cpu_seconds": time.process_time() - cpu + workers_cpu() - before,
                      "worker_peak_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))


def measure(mode: str, path: str, database: Path, source: str | None) -> dict:
    """One measurement in a process of its own, importing assay from `source` (a checkout's `src`) or
    from this environment."""
    from peak_rss import run_with_peak_rss

    environment = {**os.environ, "PYTHONPATH": source} if source else None
    done, peak = run_with_peak_rss([sys.executable, __file__, "--child", mode, path, str(database)], timeout=900,
                                   env=environment)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return {**figures, "rate": figures["units"] / figures["seconds"], "cpu_rate": figures["units"] / figures["cpu_seconds"],
            "peak_mib": peak}


_RECEIVER = """
import http.server, sys
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/v1/logs":
            ExportLogsServiceRequest.FromString(body)
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def _line(name: str, figures: dict) -> str:
    return (f"{name}: {figures['seconds']:.2f} s wall, {figures['rate']:,.0f} units/s; {figures['cpu_seconds']:.2f} s CPU, "
            f"{figures['cpu_rate']:,.0f} units per CPU second; peak RSS {figures['peak_mib']:.0f} MiB"
            + (f" (workers {figures['worker_peak_mib']:.0f} MiB)" if figures.get("worker_peak_mib") else "")
            + f"; load average {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=1, help="Measure everything this many times; medians are printed.")
    parser.add_argument("--baseline-src", type=Path,
                        help="Also measure with the assay in this folder (another checkout's src), interleaved round by round.")
    parser.add_argument("--logs", type=Path, help="Keep the logs in this folder and reuse them when they are there.")
    parser.add_argument("--skip-json", action="store_true", help="Leave out the Inspect .json log (1.3 GB at 100,000 samples).")
    parser.add_argument("--export-only", action="store_true",
                        help="Measure the export alone (each round still imports the JUnit log it exports, unmeasured).")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        child(*arguments.child)
        return
    count = arguments.units
    variants = {"this": None}
    if arguments.baseline_src:
        variants = {"baseline": str(arguments.baseline_src.resolve()), "this": None}
    with tempfile.TemporaryDirectory(prefix="assay-interop-") as scratch:
        folder = arguments.logs or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        logs = {"JUnit XML": folder / f"junit-{count}.xml", "Inspect .eval": folder / f"log-{count}.eval",
                "Inspect .json": folder / f"log-{count}.json"}
        if arguments.skip_json or arguments.export_only:
            del logs["Inspect .json"]
        if not all(path.exists() for path in logs.values()):
            source = real_inspect_log(folder / "source")
            make_junit(logs["JUnit XML"], count)
            make_inspect_eval(logs["Inspect .eval"], source, count)
            if "Inspect .json" in logs:
                make_inspect_json(logs["Inspect .json"], source, count)
        sizes = ", ".join(f"{name} {path.stat().st_size / 2**20:.0f} MiB" for name, path in logs.items())
        print(f"{count:,} units each ({sizes}); load average {os.getloadavg()[0]:.1f}")
        receiver = subprocess.Popen([sys.executable, "-c", _RECEIVER], stdout=subprocess.PIPE, text=True)
        results: dict[tuple[str, str], list[dict]] = {}
        try:
            url = f"http://127.0.0.1:{int(receiver.stdout.readline())}"
            for round_number in range(arguments.rounds):
                order = list(variants.items())
                if round_number % 2:
                    order.reverse()
                for name, path in logs.items():
                    if arguments.export_only and name != "JUnit XML":
                        continue
                    for mode in ("import",) if arguments.export_only else ("read", "import"):
                        for variant, src in order:
                            # a folder each: a store keeps its records beside it
                            database = Path(scratch) / f"{variant}-{path.stem}-{mode}-{round_number}" / "assay.db"
                            figures = measure(mode, str(path), database, src)
                            if arguments.export_only:
                                continue
                            results.setdefault((variant, f"{name} {mode}"), []).append(figures)
                            print(f"round {round_number + 1} {variant:8} " + _line(f"{name} {mode}", figures), flush=True)
                for variant, src in order:
                    database = Path(scratch) / f"{variant}-{logs['JUnit XML'].stem}-import-{round_number}" / "assay.db"
                    figures = measure("export", url, database, src)
                    results.setdefault((variant, "export"), []).append(figures)
                    print(f"round {round_number + 1} {variant:8} " + _line(f"export {figures['units']:,} units", figures),
                          flush=True)
        finally:
            receiver.terminate()
            receiver.wait()
        print(f"\nmedians of {arguments.rounds} round(s):")
        for (variant, name), runs in results.items():
            median = {key: statistics.median(run[key] for run in runs) for key in ("seconds", "rate", "cpu_seconds", "peak_mib")}
            print(f"{variant:8} {name:22} {median['seconds']:6.2f} s wall {median['rate']:9,.0f} units/s "
                  f"{median['cpu_seconds']:6.2f} s CPU  peak {median['peak_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
