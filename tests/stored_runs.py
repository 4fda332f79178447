"""Reading back what a test's runs published to its throwaway results store (see tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.core.record import read_record
from assay.core.results_store import open_store


def latest_record() -> tuple[Any, list[Any]]:
    """The newest run's (manifest, units), read from its record file."""
    with open_store(read_only=True) as store:
        stored = store.get_run("latest")
    return read_record(Path(stored.record_path))
