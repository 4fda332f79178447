"""The run record built from units encoded once: the spool a run fills as units become durable, the
lines the record and the store share, and the streaming JUnit writer (issue 22: flat memory)."""

from __future__ import annotations

import datetime
import enum
import json
import math
import uuid
from typing import Any

import pytest
from agent_projects import agent_project

from assay.core.record import (
    RunManifest,
    UnitLine,
    UnitResult,
    UnitSpool,
    dumps_if_plain,
    dumps_storable,
    iter_unit_lines,
    iter_units,
    jsonable,
    write_record,
)
from assay.core.report.junit import junit_suites, render_junit, write_junit_units
from assay.core.results_store import SqliteRunStore


def _unit(number: int, verdict: str = "passed", group: str | None = None) -> UnitResult:
    return UnitResult(
        f"exp/e{number}#1", verdict, group or f"exp/e{number}", title=f"e{number}", details="a\r\nb" if verdict == "failed" else "",
        duration_seconds=0.25, detail={"transcript": ["é", number]},
    )


def _manifest(run_id: str = "agent-1") -> RunManifest:
    return RunManifest(run_id=run_id, kind="agent", created_at="2026-12-01T00:00:00Z", title="t")


def test_the_spool_reads_units_back_in_plan_order_whatever_order_they_became_durable(tmp_path):
    units = [_unit(index, "failed" if index % 3 == 0 else "passed") for index in range(7)]
    spool = UnitSpool(len(units), tmp_path)
    for position in (4, 0, 6, 2, 1, 5, 3):  # the order attempts happened to finish in
        spool.add(position, units[position] if position % 2 else UnitLine.of(units[position]))
    assert list(spool) == units
    assert spool[-1] == units[-1] and spool[2] == units[2]
    assert [line.unit_id for line in spool.lines()] == [unit.unit_id for unit in units]
    assert list(spool) == units  # read again: nothing was consumed
    assert list(tmp_path.iterdir()) == []  # an unnamed file: nothing to clean up, even after a crash
    spool.close()


def test_a_slot_never_recorded_or_a_failed_write_is_raised_when_read_not_during_the_run(tmp_path):
    spool = UnitSpool(2)
    spool.add(0, _unit(0))
    with pytest.raises(ValueError, match="unit 1 of the run was never recorded"):
        list(spool)

    broken = UnitSpool(2)

    def cannot_encode() -> str:
        raise TypeError("not JSON")

    broken.add(0, cannot_encode)  # kept, not raised: the run goes on
    broken.add(1, _unit(1))
    with pytest.raises(TypeError, match="not JSON"):
        list(broken.lines())


def test_a_record_line_is_parsed_without_decoding_and_any_other_layout_is_read_whole():
    unit = _unit(5, "failed", group='exp/"quoted" \\ group')
    line = UnitLine.of(unit)
    assert UnitLine.parse(line.text) == line
    assert (line.unit_id, line.verdict, line.group) == (unit.unit_id, "failed", 'exp/"quoted" \\ group')
    reordered = json.dumps({"verdict": "errored", "group": "g", "unit_id": "u"})
    assert UnitLine.parse(reordered) == UnitLine("u", "g", "errored", reordered)


class _Colour(enum.Enum):
    RED = "red"


class _Label(str):
    pass


def _deep(levels: int) -> Any:
    document: Any = "bottom"
    for _ in range(levels):
        document = [document]
    return {"deep": document}


@pytest.mark.parametrize(
    ("document", "plain"),
    [
        ({"a": 1, "b": [1.5, "x", None, True], "c": {"d": "é"}, "e": (1, 2)}, True),
        ({"nan": math.nan}, True),  # null, as jsonable(..., non_finite_as_null=True) writes it
        ({"inf": [math.inf, -math.inf]}, True),
        ({"colour": _Colour.RED, "id": uuid.UUID(int=7)}, True),
        ({1: "int key", 2.5: "float key"}, False),
        ({True: "bool key"}, False),
        ({None: "none key"}, False),
        ({"label": _Label("a str subclass")}, False),
        ({"big": 2**70}, False),
        ({"when": datetime.datetime(2026, 12, 2)}, False),
        ({"object": object()}, False),
        ({"surrogate": "\ud800"}, False),
        (_deep(300), False),
    ],
)
def test_a_plain_document_is_encoded_once_and_anything_jsonable_would_change_is_left_to_it(document, plain):
    text = dumps_if_plain(document)
    expected = dumps_storable(jsonable(document, non_finite_as_null=True))
    if text is not None:
        assert text == expected
    else:  # the caller converts and encodes again; the result is the same text either way
        assert json.loads(expected) is not None
    assert (text is not None) == plain


def test_an_unfinished_record_is_removed_so_nothing_half_written_lies_beside_the_others(tmp_path):
    with pytest.raises(ValueError, match="duplicate unit id"):
        write_record(tmp_path, _manifest(), [_unit(1), _unit(2), _unit(1)])
    assert list(tmp_path.iterdir()) == []
    record = write_record(tmp_path, _manifest("agent-2"), iter([_unit(1), UnitLine.of(_unit(2))]))  # a generator will do
    assert list(iter_units(record)) == [_unit(1), _unit(2)]
    assert [line.unit_id for line in iter_unit_lines(record)] == ["exp/e1#1", "exp/e2#1"]


def test_the_store_indexes_a_run_from_its_lines_in_one_pass_with_groups_in_first_seen_order(tmp_path):
    units = [_unit(2, "failed", "exp/b"), _unit(1, "passed", "exp/a"), _unit(3, "passed", "exp/b"), _unit(4, "errored", "other")]
    record = write_record(tmp_path / "records", _manifest(), units)
    with SqliteRunStore(tmp_path / "assay.db") as store:
        store.add_run(_manifest(), iter_unit_lines(record), str(record))
        stored = store.get_run("agent-1", with_groups=True)
        assert store.verdicts("agent-1")["exp/e4#1"] == "errored"
        assert stored.unit_count == 4
        assert stored.counts == {"passed": 2, "failed": 1, "errored": 1, "skipped": 0, "ignored": 0}
        assert list(stored.groups) == ["exp/b", "exp/a", "other"]
        assert stored.groups["exp/b"] == {"passed": 1, "failed": 1, "errored": 0, "skipped": 0, "ignored": 0}


def test_streamed_junit_is_the_same_document_as_the_one_built_in_memory(tmp_path):
    # Plan order interleaves suites (eval first, experiment second): both writers must agree.
    units = [
        _unit(index, ("passed", "failed", "errored", "skipped")[index % 4], f"{'ab'[index % 2]}/e{index}")
        for index in range(40)
    ]
    path = tmp_path / "junit.xml"
    write_junit_units(path, iter(units))
    assert path.read_bytes() == render_junit(junit_suites(units)).encode("utf-8")  # a \r in a message stays
    assert path.read_bytes().count(b'<testsuite ') == 2


def test_a_journaled_agent_run_keeps_summaries_and_its_record_matches_the_attempts(tmp_path, monkeypatch):
    """With a journal, the run holds a summary per attempt (never its transcript) and reads the
    attempts back from the spool; the record's units are exactly what `agent_unit` makes of them."""
    from assay.agent.request import AgentRunRequest
    from assay.agent.run_outcome import AttemptSummary, SpooledAttempts
    from assay.core.run import pipeline
    from assay.agent.units import agent_unit
    from assay.core.record import records_dir

    project = tmp_path / "p"
    agent_project(project)
    (project / "experiments" / "x.py").write_text(
        "from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message\n"
        "async def send(turn_input, ctx):\n"
        "    return Turn([message('answer ' + turn_input.text * 50)])\n"
        "x = Experiment(agent=define_agent(name='a', send=send, evidence_coverage=complete_evidence_coverage))\n"
    )
    (project / "evals" / "many_eval.py").write_text(
        "from assay.agent import define_eval, includes\n"
        "def make(i):\n"
        "    async def test(t):\n"
        "        await t.send(f'q{i}')\n"
        "        t.check(t.reply, includes('q0' if i % 5 else 'answer'))\n"
        "    return define_eval(test)\n"
        "EVALS = {f'e{i:03d}': make(i) for i in range(30)}\n"
    )
    store = tmp_path / "store" / "assay.db"
    monkeypatch.setenv("ASSAY_STORE", str(store))
    result = pipeline.run("agent", AgentRunRequest(project=project, sigint=False), reporters=[])
    assert result.exit_code == 1
    outcome = result.outcome
    assert isinstance(outcome.results, SpooledAttempts)
    assert len(outcome.summaries) == 30
    assert all(isinstance(summary, AttemptSummary) and not hasattr(summary, "turns") for summary in outcome.summaries)
    [record] = list(records_dir(store).iterdir())
    recorded = list(iter_units(record))
    assert [unit.unit_id for unit in recorded] == [f"x/many/e{i:03d}#1" for i in range(30)]
    assert sum(unit.verdict == "failed" for unit in recorded) == 24
    rebuilt = [agent_unit(attempt) for attempt in outcome.results]  # each read back whole from the spool
    assert [unit.to_json() for unit in recorded] == [unit.to_json() for unit in rebuilt]
    assert all(attempt.turns for attempt in outcome.results)


def test_a_record_folder_a_killed_publish_left_is_removed_by_the_next_one(tmp_path):
    """Killed between its units and its manifest, a publish leaves a folder no reader counts; the
    next publish into the same store removes it once it is stale (a fresh one may be in progress)."""
    import os
    import time

    records = tmp_path / "records"
    stale = records / "agent-killed"
    stale.mkdir(parents=True)
    (stale / "units.jsonl").write_text('{"unit_id":"u","verdict":"passed","group":""}\n')
    (stale / ".manifest.json.0123456789ab.tmp").write_text("{")
    fresh = records / "agent-writing-now"
    fresh.mkdir()
    (fresh / "units.jsonl").write_text("")
    died_writing = records / "agent-died-writing-its-manifest"  # its units are recent, its manifest temp stale
    died_writing.mkdir()
    (died_writing / "units.jsonl").write_text("")
    (died_writing / ".manifest.json.ba9876543210.tmp").write_text("{")
    kept = records / "agent-with-other-files"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    past = time.time() - 300
    for path in (stale / "units.jsonl", stale / ".manifest.json.0123456789ab.tmp", stale, kept / "notes.txt", kept,
                 died_writing / ".manifest.json.ba9876543210.tmp"):
        os.utime(path, (past, past))
    write_record(records, _manifest("agent-next"), [_unit(1)])
    assert sorted(path.name for path in records.iterdir()) == ["agent-next", "agent-with-other-files", "agent-writing-now"]


def test_an_attempts_record_line_spliced_from_its_journal_encoding_reads_as_the_one_encoded_whole():
    """The journal and the record share one encoding of an attempt (compact ASCII JSON); the
    record line built around it must read back exactly as the line encoded from scratch."""
    from assay.agent.record import AttemptResult
    from assay.agent.units import agent_unit, agent_unit_text, plain_text

    result = AttemptResult(
        experiment_id="exp", eval_id="café", ordinal=0, attempt_id="run/exp/café/1", outcome="executed",
        verdict="failed", agent="a", duration_seconds=0.5,
        turns=[{"text": "réponse ☕", "emoji": "\U0001F600", "nested": {"true-ish": True}}],
    )
    document = result.to_json()
    text = plain_text(document)
    assert text is not None
    spliced = agent_unit_text(result, dict(document), text)
    whole = agent_unit_text(result, dict(document))
    assert json.loads(spliced) == json.loads(whole) == agent_unit(result).to_json()
    assert plain_text({True: "a key jsonable renames"}) is None
    nan = AttemptResult(experiment_id="exp", eval_id="e", ordinal=0, attempt_id="run/exp/e/1", outcome="executed",
                        verdict="scored", agent="a", score=math.nan)
    document = nan.to_json()
    # Not a number is null on both paths: spliced from the journal's encoding or converted whole.
    assert json.loads(agent_unit_text(nan, dict(document), plain_text(document)))["observed"] == {"score": None}
    assert agent_unit(nan).to_json()["observed"] == {"score": None}
