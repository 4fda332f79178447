"""Official-adapter throughput: 1,000 single-turn `openai_chat_agent` evals against a fake
OpenAI-compatible server with 50 ms latency, at concurrency 64, beside a bare aiohttp loop.

`python benchmarks/agent_endpoint.py --rounds 7` runs, in every round and in a rotating order, each
contender in a fresh process doing the same 1,000 requests from a cold start (its imports included,
as a user's run pays them): `bare`, a plain aiohttp loop; `assay`, the runner with `openai_chat_agent`
on assay's own transport; `assay-sdk`, the same agent given an openai SDK client (`client=`). It prints
per contender the medians of wall time, of CPU per request (the whole process: imports, harness,
HTTP; `setup_cpu_s` says how much of it came before the first request) and of the wall ratio to
`bare` in the same round (targets: <= 1.5x, <= 1 ms). assay is byte-compiled first, as an installed
copy is.
`--baseline-src DIR` adds `baseline`, the same run with `PYTHONPATH=DIR` (another checkout's `src`),
for interleaved before/after figures. The server runs in its own process, as a real one would.

`python benchmarks/agent_endpoint.py --stub` measures what assay itself costs per eval: the transport
is replaced by a stub that answers every request at once with the same reply, and 10,000 evals run at
concurrency 64 (CPU microseconds per eval, best of --repeat).
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

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
CONTENDERS = ("bare", "assay", "assay-sdk")


# ---- the contenders, each run in a fresh process (`--child`) ------------------------------------


def run_bare(base_url: str, requests: int, concurrency: int) -> float:
    """The same requests with nothing but aiohttp: the floor. Returns the CPU seconds spent at dispatch."""
    import aiohttp

    dispatched = time.process_time()

    async def main() -> None:
        gate = asyncio.Semaphore(concurrency)
        headers = {"Authorization": "Bearer bench"}
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

            async def one() -> None:
                async with gate, session.post(base_url + "/chat/completions", json=BODY, headers=headers) as response:
                    document = json.loads(await response.read())
                    assert "42" in document["choices"][0]["message"]["content"]

            await asyncio.gather(*(one() for _ in range(requests)))

    asyncio.run(main())
    return dispatched


def run_assay(base_url: str, evals: int, concurrency: int, through_sdk: bool) -> float:
    from assay.agent import Experiment, define_eval, includes
    from assay.agent.adapters import openai_chat_agent
    from assay.agent.discovery import EvalEntry, ExperimentEntry
    from assay.agent.plan import build_plan
    from assay.agent.run_options import RunOptions
    from assay.agent.runner import AgentRun
    from assay.core.gcpolicy import collection_sized_for_runs

    @define_eval
    async def single_turn(t):
        await t.send("What is the answer?")
        t.succeeded()
        t.check(t.reply, includes("42"))

    if through_sdk:
        from assay.judge.client import openai_sdk_client

        client = openai_sdk_client(base_url=base_url, api_key="bench", timeout=30)
        agent = openai_chat_agent(client=client, model="fake-model", timeout=30)
    else:
        agent = openai_chat_agent(base_url=base_url, api_key="bench", model="fake-model", timeout=30)
    experiment = ExperimentEntry("bench", Experiment(agent=agent))
    plan = build_plan([experiment], {"bench": [EvalEntry(f"e{i:04d}", single_turn) for i in range(evals)]})
    dispatched = time.process_time()
    with collection_sized_for_runs():  # what `assay agent run` does around a run
        outcome = asyncio.run(AgentRun(plan, RunOptions(concurrency=concurrency)).run())
    verdicts = [result.verdict for result in outcome.results]
    assert verdicts == ["passed"] * evals, sorted(set(verdicts))
    assert outcome.usage["requests"] == evals, outcome.usage
    return dispatched


def child(kind: str, base_url: str, evals: int, concurrency: int) -> None:
    started, cpu_started = time.perf_counter(), time.process_time()
    if kind == "bare":
        dispatched = run_bare(base_url, evals, concurrency)
    else:
        dispatched = run_assay(base_url, evals, concurrency, through_sdk=kind == "assay-sdk")
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "setup_cpu_s": dispatched - cpu_started}))


def measure(kind: str, base_url: str, options: argparse.Namespace) -> dict[str, float]:
    env = dict(os.environ)
    if kind == "baseline":
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [options.baseline_src, env.get("PYTHONPATH")]))
    command = [sys.executable, __file__, "--child", "assay" if kind == "baseline" else kind, "--base-url", base_url,
               "--evals", str(options.evals), "--concurrency", str(options.concurrency)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(base_url: str, options: argparse.Namespace) -> dict:
    contenders = [*CONTENDERS, *(["baseline"] if options.baseline_src else [])]
    rounds = []
    for number in range(options.rounds):
        shift = number % len(contenders)  # a rotating order, so no contender always runs first
        order = contenders[shift:] + contenders[:shift]
        rounds.append({kind: measure(kind, base_url, options) for kind in order})
    summary = {}
    for kind in contenders:
        walls = [figures[kind]["wall_s"] for figures in rounds]
        summary[kind] = {
            "wall_s": round(statistics.median(walls), 3),
            "cpu_ms_per_request": round(statistics.median(f[kind]["cpu_s"] for f in rounds) / options.evals * 1e3, 3),
            # imports and setup before the first request, part of the CPU above
            "setup_cpu_s": round(statistics.median(f[kind]["setup_cpu_s"] for f in rounds), 3),
            "wall_ratio_to_bare": round(statistics.median(f[kind]["wall_s"] / f["bare"]["wall_s"] for f in rounds), 3),
            "walls_s": [round(wall, 3) for wall in walls],
        }
    return summary


# ---- assay's own cost, the endpoint stubbed out ---------------------------------------------------


class _StubTransport:
    """Answers every request with the benchmark's reply after one event-loop turn, as a transport would."""

    def __init__(self, payload: bytes) -> None:
        self.payload = payload

    async def post_json(self, path: str, body: dict) -> dict:
        await asyncio.sleep(0)
        return json.loads(self.payload)

    async def post_stream(self, path: str, body: dict, on_data) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        pass


def stub_cost(evals: int, concurrency: int, repeat: int) -> list[float]:
    """CPU microseconds per eval with the endpoint stubbed out (no HTTP)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from servers.fake_openai import chat_reply

    from assay.agent.adapters.endpoint import OpenAIEndpoint

    usage = {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}
    stub = _StubTransport(json.dumps(chat_reply("The answer is 42.", usage=usage).completion).encode())
    OpenAIEndpoint.client = lambda self: stub  # type: ignore[method-assign]
    costs = []
    for _ in range(repeat):
        dispatched = run_assay("http://stub.invalid/v1", evals, concurrency, through_sdk=False)
        costs.append((time.process_time() - dispatched) / evals * 1e6)
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline-src", help="another checkout's src/, run as the `baseline` contender")
    parser.add_argument("--repeat", type=int, default=3, help="--stub runs")
    parser.add_argument("--stub", action="store_true", help="assay's own CPU per eval, endpoint stubbed out")
    parser.add_argument("--child", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child, options.base_url, options.evals, options.concurrency)
        return
    if options.stub:
        evals = 10_000 if options.evals == 1000 else options.evals
        costs = stub_cost(evals, options.concurrency, options.repeat)
        print(json.dumps({"evals": evals, "concurrency": options.concurrency,
                          "cpu_us_per_eval": [round(cost, 1) for cost in costs], "best_us": round(min(costs), 1)}))
        return
    # Bytecode first, as `pip install` leaves it: this sandbox sets PYTHONDONTWRITEBYTECODE, and an
    # editable install would otherwise compile every assay module in every contender's start-up.
    for source in (ROOT / "src", *([Path(options.baseline_src)] if options.baseline_src else [])):
        compileall.compile_dir(str(source / "assay"), quiet=1)
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(ROOT / "tests"), str(options.latency)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        base_url = server.stdout.readline().strip()
        summary = compare(base_url, options)
        print(json.dumps({
            "evals": options.evals, "concurrency": options.concurrency, "latency_s": options.latency,
            "rounds": options.rounds, "ideal_s": round(options.evals / options.concurrency * options.latency, 3),
            "median": summary, "load_average": [round(value, 2) for value in os.getloadavg()],
        }, indent=1))
    finally:
        server.stdin.close()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
