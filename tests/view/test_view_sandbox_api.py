"""The unit document of a sandbox attempt carries its File Changes, shaped for the page (no browser needed)."""

from __future__ import annotations

from assay.core.record import RunManifest, UnitResult
from assay.core.results_store import SqliteRunStore, publish_run
from assay.view.data import ViewData

SANDBOX = {
    "provider": "local", "isolation": "bubblewrap", "sandbox_id": "abc123", "kept": True,
    "file_changes": {"complete": True, "windows": [
        {"window": "turn1", "changes": [
            {"path": "calc.py", "status": "modified", "diff": "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-a - b\n+a + b\n"},
            {"path": "logo.png", "status": "added", "elided": "binary"},
        ]},
        {"window": "turn2", "changes": []},
    ]},
    "commands": [{"phase": "eval.run", "command": "pytest -q", "exit_code": 0, "duration_seconds": 0.5,
                  "stdout_tail": "2 passed", "ignored_field": "x"}],
}


def test_a_sandbox_units_page_document_has_its_file_changes(tmp_path):
    database = tmp_path / "assay.db"
    unit = UnitResult("exp/fix#1", "passed", "exp/fix", detail={"sandbox": SANDBOX, "assertions": []})
    publish_run(RunManifest("agent-20260101T000000-aaaaaa", "agent", "2026-01-01T00:00:00Z"), [unit], database=database)
    with SqliteRunStore(database, read_only=True) as store:
        document = ViewData(store).unit({"run": "latest", "unit": "exp/fix#1"})
    changes = document["file_changes"]
    assert changes["files_changed"] == 2 and changes["kept"] and changes["isolation"] == "bubblewrap"
    first, second = changes["windows"]
    assert first["changes"][0]["lines"] == [
        {"kind": "hunk", "text": "@@ -1 +1 @@"}, {"kind": "del", "text": "-a - b"}, {"kind": "add", "text": "+a + b"},
    ]
    assert first["changes"][1] == {"path": "logo.png", "status": "added", "note": "content elided (binary)"}
    assert second == {"window": "turn2", "changes": []}
    assert changes["commands"] == [{"phase": "eval.run", "command": "pytest -q", "exit_code": 0,
                                    "duration_seconds": 0.5, "stdout_tail": "2 passed"}]
