"""Official-adapter throughput: 1,000 single-turn evals of `openai_chat_agent` against the fake
OpenAI-compatible server with 50 ms latency, at concurrency 64, through the real openai SDK.

`python benchmarks/agent_endpoint.py` prints the wall time and its ratio to the ideal
(1000 / 64 x 50 ms = 0.78 s; target <= 1.3x), and two floors for the same requests without the
harness: plain aiohttp, and the openai SDK alone. The server runs in its own process, as a real one would.

`python benchmarks/agent_endpoint.py --stub` measures what assay itself costs per eval: the SDK
client is replaced by a stub that answers every request at once with the same reply, and 10,000
evals run at concurrency 64 (CPU microseconds per eval, best of --repeat).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from assay.core.gcpolicy import collection_sized_for_runs

ROOT = Path(__file__).resolve().parents[1]

# The fake server is asyncio (aiohttp.web), in its own process, so that it is not what limits the
# figure: the tests' ThreadingHTTPServer tops out near 650 requests/s here, below the 1,280/s that
# 64 requests in flight with 50 ms latency ask for.
SERVER = r"""
import asyncio, json, sys
from aiohttp import web
sys.path.insert(0, sys.argv[1])
from servers.fake_openai import chat_reply
latency = float(sys.argv[2])
usage = {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}
payload = json.dumps(chat_reply("The answer is 42.", usage=usage).completion).encode()

async def chat(request):
    json.loads(await request.read())
    await asyncio.sleep(latency)
    return web.Response(body=payload, content_type="application/json")

async def main():
    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the benchmark closes stdin

asyncio.run(main())
"""

BODY = {"model": "fake-model", "messages": [{"role": "user", "content": "What is the answer?"}]}


async def floor(base_url: str, requests: int, concurrency: int, through_sdk: bool) -> float:
    """The same requests without the harness: plain aiohttp, or the openai SDK as our adapter calls it."""
    import aiohttp

    gate = asyncio.Semaphore(concurrency)
    if through_sdk:
        from assay.agent.adapters.endpoint import post_json
        from assay.judge.client import openai_sdk_client

        client = openai_sdk_client(base_url=base_url, api_key="bench", timeout=30)

        async def one() -> None:
            async with gate:
                await post_json(client, "/chat/completions", BODY)
    else:
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency))

        async def one() -> None:
            async with gate:
                async with session.post(base_url + "/chat/completions", json=BODY) as response:
                    await response.json()

    await asyncio.gather(*(one() for _ in range(concurrency)))  # open the connections
    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(requests)))
    elapsed = time.perf_counter() - started
    await (client.close() if through_sdk else session.close())
    return elapsed


async def run_benchmark(base_url: str, evals: int, concurrency: int) -> tuple[float, list[str], dict]:
    from assay.agent import Experiment, define_eval, includes
    from assay.agent.adapters import openai_chat_agent
    from assay.agent.discovery import EvalEntry, ExperimentEntry
    from assay.agent.runner import AgentRun, RunOptions, build_plan

    @define_eval
    async def single_turn(t):
        await t.send("What is the answer?")
        t.succeeded()
        t.check(t.reply, includes("42"))

    agent = openai_chat_agent(base_url=base_url, api_key="bench", model="fake-model", timeout=30)
    experiment = ExperimentEntry("bench", Experiment(agent=agent))
    plan = build_plan([experiment], {"bench": [EvalEntry(f"e{i:04d}", single_turn) for i in range(evals)]})
    warmup = build_plan([experiment], {"bench": [EvalEntry(f"w{i:04d}", single_turn) for i in range(concurrency)]})
    await AgentRun(warmup, RunOptions(concurrency=concurrency)).run()  # open the connection pool
    started = time.perf_counter()
    outcome = await AgentRun(plan, RunOptions(concurrency=concurrency)).run()
    elapsed = time.perf_counter() - started
    return elapsed, [result.verdict for result in outcome.results], outcome.usage


class _StubClient:
    """Answers every POST with the benchmark's reply after one event-loop turn, as an SDK client would."""

    def __init__(self, payload: bytes) -> None:
        import httpx

        self.content = payload
        self.base_url = httpx.URL("http://stub.invalid/v1/")

    async def post(self, path: str, body: dict, cast_to: type) -> _StubClient:
        await asyncio.sleep(0)
        return self

    async def close(self) -> None:
        pass


def stub_cost(evals: int, concurrency: int, repeat: int) -> list[float]:
    """CPU microseconds per eval with the endpoint stubbed out (no HTTP, no SDK)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from servers.fake_openai import chat_reply

    from assay.agent.adapters.endpoint import OpenAIEndpoint

    usage = {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}
    stub = _StubClient(json.dumps(chat_reply("The answer is 42.", usage=usage).completion).encode())
    OpenAIEndpoint.client = lambda self: stub  # type: ignore[method-assign]
    costs = []
    for _ in range(repeat):
        started = time.process_time()
        with collection_sized_for_runs():  # what `assay agent run` does around a run
            _, verdicts, _ = asyncio.run(run_benchmark("http://stub.invalid/v1", evals, concurrency))
        assert verdicts == ["passed"] * evals, sorted(set(verdicts))
        costs.append((time.process_time() - started) / (evals + concurrency) * 1e6)
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stub", action="store_true", help="assay's own CPU per eval, endpoint stubbed out")
    options = parser.parse_args()
    if options.stub:
        evals = 10_000 if options.evals == 1000 else options.evals
        costs = stub_cost(evals, options.concurrency, options.repeat)
        print(json.dumps({"evals": evals, "concurrency": options.concurrency,
                          "cpu_us_per_eval": [round(cost, 1) for cost in costs], "best_us": round(min(costs), 1)}))
        return
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(ROOT / "tests"), str(options.latency)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        base_url = server.stdout.readline().strip()
        ideal = options.evals / options.concurrency * options.latency
        timings = []
        for _ in range(options.repeat):
            with collection_sized_for_runs():
                elapsed, verdicts, usage = asyncio.run(run_benchmark(base_url, options.evals, options.concurrency))
            assert verdicts == ["passed"] * options.evals, sorted(set(verdicts))
            timings.append(elapsed)
        floors = {
            name: min(asyncio.run(floor(base_url, options.evals, options.concurrency, sdk)) for _ in range(options.repeat))
            for name, sdk in (("aiohttp_only_s", False), ("sdk_only_s", True))
        }
        best = min(timings)
        print(json.dumps({
            "evals": options.evals, "concurrency": options.concurrency, "latency_s": options.latency,
            "ideal_s": round(ideal, 3), "runs_s": [round(t, 3) for t in timings], "best_s": round(best, 3),
            "best_ratio": round(best / ideal, 3), "target_ratio": 1.3, "usage": usage,
            "floors_s": {name: round(value, 3) for name, value in floors.items()},
            "floor_ratios": {name: round(value / ideal, 3) for name, value in floors.items()},
            "load_average": [round(value, 2) for value in os.getloadavg()],
        }))
    finally:
        server.stdin.close()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
