"""`assay view` over an agent run whose spans documents were damaged (by hand, by another tool, by a bad disk): the
viewer draws what it can of them, and one bad attempt never takes down the run's Traces page, its unit page, or the
whole `--export` (which printed a traceback and exited 1, writing no site).

Real `assay` processes over a real store file."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))

from damaged_store import assay, live_viewer  # noqa: E402

from assay.core.record import RunManifest, UnitResult  # noqa: E402
from assay.core.results_store import publish_run  # noqa: E402

RUN = "agent-20261207T000000Z-aaaaaaaa"
GOOD_SPAN = {"trace_id": "ab" * 16, "span_id": "0000000000000001", "parent_span_id": "", "name": "chat my-model",
             "kind": "internal", "start": 1_000_000_000, "end": 1_050_000_000, "attributes": {"gen_ai.operation.name": "chat"}}
DAMAGED = {
    # times that are no numbers, attributes that are a list, an event whose time is text, a count that is a word
    "words": {"turns": [{"session": 0, "turn": 1, "start": "abc", "end": None, "spans": [
        {"span_id": "aa", "start": "x", "attributes": ["not", "a", "map"], "events": [{"time": "z"}, "e"]}]}],
        "dropped": "many"},
    # a span id that is a list (unhashable), a parent id that is an object, an operation name that is a list
    "shapes": {"turns": [{"turn": 1, "session": [1], "spans": [
        {"span_id": ["un", "hashable"], "name": 5},
        {"span_id": "bb", "parent_span_id": {"x": 1}, "start": 1.5e18, "end": 1.5e18 + 10,
         "attributes": {"gen_ai.operation.name": ["chat"]}}]}]},
    "turns-a-word": {"turns": "not a list"},
}


def _store(folder: Path) -> Path:
    database = folder / "store" / "assay.db"
    units = [UnitResult("good/hello#1", "passed", "good/hello", detail={
        "spans": {"turns": [{"session": 0, "turn": 1, "trace_id": "ab" * 16, "span_id": "00000000000000ff",
                             "start": 1_000_000_000, "end": 1_100_000_000, "spans": [GOOD_SPAN]}]},
        "timing": [{"phase": "attempt", "label": "", "start_offset_ms": 0, "duration_ms": 100}],
    })]
    for name, spans in DAMAGED.items():
        units.append(UnitResult(f"{name}/hello#1", "passed", f"{name}/hello", detail={
            "spans": spans, "timing": [{"parent": "x"}, 5, {"phase": "attempt", "start_offset_ms": "q", "duration_ms": None}],
        }))
    publish_run(RunManifest(RUN, "agent", "2026-12-07T00:00:00Z", title="damaged spans"), units, database=database)
    return database


def _get(origin: str, path: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(origin + path, timeout=20) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_export_of_a_run_with_damaged_spans_writes_the_site(tmp_path: Path) -> None:
    database = _store(tmp_path)
    done = assay(database, "view", "--export", tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    # the good attempt's waterfall is in the site, and so are the damaged ones (drawn as far as they go)
    data = "\n".join(path.read_text(encoding="utf-8") for path in (tmp_path / "site" / "data").glob("*.js"))
    assert "chat my-model" in data
    assert "turns-a-word/hello#1" in data


def test_live_viewer_answers_every_attempt_and_the_traces_page(tmp_path: Path) -> None:
    database = _store(tmp_path)
    with live_viewer(database, tmp_path) as viewer:
        status, traces = _get(viewer.origin, f"/api/traces?run={RUN}")
        assert status == 200, traces
        rows = {row["unit_id"]: row for row in traces["traces"]}
        assert rows["good/hello#1"]["span_count"] == 1 and rows["good/hello#1"]["counts"]["model"] == 1
        assert rows["words/hello#1"]["span_count"] == 1 and rows["words/hello#1"]["dropped"] == 0
        assert rows["shapes/hello#1"]["span_count"] == 1  # the span whose id is a list cannot be drawn
        for unit in ("good/hello#1", *(f"{name}/hello#1" for name in DAMAGED)):
            status, page = _get(viewer.origin, f"/api/unit?run={RUN}&unit={quote(unit)}")
            assert status == 200, (unit, page)
            assert "waterfall" in page, unit
            for row in page.get("timing") or ():
                assert isinstance(row["start_offset_ms"], (int, float)) and isinstance(row["duration_ms"], (int, float))
        status, page = _get(viewer.origin, f"/api/unit?run={RUN}&unit={quote('shapes/hello#1')}")
        (turn,) = page["waterfall"]["turns"]
        (row,) = turn["rows"]
        assert row["span_id"] == "bb" and row["category"] == "other" and not row.get("parent_missing")
    assert "error answering" not in viewer.stderr(), viewer.stderr()
