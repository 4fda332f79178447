"""The Python helper that serves the adapter protocol from an app's own interpreter."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from assay.adapters.ndjson import start_ndjson_process
from assay.video.adapters import AdapterConfig, FrameSample, TargetContext
from assay.video.command_adapter import start_command_evaluator

FIXTURES = Path(__file__).resolve().parents[1] / "adapters" / "fixtures"
PYTHON_PROBE = FIXTURES / "python_probe_adapter.py"


def frame(seed: int) -> Image.Image:
    pixels = np.random.default_rng(seed).integers(0, 256, (40, 56, 3), dtype=np.uint8)
    return Image.fromarray(pixels, "RGB")


SAMPLES = [FrameSample(frame(index), 0.25 * index, 3 * index, index, "/v.mp4", "case") for index in range(3)]
TARGET = TargetContext(id="t", index=0, label=None, config={"k": "v"})


def expected(sample: FrameSample, eval_dir: Path) -> dict:
    return {
        "size": [56, 40],
        "pixel": list(sample.image.getpixel((0, 0))),
        "sha256": hashlib.sha256(np.asarray(sample.image).tobytes()).hexdigest(),
        "timestampS": sample.timestamp_s,
        "target": ["t", 0, None, {"k": "v"}],
        "evalDir": str(eval_dir.resolve()),
        "adapterConfig": {"model": "x"},
    }


def test_python_helper_serves_evaluate_and_evaluate_many(tmp_path):
    stderr = bytearray()

    async def scenario(extra: str):
        command = shlex.join([sys.executable, str(PYTHON_PROBE)]) + extra
        evaluator = await start_command_evaluator(
            command, AdapterConfig(tmp_path, {"model": "x"}, None, False), stderr_sink=stderr.extend
        )
        if evaluator.batch:
            results = await evaluator.evaluate_many(SAMPLES, TARGET)
        else:
            results = list(await asyncio.gather(*(evaluator.evaluate(s, TARGET) for s in SAMPLES)))
        await evaluator.close()
        return evaluator.batch, results

    assert asyncio.run(scenario("")) == (False, [expected(s, tmp_path) for s in SAMPLES])
    assert asyncio.run(scenario(" --many")) == (True, [expected(s, tmp_path) for s in SAMPLES])
    # print() inside the app went to stderr instead of corrupting the protocol stream
    assert b"this print must not reach the protocol stream" in stderr
    assert b"closing probe evaluator" in stderr


def helper_script(tmp_path: Path, body: str) -> str:
    script = tmp_path / "serve_adapter.py"
    script.write_text(textwrap.dedent(body))
    return shlex.join([sys.executable, str(script)])


def test_python_helper_answers_cancel_and_unknown_methods(tmp_path):
    command = helper_script(
        tmp_path,
        """
        import asyncio, sys
        from assay.video.serve import serve

        class Slow:
            def __init__(self, config):
                pass
            async def evaluate(self, sample, target):
                print(f"started {sample.sample_index}", file=sys.stderr, flush=True)
                await asyncio.sleep(30)

        serve(Slow)
        """,
    )
    received = bytearray()

    async def scenario():
        evaluator = await start_command_evaluator(
            command, AdapterConfig(tmp_path, {}, None, False), stderr_sink=received.extend
        )
        task = asyncio.create_task(evaluator.evaluate(SAMPLES[0], TARGET))
        while b"started 0" not in received:
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        try:
            await evaluator.process.request("bogus", {})
        except Exception as error:  # noqa: BLE001
            unknown = str(error)
        await evaluator.close()  # returns promptly: the cancelled call was really stopped
        return unknown

    unknown = asyncio.run(asyncio.wait_for(scenario(), 10))
    assert unknown == "adapter command bogus failed: unknown method: bogus"


def test_python_helper_exits_1_on_a_malformed_request(tmp_path):
    command = helper_script(
        tmp_path,
        """
        from assay.video.serve import serve

        class Evaluator:
            def __init__(self, config):
                pass
            def evaluate(self, sample, target):
                return True

        serve(Evaluator)
        """,
    )
    completed = subprocess.run(shlex.split(command), input=b"not json\n", capture_output=True, timeout=20)
    assert completed.returncode == 1
    assert completed.stdout == b""
    assert b"malformed protocol request" in completed.stderr


def test_python_helper_rejects_other_protocol_versions_and_missing_methods(tmp_path):
    command = helper_script(
        tmp_path,
        """
        from assay.video.serve import serve
        serve(lambda config: object())
        """,
    )
    assert _initialize_replies(command) == _REFUSED_VERSIONS + [
        "adapter command initialize failed: adapter must implement evaluate or evaluate_many"
    ] * 2


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_both_kits_refuse_and_show_a_protocol_version_alike(tmp_path):
    from assay.video import js_kit_path

    script = tmp_path / "adapter.mjs"
    script.write_text(
        f"import {{ runAdapter }} from {json.dumps(js_kit_path().as_uri())};\n"
        "runAdapter(() => ({ evaluate: () => true }));\n"
    )
    replies = _initialize_replies(f"node {script}")
    assert replies[: len(_REFUSED_VERSIONS)] == _REFUSED_VERSIONS
    assert [reply["protocolVersion"] for reply in replies[len(_REFUSED_VERSIONS) :]] == [1, 1]


# The JavaScript kit refuses what is not the number 1 (`!== 1`; JSON's 1.0 is 1 there) and shows it
# as `${version}` does; the Python kit says the same.
_VERSIONS_REFUSED_THEN_ACCEPTED = (2, True, "1", None, "absent", [1, [2, None]], 1.0, 1)
_REFUSED_VERSIONS = [
    f"adapter command initialize failed: unsupported protocol version: {shown}"
    for shown in ("2", "true", "1", "null", "undefined", "1,2,")
]


def _initialize_replies(command: str) -> list:
    async def scenario():
        process = await start_ndjson_process(command, stderr_sink=lambda chunk: None)
        replies = []
        for version in _VERSIONS_REFUSED_THEN_ACCEPTED:
            params = {"config": {"evalDir": "/e"}}
            if version != "absent":
                params["protocolVersion"] = version
            try:
                replies.append(await process.request("initialize", params))
            except Exception as error:  # noqa: BLE001
                replies.append(str(error))
        await process.close()
        return replies

    return asyncio.run(scenario())


def test_python_helper_closes_the_evaluator_on_stdin_eof(tmp_path):
    marker = tmp_path / "closed.txt"
    command = helper_script(
        tmp_path,
        f"""
        from assay.video.serve import serve

        class Evaluator:
            def __init__(self, config):
                pass
            def evaluate(self, sample, target):
                return True
            def close(self):
                open({str(marker)!r}, "w").write("closed")

        serve(Evaluator)
        """,
    )
    initialize = json.dumps({"id": 1, "method": "initialize", "params": {"protocolVersion": 1, "config": {"evalDir": "/e"}}})
    completed = subprocess.run(shlex.split(command), input=(initialize + "\n").encode(), capture_output=True, timeout=20)
    assert completed.returncode == 0
    capabilities = {"evaluate": True, "evaluateMany": False, "assay.sharedFrames": True}
    assert json.loads(completed.stdout) == {"id": 1, "result": {"protocolVersion": 1, "capabilities": capabilities}}
    assert marker.read_text() == "closed"


def test_python_helper_answers_a_result_json_cannot_carry_or_a_sys_exit_with_an_error(tmp_path, monkeypatch):
    """A set, a cycle or sys.exit() in `evaluate` is that request's error: a set was left unanswered
    (the reply's TypeError ended its task quietly) and the run waited for it for ever."""
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    command = helper_script(
        tmp_path,
        """
        import sys
        from assay.video.serve import serve

        class Evaluator:
            def __init__(self, config):
                pass
            def evaluate(self, sample, target):
                if sample.sample_index == 0:
                    return {"labels": {"red", "lamp"}}
                if sample.sample_index == 1:
                    cycle = []
                    cycle.append(cycle)
                    return cycle
                sys.exit(3)

        serve(Evaluator)
        """,
    )

    async def scenario():
        evaluator = await start_command_evaluator(command, AdapterConfig(tmp_path, {}, None, False))
        try:
            return await asyncio.gather(*(evaluator.evaluate(s, TARGET) for s in SAMPLES), return_exceptions=True)
        finally:
            await evaluator.close()

    errors = [str(error) for error in asyncio.run(asyncio.wait_for(scenario(), 15))]
    assert errors == [
        "adapter command evaluate failed: result is not JSON: Object of type set is not JSON serializable",
        "adapter command evaluate failed: result is not JSON: Circular reference detected",
        "adapter command evaluate failed: the adapter called sys.exit(3); "
        "raise an exception instead to report a failure",
    ]
