"""Garbage collection sized for a run: what changes inside, what is restored, and that garbage is still collected."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import weakref

import pytest

from assay.core.gcpolicy import YOUNG_GENERATION_THRESHOLD, collection_sized_for_runs
from assay.core.schedule import run_bounded


class Node:
    def __init__(self) -> None:
        self.partner: Node | None = None


def cycle() -> weakref.ref:
    first, second = Node(), Node()
    first.partner, second.partner = second, first
    return weakref.ref(first)


@pytest.fixture(autouse=True)
def default_collector():
    gc.unfreeze()
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    gc.enable()
    yield
    gc.unfreeze()
    gc.set_threshold(*saved)
    gc.enable()


def test_a_run_freezes_what_exists_and_collects_young_objects_less_often():
    with collection_sized_for_runs():
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (YOUNG_GENERATION_THRESHOLD, 10, 10)
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == (700, 10, 10)


def test_garbage_made_during_a_run_is_collected_and_older_garbage_after_it():
    older = cycle()
    with collection_sized_for_runs():
        during = cycle()
        gc.collect()
        assert during() is None
        assert older() is not None  # frozen with everything else that existed at the start
    gc.collect()
    assert older() is None


def test_overlapping_runs_keep_the_settings_until_the_last_one_ends(monkeypatch):
    # Counting freeze() calls, not frozen objects: other threads may free frozen objects meanwhile.
    freezes = []
    real_freeze = gc.freeze
    monkeypatch.setattr(gc, "freeze", lambda: (freezes.append(1), real_freeze()))
    with contextlib.ExitStack() as runs:
        runs.enter_context(collection_sized_for_runs())
        second = runs.enter_context(contextlib.ExitStack())
        second.enter_context(collection_sized_for_runs())
        assert len(freezes) == 1 and gc.get_freeze_count() > 0  # not frozen twice, not thawed
        second.close()  # one run ends, the other goes on
        assert gc.get_threshold()[0] == YOUNG_GENERATION_THRESHOLD and gc.get_freeze_count() > 0
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0


def test_a_process_that_froze_objects_itself_keeps_them_frozen(monkeypatch):
    gc.freeze()
    calls = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
    with collection_sized_for_runs():
        pass
    assert calls == [] and gc.get_freeze_count() > 0


def test_collection_switched_off_stays_off_and_untouched():
    gc.disable()
    with collection_sized_for_runs():
        assert not gc.isenabled()
        assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0
    assert not gc.isenabled()


def test_a_pipeline_run_works_under_the_run_settings_and_restores_them_when_it_fails():
    from assay.core.run import pipeline
    from assay.core.run.kinds import KindOutput
    from assay.core.run_events import RunFinished

    seen = []

    class Opened:
        run_id = "r"

        def __init__(self, fail: bool) -> None:
            self.fail = fail

        def worker(self):
            return None

        async def execute(self, events, executor):
            seen.append(gc.get_threshold()[0])
            if self.fail:
                raise ValueError("stop")
            return "done"

        def conclude(self, outcome):
            return RunFinished("test", "r", 0, outcome)

        def failed(self, error):
            return RunFinished("test", "r", 2, error=error)

        def interrupted(self):
            return RunFinished("test", "r", 130, interrupted=True)

        def seal(self, finished):
            pass

    finishing = []

    class Console:
        def run_finished(self, finished):  # the record and the store read every unit back here
            finishing.append((gc.get_threshold()[0], gc.get_freeze_count() > 0))

    class Kind:
        name = "test"

        def output(self, outputs):
            return KindOutput(console=Console())

        def open(self, request, outputs, resume, events):
            return Opened(request)

        def open_failed(self, request, error):
            return RunFinished("test", "", 2, error=error)

    assert pipeline.run(Kind(), False).exit_code == 0
    assert pipeline.run(Kind(), True).exit_code == 2  # a bug in a kind is one error, and the settings come back
    assert seen == [YOUNG_GENERATION_THRESHOLD] * 2
    assert finishing == [(YOUNG_GENERATION_THRESHOLD, True)] * 2  # reporting the run: the run's settings too
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0


def test_the_scheduler_leaves_collection_alone():
    async def work(item: int) -> int:
        return gc.get_threshold()[0]

    completed = asyncio.run(run_bounded(range(2), work, concurrency=2))
    assert [done.value for done in completed] == [700, 700]
