"""`assay video review` as a user starts it, over real layouts: the real CLI in a child process,
serving on 127.0.0.1, talked to over HTTP (and a real `assay video seed` before it)."""

from __future__ import annotations

import contextlib
import io
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import yaml
from media import GREEN, RED, make_color_sequence_video, make_numbered_video, read_frame_number
from PIL import Image

ASSAY = [sys.executable, "-m", "assay"]


@contextlib.contextmanager
def live_review(eval_dir: Path) -> Iterator[str]:
    """`assay video review --no-open` serving `eval_dir`; yields its origin, stops it with Ctrl-C."""
    process = subprocess.Popen(
        [*ASSAY, "video", "review", "--eval-dir", str(eval_dir), "--no-open"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = process.stdout.readline().strip()
        if not line.startswith("Review UI: http://127.0.0.1:"):
            process.kill()
            out, err = process.communicate(timeout=15)
            pytest.fail(f"review did not start: {line}{out}{err}")
        origin = line.removeprefix("Review UI: ").rstrip("/")
        deadline = time.monotonic() + 10
        while True:
            try:
                httpx.get(origin + "/api/eval-directory", timeout=2)
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline, "review never answered"
                time.sleep(0.05)
        yield origin
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=15)
    assert process.returncode == 0, err
    assert "Traceback" not in out + err


def write_token(origin: str) -> str:
    return httpx.get(origin + "/api/eval-directory").json()["write_token"]


def put_samples(origin: str, case_id: str, body: dict, token: str | None) -> httpx.Response:
    headers = {"x-glasskit-write-token": token} if token is not None else {}
    return httpx.put(f"{origin}/api/case-files/{case_id}/samples", json=body, headers=headers)


def samples_of(document: dict, target_id: str) -> list[dict]:
    return next(target for target in document["targets"] if target["id"] == target_id)["samples"]


def groups_of(document: dict, target_id: str) -> list[dict]:
    return next(target for target in document["targets"] if target["id"] == target_id)["display_groups"]


# ---------------------------------------------------------------------------------------------
# A video outside the eval directory


CASE = """\
video: {video}
targets:
  number:
    samples:
      - at: 1.0
        expect: 10
"""


@pytest.fixture
def recordings_layout(tmp_path: Path) -> tuple[Path, Path]:
    """GlassKit's typical layout: `recordings/task-01.mp4` next to `your-app-repo/eval/`."""
    (tmp_path / "recordings").mkdir()
    video = make_numbered_video(tmp_path / "recordings" / "task-01.mp4", 30, fps=10)
    eval_dir = tmp_path / "your-app-repo" / "eval"
    (eval_dir / "cases").mkdir(parents=True)
    (eval_dir / "cases" / "relative.yaml").write_text(CASE.format(video="../../../recordings/task-01.mp4"))
    (eval_dir / "cases" / "absolute.yaml").write_text(CASE.format(video=video.resolve()))
    # A case file outside `cases/`, which no case id may reach.
    (tmp_path / "your-app-repo" / "stray.yaml").write_text(CASE.format(video=video.resolve()))
    return eval_dir, video


@pytest.mark.parametrize("case_id", ["relative.yaml", "absolute.yaml"])
def test_review_serves_and_edits_a_case_whose_video_is_outside_the_eval_dir(
    recordings_layout: tuple[Path, Path], case_id: str
) -> None:
    eval_dir, video = recordings_layout
    video_bytes = video.read_bytes()
    with live_review(eval_dir) as origin:
        document = httpx.get(f"{origin}/api/case-files/{case_id}").json()
        assert document["load_error"] is None
        assert document["status"] == "ready" and document["editing_enabled"] is True
        assert document["video"]["url"] == f"/api/case-files/{case_id}/video"
        assert document["video"]["duration_s"] == pytest.approx(3.0)

        whole = httpx.get(origin + document["video"]["url"])
        assert whole.status_code == 200 and whole.content == video_bytes
        assert whole.headers["content-type"] == "video/mp4"
        part = httpx.get(origin + document["video"]["url"], headers={"range": "bytes=100-199"})
        assert part.status_code == 206 and part.content == video_bytes[100:200]
        assert part.headers["content-range"] == f"bytes 100-199/{len(video_bytes)}"

        frame = httpx.get(origin + document["video"]["frame_url"], params={"at": "1.0"})
        assert frame.status_code == 200 and frame.headers["content-type"] == "image/png"
        assert read_frame_number(np.asarray(Image.open(io.BytesIO(frame.content)).convert("RGB"))) == 10

        [sample] = samples_of(document, "number")
        edited = {**sample, "expect_type": "number", "expect_json": "11"}
        saved = put_samples(origin, case_id, {"targets": {"number": {"samples": [edited]}}}, write_token(origin))
        assert saved.status_code == 200, saved.text
        assert saved.json()["status"] == "ready"
    written = yaml.safe_load((eval_dir / "cases" / case_id).read_text())
    assert written["targets"]["number"]["samples"] == [{"at": 1.0, "expect": 11}]


def test_case_ids_stay_inside_cases_and_the_other_guards_hold(recordings_layout: tuple[Path, Path]) -> None:
    eval_dir, _ = recordings_layout
    stray = eval_dir.parent / "stray.yaml"
    before = stray.read_text()
    body = {"targets": {"number": {"samples": []}}}
    with live_review(eval_dir) as origin:
        for case_id in ["..%2F..%2Fstray.yaml", "..%2F..%2F..%2Frecordings%2Ftask-01.mp4"]:
            for suffix in ("", "/video", "/frame?at=1"):
                response = httpx.get(f"{origin}/api/case-files/{case_id}{suffix}")
                assert response.status_code == 404, (case_id, suffix)
                assert response.json()["error"]["code"] == "case_file_not_found"
            refused = put_samples(origin, case_id, body, write_token(origin))
            assert refused.status_code == 404 and refused.json()["error"]["code"] == "case_file_not_found"
        # Serving outside videos loosens nothing else: a write still needs the token, and the
        # Host header must still name the loopback address with the bound port.
        document = httpx.get(f"{origin}/api/case-files/relative.yaml").json()
        untokened = put_samples(origin, "relative.yaml", {"targets": {"number": {"samples": samples_of(document, "number")}}}, None)
        assert untokened.status_code == 403 and untokened.json()["error"]["code"] == "invalid_write_token"
        port = int(origin.rsplit(":", 1)[1])
        foreign = httpx.get(f"{origin}/api/case-files/relative.yaml/video", headers={"host": f"example.com:{port}"})
        assert foreign.status_code == 400
    assert stray.read_text() == before


LONG_PATHS = ["/" + "a" * 10_000, "/assets/" + "a" * 10_000 + ".js", "/x/" + "a" * 10_000, "/" + "a" * 300]


def test_a_path_longer_than_a_file_name_is_a_clear_404(recordings_layout: tuple[Path, Path]) -> None:
    eval_dir, _ = recordings_layout
    with live_review(eval_dir) as origin:
        for path in LONG_PATHS:
            response = httpx.get(origin + path)
            assert response.status_code == 404, (path[:20], response.status_code, response.text[:200])
            assert response.json()["error"] == {
                "code": "route_not_found", "message": "Nothing matches this path: it is longer than a file name can be.",
                "details": [],
            }
        assert httpx.get(origin + "/a/b").status_code == 200  # an ordinary unknown path is still the app


# ---------------------------------------------------------------------------------------------
# A two-sample range through seed and review


COLOUR_ADAPTER = """
def create_evaluator(config):
    return Colours()


class Colours:
    def evaluate(self, sample, target):
        red, green, _ = sample.image.getpixel((4, 4))
        return "red" if red > green else "green"
"""

DRAFTS = """\
video: clip.mp4
targets:
  light:
    samples:
      - at: 1.0
      # 5.0 and 7.5 only: two samples, not on the case's 0.5 s cadence
      - range: [5.0, 10.0]
        every_s: 2.5
"""


def test_a_two_sample_range_stays_a_range_through_seed_review_and_save(tmp_path: Path) -> None:
    eval_dir = tmp_path / "eval"
    (eval_dir / "cases").mkdir(parents=True)
    # 2 fps for 10 s: red for the first 4 s, green after.
    make_color_sequence_video(eval_dir / "cases" / "clip.mp4", [RED] * 8 + [GREEN] * 12, fps=2, width=16, height=16)
    (eval_dir / "cases" / "door.yaml").write_text(DRAFTS)
    (eval_dir / "adapter.py").write_text(textwrap.dedent(COLOUR_ADAPTER))
    case_file = eval_dir / "cases" / "door.yaml"

    seeded = subprocess.run(
        [*ASSAY, "video", "seed", "--eval-dir", str(eval_dir)], capture_output=True, text=True, timeout=120
    )
    assert seeded.returncode == 0, seeded.stdout + seeded.stderr
    assert yaml.safe_load(case_file.read_text())["targets"]["light"]["samples"][1] == {
        "range": [5.0, 10.0], "every_s": 2.5, "expect": "green",
    }  # fmt: skip

    with live_review(eval_dir) as origin:
        document = httpx.get(f"{origin}/api/case-files/door.yaml").json()
        range_group = {
            "id": "group-2", "kind": "range", "sample_ids": ["block-2-sample-0", "block-2-sample-1"],
            "start_s": 5.0, "end_s": 10.0, "every_s": 2.5, "timestamps_s": [5.0, 7.5],
        }  # fmt: skip
        assert groups_of(document, "light")[1] == range_group

        samples = samples_of(document, "light")
        edited = [{**sample, "comment": "door open"} if sample["timestamp_s"] >= 5.0 else sample for sample in samples]
        saved = put_samples(origin, "door.yaml", {"targets": {"light": {"samples": edited}}}, write_token(origin))
        assert saved.status_code == 200, saved.text
        assert groups_of(saved.json(), "light")[1] == range_group
    assert yaml.safe_load(case_file.read_text())["targets"]["light"]["samples"] == [
        {"at": 1.0, "expect": "red"},
        {"range": [5.0, 10.0], "every_s": 2.5, "expect": "green", "comment": "door open"},
    ]
