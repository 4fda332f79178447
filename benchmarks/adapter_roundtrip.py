"""Round trips of small requests through the NDJSON process transport (agent and doc adapters).

A Python echo adapter answers each request with its params. Reports microseconds per request,
2,000 requests one after another and 2,000 in flight at once.
Run: python benchmarks/adapter_roundtrip.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import tempfile
import time
from pathlib import Path

from assay.adapters.ndjson import start_ndjson_process

ECHO = """
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    sys.stdout.write(json.dumps({"id": request["id"], "result": request["params"]}) + "\\n")
    sys.stdout.flush()
"""


async def measure(script: Path, count: int) -> tuple[float, float]:
    process = await start_ndjson_process(shlex.join([sys.executable, str(script)]))
    try:
        for index in range(50):  # warm up both sides
            await process.request("echo", {"n": index})
        started = time.perf_counter()
        for index in range(count):
            await process.request("echo", {"n": index})
        one_by_one = (time.perf_counter() - started) / count
        started = time.perf_counter()
        await asyncio.gather(*(process.request("echo", {"n": index}) for index in range(count)))
        in_flight = (time.perf_counter() - started) / count
    finally:
        await process.close()
    return one_by_one, in_flight


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--count", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "echo_adapter.py"
        script.write_text(ECHO)
        runs = [asyncio.run(measure(script, args.count)) for _ in range(args.repeat)]
    print(f"{args.count} small requests: one after another {min(r[0] for r in runs) * 1e6:.0f} us each, "
          f"all in flight {min(r[1] for r in runs) * 1e6:.0f} us each (best of {args.repeat})")


if __name__ == "__main__":
    main()
