"""The results store as a reporter: every finished run is recorded (and exported, when the project
names an OTLP endpoint) after every other reporter has written its output.

The pipeline registers it last, for every run and merge, whatever else reports the run: this is the
one place a run reaches the store. A store failure is one warning and never changes the exit code.
"""

from __future__ import annotations

import sys
from typing import Any

from assay.core.run_events import RecordReady, RunFinished
from assay.errors import AssayError

__all__ = ["StorePublisher"]


class StorePublisher:
    name = "results store"

    def __init__(self) -> None:
        self._held: Any = None  # a record held since `record_ready`, let go once the run is recorded

    def record_ready(self, event: RecordReady) -> None:
        """Hold the run's record before anything of it is shown; first record what runs of the same
        store held and never recorded (their process died between showing and storing)."""
        from assay.core.record import store_path
        from assay.core.results_store import hold_run, publish_held_runs

        try:
            database = store_path(event.home)
        except AssayError:  # (ASSAY_STORE naming a folder): said once, when the run is recorded
            return
        for run_id in publish_held_runs(database=database):
            print(f"Recorded {run_id}: {event.recovered}.", file=sys.stderr)
        try:
            manifest, units = event.build()
            self._held = hold_run(manifest, units, database=database)
        except Exception:  # noqa: BLE001 - the store's problems are reported once, when the run is recorded
            self._held = None

    def run_finished(self, event: RunFinished) -> None:
        try:
            self._record(event)
        finally:
            held, self._held = self._held, None
            if held is not None:
                held.release()

    @staticmethod
    def _record(event: RunFinished) -> None:
        build_manifest = event.build_manifest
        if build_manifest is None:
            return
        from assay.core.record import check_store_writable, store_path
        from assay.core.results_store import publish_run_quietly

        # A run's record id comes from its checkpoint, so a run killed after it was recorded but
        # before its checkpoint was sealed replaces its record when `--resume` finishes it.
        try:
            database = store_path(event.home)
            check_store_writable(database)
        except AssayError as error:  # the warning every other store problem gets, not a failed reporter
            print(f"Warning: run record not stored: {error}", file=sys.stderr)
            return
        record = publish_run_quietly(
            lambda: (build_manifest(event.exit_code), event.units()), database=database, replace=True,
        )
        if record is None:
            return
        from assay.core.interop.export_endpoint import exports_anywhere

        if exports_anywhere(event.home):  # and to the project's OTLP endpoint, when it names one (a failure is one warning)
            from assay.core.interop.otlp_export import export_after_run

            export_after_run(record, event.home)
