"""Label mode's routes over a mixed store of real runs: the write token, verdicts hidden until the
labeller answers, the queue's filters, and what each kind's judges said, read from its records."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from filled_store import FilledStore
from mixed_store import MixedStore, build_mixed_store, labels_in
from starlette.testclient import TestClient

from assay.core.labels.extract import judgements_of
from assay.core.results_store import SqliteRunStore
from assay.view.data import ViewData
from assay.view.labelling import WRITE_TOKEN_HEADER, LabelSession
from assay.view.server import create_view_app
from assay.web.app import Binding

PORT = 8766


@pytest.fixture(scope="module")
def mixed(filled_store: FilledStore, tmp_path_factory: pytest.TempPathFactory) -> MixedStore:
    return build_mixed_store(tmp_path_factory.mktemp("mixed"), filled_store.database)


@pytest.fixture
def database(mixed: MixedStore, tmp_path: Path) -> Path:
    """A private copy per test: labels written by one test are not seen by the next."""
    shutil.copytree(mixed.database.parent, tmp_path / "store")
    return tmp_path / "store" / mixed.database.name


@pytest.fixture
def labelling(database: Path) -> Iterator[tuple[TestClient, LabelSession]]:
    store = SqliteRunStore(database)
    data = ViewData(store)
    session = LabelSession(data, "tester")
    app = create_view_app(data, Binding(port=PORT), labelling=session)
    with TestClient(app, base_url=f"http://127.0.0.1:{PORT}") as client:
        yield client, session
    store.close()


def _queue(client: TestClient, **params: str) -> dict:
    response = client.get("/api/label/queue", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def _items(client: TestClient, queue: dict) -> list[dict]:
    return [client.get("/api/label/item", params={"queue": queue["queue"], "index": str(index)}).json() for index in range(queue["total"])]


def _put(client: TestClient, session: LabelSession, body: dict, token: str | None = None):
    headers = {WRITE_TOKEN_HEADER: token if token is not None else session.write_token}
    return client.put("/api/label", content=json.dumps(body), headers={**headers, "content-type": "application/json"})


def test_the_read_only_viewer_has_no_label_routes(database: Path) -> None:
    store = SqliteRunStore(database, read_only=True)
    try:
        with TestClient(create_view_app(ViewData(store), Binding(port=PORT)), base_url=f"http://127.0.0.1:{PORT}") as client:
            assert client.get("/api/label/session").json()["error"]["code"] == "route_not_found"
            refused = client.put("/api/label", content="{}", headers={"content-type": "application/json"})
            assert refused.status_code == 404
            assert client.get("/api/agreement").json()["labels"] == 0  # the agreement page needs no label mode
    finally:
        store.close()


def test_writing_a_label_needs_this_servers_write_token(labelling, mixed: MixedStore, database: Path) -> None:
    client, session = labelling
    assert client.get("/api/label/session").json() == {
        "labeller": "tester", "write_token": session.write_token, "write_token_header": WRITE_TOKEN_HEADER,
        "max_note_characters": 10_000,
    }
    body = {"run_id": mixed.agent_judged, "unit_id": "main/weather/paris#1", "verdict": "pass", "note": "fine"}
    for token in ("", "not-the-token"):
        refused = _put(client, session, body, token)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "invalid_write_token"
    assert not (database.parent / "labels.jsonl").exists()
    saved = _put(client, session, body)
    assert saved.status_code == 200, saved.text
    (label,) = labels_in(database)
    assert (label["labeller"], label["verdict"], label["note"], label["kind"]) == ("tester", "pass", "fine", "agent")
    assert label["judgements"][0]["model"] == "judge-1" and label["judgements"][0]["score"] == 0.9


def test_a_bad_label_is_refused_with_the_field_named(labelling, mixed: MixedStore) -> None:
    client, session = labelling
    for body, message in (
        ({"run_id": mixed.agent_judged, "unit_id": "main/weather/paris#1"}, "a label needs a verdict"),
        ({"run_id": mixed.agent_judged, "unit_id": "main/weather/paris#1", "score": 9}, "score must be an integer from 1 to 5"),
        ({"run_id": mixed.agent_judged, "unit_id": "main/weather/paris#1", "verdict": "maybe"}, "verdict must be pass or fail"),
        ({"run_id": mixed.agent_judged, "unit_id": "main/weather/paris#1", "verdict": "pass", "x": 1}, "unknown field(s) x"),
    ):
        refused = _put(client, session, body)
        assert refused.status_code == 400 and message in refused.json()["error"]["message"], refused.text
    missing = _put(client, session, {"run_id": mixed.agent_judged, "unit_id": "nope", "verdict": "pass"})
    assert missing.status_code == 404


def test_the_judges_verdict_is_hidden_until_the_labeller_answers(labelling, mixed: MixedStore) -> None:
    client, session = labelling
    queue = _queue(client, scope=mixed.agent_judged, filter="judged")
    item = client.get("/api/label/item", params={"queue": queue["queue"], "index": "0"}).json()
    assert item["kind"] == "agent" and item["unit_id"].startswith("main/weather/")
    assert item["revealed"] is False and item["judgements"] == [] and "verdict" not in item
    assert item["rubrics"] == ["judge('Names a city and gives a temperature.', threshold=0.5)"]
    assert item["unit"]["verdict"] == "hidden" and {entry["status"] for entry in item["unit"]["detail"]["assertions"]} == {"hidden"}
    assert "graded" not in json.dumps(item)  # not the judge's reason, nor its score, anywhere in the page's data
    assert item["unit"]["detail"]["turns"]  # the transcript the person judges
    _put(client, session, {"run_id": item["run_id"], "unit_id": item["unit_id"], "score": 4})
    again = client.get("/api/label/item", params={"queue": queue["queue"], "index": "0"}).json()
    assert again["revealed"] is True and again["mine"]["score"] == 4
    assert again["judgements"][0]["model"] == "judge-1" and again["judgements"][0]["reason"].startswith("graded")
    shown = client.get("/api/label/item", params={"queue": queue["queue"], "index": "1", "reveal": "1"}).json()
    assert shown["revealed"] is True and shown["judgements"]  # the page's "hide the judge" switched off


def test_queue_filters_judged_units_disagreements_and_a_seeded_sample(labelling, mixed: MixedStore) -> None:
    client, _ = labelling
    everything = _queue(client)
    judged = {(item["run_id"], item["unit_id"]) for item in _items(client, _queue(client, filter="judged"))}
    assert {unit for run, unit in judged if run == mixed.agent_judged} == {f"main/weather/{name}#1" for name in
                                                                            ("paris", "lyon", "nowhere", "oslo", "vague", "rome")}
    assert (mixed.doc_coverage, "case-one/judge-coverage") in judged and (mixed.doc_pairwise, "case-one/judge-pairwise") in judged
    assert len(judged) == 8 < everything["total"]
    # The judge passes "Lyon is rainy today." (0.8) while its check (a temperature) fails.
    disagree = _items(client, _queue(client, filter="disagree"))
    assert [(item["run_id"], item["unit_id"]) for item in disagree] == [(mixed.agent_judged, "main/weather/lyon#1")]
    first = [item["unit_id"] for item in _items(client, _queue(client, seed="7", sample="5"))]
    assert first == [item["unit_id"] for item in _items(client, _queue(client, seed="7", sample="5"))]
    assert first != [item["unit_id"] for item in _items(client, _queue(client, seed="8", sample="5"))]
    assert len(first) == 5


def test_unlabeled_units_come_first_and_a_queue_resumes_at_its_unit(labelling, mixed: MixedStore) -> None:
    client, session = labelling
    queue = _queue(client, scope=mixed.agent_judged)
    order = [item["unit_id"] for item in _items(client, queue)]
    for unit_id in order[:2]:
        _put(client, session, {"run_id": mixed.agent_judged, "unit_id": unit_id, "verdict": "fail"})
    again = _queue(client, scope=mixed.agent_judged)
    assert again["labelled"] == 2 and again["start"] == 0
    assert [item["unit_id"] for item in _items(client, again)] == order[2:] + order[:2]
    resumed = _queue(client, scope=mixed.agent_judged, at_run=mixed.agent_judged, at_unit=order[4])
    assert resumed["start"] == 2 and "not_found" not in resumed
    # A unit the queue does not hold (a typo in the address) is said, rather than the queue starting silently.
    missing = _queue(client, scope=mixed.agent_judged, at_run=mixed.agent_judged, at_unit="no-such-unit#1")
    assert missing["start"] == 0 and missing["not_found"] == {"run": mixed.agent_judged, "unit": "no-such-unit#1"}
    kept = _queue(client, scope=mixed.agent_judged, unlabeled_first="0")
    assert [item["unit_id"] for item in _items(client, kept)] == order


def test_an_expired_queue_is_answered_with_its_own_code(labelling) -> None:
    client, _ = labelling
    answer = client.get("/api/label/item", params={"queue": "gone", "index": "0"})
    assert answer.status_code == 410 and answer.json()["error"]["code"] == "queue_expired"


def test_each_kinds_judges_are_read_from_its_real_records(mixed: MixedStore, filled_store: FilledStore) -> None:
    with SqliteRunStore(mixed.database, read_only=True) as store:
        def unit(run_id: str, unit_id: str):
            run = store.get_run(run_id)
            return judgements_of(store.get_unit(run_id, unit_id), run.manifest.kind, run.manifest.identity)

        lyon = unit(mixed.agent_judged, "main/weather/lyon#1")
        (judgement,) = lyon.judgements
        assert (judgement.model, judgement.prompt, judgement.verdict, judgement.score) == ("judge-1", "assay-agent-judge/1:rubric", "pass", 0.8)
        assert lyon.checks == "fail" and lyon.disagree
        coverage = unit(mixed.doc_coverage, "case-one/judge-coverage")
        assert coverage.judgements[0].model == "judge-model" and coverage.judgements[0].verdict == "fail"
        assert "missing" in coverage.judgements[0].reason
        pairwise = unit(mixed.doc_pairwise, "case-one/judge-pairwise")
        assert pairwise.judgements[0].verdict in ("pass", "fail") and pairwise.question.startswith("Pass = candidate A")
        video = unit(filled_store.video_after, "numbers/number/3@0.3s#1")
        assert video.judgements == () and video.checks == "fail"
        deterministic = unit(filled_store.doc_after, "release-notes-v1/deterministic")
        assert deterministic.judgements == () and deterministic.checks == "fail"


def test_the_default_labeller_is_git_user_name_else_the_os_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.view.labelling import default_labeller

    monkeypatch.chdir(tmp_path)  # outside any repository: only the global git config counts
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Ada Lovelace\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    assert default_labeller() == "Ada Lovelace"
    config.write_text("", encoding="utf-8")
    monkeypatch.setenv("LOGNAME", "grace")
    assert default_labeller() == "grace"


def test_view_label_options_are_checked_before_anything_starts(database: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from assay.cli.app import app

    monkeypatch.setenv("ASSAY_STORE", str(database))
    without_label = CliRunner().invoke(app, ["view", "--as", "ann", "--no-open"])
    assert without_label.exit_code == 2 and "--as" in without_label.output and "needs --label" in without_label.output
    exported = CliRunner().invoke(app, ["view", "--label", "--export", str(database.parent / "site")])
    assert exported.exit_code == 2 and "cannot be combined with --export" in exported.output
    for empty in ("", "   "):  # it used to label as the git user, silently
        unnamed = CliRunner().invoke(app, ["view", "--label", "--as", empty, "--no-open"])
        assert unnamed.exit_code == 2 and "Invalid value for '--as': needs a name" in unnamed.output, unnamed.output


def test_assay_view_label_serves_label_mode_as_the_named_labeller(database: Path, mixed: MixedStore, tmp_path: Path) -> None:
    """The command itself, in its own process: the store opened writable, the label routes there."""
    import subprocess
    import sys
    import urllib.request

    from damaged_store import _read_origin, environment

    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "view", "--label", "--as", "Ann", "--no-open", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment(database),
    )
    try:
        origin = _read_origin(process)
        session = json.loads(urllib.request.urlopen(f"{origin}/api/label/session", timeout=10).read())
        assert session["labeller"] == "Ann" and len(session["write_token"]) >= 32
        body = json.dumps({"run_id": mixed.agent_judged, "unit_id": "main/weather/rome#1", "score": 5}).encode()
        request = urllib.request.Request(f"{origin}/api/label", data=body, method="PUT", headers={
            "content-type": "application/json", WRITE_TOKEN_HEADER: session["write_token"]})
        assert json.loads(urllib.request.urlopen(request, timeout=10).read())["labeller"] == "Ann"
        assert [label["score"] for label in labels_in(database)] == [5]  # appended (and fsynced) before the answer
    finally:
        process.terminate()
        process.wait(timeout=20)
        assert process.stdout is not None
        process.stdout.close()


def test_a_unit_labelled_as_the_same_content_in_another_run_shows_that_label_and_where(tmp_path: Path) -> None:
    """The queue counts a unit labelled when its content was labelled in another run; its page said
    "not labelled by you yet" all the same, and hid the verdicts the labeller had already seen."""
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    database = tmp_path / "assay.db"
    for run_id, day in (("video-1", "01"), ("video-2", "02")):
        units = [UnitResult(f"case{index}#1", "passed", group="g", expected="cat", observed="cat") for index in range(2)]
        publish_run(RunManifest(run_id, "video", f"2026-04-{day}T00:00:00Z"), units, database=database)
    with SqliteRunStore(database) as store:
        session = LabelSession(ViewData(store), "tester")
        with TestClient(create_view_app(session.data, Binding(port=PORT), labelling=session),
                        base_url=f"http://127.0.0.1:{PORT}") as client:
            assert _put(client, session, {"run_id": "video-1", "unit_id": "case0#1", "verdict": "pass"}).status_code == 200
            queue = _queue(client, scope="video-2")
            assert queue["labelled"] == 1
            by_unit = {item["unit_id"]: item for item in _items(client, queue)}
            same = by_unit["case0#1"]
            assert same["mine"]["verdict"] == "pass" and same["revealed"] is True
            assert same["mine_through"] == {"run_id": "video-1", "unit_id": "case0#1"}
            assert by_unit["case1#1"]["mine"] is None and by_unit["case1#1"]["mine_through"] is None
