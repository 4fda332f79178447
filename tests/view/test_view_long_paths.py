"""`assay view` on a real loopback socket: a URL path longer than a file name can be is a clear 404,
never a 500 with the path printed back (the same app serves `assay video review`)."""

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


def test_a_path_longer_than_a_file_name_is_a_clear_404(tmp_path: Path) -> None:
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
        paths = ["/" + "a" * 10_000, "/assets/" + "a" * 10_000 + ".js", "/runs/" + "a" * 10_000, "/" + "a" * 300]
        answers = [httpx.get(origin + path, timeout=10) for path in paths]
        ordinary = httpx.get(origin + "/runs/v-1", timeout=10)
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=15)
    for response in answers:
        assert response.status_code == 404, (response.status_code, response.text[:200])
        assert response.json()["error"]["code"] == "route_not_found"
        assert response.json()["error"]["message"] == "Nothing matches this path: it is longer than a file name can be."
    assert ordinary.status_code == 200  # an ordinary path is still the app
    assert "Traceback" not in out + err and "error answering" not in err, err[:500]
