"""The Ray executor on a local 2-CPU cluster: video and agent runs equal local runs; dead workers lose nothing."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the Ray executor needs the optional extra: the `ray` extra")

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "video"))

from video_evals import invoke, make_eval, read_report, run_eval, write

from servers.fake_openai import fake_openai  # noqa: F401  (the fixture)

CASE = """
video: clip.mp4
targets:
  number:
    config: {{calls_file: "{calls}"}}
    samples:
      - range: [0.0, 2.0]
        every_s: 0.2
        expect: 0
      - at: [2.5]
        expect: 25
  even:
    config: {{mode: even}}
    samples:
      - at: [0.1, 0.3]
        expect: false
"""

# Dies (the whole worker process) the first time it is asked about sample 4 of case `b`.
DYING_ADAPTER_EXTRA = '''

_base = Evaluator.evaluate

async def _evaluate_or_die(self, sample, target):
    marker = target.config.get("die_once")
    if marker and sample.case_name == "b" and sample.sample_index == 4 and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return await _base(self, sample, target)

Evaluator.evaluate = _evaluate_or_die
'''


@pytest.fixture(scope="session")
def ray_cluster():
    # Workers import the test adapters' helper module (`media`) like the driver does.
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), previous]))
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
    if previous is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = previous


def _three_case_eval(root: Path, calls: Path, adapter_extra: str = "", number_config: str = "") -> Path:
    from video_evals import NUMBER_ADAPTER

    eval_dir = make_eval(root, CASE.format(calls=calls), case_name="a", frames=30, adapter=NUMBER_ADAPTER + adapter_extra)
    for name in ("b", "c"):
        text = CASE.format(calls=calls)
        if number_config:
            text = text.replace(f'{{calls_file: "{calls}"}}', f'{{calls_file: "{calls}", {number_config}}}')
        write(eval_dir / "cases" / f"{name}.yaml", text)
    return eval_dir


def _trial_results(report: dict) -> list[dict]:
    volatile = {"evaluation_duration_seconds"}
    return [
        {key: value for key, value in result.items() if key not in volatile}
        for trial in report["trials"]
        for result in trial["results"]
    ]


def test_video_run_on_ray_equals_the_local_run(tmp_path, ray_cluster):
    calls = tmp_path / "calls.txt"
    eval_dir = _three_case_eval(tmp_path, calls)
    local = run_eval(eval_dir, "--output-json", tmp_path / "local.json", "--concurrency", "2", "--repeat", "2")
    on_ray = run_eval(
        eval_dir, "--output-json", tmp_path / "ray.json", "--concurrency", "2", "--repeat", "2", "--executor", "ray"
    )
    assert on_ray.exit_code == local.exit_code == 0, on_ray.output
    local_report, ray_report = read_report(tmp_path / "local.json"), read_report(tmp_path / "ray.json")
    assert _trial_results(ray_report) == _trial_results(local_report)
    assert [trial["gates"] for trial in ray_report["trials"]] == [trial["gates"] for trial in local_report["trials"]]
    assert ray_report["success"] == local_report["success"]
    # The console shows cases in the same order with the same lines (durations aside).
    assert _case_lines(on_ray.output) == _case_lines(local.output)
    assert _lines(on_ray.output, "FAILED") == _lines(local.output, "FAILED")


def _case_lines(output: str) -> list[str]:
    return [line.strip() for line in output.splitlines() if " Case " in line or "target " in line]


def _lines(output: str, prefix: str) -> list[str]:
    return [line.strip() for line in output.splitlines() if line.strip().startswith(prefix)]


def test_video_abort_on_ray_reports_the_adapter_error_like_a_local_run(tmp_path, ray_cluster):
    calls = tmp_path / "calls.txt"
    eval_dir = _three_case_eval(tmp_path, calls, number_config="fail_at: [3]")
    local = run_eval(eval_dir)
    on_ray = run_eval(eval_dir, "--executor", "ray")
    assert local.exit_code == on_ray.exit_code == 2
    assert "Eval failed: adapter failed for b/number sample 3 at 0.6s: model timed out on frame 6" in local.flat
    assert "Eval failed: adapter failed for b/number sample 3 at 0.6s: model timed out on frame 6" in on_ray.flat


def test_a_worker_killed_mid_run_loses_no_completed_result(tmp_path, ray_cluster):
    calls = tmp_path / "calls.txt"
    marker = tmp_path / "died"
    eval_dir = _three_case_eval(tmp_path, calls, DYING_ADAPTER_EXTRA, number_config=f'die_once: "{marker}"')
    on_ray = run_eval(eval_dir, "--output-json", tmp_path / "ray.json", "--executor", "ray")
    assert marker.exists(), "the adapter never killed its worker"
    assert on_ray.exit_code == 0, on_ray.output
    ray_calls = calls.read_text().splitlines()
    local = run_eval(eval_dir, "--output-json", tmp_path / "local.json")
    assert local.exit_code == 0, local.output
    assert _trial_results(read_report(tmp_path / "ray.json")) == _trial_results(read_report(tmp_path / "local.json"))
    # The unit in flight when the worker died (sample 4) ran once more on a fresh worker, later
    # units once. Answers the dead worker computed but had not delivered may be asked again (as
    # after a local kill -9), but nothing the driver received was: each result was journaled once.
    assert ray_calls.count("b/number:4") == 1
    assert ray_calls.count("b/number:10") == 1
    assert all(ray_calls.count(f"b/number:{index}") <= 2 for index in range(4))
    checkpoint = Path(read_report(tmp_path / "ray.json")["checkpoint"]["path"])
    keys = [json.loads(line)["key"] for line in (checkpoint / "events.jsonl").read_text().splitlines()]
    assert len(keys) == len(set(keys))


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent"


def _agent_units():
    from assay.core.record import read_record
    from assay.core.results_store import open_store

    with open_store(read_only=True) as store:
        stored = store.get_run("latest")
    _, units = read_record(Path(stored.record_path))
    return [
        (unit.unit_id, unit.verdict, unit.reason, [a["status"] for a in unit.detail.get("assertions", [])],
         [turn["events"] for turn in unit.detail.get("turns", [])])
        for unit in units
    ]


def test_agent_run_on_ray_equals_the_local_run(tmp_path, ray_cluster):
    import shutil

    project = tmp_path / "demo"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    local = invoke("agent", "run", "--project", project, "--attempts", "2")
    local_units = _agent_units()
    # --rerun all: otherwise the second invocation carries every attempt of the first instead of running it.
    on_ray = invoke("agent", "run", "--project", project, "--attempts", "2", "--executor", "ray", "--rerun", "all")
    assert on_ray.exit_code == local.exit_code == 1, on_ray.output
    assert _agent_units() == local_units
    assert "14/16" in on_ray.output and "14/16" in local.output


def test_workers_share_one_adaptive_rate_limiter_per_endpoint(ray_cluster):
    from assay.core.ray_executor import shared_limiter

    @ray.remote
    def call_endpoint(endpoint: str, rate_limited: bool) -> float:
        """The wall-clock time at which this worker's slot was granted."""
        async def go() -> float:
            import time

            limiter = shared_limiter(endpoint, 4)
            async with limiter.slot() as slot:
                granted = time.time()
                if rate_limited:
                    slot.rate_limited(2.0)
            return granted

        return asyncio.run(go())

    endpoint = "http://judge.test/v1"
    told = ray.get(call_endpoint.remote(endpoint, True))  # a 429 with Retry-After 2 s seen by one worker …
    granted = ray.get(call_endpoint.remote(endpoint, False))  # … makes another worker wait it out
    # Measured from the 429, not from the second call's start, so a slow scheduler under load cannot eat the wait.
    assert granted - told >= 1.9

    async def states() -> tuple[dict, dict]:
        for _ in range(50):
            state = await shared_limiter(endpoint, 4).state()
            if state["in_flight"] == 0:
                break
            await asyncio.sleep(0.02)
        return state, await shared_limiter("http://other.test/v1", 4).state()

    state, other = asyncio.run(states())
    assert state["rate_limited"] == 1
    assert 2.0 <= state["limit"] < 3.0  # halved from 4 by the 429, then grown by one success
    assert other["limit"] == 4.0 and other["rate_limited"] == 0


def test_a_slot_of_the_cluster_limiter_is_over_once_the_limiter_has_its_release(ray_cluster):
    """A 429 met by one worker must hold back the next call anywhere: a slot's release was sent and forgotten, so
    the worker's task could end (and the next call be granted) before the limiter saw it (a CI flake of the test
    above). Here the limiter takes 0.3 s to take a release: the slot's exit waits for it."""
    from assay.core.ray_executor import RemoteLimiter

    @ray.remote(num_cpus=0, max_concurrency=100)
    class SlowToRelease:
        def __init__(self) -> None:
            self.released: list[tuple[str, float | None]] = []

        async def acquire(self) -> None:
            return None

        async def release(self, outcome: str, retry_after: float | None) -> None:
            await asyncio.sleep(0.3)
            self.released.append((outcome, retry_after))

        def seen(self) -> list[tuple[str, float | None]]:
            return self.released

    actor = SlowToRelease.remote()
    limiter = RemoteLimiter(actor)

    async def call() -> list:
        async with limiter.slot() as slot:
            slot.rate_limited(2.0)
        return await actor.seen.remote()

    assert asyncio.run(call()) == [("rate_limited", 2.0)]


# Case `a` answers slowly, so `b` and `c` finish on the other worker long before `a`'s turn to be
# shown is over; `started` logs each call as it begins.
SLOW_CASE_A_EXTRA = '''

_plain = Evaluator.evaluate

async def _slow_for_a(self, sample, target):
    import asyncio
    if sample.case_name == "a":
        await asyncio.sleep(0.5)
    return await _plain(self, sample, target)

Evaluator.evaluate = _slow_for_a
'''


def _journaled_keys(checkpoint: Path) -> set[tuple[str, str, int]]:
    held = set()
    for line in (checkpoint / "events.jsonl").read_text().splitlines():
        try:
            key = json.loads(line)["key"]
        except ValueError:
            continue  # a torn last line was never durable
        _, case, target, index, _ = key.split("\0")
        held.add((case, target, int(index)))
    return held


def test_ctrl_c_of_a_ray_run_keeps_every_result_the_workers_returned(tmp_path, ray_cluster):
    """Results are journaled as they reach the driver, not when their case's turn to be shown comes.

    Also: a relative `--eval-dir` means the driver's directory on the workers too."""
    import signal
    import subprocess
    import time

    calls = tmp_path / "calls.txt"
    _three_case_eval(tmp_path, calls, SLOW_CASE_A_EXTRA)
    address = ray_cluster.get_runtime_context().gcs_address
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "video", "run", "--eval-dir", "eval", "--concurrency", "2",
         "--executor", "ray", "--ray-address", address],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    fast = {f"{case}/number:{index}" for case in ("b", "c") for index in range(11)}  # `even` logs no calls
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and process.poll() is None:
        answered = set(calls.read_text().splitlines()) if calls.exists() else set()
        if fast <= answered:
            break
        time.sleep(0.05)
    assert process.poll() is None, process.communicate()
    assert fast <= set(calls.read_text().splitlines()), "cases b and c never finished on the workers"
    # The answers of b and c travel back to the driver and are journaled while case a is still being worked
    # on: waited for (a loaded machine may take a while), then checked before a's last call.
    returned = {(line.split("/")[0], line.split("/")[1].split(":")[0], int(line.split(":")[1])) for line in fast}
    checkpoints = tmp_path / "eval" / "runs" / "checkpoints"
    held: set[tuple[str, str, int]] = set()
    while time.monotonic() < deadline and process.poll() is None and not returned <= held:
        time.sleep(0.05)
        journals = [path / "events.jsonl" for path in checkpoints.glob("[!.]*")] if checkpoints.is_dir() else []
        held = _journaled_keys(journals[0].parent) if journals and journals[0].exists() else set()
    slow_calls = [line for line in calls.read_text().splitlines() if line.startswith("a/")]
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stdout.decode() + stderr.decode()
    assert "Traceback" not in stderr.decode()
    assert returned <= held, sorted(returned - held)[:5]
    assert len(slow_calls) < 11, "case a finished before the results of b and c were journaled"
    [checkpoint] = [path for path in checkpoints.iterdir() if not path.name.startswith(".")]
    assert returned <= _journaled_keys(checkpoint)

    # --resume (on the workers again) evaluates only what never came back: no returned result is asked twice.
    resumed = subprocess.run(
        [sys.executable, "-m", "assay", "video", "run", "--resume", str(checkpoint), "--executor", "ray",
         "--ray-address", address],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert resumed.returncode in (0, 1), resumed.stdout + resumed.stderr  # completed (gates aside)
    calls_after = calls.read_text().splitlines()
    assert all(calls_after.count(call) == 1 for call in fast), sorted(c for c in fast if calls_after.count(c) > 1)[:5]
    assert {f"a/number:{index}" for index in range(11)} <= set(calls_after)  # case a was finished


def test_a_malformed_ray_address_is_one_line_naming_the_option(tmp_path):
    import subprocess

    eval_dir = _three_case_eval(tmp_path, tmp_path / "calls.txt")
    project = tmp_path / "shop"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__", ".assay"))
    for kind in (["video", "run", "--eval-dir", str(eval_dir)], ["agent", "run", "--project", str(project)]):
        done = subprocess.run(
            [sys.executable, "-m", "assay", *kind, "--executor", "ray", "--ray-address", "not a valid address"],
            capture_output=True, text=True, timeout=120, cwd=tmp_path,
        )  # fmt: skip
        output = done.stdout + done.stderr
        assert done.returncode == 2, output
        assert "Traceback" not in output
        [line] = [line for line in output.splitlines() if "not a valid address" in line]
        assert "--ray-address 'not a valid address': Invalid address format" in line
        assert "ray start --head" in line
    # Nothing was run, so nothing is left to resume: no checkpoint of either kind.
    for checkpoints in (eval_dir / "runs" / "checkpoints", project / ".assay" / "runs" / "checkpoints"):
        assert not checkpoints.is_dir() or not [path for path in checkpoints.iterdir() if not path.name.startswith(".")]


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again when the block ends: nothing listens there


def _run_on(eval_dir, address: str):
    """`assay video run --executor ray --ray-address ADDRESS` of `eval_dir`, as a process."""
    import subprocess

    return subprocess.run(
        [sys.executable, "-m", "assay", "video", "run", "--eval-dir", str(eval_dir), "--executor", "ray",
         "--ray-address", address],
        capture_output=True, text=True, timeout=60, cwd=eval_dir.parent,
    )  # fmt: skip


def _refused_in_one_line(done) -> list[str]:
    """The lines a run refused with exit 2 printed, stdout and stderr together."""
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    return output.strip().splitlines()


def test_a_ray_address_where_nothing_listens_is_one_line_at_once(tmp_path):
    """Ray alone keeps retrying such an address for minutes, a warning every few seconds."""
    eval_dir = _three_case_eval(tmp_path, tmp_path / "calls.txt")
    port = _closed_port()
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        assert _refused_in_one_line(_run_on(eval_dir, address)) == [
            f"Eval failed: --ray-address '{address}': nothing answers at 127.0.0.1:{port}: Connection refused. "
            "Give the head node of a running cluster as host:port (`ray start --head` prints it), `auto` for the "
            "cluster on this machine, or leave it out to start a local cluster"
        ]


def test_a_ray_address_where_another_service_answers_is_one_line_at_once(tmp_path):
    """A web server (the dashboard's 8265, say) at the address: Ray retried it for minutes, printing its own
    warnings. A gRPC server, as Ray's GCS and client server are, answers the HTTP/2 preface with SETTINGS."""
    import socket
    import threading
    from http.server import HTTPServer, SimpleHTTPRequestHandler

    from assay.core.ray_executor import _check_answers

    web = HTTPServer(("127.0.0.1", 0), SimpleHTTPRequestHandler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    grpc_like = socket.create_server(("127.0.0.1", 0))

    def answer_settings() -> None:
        connection, _ = grpc_like.accept()
        with connection:
            connection.sendall(b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64")  # SETTINGS, max streams 100
            connection.recv(64)

    threading.Thread(target=answer_settings, daemon=True).start()
    try:
        _check_answers(f"127.0.0.1:{grpc_like.getsockname()[1]}")  # passes: what Ray itself would talk to
        eval_dir = _three_case_eval(tmp_path, tmp_path / "calls.txt")
        port = web.server_address[1]
        done = _run_on(eval_dir, f"127.0.0.1:{port}")
    finally:
        web.shutdown()
        grpc_like.close()
    assert _refused_in_one_line(done) == [
        f"Eval failed: --ray-address '127.0.0.1:{port}': 127.0.0.1:{port} answers, but not as a Ray cluster (Ray's "
        "default port is 6379, the head node's GCS; the dashboard's 8265 is not it). Give the head node of a running "
        "cluster as host:port (`ray start --head` prints it), `auto` for the cluster on this machine, or leave it out "
        "to start a local cluster"
    ]


def test_ray_address_auto_without_a_cluster_names_no_option_assay_lacks():
    from assay.core.ray_executor import _reason

    ray_says = ConnectionError(
        "Could not find any running Ray instance. Please specify the one to connect to by setting `--address` flag "
        "or `RAY_ADDRESS` environment variable."
    )
    assert _reason(ray_says, "auto") == "no Ray cluster is running on this machine (start one with `ray start --head`)"
    assert _reason(ValueError("Invalid address format: x."), "x") == "Invalid address format: x"


def test_sigterm_stops_a_ray_run_as_ctrl_c_does_and_ray_says_nothing(tmp_path, ray_cluster):
    """`ray.init` takes SIGTERM over (a stack dump, exit 15); the driver keeps assay's handling."""
    import signal
    import subprocess
    import time

    calls = tmp_path / "calls.txt"
    _three_case_eval(tmp_path, calls, SLOW_CASE_A_EXTRA)
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "video", "run", "--eval-dir", "eval", "--executor", "ray", "--ray-address",
         ray_cluster.get_runtime_context().gcs_address],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    deadline = time.monotonic() + 90
    checkpoints = tmp_path / "eval" / "runs" / "checkpoints"
    while time.monotonic() < deadline and process.poll() is None:
        # Case a is being worked on, and a result has been journaled (one to resume from: with none, the run
        # rightly says "no reusable progress was saved", which a loaded machine reached once)
        started = calls.exists() and any(line.startswith("a/") for line in calls.read_text().splitlines())
        journals = [path for path in checkpoints.glob("[!.]*") if (path / "events.jsonl").exists()] \
            if checkpoints.is_dir() else []
        if started and journals and _journaled_keys(journals[0]):
            break
        time.sleep(0.05)
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGTERM)
    stdout, stderr = (stream.decode() for stream in process.communicate(timeout=60))
    assert process.returncode == 130, stdout + stderr
    assert "Resume with `assay video run --resume" in stdout, stdout + stderr
    # It resumes where it ran: the executor is not part of a checkpoint, so the resume command names it.
    [resume] = [line for line in stdout.splitlines() if line.startswith("Resume with `")]
    address = ray_cluster.get_runtime_context().gcs_address
    assert resume.endswith(f" --executor ray --ray-address {address}`."), resume
    assert "SIGTERM received" not in stderr and "Traceback" not in stderr, stderr
    assert not [line for line in stderr.splitlines() if " INFO " in line or " WARNING " in line], stderr


@pytest.fixture
def ray_client_address(ray_cluster):
    """`ray://…` of a Ray client server in front of the session's cluster (one server for every client: its
    "proxy" mode, which `ray start --head` runs, starts a server per client, which failed here after other tests)."""
    import socket
    import subprocess
    import time

    def started() -> tuple[subprocess.Popen, int] | None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]  # (free a moment ago: another process may take it first)
        server = subprocess.Popen(
            [sys.executable, "-m", "ray.util.client.server", "--address", ray_cluster.get_runtime_context().gcs_address,
             "--host", "127.0.0.1", "--port", str(port), "--mode", "legacy"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while server.poll() is None and time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return server, port
            except OSError:
                time.sleep(0.1)
        server.kill()
        server.wait(timeout=30)
        return None

    # The server now and then fails to start on a loaded machine (its port taken, its start slow): a few tries.
    running = next((found for found in (started() for _ in range(3)) if found is not None), None)
    if running is None:
        pytest.fail("the Ray client server did not start in three tries")
    server, port = running
    try:
        yield f"ray://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_video_run_through_the_ray_client_streams_its_results_like_a_local_run(tmp_path, ray_client_address):
    """The Ray client (`--ray-address ray://head:10001`) has no streaming actor calls: the results of a case are
    taken from its worker in batches instead, the same results in the same order; Ctrl-C leaves no traceback."""
    import signal
    import subprocess
    import time

    calls = tmp_path / "calls.txt"
    eval_dir = _three_case_eval(tmp_path, calls)
    local = run_eval(eval_dir, "--output-json", tmp_path / "local.json", "--concurrency", "2")
    command = [sys.executable, "-m", "assay", "video", "run", "--eval-dir", "eval", "--concurrency", "2",
               "--executor", "ray", "--ray-address", ray_client_address]
    done = subprocess.run([*command, "--output-json", str(tmp_path / "client.json")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == local.exit_code == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert _trial_results(read_report(tmp_path / "client.json")) == _trial_results(read_report(tmp_path / "local.json"))
    assert _case_lines(done.stdout) == _case_lines(local.output)

    # Interrupted while its workers are busy: exit 130, a resume line, and none of the Ray client's tracebacks for
    # the answers that arrived after the driver stopped waiting.
    _three_case_eval(tmp_path / "slow", tmp_path / "slow-calls.txt", SLOW_CASE_A_EXTRA)
    process = subprocess.Popen(command, cwd=tmp_path / "slow", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + 90
    slow_calls = tmp_path / "slow-calls.txt"
    while time.monotonic() < deadline and process.poll() is None:
        if slow_calls.exists() and any(line.startswith("a/") for line in slow_calls.read_text().splitlines()):
            break
        time.sleep(0.05)
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGINT)
    stdout, stderr = (stream.decode() for stream in process.communicate(timeout=60))
    assert process.returncode == 130, stdout + stderr
    assert "Resume with `assay video run --resume" in stdout
    assert "Traceback" not in stderr and "never retrieved" not in stderr, stderr


def test_a_cluster_that_wants_a_token_is_one_line_saying_how_to_give_it(monkeypatch, capfd):
    """`ray start --head` starts a cluster with token authentication, and Ray sends no token to an address it is
    given (only to `auto`): it retried for 20 s printing its core's warnings, then said "Failed to connect"."""
    from assay.core import ray_executor
    from assay.errors import UsageError

    def refused(*args, **options):
        os.write(2, b"[W gcs_client.cc:210] Failed to get cluster ID from GCS server: Unauthenticated\n")
        try:
            raise RuntimeError("Failed to connect to GCS. RpcError: InvalidAuthToken: Authentication token is missing")
        except RuntimeError as error:
            raise ConnectionError("Failed to connect to Ray cluster at 10.0.0.5:6379") from error

    class FakeRay:
        init = staticmethod(refused)

        @staticmethod
        def is_initialized():
            return False

    monkeypatch.setattr(ray_executor, "_ray", lambda: FakeRay)
    monkeypatch.setattr(ray_executor, "_check_answers", lambda address: None)  # it answers, as Ray's GCS
    with pytest.raises(UsageError) as refusal:
        ray_executor.ensure_ray("10.0.0.5:6379")
    message = str(refusal.value)
    assert message.startswith("--ray-address '10.0.0.5:6379': the cluster wants an authentication token")
    assert "RAY_AUTH_MODE=token" in message and "~/.ray/auth_token" in message
    assert "Give the head node" not in message  # the address was right
    assert "gcs_client" not in capfd.readouterr().err  # Ray's core wrote that to the process's stderr


def test_a_ray_client_timeout_without_a_token_says_a_token_may_be_wanted(monkeypatch):
    from assay.core.ray_executor import _token_advice

    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    advice = _token_advice(ConnectionError("ray client connection timeout"))
    assert advice is not None and "RAY_AUTH_MODE=token" in advice and "client port is reachable" in advice
    monkeypatch.setenv("RAY_AUTH_MODE", "token")  # given one: the timeout is something else
    assert _token_advice(ConnectionError("ray client connection timeout")) is None
    assert _token_advice(ConnectionError("nothing answers at h:1: Connection refused")) is None


def test_a_misspelt_executor_names_the_one_meant():
    from assay.core.run.request import Execution
    from assay.errors import UsageError

    with pytest.raises(UsageError) as refused:
        Execution(executor="rya")
    assert str(refused.value) == "--executor must be local or ray; did you mean 'ray'?"
    with pytest.raises(UsageError) as refused:
        Execution(executor="kubernetes")
    assert str(refused.value) == "--executor must be local or ray"


def test_a_ray_runs_judge_spend_counts_its_workers_calls(tmp_path, ray_cluster, fake_openai, monkeypatch):
    """Judges run where the attempts do: on Ray, in the workers. Their calls, tokens and retries come back with
    the attempts and are said as a local run says them (before, a Ray run said nothing of what they cost)."""
    sys.path.insert(0, str(TESTS / "agent"))
    from servers.fake_openai import json_reply
    from test_llm_judge import judged_project

    project = judged_project(tmp_path / "p", f'model = "judge-1"\nbase_url = "{fake_openai.base_url}"\napi_key_env = ""\n')
    (project / "evals" / "second_eval.py").write_text(
        "from assay.agent import define_eval\n\n"
        "@define_eval(judge=True)\nasync def test(t):\n    await t.send('weather?')\n    t.judge('names a day')\n"
    )
    usage = {"prompt_tokens": 100, "completion_tokens": 7}
    fake_openai.respond_with(lambda request: json_reply({"reasons": "yes", "score": 1}, usage=usage))
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    local = invoke("agent", "run", "--project", project)
    assert local.exit_code == 0, local.output
    said = "judge judge-1: 2 call(s); 200 input and 14 output tokens"
    assert said in local.output
    shutil.rmtree(project / ".assay" / "cache")  # asked again, not read from the cache
    on_ray = invoke("agent", "run", "--project", project, "--executor", "ray", "--rerun", "all")
    assert on_ray.exit_code == 0, on_ray.output
    assert said in on_ray.output
    assert len(fake_openai.chat_requests) == 4
