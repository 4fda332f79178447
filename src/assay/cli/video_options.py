"""Option handling shared by the `assay video` commands (run, seed, validate, export, review)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, TypeVar

import typer

from assay.cli import common
from assay.errors import UsageError

Request = TypeVar("Request")


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
