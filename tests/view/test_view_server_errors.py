"""`assay view` on a real loopback socket: a request that makes a handler fail is a JSON 4xx, never a
traceback on the server's console."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import publish_run


def test_view_answers_request_errors_with_json_and_prints_no_traceback(tmp_path: Path) -> None:
    database = tmp_path / "assay.db"
    manifest = RunManifest(run_id="v-1", kind="video", created_at="2026-01-01T00:00:00Z", title="t", success=True)
    publish_run(manifest, [UnitResult("c/t/0", "passed", "c", expected=1, observed=1)], database=database)
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "view", "--no-open"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "ASSAY_STORE": str(database)},
    )  # fmt: skip
    try:
        line = process.stdout.readline().strip()
        assert line.startswith("Results viewer: http://127.0.0.1:"), line
        origin = line.split(" ", 2)[2].rstrip("/")
        deadline = time.monotonic() + 10
        while True:
            try:
                assert httpx.get(origin + "/api/runs", timeout=2).status_code == 200
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        answers = {path: httpx.get(origin + path, timeout=10) for path in ("/.%00./x", "/assets/%00.js")}
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=15)
    for path, response in answers.items():
        assert response.status_code == 400, (path, response.status_code, response.text)
        assert response.json()["error"]["code"] == "invalid_request"
    assert "Traceback" not in out + err and "Exception in ASGI application" not in err, err
