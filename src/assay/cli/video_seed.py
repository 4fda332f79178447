"""`assay video seed`: the command's options (GlassKit's `eval seed`, spec/video.md §2.2) and `--resume`.

The seed is a command of the video kind run by the pipeline (`assay.video.seed_kind`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import List, Optional

import typer

from assay.cli import common
from assay.cli.video_options import adapter_config_option


def seed_command(
    adapter: Optional[str] = typer.Option(None, "--adapter", help="Python adapter '<module-or-file>:<callable>' (default: <eval-dir>/adapter.py:create_evaluator)."),
    adapter_command: Optional[str] = typer.Option(None, "--adapter-command", help="Command that serves the NDJSON adapter protocol."),
    eval_dir: Path = typer.Option(Path("eval"), "--eval-dir", help="Eval directory holding cases/, config.yaml and adapter files."),
    case: Optional[str] = typer.Option(None, "--case", help="Case file name or stem."),
    target: Optional[List[str]] = typer.Option(None, "--target", help="Target id (repeatable)."),
    adapter_config: Optional[Path] = typer.Option(None, "--adapter-config", help="Adapter config file (YAML, or JSON by suffix)."),
    concurrency: int = typer.Option(
        1, "--concurrency", callback=common.at_least(1, maximum=common.MAX_CONCURRENCY),
        help=f"Adapter calls in flight (at most {common.MAX_CONCURRENCY:,}).",
    ),
    replace: bool = typer.Option(False, "--replace", help="Propose new values for samples that already have an expectation."),
    keep_going: bool = typer.Option(False, "--keep-going", help="Record adapter errors and continue; the YAML is written only when all succeed."),
    resume: Optional[str] = typer.Option(None, "--resume", help="Checkpoint directory or id to resume."),
    verbose: bool = typer.Option(False, "--verbose", help="Print each seeded value; passed to the adapter."),
    adapter_timeout: Optional[float] = typer.Option(
        None, "--adapter-timeout", callback=common.above(0),
        help="Seconds a command adapter may take per call before the call fails (default: no limit; "
        "initialize has its own 30 s limit, ASSAY_ADAPTER_START_TIMEOUT).",
    ),
) -> None:
    """Fill omitted expectations from adapter output and rewrite the case files (comments kept)."""
    if adapter and adapter_command:
        common.bad_parameter("--adapter-command", "cannot be used with --adapter")
    from assay.cli.video_options import restore_option
    from assay.core.run.request import Outputs
    from assay.video.request import SeedRequest
    from assay.video.run_kind import VIDEO

    seed = VIDEO.commands["seed"]
    outputs = Outputs(verbose=verbose, quiet=True)  # GlassKit's seed shows no progress
    request = SeedRequest(
        eval_dir=eval_dir, adapter=adapter, adapter_command=adapter_command, case=case, targets=tuple(target or ()),
        concurrency=concurrency, replace=replace, keep_going=keep_going, adapter_timeout=adapter_timeout,
    )
    resumed = None
    if resume is not None:
        request, outputs, resumed = restore_option(seed, resume, request, outputs, adapter_config)
    else:
        config = adapter_config_option(eval_dir, adapter_config)
        if adapter is None and adapter_command is None:
            adapter = eval_dir.as_posix() + "/adapter.py:create_evaluator"
        request = dataclasses.replace(request, adapter=adapter, adapter_config=config)
    common.run_and_exit(seed, request, outputs, resume=resumed)
