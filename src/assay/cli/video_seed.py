"""`assay video seed`: the command's options (GlassKit's `eval seed`, spec/video.md §2.2) and `--resume`.

The seeding itself lives in `assay.video.seed`; this module turns options into `SeedOptions` and exit codes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer

from assay.cli import common
from assay.cli.video_options import adapter_config_option, cloud_materializer
from assay.errors import AssayError

RESUME_OVERRIDE_MESSAGE = "restores the original adapter and seed options and cannot be combined with overrides"


def _restore_from_checkpoint(ref: str, eval_dir: Path) -> tuple[Any, tuple[Path, dict[str, Any]]]:
    """The options and checkpoint a `--resume REF` points at; any problem is a bad `--resume` value."""
    import os

    from assay.core.journal import read_manifest, resolve_checkpoint_ref
    from assay.video.seed import SEED_KIND, options_from_invocation

    path = Path(os.path.abspath(resolve_checkpoint_ref(ref, eval_dir, Path.cwd())))
    try:
        manifest = read_manifest(path, SEED_KIND)
        options = options_from_invocation(manifest.get("invocation"), path / "manifest.json")
    except AssayError as error:
        common.bad_parameter("--resume", str(error), quoted=False)
    return options, (path, manifest)


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
    from assay.video.seed import SeedOptions, run_seed

    checkpoint = None
    if resume is not None:
        given = {
            "--adapter": adapter is not None, "--adapter-command": adapter_command is not None,
            "--case": case is not None, "--target": bool(target), "--adapter-config": adapter_config is not None,
            "--concurrency": concurrency != 1, "--replace": replace, "--keep-going": keep_going,
            "--verbose": verbose, "--adapter-timeout": adapter_timeout is not None,
        }
        overrides = [flag for flag, present in given.items() if present]
        if overrides:
            common.bad_parameter("--resume", f"{RESUME_OVERRIDE_MESSAGE} (given: {', '.join(overrides)})", quoted=False)
        options, checkpoint = _restore_from_checkpoint(resume, eval_dir)
    else:
        config = adapter_config_option(eval_dir, adapter_config)
        if adapter is None and adapter_command is None:
            adapter = eval_dir.as_posix() + "/adapter.py:create_evaluator"
        options = SeedOptions(
            eval_dir=eval_dir,
            adapter=adapter,
            adapter_command=adapter_command,
            case=case,
            targets=tuple(target or ()),
            adapter_config=config,
            concurrency=concurrency,
            replace=replace,
            keep_going=keep_going,
            verbose=verbose,
            adapter_timeout=adapter_timeout,
        )
    console = common.stdout_console()

    def emit(line: str) -> None:
        console.print(line, markup=False, highlight=False)

    raise typer.Exit(run_seed(options, emit, resume=checkpoint, materialize=cloud_materializer()))
