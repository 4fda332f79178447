"""`assay video validate`: load like `run`, probe every video, check sample times, try the adapter.

Every problem found is collected as an issue `(path or None, message)`; nothing is evaluated.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from assay.errors import AssayError
from assay.video.adapters import AdapterConfig
from assay.video.model import EvalDirectory
from assay.video.observe import create_evaluator
from assay.video.run import late_samples

async def _construct_and_close(adapter: str | None, adapter_command: str | None, config: AdapterConfig) -> None:
    # Closed here rather than by a TrialEvaluator: a close failure is reported as the adapter raised it
    # (`adapter validation failed: <error>`, as GlassKit's validate says), not as a run's `adapter close failed: …`.
    evaluator = await create_evaluator(adapter=adapter, adapter_command=adapter_command, config=config, executor=None)
    await evaluator.close()


def validate_eval(
    eval_dir: Path,
    *,
    case: str | None,
    targets: Sequence[str],
    allow_empty: bool,
    adapter: str | None,
    adapter_command: str | None,
    adapter_config: Mapping[str, Any],
    materialize: Callable[..., Path] | None,
) -> tuple[list[tuple[str | None, str]], EvalDirectory | None]:
    from assay.video.decode import probe_video
    from assay.video.loading import load_eval_directory

    issues: list[tuple[str | None, str]] = []
    try:
        directory = load_eval_directory(
            eval_dir, case=case, targets=targets, allow_empty=allow_empty, materialize=materialize
        )
    except AssayError as error:
        return [(str(eval_dir), str(error))], None
    for loaded_case in directory.cases:
        path = loaded_case.video.path
        try:
            if path is None:
                raise AssayError(f"video is not available locally: {loaded_case.video.display_name}")
            info = probe_video(path)
        except AssayError as error:
            issues.append((str(path or loaded_case.video.display_name), str(error)))
            continue
        issues += [(str(path), message) for message in late_samples(loaded_case, info.duration_s)]
    if adapter or adapter_command:
        config = AdapterConfig(eval_dir=directory.path, config=dict(adapter_config), artifacts_dir=None, verbose=False)
        try:
            asyncio.run(_construct_and_close(adapter, adapter_command, config))
        except Exception as error:  # noqa: BLE001 - any adapter failure is an issue to report
            issues.append((None, f"adapter validation failed: {error}"))
    return issues, directory


def validation_lines(issues: Sequence[tuple[str | None, str]], directory: EvalDirectory | None) -> tuple[list[str], int]:
    """GlassKit's report of a validation and its exit code (0 passed, 1 failed)."""
    if not issues and directory is not None:
        return [f"Validation passed: {directory.path} ({directory.sample_count} samples)"], 0
    return ["Validation failed", *(f"- {path}: {message}" if path else f"- {message}" for path, message in issues)], 1
