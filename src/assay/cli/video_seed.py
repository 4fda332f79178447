"""`assay video seed`: the command's options (GlassKit's `eval seed`, spec/video.md §2.2) and `--resume`.

The seed is a command of the video kind run by the pipeline (`assay.video.seed_kind`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import List, Optional

import typer

from assay.cli import common
from assay.cli.video_options import (
    AdapterCommandOption, AdapterConfigOption, AdapterOption, AdapterTimeoutOption, CaseOption, ConcurrencyOption,
    EvalDirOption, ResumeOption, TargetOption, adapter_config_option, default_adapter, restore_option,
)


def seed_command(
    adapter: Optional[str] = AdapterOption,
    adapter_command: Optional[str] = AdapterCommandOption,
    eval_dir: Path = EvalDirOption,
    case: Optional[str] = CaseOption,
    target: Optional[List[str]] = TargetOption,
    adapter_config: Optional[Path] = AdapterConfigOption,
    concurrency: int = ConcurrencyOption,
    replace: bool = typer.Option(False, "--replace", help="Propose new values for samples that already have an expectation."),
    keep_going: bool = typer.Option(False, "--keep-going", help="Record adapter errors and continue; the YAML is written only when all succeed."),
    resume: Optional[str] = ResumeOption,
    verbose: bool = typer.Option(False, "--verbose", help="Print each seeded value; passed to the adapter."),
    adapter_timeout: Optional[float] = AdapterTimeoutOption,
) -> None:
    """Fill omitted expectations from adapter output and rewrite the case files (comments kept)."""
    from assay.core.run.request import Outputs
    from assay.video.request import SeedRequest
    from assay.video.run_kind import VIDEO

    if adapter and adapter_command:
        common.bad_parameter("--adapter-command", "cannot be used with --adapter")
    seed = VIDEO.commands["seed"]
    outputs = Outputs(verbose=verbose, quiet=True)  # GlassKit's seed shows no progress
    request = SeedRequest(
        eval_dir=eval_dir, adapter=adapter, adapter_command=adapter_command, case=case, targets=tuple(target or ()),
        concurrency=concurrency, replace=replace, keep_going=keep_going, adapter_timeout=adapter_timeout,
    )
    resumed = None
    if resume is not None:
        # A config file given is a stored option given: the seed lists it where the checkpoint keeps it.
        given = dataclasses.replace(request, adapter_config={"file": str(adapter_config)}) if adapter_config else request
        request, outputs, resumed = restore_option(seed, resume, given, outputs, None)
    else:
        request = dataclasses.replace(
            request, adapter=default_adapter(eval_dir, adapter, adapter_command),
            adapter_config=adapter_config_option(eval_dir, adapter_config),
        )
    common.run_and_exit(seed, request, outputs, resume=resumed)
