"""What `assay video store pull|upload|prune-cache` do with the cloud video stores, and the lines they print;
`materialize` for the commands that read cases (the store module, and boto3, imported only when a case
references a cloud video)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.core.stdout_guard import results_made

__all__ = ["materialize", "prune_lines", "pull_lines", "upload_lines"]


def materialize(video: Any, store: Any) -> Path:
    """A case's cloud video downloaded (or reused from the cache)."""
    from assay.video.cloud_store import materialize as download

    return download(video, store)


def pull_lines(eval_dir: Path, case: str | None) -> list[str]:
    """Download and verify the selected cases' cloud videos; their cache paths."""
    from assay.video.cloud_store import pull_case_videos
    from assay.video.loading import load_eval_directory
    from assay.video.model import RemoteVideo

    loaded = load_eval_directory(
        eval_dir, case=case, allow_empty=True, allow_draft=True, materialize_videos=False, check_local_videos=False
    )
    remote_cases = [loaded_case for loaded_case in loaded.cases if isinstance(loaded_case.video, RemoteVideo)]
    paths = pull_case_videos(remote_cases, loaded.config.video_stores, progress=True)
    results_made()  # downloaded: a reader leaving now (`| head -1`) only loses lines, it stops nothing
    if not remote_cases:
        return ["No cloud videos are referenced by the selected cases."]
    return [str(path) for path in paths]


def upload_lines(file: Path, store: str, eval_dir: Path, key: str | None) -> list[str]:
    """Upload a local video unless the same object is there; its case-file `video:` block."""
    from assay.video.cloud_store import find_store, upload_video
    from assay.video.loading import load_eval_config, resolve_eval_dir

    # The stores are named in config.yaml: without the eval dir, that is the problem to name.
    config = load_eval_config(resolve_eval_dir(eval_dir))
    outcome = upload_video(file, find_store(config.video_stores, store), store, key, progress=True)
    results_made()
    existed = ["Object already exists with matching size and SHA-256."] if outcome.already_existed else []
    return [*existed, outcome.video_block()]


def prune_lines(all_files: bool) -> list[str]:
    from assay.video.cloud_store import format_bytes, prune_cache

    count, size, root = prune_cache(all=all_files)
    results_made()
    return [f"Removed {count} cached {'file' if count == 1 else 'files'} ({format_bytes(size)}) from {root}"]
