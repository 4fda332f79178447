"""`assay view --export` cut short (Ctrl-C, a full disk) left a site whose `index.html` was written and whose
pages said "not included" for what it had not reached yet, and it had already removed the earlier export's data.
The site is now written beside the folder and moved into place whole: cut short, the earlier export is as it
was and nothing half-written is left."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import SqliteRunStore, publish_run
from assay.view import export
from assay.view.data import ViewData


@pytest.fixture(autouse=True)
def _own_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "unused" / "assay.db"))


def _store(folder: Path, runs: int) -> Path:
    database = folder / "assay.db"
    for day in range(1, runs + 1):
        units = [UnitResult(f"clip/lamp/{index}@1s#1", "passed", "clip/lamp") for index in range(3)]
        publish_run(RunManifest(f"video-2026010{day}T000000Z-{'abc'[day - 1] * 8}", "video", f"2026-01-0{day}T00:00:00Z",
                                title=f"day {day}"), units, database=database)
    return database


def _files(site: Path) -> dict[str, bytes]:
    return {str(path.relative_to(site)): path.read_bytes() for path in sorted(site.rglob("*")) if path.is_file()}


def test_an_export_cut_short_leaves_the_earlier_one_whole_and_nothing_half_written(tmp_path, monkeypatch):
    database = _store(tmp_path, 2)
    site = tmp_path / "site"
    with SqliteRunStore(database, read_only=True) as store:
        export.export_site(ViewData(store), site)
    earlier = _files(site)
    written = 0
    real = export._Writer.answer

    def interrupted(self, *arguments, **options):
        nonlocal written
        written += 1
        if written == 5:
            raise KeyboardInterrupt
        return real(self, *arguments, **options)

    monkeypatch.setattr(export._Writer, "answer", interrupted)
    database = _store(tmp_path / "more", 3)
    with SqliteRunStore(database, read_only=True) as store, pytest.raises(KeyboardInterrupt):
        export.export_site(ViewData(store), site)
    assert _files(site) == earlier
    assert not [path for path in tmp_path.iterdir() if ".assay-" in path.name]  # no half-written site beside it


def test_a_finished_export_replaces_the_earlier_one_and_a_link_to_it_stays_a_link(tmp_path):
    with SqliteRunStore(_store(tmp_path, 2), read_only=True) as store:
        export.export_site(ViewData(store), tmp_path / "real")
    (tmp_path / "real" / "data" / "stale.js").write_text("left by an earlier export", encoding="utf-8")
    (tmp_path / "site").symlink_to(tmp_path / "real")
    with SqliteRunStore(_store(tmp_path / "more", 3), read_only=True) as store:
        export.export_site(ViewData(store), tmp_path / "site")
    assert (tmp_path / "site").is_symlink() and not (tmp_path / "real" / "data" / "stale.js").exists()
    assert (tmp_path / "real" / "index.html").is_file()
    assert not [path for path in tmp_path.iterdir() if ".assay-" in path.name]
