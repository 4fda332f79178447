"""Options shared by the `assay video` commands (run, seed, validate, list-samples, export, review):
declared once, with GlassKit's help text, and read the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, TypeVar

import typer

from assay.cli import common
from assay.errors import UsageError

Request = TypeVar("Request")

EVAL_DIR_HELP = "Eval directory holding cases/, config.yaml and adapter files."
EvalDirOption = typer.Option(Path("eval"), "--eval-dir", help=EVAL_DIR_HELP)
AdapterOption = typer.Option(
    None, "--adapter", help="Python adapter '<module-or-file>:<callable>' (default: <eval-dir>/adapter.py:create_evaluator)."
)
AdapterCommandOption = typer.Option(None, "--adapter-command", help="Command that serves the NDJSON adapter protocol.")
AdapterConfigOption = typer.Option(None, "--adapter-config", help="Adapter config file (YAML, or JSON by suffix).")
AdapterTimeoutOption = typer.Option(
    None, "--adapter-timeout", callback=common.above(0),
    help="Seconds a command adapter may take per call before the call fails (default: no limit; "
    "initialize has its own 30 s limit, ASSAY_ADAPTER_START_TIMEOUT).",
)
CaseOption = typer.Option(None, "--case", help="Case file name or stem.")
TargetOption = typer.Option(None, "--target", help="Target id (repeatable).")
OnlyCaseOption = typer.Option(None, "--case", help="Only this case (file name or stem).")
OnlyTargetOption = typer.Option(None, "--target", help="Only this target id (repeatable).")
AtOption = typer.Option(None, "--at", help="Only the sample at this time (repeatable; needs --case).")
FromOption = typer.Option(None, "--from", help="Only samples at or after this time (needs --case).")
UntilOption = typer.Option(None, "--until", help="Only samples before this time (needs --case).")
AllowEmptyOption = typer.Option(False, "--allow-empty", help="Allow targets and evals without samples.")
ConcurrencyOption = typer.Option(
    1, "--concurrency", callback=common.at_least(1, maximum=common.MAX_CONCURRENCY),
    help=f"Adapter calls in flight (at most {common.MAX_CONCURRENCY:,}).",
)
ResumeOption = typer.Option(None, "--resume", help="Checkpoint directory or id to resume.")


def default_adapter(eval_dir: Path, adapter: Optional[str], adapter_command: Optional[str]) -> Optional[str]:
    """GlassKit's default: `<eval-dir>/adapter.py:create_evaluator` when neither adapter is given."""
    if adapter is None and adapter_command is None:
        return eval_dir.as_posix() + "/adapter.py:create_evaluator"
    return adapter


def adapter_config_option(eval_dir: Path, explicit: Optional[Path]) -> dict[str, Any]:
    """The adapter config (discovered or `--adapter-config`); problems are bad option values."""
    from assay.video.loading import load_adapter_config

    try:
        return load_adapter_config(eval_dir.expanduser(), explicit)
    except UsageError as error:
        raise typer.BadParameter(str(error), param_hint="'--adapter-config'") from None


def cloud_materializer() -> Any:
    """The function that downloads (or reuses) a case's cloud video; the store module (and boto3)
    is imported only when a case really references a cloud video."""

    def materialize(video: Any, store: Any) -> Any:
        from assay.video.cloud_store import materialize as download

        return download(video, store)

    return materialize


def restore_option(kind: Any, ref: str, given: Request, outputs: Any, adapter_config: Optional[Path]) -> tuple[Request, Any, Any]:
    """`--resume REF`: the checkpoint's request and outputs (GlassKit: every problem is a bad `--resume`)."""
    from assay.core.run.resume import restore

    also_given = ["--adapter-config"] if adapter_config else []
    restored = common.checked(restore, kind, ref, given, outputs, also_given, quoted=False)
    return restored.request, restored.outputs, restored.resume


def execution_option(executor: str, ray_address: Optional[str]) -> Any:
    """Where work runs is not part of the plan: a run started locally may resume on Ray."""
    from assay.core.run.request import Execution

    return common.checked(Execution, executor, ray_address)
