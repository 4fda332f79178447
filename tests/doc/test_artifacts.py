"""Artifact records, run ids and legacy manifest conversion."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone

import pytest

from assay.core.timestamps import utc_timestamp
from assay.doc.artifacts import artifact_record, default_run_id, normalize_legacy_manifest
from assay.errors import CaseError

MOMENT = datetime(2026, 7, 3, 10, 11, 12, 123456, tzinfo=timezone.utc)


def test_timestamps_and_default_run_ids_use_milliseconds_and_z():
    assert utc_timestamp(MOMENT) == "2026-07-03T10:11:12.123Z"
    assert default_run_id("deterministic", MOMENT) == "deterministic-2026-07-03T10-11-12-123Z"


def test_record_hashes_the_file_and_marks_raw_roles_local(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "raw.json").write_bytes(b'{"x": 1}')
    record = artifact_record(tmp_path, "raw_judge_response", "sub/raw.json")
    assert record == {
        "role": "raw_judge_response",
        "path": "sub/raw.json",
        "sha256": hashlib.sha256(b'{"x": 1}').hexdigest(),
        "size_bytes": 8,
        "media_type": "application/json",
        "redaction_status": "raw-local",
        "encoding": "utf-8",
    }
    assert artifact_record(tmp_path, "report", "sub/raw.json")["redaction_status"] == "public-safe"


@pytest.mark.parametrize(
    ("role", "path", "message"),
    [
        (" ", "a.md", "role must be a non-blank"),
        ("r", "../a.md", "escapes"),
        ("r", "/etc/passwd", "must be relative"),
        ("r", "missing.md", "file not found"),
    ],
)
def test_bad_records_are_refused(tmp_path, role, path, message):
    with pytest.raises(CaseError, match=message):
        artifact_record(tmp_path, role, path)


def test_legacy_manifest_is_converted_and_v2_is_left_alone(tmp_path):
    (tmp_path / "report.md").write_text("# r\n")
    legacy = {
        "run_id": "old",
        "run_type": "deterministic",
        "git_commit": "abc",
        "output_files": ["manifest.json", "report.md", "gone.json"],
    }
    converted = normalize_legacy_manifest(legacy, tmp_path)
    assert converted["runner"] == {"id": "legacy-deterministic", "version": "legacy"}
    assert converted["git"] == {"commit": "abc"} and converted["command"] == "unknown"
    # eval-kit: one record per output_files entry, manifest.json included
    manifest, report, gone = converted["artifacts"]
    assert manifest["path"] == "manifest.json" and manifest["redaction_status"] == "legacy-unknown"
    assert report["role"] == "legacy_output" and report["sha256"] and report["media_type"] == "text/markdown"
    assert report["redaction_status"] == "public-safe"  # a file that is there is an ordinary record
    assert gone["sha256"] is None and gone["size_bytes"] == 0 and gone["redaction_status"] == "legacy-unknown"
    assert converted["started_at"] == converted["ended_at"] == "1970-01-01T00:00:00.000Z"
    (tmp_path / "page.html").write_text("<p>")
    kept = normalize_legacy_manifest(
        {"run_type": "judge", "output_files": ["page.html"], "started_at": "2026-07-01T00:00:00.000Z",
         "ended_at": "2026-07-01T00:00:01.000Z", "duration_ms": 1000, "tool_versions": {"node": "v22"}},
        tmp_path,
    )
    assert kept["artifacts"][0]["media_type"] == "application/octet-stream"  # only .json and .md are guessed
    assert (kept["started_at"], kept["ended_at"], kept["duration_ms"]) == (
        "2026-07-01T00:00:00.000Z", "2026-07-01T00:00:01.000Z", 1000
    )
    assert kept["tool_versions"] == {"node": "v22"}
    current = {"artifacts": [], "run_id": "new"}
    assert normalize_legacy_manifest(current, tmp_path) == current


def test_opening_a_run_removes_stale_temporaries_from_unfinished_bundles_only(tmp_path):
    import os
    import time

    from doc_suites import make_suite

    from assay.core.fsutil import STALE_TEMPORARY_AGE_S
    from assay.doc.artifacts import open_run
    from assay.doc.config import load_suite

    suite = make_suite(tmp_path)
    killed = suite.results / "deterministic-killed" / "cases" / "case-one"
    finished = suite.results / "deterministic-finished"
    killed.mkdir(parents=True)
    finished.mkdir(parents=True)
    (finished / "manifest.json").write_text("{}")
    past = time.time() - STALE_TEMPORARY_AGE_S - 5
    left = []
    for folder in (killed, killed.parent.parent, finished):
        leftover = folder / ".result.json.0123456789ab.tmp"
        leftover.write_text("{")
        os.utime(leftover, (past, past))
        left.append(leftover)
    fresh = killed / ".grade.json.aaaaaaaaaaaa.tmp"
    fresh.write_text("{")  # a write of a run still going

    open_run(load_suite(suite.config_path), "deterministic-next")

    assert [path.exists() for path in left] == [False, False, True]  # a finished bundle has none of ours
    assert fresh.exists()
