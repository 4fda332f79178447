"""The interop figures: import JUnit and Inspect logs of 100,000 samples (rate, peak RSS) and export
a 100,000-unit run as OpenTelemetry.

Run with `python benchmarks/interop_figures.py [--units N]` (needs the test extra: Inspect writes the
sample members the 100,000-sample logs are made of, and the OpenTelemetry SDK exports). Each import
runs in a process of its own, its peak RSS measured by a launcher (tests/peak_rss.py); "read" is the
importer alone (every unit converted and encoded, nothing stored), "import" the whole command path
(`import_log`: record written, then indexed). Targets: import ≥ 50,000 units/s with peak RSS ≤ 150 MB;
export ≤ 5 s.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
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


def _templates(source: Path) -> tuple[dict, list[dict]]:
    from assay.core.interop.zipstream import iter_members, read_members

    header = json.loads(read_members(source, {"header.json"})["header.json"])
    samples = [json.loads(content) for _, content in iter_members(source, lambda name: name.startswith("samples/"))]
    return header, samples


def _samples(templates: list[dict], count: int):
    """`count` samples from the templates: the scored ones in turn, one in a hundred an errored one (whose
    member, with its traceback in the events, is 13 times larger)."""
    scored = [template for template in templates if not template.get("error")] or templates
    errored = [template for template in templates if template.get("error")] or scored
    for index, template in zip(range(count), itertools.cycle(scored)):
        sample = dict(errored[0] if index % 100 == 99 else template)
        sample["id"], sample["epoch"] = f"sample-{index}", 1
        yield sample


def make_inspect_eval(path: Path, source: Path, count: int) -> str:
    """`count` sample members shaped like Inspect's (zstd as Inspect writes them, when zipfile_zstd is there)."""
    try:
        import zipfile_zstd  # noqa: F401 - patches zipfile with ZIP_ZSTANDARD, as Inspect does
        method, name = zipfile.ZIP_ZSTANDARD, "zstd"  # type: ignore[attr-defined]
    except ImportError:
        method, name = zipfile.ZIP_DEFLATED, "deflate"
    header, templates = _templates(source)
    with zipfile.ZipFile(path, "w", compression=method) as archive:
        for sample in _samples(templates, count):
            archive.writestr(f"samples/{sample['id']}_epoch_1.json", json.dumps(sample, separators=(",", ":")))
        archive.writestr("header.json", json.dumps(header))
    return name


def make_inspect_json(path: Path, source: Path, count: int) -> None:
    """The same samples as one `.json` document, laid out as Inspect writes it (indented by two)."""
    header, templates = _templates(source)

    def nested(value: object, depth: int) -> str:
        return json.dumps(value, indent=2).replace("\n", "\n" + "  " * depth)

    with open(path, "w", encoding="utf-8") as handle:
        handle.write("{\n")
        for key in ("version", "status", "eval", "plan", "results", "stats"):
            handle.write(f"  {json.dumps(key)}: {nested(header.get(key), 1)},\n")
        handle.write('  "samples": [\n')
        for index, sample in enumerate(_samples(templates, count)):
            handle.write((",\n" if index else "") + "    " + nested(sample, 2))
        handle.write('\n  ],\n  "reductions": [\n    {"scorer": "includes", "samples": [')
        handle.write(", ".join(json.dumps({"value": 1.0, "sample_id": f"sample-{index}"}) for index in range(count)))
        handle.write("]}\n  ]\n}\n")


# ---------------------------------------------------------------------------------------------
# One measurement per process


def child(mode: str, path: str, database: str) -> None:
    from assay.core.gcpolicy import collection_sized_for_runs
    from assay.core.interop.formats import detect_format
    from assay.core.interop.importing import import_log

    started, cpu = time.perf_counter(), time.process_time()
    log_format = detect_format(Path(path))
    if mode == "read":
        with collection_sized_for_runs():  # as import_log reads
            units = sum(1 for _ in log_format.read(Path(path)).units)
    else:
        units = import_log(Path(path), log_format, database=Path(database)).unit_count
    print(json.dumps({"units": units, "seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu}))


def measure_import(mode: str, path: Path, database: Path) -> dict:
    from peak_rss import run_with_peak_rss

    done, peak = run_with_peak_rss([sys.executable, __file__, "--child", mode, str(path), str(database)], timeout=900)
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


def measure_export(database: Path, run_id: str) -> dict:
    from assay.core.interop.otlp_export import export_run
    from assay.core.record import iter_units
    from assay.core.results_store import SqliteRunStore

    receiver = subprocess.Popen([sys.executable, "-c", _RECEIVER], stdout=subprocess.PIPE, text=True)
    try:
        port = int(receiver.stdout.readline())
        with SqliteRunStore(database, read_only=True) as store:
            stored = store.get_run(run_id)
        started, cpu = time.perf_counter(), time.process_time()
        exported = export_run(stored.manifest, iter_units(Path(stored.record_path)), f"http://127.0.0.1:{port}")
        return {"events": exported.events, "seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu}
    finally:
        receiver.terminate()
        receiver.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--skip-json", action="store_true", help="Leave out the Inspect .json log (1.3 GB at 100,000 samples).")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        child(*arguments.child)
        return
    count = arguments.units
    with tempfile.TemporaryDirectory(prefix="assay-interop-") as scratch:
        folder = Path(scratch)
        source = real_inspect_log(folder / "source")
        logs = {"JUnit XML": folder / "junit.xml", "Inspect .eval": folder / "log.eval", "Inspect .json": folder / "log.json"}
        make_junit(logs["JUnit XML"], count)
        compression = make_inspect_eval(logs["Inspect .eval"], source, count)
        if arguments.skip_json:
            del logs["Inspect .json"]
        else:
            make_inspect_json(logs["Inspect .json"], source, count)
        print(f"{count:,} units each; .eval members compressed with {compression}; load average {os.getloadavg()[0]:.1f}")
        for name, path in logs.items():
            size = path.stat().st_size / 2**20
            for mode in ("read", "import"):
                database = folder / f"{path.stem}-{mode}.db"
                figures = measure_import(mode, path, database)
                print(f"{name} ({size:.0f} MiB) {mode:6}: {figures['seconds']:.2f} s wall, {figures['rate']:,.0f} units/s; "
                      f"{figures['cpu_seconds']:.2f} s CPU, {figures['cpu_rate']:,.0f} units per CPU second; "
                      f"peak RSS {figures['peak_mib']:.0f} MiB; load average {os.getloadavg()[0]:.1f}")
        from assay.core.results_store import SqliteRunStore

        database = folder / "junit-import.db"
        with SqliteRunStore(database, read_only=True) as store:
            run_id = store.list_runs(limit=1)[0].run_id
        exported = measure_export(database, run_id)
        print(f"export {exported['events']:,} units: {exported['seconds']:.2f} s wall, {exported['cpu_seconds']:.2f} s CPU; "
              f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
