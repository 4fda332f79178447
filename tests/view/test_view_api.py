"""The viewer's JSON routes over the filled store: runs, run page, unit pages, units, frames, compare, security."""

from __future__ import annotations

import io
from collections.abc import Iterator

import numpy as np
import pytest
from filled_store import FilledStore
from media import read_frame_number
from PIL import Image
from starlette.testclient import TestClient

from assay.core.results_store import SqliteRunStore
from assay.view.data import ViewData, api_key
from assay.view.export import key_hash
from assay.view.server import create_view_app
from assay.web.app import Binding

PORT = 8765


@pytest.fixture
def client(filled_store: FilledStore) -> Iterator[TestClient]:
    store = SqliteRunStore(filled_store.database, read_only=True)
    app = create_view_app(ViewData(store), Binding(port=PORT))
    with TestClient(app, base_url=f"http://127.0.0.1:{PORT}") as test_client:
        yield test_client
    store.close()


def test_runs_route_lists_and_filters(client: TestClient, filled_store: FilledStore) -> None:
    everything = client.get("/api/runs").json()
    assert everything["total"] == 5
    assert everything["kinds"] == ["video", "agent", "doc", "imported"]  # the filter's choices, from the registry
    videos = client.get("/api/runs", params={"kind": "video"}).json()
    assert [run["run_id"] for run in videos["runs"]] == [filled_store.video_after, filled_store.video_before]


def test_run_route_has_gates_and_group_table(client: TestClient, filled_store: FilledStore) -> None:
    run = client.get("/api/run", params={"run": filled_store.agent}).json()
    assert run["kind"] == "agent" and run["groups_total"] == 8
    assert {"group": "baseline/wrong_on_purpose", "counts": {"passed": 0, "failed": 1, "errored": 0, "skipped": 0, "ignored": 0}} in run["groups"]
    assert run["gates"][0]["passed"] is False


def test_units_route_pages_and_filters(client: TestClient, filled_store: FilledStore) -> None:
    page = client.get("/api/units", params={"run": filled_store.video_after, "limit": "3", "offset": "6"}).json()
    assert page["total"] == 8 and [unit["unit_id"] for unit in page["units"]] == ["numbers/number/6@0.6s#1", "numbers/number/7@0.7s#1"]
    failing = client.get("/api/units", params={"run": filled_store.agent, "verdict": "failed,errored"}).json()
    assert [unit["unit_id"] for unit in failing["units"]] == ["baseline/wrong_on_purpose#1"]
    bad = client.get("/api/units", params={"run": filled_store.agent, "offset": "-1"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_request"
    # A hand-edited verdict filter that is no verdict: refused, not "no units" under "all verdicts".
    bogus = client.get("/api/units", params={"run": filled_store.agent, "verdict": "failed,faild"})
    assert bogus.status_code == 400
    assert "verdict must be one of passed, failed, errored, skipped, ignored, got 'faild'; did you mean 'failed'?" in \
        bogus.json()["error"]["message"]


def test_agent_unit_carries_the_transcript(client: TestClient, filled_store: FilledStore) -> None:
    unit = client.get("/api/unit", params={"run": filled_store.agent, "unit": "baseline/orders/status#1"}).json()
    events = [event for turn in unit["detail"]["turns"] for event in turn["events"]]
    assert any(event["type"] == "operation.started" for event in events)  # the tool call
    assert unit["usage"] and unit["detail"]["assertions"]


def test_agent_unit_rows_show_assertions_where_other_kinds_show_expected_and_observed(client: TestClient, filled_store: FilledStore) -> None:
    page = client.get("/api/units", params={"run": filled_store.agent, "verdict": "failed"}).json()
    row = page["units"][0]
    assert row["expected"] == 'succeeded(); called_tool(\'cancel_order\'); check(includes("cancelled"))'
    assert row["observed"] == "1 matched, 2 mismatched"
    compare = client.get("/api/compare", params={"a": filled_store.doc_after, "b": filled_store.agent, "change": "new", "limit": "1"}).json()
    assert compare["rows"][0]["expected"] == "succeeded(); used_no_tools(); check(includes(\"Hello\"))"
    assert compare["rows"][0]["after"]["observed"] == "3 matched"


def test_what_a_kind_shows_is_declared_by_the_kind_not_branched_on_its_name(client: TestClient, filled_store: FilledStore) -> None:
    """The page reads `has_traces` and `plain_expected` (from the kind's KindView), never a kind's name."""
    agent_run = client.get("/api/run", params={"run": filled_store.agent}).json()
    video_run = client.get("/api/run", params={"run": filled_store.video_after}).json()
    assert (agent_run["has_traces"], video_run["has_traces"]) == (True, False)
    agent_unit = client.get("/api/unit", params={"run": filled_store.agent, "unit": "baseline/orders/status#1"}).json()
    video_unit = client.get("/api/unit", params={"run": filled_store.video_after, "unit": "numbers/number/5@0.5s#1"}).json()
    assert (agent_unit["plain_expected"], agent_unit["has_frame"]) == (False, False)
    assert (video_unit["plain_expected"], video_unit["has_frame"]) == (True, True)
    traces = client.get("/api/traces", params={"run": filled_store.video_after}).json()
    assert (traces["has_traces"], traces["traces"]) == (False, [])


def test_frame_route_serves_the_exact_frame_of_a_video_unit(client: TestClient, filled_store: FilledStore) -> None:
    response = client.get("/api/frame", params={"run": filled_store.video_after, "unit": "numbers/number/5@0.5s#1"})
    assert response.status_code == 200 and response.headers["content-type"] == "image/png"
    pixels = np.asarray(Image.open(io.BytesIO(response.content)).convert("RGB"))
    assert read_frame_number(pixels) == 5


def test_frame_route_refuses_units_without_a_video(client: TestClient, filled_store: FilledStore) -> None:
    response = client.get("/api/frame", params={"run": filled_store.doc_after, "unit": "release-notes-v1/deterministic"})
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


def test_compare_route_pages_rows_of_a_change_kind(client: TestClient, filled_store: FilledStore) -> None:
    document = client.get("/api/compare", params={"a": filled_store.video_before, "b": filled_store.video_after, "change": "regressions", "limit": "2"}).json()
    assert document["total"] == 8 and document["regression"] is True
    assert document["verdict"] == "regressed"
    assert document["sentence"].startswith("Regressed: units with too little history (8): 0 changed for the better, 8 for the worse")
    first = document["rows"][0]
    assert first["unit_id"] == "numbers/number/0@0s#1" and first["expected"] == "100"
    assert first["before"]["observed"] == "0" and first["after"]["observed"] == "0"
    assert document["rows"][0]["before"]["verdict"] == "passed" and document["rows"][0]["after"]["verdict"] == "failed"
    assert client.get("/api/compare", params={"change": "sideways"}).status_code == 400


def test_unknown_unit_is_a_json_404(client: TestClient, filled_store: FilledStore) -> None:
    response = client.get("/api/unit", params={"run": filled_store.agent, "unit": "nope"})
    assert response.status_code == 404 and "no unit 'nope'" in response.json()["error"]["message"]


def test_viewer_keeps_the_shared_security_rules(client: TestClient) -> None:
    assert client.get("/api/runs", headers={"host": "evil.example:8765"}).status_code == 400
    assert client.post("/api/runs").status_code == 405
    page = client.get("/")
    assert page.status_code == 200 and "default-src 'self'" in page.headers["content-security-policy"]


def test_static_keys_hash_the_same_in_python_and_javascript() -> None:
    # Pinned values: app.js's keyHash must produce these too (checked in the browser test).
    assert api_key("units", {"run": "r", "verdict": "", "offset": "0", "limit": "100"}) == "units?limit=100&offset=0&run=r"
    assert key_hash("runs?limit=500") == key_hash("runs?limit=500") and len(key_hash("x")) == 16
