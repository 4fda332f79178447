"""The NDJSON process transport: spawning, request matching, protocol violations, stderr, cancel, close."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import sys
import textwrap
import time
from pathlib import Path

import pytest

from assay.adapters.ndjson import EncodedJson, ProcessTimeouts, start_ndjson_process
from assay.errors import AdapterRuntimeError

FIXTURES = Path(__file__).parent / "fixtures"
MISBEHAVING = FIXTURES / "misbehaving_adapter.mjs"
HINT = ". Stdout is reserved for NDJSON protocol messages; write adapter logs to stderr"
FAST = ProcessTimeouts(close_s=0.5, terminate_grace_s=0.3, kill_grace_s=0.5)


def misbehaving(mode: str) -> str:
    return f"node {MISBEHAVING} {mode}"


class StderrCollector:
    def __init__(self) -> None:
        self.data = bytearray()

    def __call__(self, chunk: bytes) -> None:
        self.data += chunk


async def started(command: str, **options):
    options.setdefault("stderr_sink", StderrCollector())
    options.setdefault("timeouts", FAST)
    return await start_ndjson_process(command, **options)


async def initialized(mode: str, **options):
    process = await started(misbehaving(mode), **options)
    await process.request("initialize", {"protocolVersion": 1, "config": {}})
    return process


def python_adapter(tmp_path: Path, body: str) -> str:
    script = tmp_path / "adapter.py"
    script.write_text(textwrap.dedent(body))
    return shlex.join([sys.executable, str(script)])


def run(coroutine):
    return asyncio.run(coroutine)


def test_empty_command_is_rejected():
    with pytest.raises(AdapterRuntimeError, match="^adapter command must not be empty$"):
        run(started("   "))


def test_unbalanced_quotes_are_rejected():
    with pytest.raises(AdapterRuntimeError, match="^invalid adapter command: No closing quotation$"):
        run(started("node 'adapter.js"))


def test_spawn_failure_names_the_parsed_command():
    with pytest.raises(AdapterRuntimeError) as caught:
        run(started("/no/such/program  --flag 'a b'"))
    assert str(caught.value).startswith("could not start adapter command '/no/such/program --flag 'a b'': ")
    assert "No such file or directory" in str(caught.value)


def test_requests_are_numbered_from_one_and_replies_match_by_id(tmp_path):
    command = python_adapter(
        tmp_path,
        """
        import json, sys
        requests = [json.loads(sys.stdin.readline()) for _ in range(3)]
        for request in reversed(requests):  # answer out of order
            print(json.dumps({"id": request["id"], "result": [request["id"], request["params"]]}), flush=True)
        close = json.loads(sys.stdin.readline())
        print(json.dumps({"id": close["id"], "result": None}), flush=True)
        """,
    )

    async def scenario():
        process = await started(command)
        results = await asyncio.gather(
            process.request("first", {"n": 1}),
            process.request("second", EncodedJson(b'{"n":2}')),
            process.request("third", {"n": 3}),
        )
        await process.close()
        return results

    assert run(scenario()) == [[1, {"n": 1}], [2, {"n": 2}], [3, {"n": 3}]]


def test_requests_are_compact_ascii_json_lines(tmp_path):
    capture = tmp_path / "requests.txt"
    command = python_adapter(
        tmp_path,
        f"""
        import json, sys
        with open({str(capture)!r}, "wb") as out:
            for raw in sys.stdin.buffer:
                out.write(raw)
                request = json.loads(raw)
                print(json.dumps({{"id": request["id"], "result": None}}), flush=True)
        """,
    )

    async def scenario():
        process = await started(command)
        await process.request("evaluate", {"text": "café", "list": [1, 2.5]})
        await process.close()

    run(scenario())
    assert capture.read_bytes() == (
        b'{"id":1,"method":"evaluate","params":{"text":"caf\\u00e9","list":[1,2.5]}}\n'
        b'{"id":2,"method":"close","params":{}}\n'
    )


@pytest.mark.parametrize(
    ("mode", "detail"),
    [
        ("non-json", "invalid JSON on stdout: Expecting property name enclosed in double quotes: line 1 column 2 (char 1); line: '{not json'"),
        ("unknown-id", "stdout response has unknown request id 102"),
        ("string-id", "stdout response must contain an integer id"),
        ("both-result-and-error", "stdout response must contain exactly one of result or error"),
        ("error-without-message", "stdout error response must contain a string error.message"),
        ("not-object", "stdout response must be a JSON object"),
        ("nan", "invalid JSON on stdout: NaN is not valid JSON; line: '{\"id\":2,\"result\":NaN}'"),
    ],
)
def test_protocol_violations_are_fatal_with_the_stdout_hint(mode, detail):
    async def scenario():
        process = await initialized(mode)
        with pytest.raises(AdapterRuntimeError) as first:
            await process.request("evaluate", {"sample": {"sampleIndex": 0}})
        with pytest.raises(AdapterRuntimeError) as later:
            await process.request("evaluate", {"sample": {"sampleIndex": 1}})
        with pytest.raises(AdapterRuntimeError) as at_close:
            await process.close()
        return str(first.value), str(later.value), str(at_close.value), process.returncode

    first, later, at_close, returncode = run(scenario())
    assert first == f"adapter command protocol error: {detail}{HINT}"
    assert later == first
    assert at_close == first
    assert returncode is not None


def test_logs_on_stdout_are_a_protocol_error_naming_the_line():
    async def scenario():
        process = await started(misbehaving("log-on-stdout"))
        try:
            await process.request("initialize", {"protocolVersion": 1})
        finally:
            await process.force_stop()

    with pytest.raises(AdapterRuntimeError) as caught:
        run(scenario())
    assert str(caught.value) == (
        "adapter command protocol error: invalid JSON on stdout: Expecting value: line 1 column 1 (char 0); "
        f"line: 'Loading model weights...'{HINT}"
    )


def test_oversized_reply_exceeds_the_stdout_limit():
    async def scenario():
        process = await initialized("oversized", message_limit=4096)
        try:
            await process.request("evaluate", {"sample": {}})
        finally:
            await process.force_stop()

    with pytest.raises(AdapterRuntimeError) as caught:
        run(scenario())
    assert str(caught.value) == (
        f"adapter command protocol error: stdout message exceeds the 4096 bytes protocol limit{HINT}"
    )


def test_oversized_request_is_refused_before_sending():
    async def scenario():
        process = await initialized("echo", message_limit=1024 * 1024)
        with pytest.raises(AdapterRuntimeError) as caught:
            await process.request("evaluateMany", {"blob": "x" * (1024 * 1024)})
        echoed = await process.request("evaluate", {"sample": {"sampleIndex": 5}})
        await process.close()
        return str(caught.value), echoed

    message, echoed = run(scenario())
    assert message == "adapter command evaluateMany request exceeds the 1 MiB protocol limit"
    assert echoed == {"echo": 5}  # the process stays usable


def test_crash_mid_run_reports_exit_code_and_stderr_tail():
    async def scenario():
        collector = StderrCollector()
        process = await initialized("crash-mid-run", stderr_sink=collector)
        assert await process.request("evaluate", {"sample": {"sampleIndex": 0}}) == {"echo": 0}
        with pytest.raises(AdapterRuntimeError) as caught:
            await process.request("evaluate", {"sample": {"sampleIndex": 1}})
        with pytest.raises(AdapterRuntimeError) as at_close:
            await process.close()
        return str(caught.value), str(at_close.value), bytes(collector.data)

    message, at_close, stderr = run(scenario())
    assert message == (
        f"adapter command 'node {MISBEHAVING} crash-mid-run' exited unexpectedly (exit code 7); "
        "stderr tail: segfault in frame handler"
    )
    assert at_close == message
    assert stderr == b"segfault in frame handler\n"


def test_stderr_is_mirrored_byte_for_byte_and_its_tail_kept(tmp_path):
    noise = bytes(range(256)) * 400 + "ünïcode\n".encode()  # > 64 KiB, not valid UTF-8 in places
    (tmp_path / "noise.bin").write_bytes(noise)
    command = python_adapter(
        tmp_path,
        f"""
        import sys
        sys.stderr.buffer.write(open({str(tmp_path / "noise.bin")!r}, "rb").read())
        sys.stderr.flush()
        sys.exit(9)
        """,
    )

    async def scenario():
        collector = StderrCollector()
        process = await started(command, stderr_sink=collector)
        with pytest.raises(AdapterRuntimeError) as caught:
            await process.request("initialize", {})
        await process.force_stop()
        return str(caught.value), bytes(collector.data)

    message, mirrored = run(scenario())
    assert mirrored == noise
    assert "exited unexpectedly (exit code 9); stderr tail: " in message
    assert message.endswith("ünïcode")
    tail = message.split("stderr tail: ", 1)[1]
    assert len(tail.encode("utf-8", errors="surrogateescape")) <= 3 * 64 * 1024


def test_cancelling_an_awaiting_request_sends_cancel_and_ignores_the_late_reply():
    async def scenario():
        collector = StderrCollector()
        process = await initialized("slow", stderr_sink=collector)
        task = asyncio.create_task(process.request("evaluate", {"sample": {"sampleIndex": 0}}))
        while b"started 2" not in collector.data:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.5)  # the adapter answers id 2 anyway; that must not be a protocol error
        assert process.failure is None
        await process.close()
        return bytes(collector.data)

    stderr = run(scenario())
    assert b"cancel 2\n" in stderr


def test_error_reply_raises_with_the_method_name():
    async def scenario():
        process = await initialized("evaluate-error")
        with pytest.raises(AdapterRuntimeError) as caught:
            await process.request("evaluate", {"sample": {}})
        await process.close()  # an error reply is not fatal for the process
        return str(caught.value)

    assert run(scenario()) == "adapter command evaluate failed: model timed out"


def test_close_without_answer_terminates_the_process_within_the_window():
    async def scenario():
        process = await initialized("no-close-answer")
        started_at = time.monotonic()
        with pytest.raises(AdapterRuntimeError) as caught:
            await process.close()
        return str(caught.value), time.monotonic() - started_at, process.returncode

    message, elapsed, returncode = run(scenario())
    assert message == (
        f"adapter command 'node {MISBEHAVING} no-close-answer' did not complete close within 0.5s; "
        "the process tree was terminated"
    )
    assert returncode is not None
    assert elapsed < 2.0


def test_close_kills_a_process_that_ignores_sigterm():
    async def scenario():
        process = await initialized("ignore-sigterm")
        with pytest.raises(AdapterRuntimeError, match="did not complete close within"):
            await process.close()
        return process.returncode

    assert run(scenario()) == -9


def _is_gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def test_close_timeout_kills_the_adapters_children_too():
    async def scenario():
        collector = StderrCollector()
        process = await initialized("grandchild", stderr_sink=collector)
        with pytest.raises(AdapterRuntimeError, match="the process tree was terminated"):
            await process.close()
        return int(re.search(rb"grandchild pid (\d+)", bytes(collector.data)).group(1))

    grandchild = run(scenario())
    deadline = time.monotonic() + 2
    while not _is_gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _is_gone(grandchild)


def test_close_error_reply_is_raised():
    async def scenario():
        process = await initialized("close-error")
        try:
            await process.close()
        finally:
            assert process.returncode is not None

    with pytest.raises(AdapterRuntimeError, match="^adapter command close failed: flush failed$"):
        run(scenario())


def test_non_zero_exit_after_close_is_an_error():
    async def scenario():
        process = await initialized("exit-nonzero-after-close")
        await process.close()

    with pytest.raises(AdapterRuntimeError) as caught:
        run(scenario())
    assert str(caught.value) == (
        f"adapter command 'node {MISBEHAVING} exit-nonzero-after-close' exited after close (exit code 4); "
        "stderr tail: bye with an error"
    )


def test_clean_close_returns_after_the_process_exits():
    async def scenario():
        process = await initialized("echo")
        await process.close()
        return process.returncode

    assert run(scenario()) == 0


def test_stdout_closed_while_running_is_reported(tmp_path):
    command = python_adapter(
        tmp_path,
        """
        import os, sys, time
        sys.stdin.readline()
        os.close(1)
        time.sleep(5)
        """,
    )

    async def scenario():
        process = await started(command)
        try:
            await process.request("initialize", {})
        finally:
            await process.force_stop()

    with pytest.raises(AdapterRuntimeError) as caught:
        run(scenario())
    assert str(caught.value).startswith("adapter command '")
    assert "closed stdout unexpectedly (no exit status); stderr tail: (empty)" in str(caught.value)


def test_cwd_and_environment_are_inherited(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ASSAY_TEST_SECRET", "s3cret")
    command = python_adapter(
        tmp_path,
        """
        import json, os, sys
        request = json.loads(sys.stdin.readline())
        print(json.dumps({"id": request["id"], "result": [os.getcwd(), os.environ.get("ASSAY_TEST_SECRET")]}), flush=True)
        """,
    )

    async def scenario():
        process = await started(command)
        try:
            return await process.request("initialize", {})
        finally:
            await process.force_stop()

    assert run(scenario()) == [os.getcwd(), "s3cret"]


def test_the_javascript_adapter_library_reads_every_frame_layout():
    """src/assay/video/js/adapter-kit.mjs cuts frames out of requests before JSON.parse; check it on
    lines longer than its 1 MiB reads and than its first 8 MiB buffer, several frames per line,
    base64 written with JSON escapes, and names that contain the field's own text, quotes and
    non-ASCII characters."""
    import base64
    import hashlib
    import json

    import numpy as np

    from assay.video.png_encoding import encode_png

    generator = np.random.default_rng(7)
    frames = [generator.integers(0, 256, (height, 640, 3), dtype=np.uint8) for height in (600, 40, 900)]
    pngs = [encode_png(frame) for frame in frames]
    assert len(base64.b64encode(pngs[2])) > 1 << 20  # spans more than one read

    def sample(index: int, name: str) -> dict:
        return {
            "image": {"mimeType": "image/png", "dataBase64": base64.b64encode(pngs[index]).decode(),
                      "width": 640, "height": frames[index].shape[0]},
            "timestampS": index / 10, "frameIndex": index, "sampleIndex": index, "videoPath": "v.mp4",
            "caseName": name,
        }

    tricky = 'say "dataBase64":"x" — café ✓'
    target = {"id": "t", "index": 0, "label": None, "config": {}}

    def line(request_id: int, method: str, params: dict, *, escaped: int | None = None) -> bytes:
        text = json.dumps({"id": request_id, "method": method, "params": params}, separators=(",", ":"))
        if escaped is not None:  # JSON allows "\/" for "/": the reader must take its plain path
            plain = base64.b64encode(pngs[escaped]).decode()
            text = text.replace(plain, plain.replace("/", "\\/"))
        return text.encode() + b"\n"

    async def scenario():
        process = await asyncio.create_subprocess_exec(
            "node", str(FIXTURES / "png_probe_adapter.mjs"), "both",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        process.stdin.write(
            line(1, "initialize", {"protocolVersion": 1, "evalDir": ".", "config": {}})
            + line(2, "evaluateMany", {"samples": [sample(0, tricky), sample(1, "b"), sample(2, "c")], "target": target})
            + line(3, "evaluate", {"sample": sample(2, "d"), "target": target}, escaped=2)
            + line(4, "evaluate", {"sample": sample(1, "é"), "target": target})
            + line(5, "evaluateMany", {"samples": [sample(index, f"g{index}") for index in (2, 0, 2, 2, 2)],
                                       "target": target})
            + line(6, "close", {})
        )
        process.stdin.close()
        out, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode == 0, err.decode()
        return {reply["id"]: reply for reply in map(json.loads, out.decode().splitlines())}

    replies = run(scenario())
    assert sorted(replies) == [1, 2, 3, 4, 5, 6] and "error" not in str(replies)

    def seen(result: dict) -> tuple:
        return result["caseName"], result["height"], result["pixel"], result["sha256"]

    expected = {
        index: (frames[index].shape[0], frames[index][0, 0].tolist(), hashlib.sha256(frames[index].tobytes()).hexdigest())
        for index in range(3)
    }
    assert [seen(result) for result in replies[2]["result"]] == [
        (tricky, *expected[0]), ("b", *expected[1]), ("c", *expected[2]),
    ]
    assert seen(replies[3]["result"]) == ("d", *expected[2])
    assert seen(replies[4]["result"]) == ("é", *expected[1])
    assert [seen(result) for result in replies[5]["result"]] == [
        (f"g{index}", *expected[index]) for index in (2, 0, 2, 2, 2)
    ]


def writer_threads(*, settle_s: float = 0.0) -> list:
    """The adapter stdin writer threads still alive (after waiting up to `settle_s` for them to end)."""
    import threading

    deadline = time.monotonic() + settle_s
    while True:
        alive = [thread for thread in threading.enumerate() if thread.name == "assay-adapter-stdin"]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.01)


def test_large_requests_arrive_whole_and_in_order(tmp_path):
    """Requests go to the pipe from a writer thread, in parts, many times larger than the pipe."""
    command = python_adapter(
        tmp_path,
        """
        import hashlib, json, sys
        for raw in sys.stdin.buffer:
            request = json.loads(raw)
            digest = hashlib.sha256(raw).hexdigest()
            print(json.dumps({"id": request["id"], "result": [len(raw), digest]}), flush=True)
        """,
    )
    import hashlib

    blobs = [bytes([65 + index]) * (3_000_000 + index) for index in range(6)]
    many_parts = tuple(b'"p%d",' % index for index in range(3000)) + (b'"end"',)  # > IOV_MAX parts

    def expected(request_id: int, method: str, params: bytes) -> list:
        line = b'{"id":%d,"method":"%s","params":' % (request_id, method.encode()) + params + b"}\n"
        return [len(line), hashlib.sha256(line).hexdigest()]

    async def scenario():
        process = await started(command)
        results = await asyncio.gather(
            *(process.request("evaluate", EncodedJson((b'{"blob":"', blob, b'"}'))) for blob in blobs),
            process.request("evaluateMany", EncodedJson((b"[", *many_parts, b"]"))),
        )
        assert writer_threads()
        await process.close()
        return results

    results = run(scenario())
    assert results[:6] == [expected(index + 1, "evaluate", b'{"blob":"' + blob + b'"}') for index, blob in enumerate(blobs)]
    assert results[6] == expected(7, "evaluateMany", b"[" + b"".join(many_parts) + b"]")
    assert not writer_threads(settle_s=2)


def test_stopping_frees_a_write_that_is_never_read(tmp_path):
    """A grandchild in its own session keeps the adapter's stdin open and never reads it: the write
    of a large request blocks on the full pipe, and stopping the adapter must still end it."""
    pid_file = tmp_path / "grandchild.pid"
    command = python_adapter(
        tmp_path,
        f"""
        import subprocess, sys, time
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)"],
            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(60)
        """,
    )

    async def scenario():
        process = await started(command)
        while not pid_file.exists() or not pid_file.read_text():
            await asyncio.sleep(0.02)
        request = asyncio.create_task(process.request("evaluate", EncodedJson((b'"', b"x" * 8_000_000, b'"'))))
        await asyncio.sleep(0.3)
        assert not request.done()  # blocked: nobody reads
        started_at = time.monotonic()
        await process.force_stop()
        with pytest.raises(AdapterRuntimeError, match="^adapter command was stopped$"):
            await asyncio.wait_for(request, 5)
        return time.monotonic() - started_at

    try:
        elapsed = run(scenario())
    finally:
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text()), 9)
    assert not writer_threads(settle_s=2)
    assert elapsed < 3


def test_closing_gives_the_adapter_end_of_input(tmp_path):
    """An adapter may wait for end of input before it exits; close() must deliver it promptly."""
    command = python_adapter(
        tmp_path,
        """
        import json, sys
        for raw in sys.stdin.buffer:  # replies to everything, exits only at end of input
            print(json.dumps({"id": json.loads(raw)["id"], "result": None}), flush=True)
        """,
    )

    async def scenario():
        process = await started(command)
        assert await process.request("evaluate", {}) is None
        await process.close()  # FAST: fails unless the adapter sees EOF within 0.5 s
        return process.returncode

    assert run(scenario()) == 0


def test_stdin_writer_writes_small_messages_inline_and_keeps_order_after_a_cancel(monkeypatch):
    """Small requests go straight into the pipe (no thread hand-off); the rest of a large one goes
    to the writer thread, and while the thread is in the middle of it (here paused half way, its
    caller cancelled, the pipe drained) the next message waits its turn instead of being written
    into the middle."""
    import queue
    import threading
    from types import SimpleNamespace

    from assay.adapters.ndjson import _PipeWriter

    handed = []

    class CountingQueue(queue.SimpleQueue):
        def put(self, item, block=True, timeout=None):
            handed.append(item is not None)
            super().put(item, block, timeout)

    from assay.adapters import ndjson

    monkeypatch.setattr(ndjson, "queue", SimpleNamespace(SimpleQueue=CountingQueue))
    read_end, write_end = os.pipe()
    received = bytearray()
    reading = threading.Event()

    def reader():
        reading.wait(10)
        while chunk := os.read(read_end, 1 << 16):
            received.extend(chunk)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    paused, resume = threading.Event(), threading.Event()

    async def scenario():
        writer = _PipeWriter(write_end)
        real_write_all = writer._write_all

        def pausing_write_all(views, first):
            if sum(map(len, views[first:])) < 1_000_000:
                return real_write_all(views, first)
            views = [b"".join(bytes(view) for view in views[first:])]
            half = len(views[0]) // 2
            real_write_all([views[0][:half]], 0)
            paused.set()
            resume.wait(10)
            real_write_all([views[0][half:]], 0)

        writer._write_all = pausing_write_all
        try:
            for index in range(100):
                await writer.write((b"small %d" % index, b"\n"))
            assert handed == []
            big = asyncio.create_task(writer.write((b"big ", b"x" * 3_000_000, b"\n")))
            await asyncio.sleep(0)  # it fills the pipe (nobody reads yet) and hands the rest over
            assert handed == [True]
            reading.set()
            assert await asyncio.get_running_loop().run_in_executor(None, paused.wait, 10)
            big.cancel()
            await asyncio.sleep(0.05)  # the reader empties the pipe meanwhile
            after = asyncio.create_task(writer.write((b"after\n",)))
            await asyncio.sleep(0.05)
            assert handed == [True, True] and not after.done()
            resume.set()
            await asyncio.wait_for(after, 10)
        finally:
            reading.set()
            resume.set()
            writer.close()  # the thread closes the pipe: the reader sees its end

    try:
        run(scenario())
    finally:
        thread.join(10)
        os.close(read_end)
    lines = bytes(received).split(b"\n")
    assert lines[:100] == [b"small %d" % index for index in range(100)]
    assert lines[100:] == [b"big " + b"x" * 3_000_000, b"after", b""]


def test_stderr_held_at_start_is_shown_once_in_the_error_of_an_adapter_that_dies():
    async def scenario():
        collector = StderrCollector()
        process = await started(misbehaving("crash-at-start"), stderr_sink=collector, hold_stderr_s=30)
        with pytest.raises(AdapterRuntimeError) as caught:
            await process.request("initialize", {})
        await process.force_stop()
        return str(caught.value), bytes(collector.data)

    message, mirrored = run(scenario())
    assert message.endswith("exited unexpectedly (exit code 3); stderr tail: fatal: cannot load the app")
    assert mirrored == b""  # not mirrored as well


def test_stderr_held_at_start_is_mirrored_once_released_or_when_the_hold_runs_out(tmp_path):
    command = python_adapter(
        tmp_path,
        """
        import json, sys, time
        sys.stderr.write("loading the model\\n"); sys.stderr.flush()
        for line in sys.stdin:
            request = json.loads(line)
            if request["method"] == "initialize":
                time.sleep(float(request["params"]["sleep"]))
            sys.stderr.write(request["method"] + "\\n"); sys.stderr.flush()
            print(json.dumps({"id": request["id"], "result": None}), flush=True)
            if request["method"] == "close":
                break
        """,
    )

    async def scenario(hold_s: float, sleep_s: float) -> tuple[bytes, bytes]:
        collector = StderrCollector()
        process = await started(command, stderr_sink=collector, hold_stderr_s=hold_s)
        await process.request("initialize", {"sleep": sleep_s})
        at_initialized = bytes(collector.data)
        process.release_stderr()
        await process.request("evaluate", {})
        await process.close()
        return at_initialized, bytes(collector.data)

    at_initialized, everything = run(scenario(30, 0))
    assert at_initialized == b""  # held while it started …
    assert everything == b"loading the model\ninitialize\nevaluate\nclose\n"  # … then shown, in order, once
    at_initialized, everything = run(scenario(0.2, 1.5))
    assert at_initialized.startswith(b"loading the model\n")  # a slow start's logs are not held for long
    assert everything == b"loading the model\ninitialize\nevaluate\nclose\n"


def test_what_a_request_lent_the_adapter_is_handed_back_once_answered_even_late(tmp_path):
    """`on_answer` (how a shared-memory frame's slot is freed): never while the adapter may still
    be reading the request, at once for a request that never reached it."""
    from assay.adapters.ndjson import RequestTimedOut, RequestTimeout

    command = python_adapter(
        tmp_path,
        """
        import json, sys
        held = []
        for line in sys.stdin:
            request = json.loads(line)
            if "id" not in request:
                continue  # cancel
            if request["method"] == "hold":
                held.append(request["id"])
                continue
            for request_id in held + [request["id"]]:
                print(json.dumps({"id": request_id, "result": request["method"]}), flush=True)
            held.clear()
        """,
    )

    async def scenario():
        process = await started(command)
        answered = []
        try:
            held = asyncio.create_task(process.request("hold", {}, on_answer=lambda: answered.append("held")))
            with pytest.raises(RequestTimedOut):
                await process.request("hold", {}, timeout=RequestTimeout(0.2), on_answer=lambda: answered.append("timed out"))
            assert answered == []  # neither is answered yet
            with pytest.raises(AdapterRuntimeError, match="request is not valid JSON"):
                await process.request("echo", {"x": float("nan")}, on_answer=lambda: answered.append("never sent"))
            assert answered == ["never sent"]
            assert await process.request("release", {}, on_answer=lambda: answered.append("release")) == "release"
            assert await held == "release"
            assert answered[0] == "never sent" and answered[3] == "release"
            assert sorted(answered[1:3]) == ["held", "timed out"]  # answered in the order they were sent
        finally:
            await process.close()

    run(scenario())
