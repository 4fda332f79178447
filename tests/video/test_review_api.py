"""HTTP API of `assay video review`: every endpoint, every security rule, and the case-file rewrite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from email.utils import formatdate
from pathlib import Path

import httpx
import numpy as np
import pytest
import yaml
from PIL import Image
from media import make_numbered_video, read_frame_number
from starlette.testclient import TestClient

from assay.video.decode import select_frames
from assay.video.review.server import ReviewServer, create_review_app
from assay.web.app import CONTENT_SECURITY_POLICY, Binding, host_is_allowed

PORT = 8123
ORIGIN = f"http://127.0.0.1:{PORT}"

CASE_YAML = """\
# A numbered clip: frame n shows the number n.
video: clip.mp4
description: Numbers on frames.
sampling:
  every_s: 0.5
targets:
  number:
    label: Frame number
    sample_defaults:
      field: value
    samples:
      # the first second, every half second
      - range: [0.0, 1.0]
        expect: 0
      - at: 1.5  # a single point
        expect: {"n": 15, "big": 12345678901234567890}
  parity:
    samples:
      - at: [0.2, 0.4]
        comment: drafts still to seed
      - at: 2.5
        ignore: blurred
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # 30 frames at 10 fps: 3 s, frame n at n/10 s, a keyframe every 10 frames so seeks matter.
    return make_numbered_video(tmp_path_factory.mktemp("media") / "clip.mp4", 30, fps=10, gop=10)


@pytest.fixture
def eval_dir(tmp_path: Path, clip: Path) -> Path:
    root = tmp_path / "eval"
    cases = root / "cases"
    cases.mkdir(parents=True)
    (cases / "clip.mp4").write_bytes(clip.read_bytes())
    write(cases / "numbers.yaml", CASE_YAML)
    write(root / "config.yaml", "# gates\nthresholds:\n  min_pass_rate: 0.5\n")
    return root


def make_client(eval_dir: Path, **options) -> tuple[TestClient, ReviewServer]:
    server = ReviewServer(eval_dir=eval_dir.resolve(), binding=Binding(port=PORT), **options)
    return TestClient(create_review_app(server), base_url=ORIGIN), server


@pytest.fixture
def api(eval_dir: Path) -> TestClient:
    return make_client(eval_dir)[0]


def token(api: TestClient) -> str:
    return api.get("/api/eval-directory").json()["write_token"]


def error_code(response: httpx.Response) -> str:
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    return response.json()["error"]["code"]


def put(api: TestClient, body: object, *, case: str = "numbers.yaml", headers: dict | None = None) -> httpx.Response:
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    merged = {"content-type": "application/json", "x-glasskit-write-token": token(api), **(headers or {})}
    return api.put(f"/api/case-files/{case}/samples", content=data, headers=merged)


def target_samples(document: dict, target_id: str) -> list[dict]:
    return next(target for target in document["targets"] if target["id"] == target_id)["samples"]


# ---------------------------------------------------------------------------------------------
# Reading


def test_eval_directory_lists_cases_with_token_and_config_source(api: TestClient, eval_dir: Path) -> None:
    response = api.get("/api/eval-directory")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    data = response.json()
    assert data["eval_dir"] == str(eval_dir.resolve())
    assert len(data["write_token"]) >= 40
    assert data["eval_config_source"].startswith("# gates")
    assert data["cases"] == [
        {
            "id": "numbers.yaml", "name": "numbers", "file_name": "numbers.yaml", "description": "Numbers on frames.",
            "target_count": 2, "sample_count": 6, "status": "ready", "error": None,
        }
    ]  # fmt: skip


def test_broken_cases_are_listed_as_blocked_one_by_one(api: TestClient, eval_dir: Path) -> None:
    write(eval_dir / "cases" / "bad-yaml.yaml", "targets: [unclosed\n")
    (eval_dir / "cases" / "latin1.yaml").write_bytes("video: caf\xe9.mp4\n".encode("latin-1"))
    write(eval_dir / "cases" / "no-video.yaml", "video: missing.mp4\ntargets:\n  t:\n    samples:\n      - at: 1\n        expect: 1\n")
    cases = {case["id"]: case for case in api.get("/api/eval-directory").json()["cases"]}
    assert cases["bad-yaml.yaml"]["status"] == "blocked"
    assert cases["bad-yaml.yaml"]["error"]["code"] == "invalid_case"
    assert "invalid YAML" in cases["bad-yaml.yaml"]["error"]["message"]
    assert cases["latin1.yaml"]["error"]["code"] == "invalid_encoding"
    # Summaries never touch the video, so a missing one does not block the listing.
    assert cases["no-video.yaml"]["status"] == "ready"
    assert cases["numbers.yaml"]["status"] == "ready"


def test_case_document_carries_ids_values_origins_and_groups(api: TestClient) -> None:
    response = api.get("/api/case-files/numbers.yaml")
    assert response.status_code == 200
    document = response.json()
    assert document["status"] == "ready" and document["editing_enabled"] is True
    assert document["revision"] and document["case_file_source"].startswith("# A numbered clip")
    video = document["video"]
    assert video["url"] == "/api/case-files/numbers.yaml/video"
    assert video["frame_url"] == "/api/case-files/numbers.yaml/frame"
    assert video["display_path"] == "clip.mp4" and video["content_type"] == "video/mp4"
    assert video["duration_s"] == pytest.approx(3.0) and (video["width"], video["height"]) == (64, 16)
    number = document["targets"][0]
    assert number["id"] == "number" and number["label"] == "Frame number"
    assert number["sample_defaults"] == {"field": "value", "compare": {"mode": None, "tolerance": None}}
    assert "sample_defaults" in number["details_yaml"] and "samples" not in number["details_yaml"]
    assert [sample["id"] for sample in number["samples"]] == ["block-1-sample-0", "block-1-sample-1", "block-2-sample-0"]
    first, _, point = number["samples"]
    assert first["origin"] == {"block_index": 1, "kind": "range", "every_s": 0.5}
    assert first["expect_type"] == "number" and first["expect_json"] == "0"
    assert point["expect_type"] == "object"
    assert point["expect_json"] == '{"n":15,"big":12345678901234567890}'  # key order and big ints kept
    assert point["origin"] == {"block_index": 2, "kind": "at"}
    assert point["field"] == "value"
    groups = number["display_groups"]
    assert groups[0] == {
        "id": "group-1", "kind": "range", "sample_ids": ["block-1-sample-0", "block-1-sample-1"],
        "start_s": 0.0, "end_s": 1.0, "every_s": 0.5, "timestamps_s": [0.0, 0.5],
    }  # fmt: skip
    assert groups[1]["kind"] == "at" and groups[1]["sample_ids"] == ["block-2-sample-0"]
    parity = document["targets"][1]
    drafts = [sample for sample in parity["samples"] if not sample["has_expectation"]]
    assert [d["expect_json"] for d in drafts] == ["null", "null", "null"]
    issues = document["validation_issues"]
    assert issues == [
        {
            "code": "draft_expectations", "message": "Target 'parity' has 2 draft samples with no expectation.",
            "path": "targets.parity.samples", "severity": "warning", "repairable": False,
        }
    ]  # fmt: skip


def test_documents_follow_edits_made_on_disk(api: TestClient, eval_dir: Path) -> None:
    first = api.get("/api/case-files/numbers.yaml").json()
    case = eval_dir / "cases" / "numbers.yaml"
    case.write_text(case.read_text().replace("expect: 0\n", "expect: 5\n"))
    second = api.get("/api/case-files/numbers.yaml").json()
    assert second["revision"] != first["revision"]
    assert target_samples(second, "number")[0]["expect_json"] == "5"
    (eval_dir / "cases" / "clip.mp4").unlink()
    assert api.get("/api/case-files/numbers.yaml").json()["load_error"]["code"] == "video_unavailable"


def test_empty_targets_and_late_samples_make_a_case_repairable(api: TestClient, eval_dir: Path) -> None:
    write(
        eval_dir / "cases" / "repair.yaml",
        "video: clip.mp4\ntargets:\n  empty:\n    samples: []\n  late:\n    samples:\n      - at: [1.0, 3.5]\n        expect: 1\n",
    )
    document = api.get("/api/case-files/repair.yaml").json()
    assert document["status"] == "repairable" and document["editing_enabled"] is True
    codes = {issue["code"]: issue for issue in document["validation_issues"]}
    assert codes["empty_target"]["repairable"] and codes["empty_target"]["severity"] == "error"
    late = codes["timestamp_after_video"]
    assert late["path"] == "targets.late.samples.block-1-sample-1.timestamp_s"
    assert late["message"] == "repair/late sample 1 at 3.5s exceeds video duration 3s"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ("targets: [unclosed\n", "invalid_case"),
        ("video: clip.mp4\ntargets:\n  t:\n    samples:\n      - range: [0, 2]\n        expect: 1\n      - at: 1\n        expect: 2\n", "invalid_samples"),
        ("video: missing.mp4\ntargets:\n  t:\n    samples:\n      - at: 1\n        expect: 1\n", "video_unavailable"),
        # Any local file may be the video, but only one with a video suffix is served.
        ("video: ../../notes.txt\ntargets:\n  t:\n    samples:\n      - at: 1\n        expect: 1\n", "video_unavailable"),
    ],
)
def test_documents_that_cannot_be_edited_are_blocked(api: TestClient, eval_dir: Path, body: str, code: str) -> None:
    write(eval_dir / "cases" / "blocked.yaml", body)
    (eval_dir.parent / "notes.txt").write_bytes((eval_dir / "cases" / "clip.mp4").read_bytes())
    document = api.get("/api/case-files/blocked.yaml").json()
    assert document["status"] == "blocked" and document["editing_enabled"] is False
    assert document["load_error"]["code"] == code
    if code == "video_unavailable":
        assert [target["id"] for target in document["targets"]] == ["t"]  # still shown, read-only
        assert document["video"] == {"display_path": body.split("\n")[0].split(": ")[1]}
        assert error_code(api.get("/api/case-files/blocked.yaml/video")) == "video_unavailable"
        assert error_code(api.get("/api/case-files/blocked.yaml/frame?at=1")) == "video_unavailable"


def test_non_utf8_case_document_is_blocked_with_invalid_encoding(api: TestClient, eval_dir: Path) -> None:
    (eval_dir / "cases" / "latin1.yaml").write_bytes("video: caf\xe9.mp4\n".encode("latin-1"))
    document = api.get("/api/case-files/latin1.yaml").json()
    assert document["load_error"]["code"] == "invalid_encoding"
    assert document["case_file_source"] is None and document["targets"] == []


# ---------------------------------------------------------------------------------------------
# Security


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        (f"127.0.0.1:{PORT}", True), (f"localhost:{PORT}", True), (f"LOCALHOST:{PORT}", True),
        (f"127.8.9.10:{PORT}", True), (f"[::1]:{PORT}", True),
        ("127.0.0.1", False), (f"127.0.0.1:{PORT + 1}", False), (f"evil.example:{PORT}", False),
        (f"10.0.0.1:{PORT}", False), (f"127.0.0.1.nip.io:{PORT}", False), (f"::1:{PORT}", False),
        (f"127.0.0.1:{PORT}:1", False), ("127.0.0.1:", False), ("", False), (f"[::1]x:{PORT}", False),
    ],
)
def test_host_must_be_loopback_with_the_bound_port(host: str, allowed: bool) -> None:
    assert host_is_allowed(host, PORT) is allowed


def test_missing_port_counts_as_80() -> None:
    assert host_is_allowed("localhost", 80) and host_is_allowed("127.0.0.1:80", 80)


@pytest.mark.parametrize("path", ["/api/eval-directory", "/", "/app.js", "/api/case-files/numbers.yaml/video"])
def test_bad_host_header_is_rejected_everywhere(api: TestClient, path: str) -> None:
    response = api.get(path, headers={"host": f"attacker.example:{PORT}"})
    assert response.status_code == 400
    assert error_code(response) == "invalid_host"
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY


def test_put_with_bad_host_is_rejected_before_the_token_is_checked(api: TestClient) -> None:
    response = api.put(
        "/api/case-files/numbers.yaml/samples", content="{}", headers={"host": "127.0.0.1", "content-type": "application/json"}
    )
    assert response.status_code == 400 and error_code(response) == "invalid_host"


@pytest.mark.parametrize(
    "path", ["/api/eval-directory", "/", "/index.html", "/api/nope", "/api/case-files/numbers.yaml/frame?at=0"]
)
def test_every_response_carries_the_security_headers(api: TestClient, path: str) -> None:
    response = api.get(path)
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"


@pytest.mark.parametrize("method", ["POST", "DELETE", "PATCH", "OPTIONS", "TRACE"])
@pytest.mark.parametrize("path", ["/api/eval-directory", "/api/case-files/numbers.yaml/samples", "/"])
def test_other_methods_are_not_allowed(api: TestClient, method: str, path: str) -> None:
    response = api.request(method, path)
    assert response.status_code == 405
    assert error_code(response) == "method_not_allowed"


def test_put_to_a_static_path_is_not_allowed(api: TestClient) -> None:
    assert api.put("/index.html", content="x").status_code == 405


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/api"), ("GET", "/api/nope"), ("GET", "/api/case-files"), ("HEAD", "/api/eval-directory"),
     ("GET", "/api/case-files/numbers.yaml/samples"), ("PUT", "/api/eval-directory")],
)  # fmt: skip
def test_unknown_api_routes_are_route_not_found(api: TestClient, method: str, path: str) -> None:
    response = api.request(method, path)
    assert response.status_code == 404
    if method != "HEAD":
        assert error_code(response) == "route_not_found"


@pytest.mark.parametrize(
    "case_id", ["missing.yaml", "numbers", "..%2Fconfig.yaml", "..%2F..%2Feval%2Fcases%2Fnumbers.yaml", "%2Fetc%2Fpasswd", "clip.mp4"]
)
def test_case_ids_outside_the_listing_are_not_found(api: TestClient, case_id: str) -> None:
    for suffix in ("", "/video", "/frame?at=0"):
        response = api.get(f"/api/case-files/{case_id}{suffix}")
        assert response.status_code == 404, (case_id, suffix)
        assert error_code(response) == "case_file_not_found"
    response = put(api, {"targets": {"number": {"samples": []}}}, case=case_id)
    assert response.status_code == 404 and error_code(response) == "case_file_not_found"


def test_symlinked_case_leaving_the_eval_dir_is_neither_listed_nor_served(api: TestClient, eval_dir: Path) -> None:
    outside = write(eval_dir.parent / "secret.yaml", CASE_YAML)
    (eval_dir / "cases" / "sneaky.yaml").symlink_to(outside)
    listed = [case["id"] for case in api.get("/api/eval-directory").json()["cases"]]
    assert listed == ["numbers.yaml"]
    assert error_code(api.get("/api/case-files/sneaky.yaml")) == "case_file_not_found"
    response = put(api, {"targets": {"number": {"samples": []}}}, case="sneaky.yaml")
    assert error_code(response) == "case_file_not_found"
    assert outside.read_text(encoding="utf-8") == CASE_YAML


def test_static_paths_never_leave_the_asset_directory(api: TestClient) -> None:
    for path in ["/../../../etc/passwd", "/%2e%2e/%2e%2e/server.py", "/some/deep/link"]:
        response = api.get(path)
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/html; charset=utf-8"
        assert "<title>Eval Editor" in response.text
        assert response.headers["cache-control"] == "no-store"


def test_static_assets_are_served_with_their_types(api: TestClient) -> None:
    assert api.get("/app.js").headers["content-type"].startswith("text/javascript")
    assert api.get("/app.css").headers["content-type"].startswith("text/css")


@pytest.mark.parametrize("supplied", [None, "", "wrong-token"])
def test_put_needs_the_launch_write_token(api: TestClient, eval_dir: Path, supplied: str | None) -> None:
    before = (eval_dir / "cases" / "numbers.yaml").read_bytes()
    headers = {"content-type": "application/json"}
    if supplied is not None:
        headers["x-glasskit-write-token"] = supplied
    response = api.put("/api/case-files/numbers.yaml/samples", content='{"targets": {}}', headers=headers)
    assert response.status_code == 403 and error_code(response) == "invalid_write_token"
    assert (eval_dir / "cases" / "numbers.yaml").read_bytes() == before


def test_write_token_differs_per_launch(eval_dir: Path) -> None:
    assert token(make_client(eval_dir)[0]) != token(make_client(eval_dir)[0])


# ---------------------------------------------------------------------------------------------
# PUT: request checks


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded", "application/jsonx"])
def test_put_needs_json_content_type(api: TestClient, content_type: str | None) -> None:
    headers = {"x-glasskit-write-token": token(api)}
    if content_type:
        headers["content-type"] = content_type
    response = api.put("/api/case-files/numbers.yaml/samples", content=b'{"targets": {}}', headers=headers)
    assert response.status_code == 415 and error_code(response) == "unsupported_media_type"


def test_put_accepts_json_content_type_parameters(api: TestClient) -> None:
    document = api.get("/api/case-files/numbers.yaml").json()
    body = {"targets": {"number": {"samples": target_samples(document, "number")}}}
    response = put(api, body, headers={"content-type": "application/json; charset=utf-8"})
    assert response.status_code == 200


def test_put_body_over_two_mebibytes_is_too_large(api: TestClient) -> None:
    response = put(api, b"{" + b" " * (2 * 1024 * 1024) + b"}")
    assert response.status_code == 413 and error_code(response) == "request_too_large"


def test_put_with_a_false_content_length_is_refused(api: TestClient) -> None:
    response = put(api, b'{"targets": {}}', headers={"content-length": "5"})
    assert response.status_code == 400 and error_code(response) == "invalid_content_length"


@pytest.mark.parametrize(
    "body",
    [b"{", b'{"targets": NaN}', b'{"targets": Infinity}', "[".encode() * 100_000 + b"]" * 100_000, b"\xff\xfe{}", b""],
)
def test_put_with_malformed_json_is_400(api: TestClient, body: bytes) -> None:
    response = put(api, body)
    assert response.status_code == 400 and error_code(response) == "malformed_json"


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({}, "targets"),
        ({"targets": {}}, "targets"),
        ({"targets": {"number": {"samples": []}}, "extra": 1}, "extra"),
        ({"targets": {"number": {"samples": [{"id": "a", "timestamp_s": "1", "has_expectation": True, "expect_json": "1"}]}}}, "targets.number.samples.0.timestamp_s"),
        ({"targets": {"number": {"samples": [{"id": "a", "timestamp_s": 1, "has_expectation": 1, "expect_json": "1"}]}}}, "targets.number.samples.0.has_expectation"),
        ({"targets": {"number": {"samples": [{"id": "a", "timestamp_s": 1, "has_expectation": True, "expect_json": 1}]}}}, "targets.number.samples.0.expect_json"),
        ({"targets": {"number": {"samples": [{"id": "a", "timestamp_s": 1, "has_expectation": True, "expect_json": "1", "colour": "red"}]}}}, "targets.number.samples.0.colour"),
        ({"targets": {"number": {"samples": [{"id": "a", "timestamp_s": 1, "has_expectation": True, "expect_json": "1", "expect_type": "integer"}]}}}, "targets.number.samples.0.expect_type"),
    ],
)  # fmt: skip
def test_put_body_is_validated_strictly(api: TestClient, body: dict, path: str) -> None:
    response = put(api, body)
    assert response.status_code == 422 and error_code(response) == "invalid_request"
    assert path in [detail["path"] for detail in response.json()["error"]["details"]]


def test_put_for_an_unknown_target_is_a_conflict(api: TestClient) -> None:
    response = put(api, {"targets": {"nope": {"samples": []}}})
    assert response.status_code == 409 and error_code(response) == "unknown_target"


def sample(identifier: str, t: float, expect_json: str = "1", **extra: object) -> dict:
    return {"id": identifier, "timestamp_s": t, "has_expectation": True, "expect_json": expect_json, **extra}


@pytest.mark.parametrize(
    ("samples", "path", "message"),
    [
        ([sample("a", 1), sample("a", 2)], "targets.number.samples.1.id", "duplicate sample id 'a'"),
        ([sample("a", 1, "{bad")], "targets.number.samples.0.expect_json", "is not a valid JSON value"),
        ([sample("a", 1, '{"k": 1, "k": 2}')], "targets.number.samples.0.expect_json", "duplicate key 'k'"),
        ([sample("a", 1, "NaN")], "targets.number.samples.0.expect_json", "NaN is not allowed"),
        ([sample("a", 1, "1e999")], "targets.number.samples.0.expect_json", "expect must be finite"),
        ([sample("a", 1, '"red"', expect_type="number")], "targets.number.samples.0.expect_type", "'number'"),
        ([sample("a", 1, compare={"mode": "fuzzy", "tolerance": None})], "targets.number.samples.0.compare.mode", "unsupported compare mode 'fuzzy'"),
        ([sample("a", 1, compare={"mode": "numeric", "tolerance": -1})], "targets.number.samples.0.compare.tolerance", ">= 0"),
        ([sample("a", -1)], "targets.number.samples.0.timestamp_s", "nonnegative"),
        ([sample("a", 1, comment="   ")], "targets.number.samples.0.comment", "must not be empty"),
        ([sample("a", 1.0), sample("b", 1.0000000001)], "targets.number.samples", "within 1e-9 seconds"),
        ([], "targets", "has no samples"),
        ([sample("a", 3.2)], "targets", "exceeds video duration 3s"),
    ],
)  # fmt: skip
def test_put_rejects_invalid_samples_and_keeps_the_file(
    api: TestClient, eval_dir: Path, samples: list, path: str, message: str
) -> None:
    before = (eval_dir / "cases" / "numbers.yaml").read_bytes()
    response = put(api, {"targets": {"number": {"samples": samples}}})
    assert response.status_code == 422 and error_code(response) == "invalid_samples"
    details = response.json()["error"]["details"]
    assert any(detail["path"] == path and message in detail["message"] for detail in details), details
    assert (eval_dir / "cases" / "numbers.yaml").read_bytes() == before


def test_put_on_a_file_that_stopped_being_utf8_is_a_conflict(api: TestClient, eval_dir: Path) -> None:
    case = eval_dir / "cases" / "numbers.yaml"
    body = {"targets": {"number": {"samples": target_samples(api.get("/api/case-files/numbers.yaml").json(), "number")}}}
    write_token = token(api)
    case.write_bytes(case.read_bytes() + b"# \xff\n")
    response = api.put(
        "/api/case-files/numbers.yaml/samples", content=json.dumps(body),
        headers={"content-type": "application/json", "x-glasskit-write-token": write_token},
    )  # fmt: skip
    assert response.status_code == 409 and error_code(response) == "case_file_structure_changed"


def test_put_on_a_file_broken_on_disk_says_why_in_words(api: TestClient, eval_dir: Path) -> None:
    case = eval_dir / "cases" / "numbers.yaml"
    body = {"targets": {"number": {"samples": target_samples(api.get("/api/case-files/numbers.yaml").json(), "number")}}}
    case.write_text(case.read_text(encoding="utf-8") + "oops: [\n", encoding="utf-8")
    response = put(api, body)
    assert response.status_code == 409 and error_code(response) == "case_file_structure_changed"
    message = response.json()["error"]["message"]
    # The loader's own words, not the repr of a Python dict.
    assert "invalid YAML" in message and "fix it and save again" in message
    assert "{'code'" not in message and "'details'" not in message


# ---------------------------------------------------------------------------------------------
# PUT: the rewrite


def test_put_rewrites_samples_keeping_comments_ids_and_other_targets(api: TestClient, eval_dir: Path) -> None:
    case = eval_dir / "cases" / "numbers.yaml"
    os.chmod(case, 0o640)
    document = api.get("/api/case-files/numbers.yaml").json()
    number = target_samples(document, "number")
    # Edit the point's expectation, add a run of three samples, delete the sample at 0.5.
    number = [s for s in number if s["timestamp_s"] != 0.5]
    number[-1] = {**number[-1], "expect_json": '{"n":16,"big":12345678901234567890}'}
    number += [
        {**sample(f"new-{i}", 2.0 + i * 0.25, "true", expect_type="boolean"), "field": "value",
         "compare": {"mode": None, "tolerance": None}, "comment": None, "ignore": None, "origin": None}
        for i in range(3)
    ]  # fmt: skip
    response = put(api, {"targets": {"number": {"samples": number}}})
    assert response.status_code == 200, response.text
    assert response.headers["connection"] == "close"
    saved = response.json()
    text = case.read_text(encoding="utf-8")
    assert text.startswith("# A numbered clip: frame n shows the number n.\n")
    assert "# the first second, every half second" in text
    assert "# a single point" in text
    assert text.endswith(CASE_YAML.split("  parity:\n", 1)[1])  # the other target is byte-identical
    assert oct(case.stat().st_mode & 0o777) == "0o640"
    blocks = yaml.safe_load(text)["targets"]["number"]["samples"]
    assert blocks == [
        {"at": 0.0, "expect": 0},
        {"at": 1.5, "expect": {"n": 16, "big": 12345678901234567890}},
        {"range": [2.0, 2.75], "every_s": 0.25, "expect": True},
    ]
    ids = [s["id"] for s in target_samples(saved, "number")]
    assert ids == ["block-1-sample-0", "block-2-sample-0", "new-0", "new-1", "new-2"]  # submitted ids kept
    assert saved["revision"] != document["revision"]
    # A later GET of the same revision keeps the client's ids too.
    assert [s["id"] for s in target_samples(api.get("/api/case-files/numbers.yaml").json(), "number")] == ids


def test_put_writes_explicit_nulls_to_clear_inherited_defaults(api: TestClient, eval_dir: Path) -> None:
    number = target_samples(api.get("/api/case-files/numbers.yaml").json(), "number")
    number = [{**s, "field": None, "compare": {"mode": "numeric", "tolerance": 2}} if s["timestamp_s"] == 1.5 else s for s in number]
    assert put(api, {"targets": {"number": {"samples": number}}}).status_code == 200
    blocks = yaml.safe_load((eval_dir / "cases" / "numbers.yaml").read_text())["targets"]["number"]["samples"]
    assert blocks[1] == {"at": 1.5, "field": None, "expect": {"n": 15, "big": 12345678901234567890}, "compare": {"mode": "numeric", "tolerance": 2.0}}


def test_put_unchanged_samples_leaves_the_file_byte_identical(api: TestClient, eval_dir: Path) -> None:
    before = (eval_dir / "cases" / "numbers.yaml").read_bytes()
    document = api.get("/api/case-files/numbers.yaml").json()
    body = {"targets": {target["id"]: {"samples": target["samples"]} for target in document["targets"]}}
    response = put(api, body)
    assert response.status_code == 200
    assert (eval_dir / "cases" / "numbers.yaml").read_bytes() == before
    assert response.json()["revision"] == document["revision"]


# ---------------------------------------------------------------------------------------------
# Video bytes


@pytest.fixture
def video_bytes(eval_dir: Path) -> bytes:
    return (eval_dir / "cases" / "clip.mp4").read_bytes()


def test_video_is_served_whole_with_validators(api: TestClient, video_bytes: bytes) -> None:
    response = api.get("/api/case-files/numbers.yaml/video")
    assert response.status_code == 200 and response.content == video_bytes
    import hashlib

    assert response.headers["etag"] == f'"sha256-{hashlib.sha256(video_bytes).hexdigest()}"'
    assert response.headers["accept-ranges"] == "bytes"
    assert response.headers["cache-control"] == "private, max-age=0"
    assert response.headers["content-type"] == "video/mp4"
    assert response.headers["content-length"] == str(len(video_bytes))
    assert response.headers["last-modified"].endswith(" GMT")
    head = api.head("/api/case-files/numbers.yaml/video")
    assert head.status_code == 200 and head.content == b"" and head.headers["content-length"] == str(len(video_bytes))


@pytest.mark.parametrize(
    ("header", "first", "last"),
    [("bytes=0-99", 0, 99), ("bytes=100-", 100, None), ("bytes=-50", None, None), ("bytes=10-999999999", 10, None)],
)
def test_single_byte_ranges_are_partial_content(api: TestClient, video_bytes: bytes, header: str, first, last) -> None:
    size = len(video_bytes)
    if header == "bytes=-50":
        first, last = size - 50, size - 1
    last = size - 1 if last is None else last
    response = api.get("/api/case-files/numbers.yaml/video", headers={"range": header})
    assert response.status_code == 206
    assert response.headers["content-range"] == f"bytes {first}-{last}/{size}"
    assert response.content == video_bytes[first : last + 1]


@pytest.mark.parametrize("header", ["bytes=0-1,5-6", "bytes=abc", "items=0-1", "bytes=999999999-", "bytes=5-1", "bytes=-0", "bytes=-"])
def test_unsatisfiable_ranges_are_416(api: TestClient, video_bytes: bytes, header: str) -> None:
    response = api.get("/api/case-files/numbers.yaml/video", headers={"range": header})
    assert response.status_code == 416
    assert response.headers["content-range"] == f"bytes */{len(video_bytes)}"


def test_range_is_ignored_on_head_and_when_if_range_differs(api: TestClient, video_bytes: bytes) -> None:
    url = "/api/case-files/numbers.yaml/video"
    assert api.head(url, headers={"range": "bytes=0-1"}).status_code == 200
    etag = api.head(url).headers["etag"]
    assert api.get(url, headers={"range": "bytes=0-1", "if-range": etag}).status_code == 206
    stale = api.get(url, headers={"range": "bytes=0-1", "if-range": '"sha256-other"'})
    assert stale.status_code == 200 and stale.content == video_bytes
    weak = api.get(url, headers={"range": "bytes=0-1", "if-range": "W/" + etag})
    assert weak.status_code == 200


def test_conditional_requests_follow_the_precedence_rules(api: TestClient) -> None:
    url = "/api/case-files/numbers.yaml/video"
    first = api.head(url)
    etag, modified = first.headers["etag"], first.headers["last-modified"]
    not_modified = api.get(url, headers={"if-none-match": f'"x", W/{etag}'})
    assert not_modified.status_code == 304 and not_modified.content == b""
    assert "content-length" not in not_modified.headers and not_modified.headers["etag"] == etag
    assert api.get(url, headers={"if-none-match": "*"}).status_code == 304
    assert api.get(url, headers={"if-none-match": '"other"'}).status_code == 200
    assert api.get(url, headers={"if-modified-since": modified}).status_code == 304
    # If-None-Match wins over If-Modified-Since.
    assert api.get(url, headers={"if-none-match": '"other"', "if-modified-since": modified}).status_code == 200
    assert api.get(url, headers={"if-match": etag}).status_code == 200
    assert api.get(url, headers={"if-match": "*"}).status_code == 200
    assert api.get(url, headers={"if-match": '"other"'}).status_code == 412
    assert api.get(url, headers={"if-match": f"W/{etag}"}).status_code == 412  # strong comparison
    long_ago = formatdate(0, usegmt=True)
    assert api.get(url, headers={"if-unmodified-since": long_ago}).status_code == 412
    # If-Match wins over If-Unmodified-Since.
    assert api.get(url, headers={"if-match": etag, "if-unmodified-since": long_ago}).status_code == 200
    assert api.get(url, headers={"if-unmodified-since": modified}).status_code == 200


# ---------------------------------------------------------------------------------------------
# Exact frames


@pytest.mark.parametrize("t", [0.0, 0.04, 0.05, 0.15, 1.26, 2.94, 3.02])
def test_frame_is_the_frame_run_would_send(api: TestClient, eval_dir: Path, t: float) -> None:
    response = api.get(f"/api/case-files/numbers.yaml/frame?at={t}")
    assert response.status_code == 200 and response.headers["content-type"] == "image/png"
    pixels = np.asarray(Image.open(__import__("io").BytesIO(response.content)).convert("RGB"))
    expected = select_frames(eval_dir / "cases" / "clip.mp4", [t])[0]
    assert np.array_equal(pixels, expected.pixels)
    assert read_frame_number(pixels) == expected.index
    import hashlib

    digest = hashlib.sha256(f"RGB:{expected.width}x{expected.height}\0".encode() + expected.pixels.tobytes()).hexdigest()
    assert response.headers["etag"] == f'"rgb-sha256-{digest}"'
    assert response.headers["x-glasskit-frame-sha256"] == f"sha256-{digest}"
    assert response.headers["x-glasskit-requested-time"] == format(t, ".9g")
    assert float(response.headers["x-glasskit-media-time"]) == pytest.approx(expected.media_time)
    assert response.headers["cache-control"] == "no-store"


def test_frame_index_is_sent_only_when_known(api: TestClient) -> None:
    assert api.get("/api/case-files/numbers.yaml/frame?at=0").headers["x-glasskit-frame-index"] == "0"
    assert "x-glasskit-frame-index" not in api.get("/api/case-files/numbers.yaml/frame?at=1.5").headers


def test_frame_requested_time_is_rounded_to_nine_decimals(api: TestClient) -> None:
    response = api.get("/api/case-files/numbers.yaml/frame?at=2.01666666666")
    assert response.headers["x-glasskit-requested-time"] == "2.01666667"


@pytest.mark.parametrize("query", ["", "?at=", "?at=x", "?at=-1", "?at=nan", "?at=inf", "?at=1&at=2"])
def test_frame_time_must_be_one_finite_nonnegative_number(api: TestClient, query: str) -> None:
    response = api.get(f"/api/case-files/numbers.yaml/frame{query}")
    assert response.status_code == 400 and error_code(response) == "invalid_frame_time"


@pytest.mark.parametrize(
    "headers",
    [
        {"x-glasskit-frame-client": "ui"},
        {"x-glasskit-frame-generation": "1"},
        {"x-glasskit-frame-client": "bad client!", "x-glasskit-frame-generation": "1"},
        {"x-glasskit-frame-client": "x" * 129, "x-glasskit-frame-generation": "1"},
        {"x-glasskit-frame-client": "ui", "x-glasskit-frame-generation": "-1"},
        {"x-glasskit-frame-client": "ui", "x-glasskit-frame-generation": str(2**53)},
    ],
)
def test_frame_client_and_generation_go_together_and_are_checked(api: TestClient, headers: dict) -> None:
    response = api.get("/api/case-files/numbers.yaml/frame?at=1", headers=headers)
    assert response.status_code == 400 and error_code(response) == "invalid_frame_request"


def test_an_older_frame_generation_is_superseded(api: TestClient) -> None:
    url = "/api/case-files/numbers.yaml/frame?at=1"
    newer = api.get(url, headers={"x-glasskit-frame-client": "ui:1", "x-glasskit-frame-generation": "7"})
    assert newer.status_code == 200
    older = api.get(url, headers={"x-glasskit-frame-client": "ui:1", "x-glasskit-frame-generation": "6"})
    assert older.status_code == 409 and error_code(older) == "frame_request_superseded"
    other_client = api.get(url, headers={"x-glasskit-frame-client": "ui:2", "x-glasskit-frame-generation": "1"})
    assert other_client.status_code == 200


def test_head_of_a_frame_has_its_headers_without_body(api: TestClient) -> None:
    response = api.head("/api/case-files/numbers.yaml/frame?at=1")
    assert response.status_code == 200 and response.content == b""
    assert response.headers["x-glasskit-frame-sha256"].startswith("sha256-")


# ---------------------------------------------------------------------------------------------
# Earlier results


def run_report(eval_dir: Path) -> dict:
    def result(target: str, t: float, status: str, expected: object, observed: object) -> dict:
        return {
            "case": "numbers", "target": target, "target_label": None, "sample_index": 0, "timestamp_s": t,
            "status": status, "expected": expected, "observed": {"value": observed}, "observed_value": observed,
            "compare_mode": None, "field": "value", "reason": "matched" if status == "passed" else "mismatch",
            "source": "at", "evaluation_duration_seconds": 0.01, "evaluation_timing_mode": "individual",
            "artifact_image": None, "artifact_json": None,
        }  # fmt: skip

    return {
        "schema_version": 1, "report_type": "eval_run", "eval_dir": str(eval_dir.resolve()), "cases": ["numbers"],
        "trials": [
            {"trial": 1, "results": [result("number", 0.0, "passed", 0, 0), result("number", 0.5, "failed", 0, 5)]},
            {"trial": 2, "results": [result("number", 0.0, "passed", 0, 0), result("number", 0.5, "passed", 0, 0)]},
        ],
    }  # fmt: skip


def test_results_come_from_the_newest_report_under_runs(api: TestClient, eval_dir: Path) -> None:
    assert api.get("/api/case-files/numbers.yaml/results").json() == {"source": None, "targets": {}}
    write(eval_dir / "runs" / "report.json", json.dumps(run_report(eval_dir)))
    data = api.get("/api/case-files/numbers.yaml/results").json()
    assert data["source"] == {"kind": "report", "path": str(eval_dir / "runs" / "report.json")}
    outcomes = {o["timestamp_s"]: o for o in data["targets"]["number"]}
    assert outcomes[0.5]["status"] == "passed" and outcomes[0.5]["statuses"] == ["failed", "passed"]
    assert outcomes[0.0]["stale"] is False


def test_results_come_from_a_checkpoint_and_mark_edited_expectations_stale(eval_dir: Path) -> None:
    report = run_report(eval_dir)
    checkpoint = eval_dir / "elsewhere" / "run-1"
    checkpoint.mkdir(parents=True)
    lines = []
    for trial in report["trials"][:1]:
        for result in trial["results"]:
            key = f"{trial['trial']}\0numbers\0{result['target']}\0{result['sample_index']}\0{float.hex(result['timestamp_s'])}"
            lines.append(json.dumps({"key": key, "payload": result, "recorded_at": "2026-01-01T00:00:00Z", "type": "run_result"}))
    (checkpoint / "events.jsonl").write_text("\n".join(lines) + "\n")
    case = eval_dir / "cases" / "numbers.yaml"
    case.write_text(case.read_text().replace("expect: 0\n", "expect: 7\n"))
    api, _ = make_client(eval_dir, results_path=checkpoint)
    data = api.get("/api/case-files/numbers.yaml/results").json()
    assert data["source"]["kind"] == "checkpoint"
    outcomes = {o["timestamp_s"]: o for o in data["targets"]["number"]}
    assert outcomes[0.5]["status"] == "failed" and outcomes[0.5]["observed_value"] == 5
    assert outcomes[0.0]["stale"] is True  # the expectation is now 7, the run judged 0


# ---------------------------------------------------------------------------------------------
# The command


REVIEW = [
    sys.executable, "-c",
    "import typer; from assay.cli.video import review_command; app = typer.Typer(); app.command()(review_command); app()",
]  # fmt: skip


def run_review(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*REVIEW, *args], capture_output=True, text=True, timeout=30, env={**os.environ, "COLUMNS": "200"})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--target", "number"], "--target requires --case"),
        (["--time", "1"], "--time requires --case"),
        (["--case", "numbers", "--time", "nan"], "must be a finite, nonnegative number"),
        (["--case", "numbers", "--time", "-1"], "must be a finite, nonnegative number"),
        (["--port", "70000"], "Input should be less than or equal to 65535"),
    ],
)
def test_review_usage_errors_exit_2(eval_dir: Path, args: list[str], message: str) -> None:
    result = run_review("--eval-dir", str(eval_dir), "--no-open", *args)
    assert result.returncode == 2
    assert message in " ".join((result.stdout + result.stderr).split())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--eval-dir", "/nonexistent/eval"], "Could not start review UI: eval directory does not exist: /nonexistent/eval"),
        (["--case", "nope"], "Could not start review UI: no case files found under"),
        (["--case", "numbers", "--target", "nope"], "Could not start review UI: case 'numbers.yaml' has no target matching 'nope'"),
        # a --results path that is no run started the editor and showed no results without a word
        (["--results", "/nonexistent/report.json"], "Could not start review UI: --results /nonexistent/report.json does not exist"),
        (["--results", "/"], "Could not start review UI: --results / is neither a run's checkpoint folder"),
    ],
)
def test_review_refuses_to_start_on_bad_input(eval_dir: Path, args: list[str], message: str) -> None:
    result = run_review("--eval-dir", str(eval_dir), "--no-open", *args)
    assert result.returncode == 2
    assert message in " ".join(result.stdout.split())
    assert "Review UI:" not in result.stdout


def test_review_serves_on_loopback_and_exits_0_on_ctrl_c(eval_dir: Path) -> None:
    process = subprocess.Popen(
        [*REVIEW, "--eval-dir", str(eval_dir), "--case", "numbers", "--target", "parity", "--time", "2.5", "--no-open"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = process.stdout.readline().strip()
        assert line.startswith("Review UI: http://127.0.0.1:")
        assert line.endswith("/?case=numbers.yaml&target=parity&time=2.5")
        origin = line.split(" ", 2)[2].split("/?")[0]
        deadline = time.monotonic() + 10
        while True:
            try:
                response = httpx.get(origin + "/api/eval-directory", timeout=2)
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert response.status_code == 200
        # The Host header check uses the real bound port.
        port = int(origin.rsplit(":", 1)[1])
        assert httpx.get(origin + "/", headers={"host": f"localhost:{port + 1}"}).status_code == 400
        document = httpx.get(origin + "/api/case-files/numbers.yaml").json()
        body = {"targets": {"number": {"samples": target_samples(document, "number")}}}
        saved = httpx.put(
            origin + "/api/case-files/numbers.yaml/samples", json=body,
            headers={"x-glasskit-write-token": response.json()["write_token"]},
        )  # fmt: skip
        assert saved.status_code == 200 and saved.headers["connection"] == "close"
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=15)
    assert process.returncode == 0, err
    assert "Traceback" not in out + err


def test_loopback_socket_is_tcp_so_responses_are_not_delayed_by_nagle() -> None:
    import socket

    from assay.web.app import bind_loopback_socket

    sock = bind_loopback_socket(0)
    try:
        # asyncio disables Nagle only on sockets created with proto IPPROTO_TCP; without it each
        # keep-alive response waited ~40 ms for a delayed ACK.
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockname()[0] == "127.0.0.1"
    finally:
        sock.close()


def test_request_errors_are_json_4xx_with_no_traceback_on_the_server_console(eval_dir: Path) -> None:
    process = subprocess.Popen(
        [*REVIEW, "--eval-dir", str(eval_dir), "--no-open"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        origin = process.stdout.readline().strip().split(" ", 2)[2].split("/?")[0].rstrip("/")
        deadline = time.monotonic() + 10
        while True:
            try:
                httpx.get(origin + "/api/eval-directory", timeout=2)
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        answers = {
            path: httpx.get(origin + path, timeout=10)
            for path in (
                "/api/case-files/numbers.yaml/frame?at=1e308",  # overflowed the seek arithmetic
                "/api/case-files/numbers.yaml/frame?at=1e20",
                "/.%00./etc/passwd",  # a NUL byte reached the file system
                "/api/case-files/numbers.yaml%00/frame?at=1",
            )
        }
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=15)
    for path, response in answers.items():
        assert 400 <= response.status_code < 500, (path, response.status_code, response.text)
        assert response.headers["content-type"] == "application/json; charset=utf-8", path
        assert response.json()["error"]["code"], path
    assert answers["/api/case-files/numbers.yaml/frame?at=1e308"].json()["error"]["code"] == "invalid_frame_time"
    assert "Traceback" not in out + err and "Exception in ASGI application" not in err, err


def test_a_save_of_one_target_leaves_a_target_sharing_its_samples_through_an_anchor_as_it_was(
    api: TestClient, eval_dir: Path
) -> None:
    """`samples: &schedule` in one target and `samples: *schedule` in another: the save rewrote the anchored list
    (a file that no longer loaded, the alias naming an anchor gone) or the edit reached both targets."""
    write(eval_dir / "cases" / "numbers.yaml", """\
        video: clip.mp4
        targets:
          number:
            samples: &schedule
              - at: 1.0
                expect: 10
          parity:
            samples: *schedule
        """)
    document = api.get("/api/case-files/numbers.yaml").json()
    [sample] = target_samples(document, "number")
    edited = {**{key: sample[key] for key in ("id", "timestamp_s", "field", "comment", "ignore")},
              "has_expectation": True, "expect_type": "number", "expect_json": "11",
              "compare": {"mode": sample["compare"]["mode"], "tolerance": sample["compare"]["tolerance"]}}
    response = put(api, {"targets": {"number": {"samples": [edited]}}})
    assert response.status_code == 200, response.text
    saved = yaml.safe_load((eval_dir / "cases" / "numbers.yaml").read_text(encoding="utf-8"))
    assert saved["targets"]["number"]["samples"] == [{"at": 1.0, "expect": 11}]
    assert saved["targets"]["parity"]["samples"] == [{"at": 1.0, "expect": 10}]
