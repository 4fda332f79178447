"""Option handling shared by the `assay video` commands (run, seed, validate, export, review)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from assay.errors import UsageError


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
