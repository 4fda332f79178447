"""`assay video store pull|upload|prune-cache` (alias `video-store`): cloud videos from the command line.

Thin wrappers over `assay.video.cloud_store`; every user error prints one `Could not ...: <message>` line and exits 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay.cli import common
from assay.errors import AssayError

store_app = typer.Typer(
    rich_markup_mode=None,  # plain help: flags shown as flags, options as `--name <type>`
    no_args_is_help=True,
    help="Download, upload and cache videos kept in cloud video stores (config.yaml video_stores).",
)

EVAL_DIR_HELP = "Eval directory holding cases/ and config.yaml."


@store_app.command("pull")
def pull_command(
    eval_dir: Annotated[Path, typer.Option("--eval-dir", help=EVAL_DIR_HELP)] = Path("eval"),
    case: Annotated[str | None, typer.Option("--case", help="Only download one case by file name or stem.")] = None,
) -> None:
    """Download and verify the selected cases' cloud videos into the local cache."""
    from assay.video.loading import load_eval_directory
    from assay.video.model import RemoteVideo
    from assay.video.cloud_store import pull_case_videos

    try:
        loaded = load_eval_directory(
            eval_dir,
            case=case,
            allow_empty=True,
            allow_draft=True,
            materialize_videos=False,
            check_local_videos=False,
        )
        remote_cases = [loaded_case for loaded_case in loaded.cases if isinstance(loaded_case.video, RemoteVideo)]
        paths = pull_case_videos(remote_cases, loaded.config.video_stores, progress=True)
    except AssayError as error:
        common.fail("Could not pull cloud videos", error)
    if not remote_cases:
        typer.echo("No cloud videos are referenced by the selected cases.")
        return
    for path in paths:
        typer.echo(str(path))


@store_app.command("upload")
def upload_command(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="Local video file to upload.")],
    store: Annotated[str, typer.Option("--store", help="Named video store from <eval-dir>/config.yaml.")],
    eval_dir: Annotated[Path, typer.Option("--eval-dir", help=EVAL_DIR_HELP)] = Path("eval"),
    key: Annotated[
        str | None, typer.Option("--key", help="Object key. Defaults to an immutable key derived from the SHA-256.")
    ] = None,
) -> None:
    """Upload a local video (unless the same object is there) and print its case-file `video:` block."""
    from assay.video.loading import load_eval_config
    from assay.video.cloud_store import find_store, upload_video

    try:
        # Only config.yaml matters here; a missing eval dir simply configures no stores.
        config = load_eval_config(eval_dir.expanduser().resolve())
        store_config = find_store(config.video_stores, store)
        outcome = upload_video(file, store_config, store, key, progress=True)
    except AssayError as error:
        common.fail("Could not upload cloud video", error)
    if outcome.already_existed:
        typer.echo("Object already exists with matching size and SHA-256.")
    typer.echo(outcome.video_block())


@store_app.command("prune-cache")
def prune_cache_command(
    all_files: Annotated[
        bool, typer.Option("--all", help="Remove verified videos too; they will be downloaded again when used.")
    ] = False,
) -> None:
    """Remove abandoned partial downloads and locks, or with --all the whole downloaded-video cache."""
    from assay.video.cloud_store import format_bytes, prune_cache

    try:
        count, size, root = prune_cache(all=all_files)
    except AssayError as error:
        common.fail("Could not prune downloaded-video cache", error)
    noun = "file" if count == 1 else "files"
    typer.echo(f"Removed {count} cached {noun} ({format_bytes(size)}) from {root}")
