"""`assay video seed` in the run pipeline: a command of the video kind, opened, run, interrupted and
resumed by the same code as `assay video run`, with GlassKit's seed wording on stdout.

The seeding itself is `seed.py`; its checkpoint's invocation is GlassKit's §14.2 seed keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.core.run.kinds import KindOutput, Resumed, RunKind
from assay.core.run.request import Outputs, from_invocation
from assay.core.run_events import RunEvents, RunFinished, UnitDurable
from assay.errors import EXIT_ERROR, AssayError
from assay.video.request import SeedRequest, check_seed_options, invocation_with_outputs, outputs_from_invocation, refusal
from assay.video.seed import SEED_KIND, OpenedSeed, SeededSample

__all__ = ["SEED", "SeedConsole", "SeedKind"]


class SeedConsole:
    """GlassKit's seed output: a line per error (and per value with --verbose) once durable, then the result."""

    name = "console"

    def __init__(self, console: Any, *, verbose: bool) -> None:
        self.console = console
        self.verbose = verbose

    def _say(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False)

    def section_started(self, event: Any) -> None:
        # GlassKit's headings: the case, then each target, with their samples still to seed (plural always).
        section = event.native
        if section.target is None:
            self._say(f"Case {section.case.name} ({event.count} expectations, video={section.case.video.display_name})")
        else:
            self._say(f"  target {section.target.display_name}: {event.count} expectations")

    def unit_durable(self, event: UnitDurable) -> None:
        from assay.core.format import short_repr

        seeded: SeededSample = event.native
        where = f"{seeded.target.display_name} @{seeded.sample.timestamp_s:g}s"
        if seeded.error is not None:
            self._say(f"    ERROR {where} reason={seeded.error}")
        elif self.verbose:
            self._say(f"    SEEDED {where} expect={short_repr(seeded.value)}")

    def run_finished(self, event: RunFinished) -> None:
        if event.interrupted:
            saved = "progress was saved" if event.checkpoint_kept else "no reusable progress was saved"
            self._say(f"Seeding interrupted: {saved}")
        elif event.error is not None:
            self._say(f"Could not seed expectations: {event.error}")
            for note in getattr(event.error, "__notes__", None) or []:
                self._say(note)
        else:
            for line in event.outcome.lines:
                self._say(line)
        for line in event.resume_lines:
            self._say(line)


class SeedResume:
    """`assay video seed --resume`: GlassKit's seed checkpoints (their invocation holds --verbose)."""

    checkpoint_kind = SEED_KIND

    def locate(self, ref: str, given: SeedRequest) -> Path:
        from assay.core.run.resume import locate_in

        return locate_in(given.eval_dir, ref)

    def invocation(self, request: SeedRequest, outputs: Outputs) -> dict[str, Any]:
        return invocation_with_outputs(request, outputs)

    def restored(
        self, invocation: object, manifest_path: Path, given: SeedRequest, outputs: Outputs
    ) -> tuple[SeedRequest, Outputs]:
        request = from_invocation(SeedRequest, invocation, manifest_path)
        return request, outputs_from_invocation(invocation, manifest_path, outputs)

    def refusal(self, flags: Sequence[str]) -> str:
        return refusal("seed", flags)


class SeedKind:
    name = "video"
    resume = SeedResume()
    merge = None
    commands: Mapping[str, RunKind[Any]] = {}

    def output(self, outputs: Outputs) -> KindOutput:
        from assay.core.console import stdout_console

        return KindOutput(SeedConsole(stdout_console(), verbose=outputs.verbose))

    def open(self, request: SeedRequest, outputs: Outputs, resume: Resumed | None, events: RunEvents) -> OpenedSeed:
        check_seed_options(request)
        return OpenedSeed(request, outputs, resume)

    def open_failed(self, request: SeedRequest, error: AssayError) -> RunFinished:
        return RunFinished("video", "", EXIT_ERROR, error=error)


SEED = SeedKind()
