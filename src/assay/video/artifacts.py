"""Failure artifacts (`--save-failures`): the frame as JPEG and the result as JSON, per failed sample.

File stems are safe on every filesystem: unsafe characters are replaced, long prefixes truncated,
and either change appends a short hash of the original prefix so distinct names stay distinct.
Where they go is checked when a run starts (`check_artifacts_dir`). As GlassKit does, a file an earlier
run left is overwritten when the same sample fails again, and nothing is cleaned up between runs.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from assay.core.fsutil import make_directories_under, write_atomically
from assay.errors import UsageError, VideoError

_UNSAFE = set('<>:"/\\|?*') | {chr(code) for code in range(0x20)}
_HASH_LENGTH = 10


def _truncate_utf8(text: str, limit: int) -> str:
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    return encoded[:limit].decode("utf-8", errors="ignore")


def artifact_stem(case: str, target: str, sample_index: int, timestamp_s: float) -> str:
    raw_prefix = f"{case}_{target}"
    suffix = f"_{sample_index:05d}_{timestamp_s:.3f}s"
    prefix = "".join("_" if character in _UNSAFE else character for character in raw_prefix)
    prefix = prefix.rstrip(" .") or "sample"
    limit = min(160, 255 - len((suffix + ".json").encode("utf-8")))
    if prefix != raw_prefix or len(prefix.encode("utf-8")) > limit:
        digest = hashlib.sha256(raw_prefix.encode("utf-8", errors="surrogatepass")).hexdigest()[:_HASH_LENGTH]
        prefix = _truncate_utf8(prefix, limit - 1 - _HASH_LENGTH).rstrip(" .") + "_" + digest
    return prefix + suffix


def _trial_directory(artifacts_dir: str | None, eval_dir: Path, trial: int) -> tuple[Path, Path]:
    """(root, `<artifacts dir or <eval dir>/runs>/failures/trial-NNN`): the root is the `--artifacts-dir` a
    person chose, else the eval dir."""
    root = Path(artifacts_dir) if artifacts_dir is not None else Path(eval_dir)
    base = root if artifacts_dir is not None else root / "runs"
    return root, base / "failures" / f"trial-{trial:03d}"


def failure_directory(artifacts_dir: str | None, eval_dir: Path, trial: int) -> Path:
    """`<artifacts dir or <eval dir>/runs>/failures/trial-NNN`, created; a link out of its root is refused.

    A `runs` or `failures` link planted in the root must not send the files elsewhere (`OutsideRoot`, an OSError).
    """
    root, directory = _trial_directory(artifacts_dir, eval_dir, trial)
    try:
        return make_directories_under(root, directory)
    except OSError as error:
        raise VideoError(f"could not save failure artifacts in {directory}: {error}") from None


def _unusable(directory: Path) -> tuple[Path, str] | None:
    """The folder that stops `directory` being created and written, and why; None when nothing does."""
    folder = directory
    try:
        while not folder.exists():
            if folder.is_symlink():
                return folder, "is a link to nothing"
            if folder.parent == folder:
                return None
            folder = folder.parent
        if not folder.is_dir():
            return folder, "is a file, not a folder"
    except OSError as error:  # a folder on the way that cannot be looked into
        return folder, f"cannot be read ({error.strerror or error})"
    if not os.access(folder, os.W_OK | os.X_OK):
        return folder, "cannot be written (no permission)"
    return None


def check_artifacts_dir(
    artifacts_dir: str | None, eval_dir: Path, *, save_failures: bool, restored: bool = False
) -> None:
    """Refuse (UsageError, exit 2) before any adapter work a folder artifacts could not be written in: the
    `--artifacts-dir` (its `failures` folder with `--save-failures`), or `<eval dir>/runs/failures`.

    Nothing is created: only the first folder that exists on the way is looked at."""
    if artifacts_dir is not None:
        root = Path(artifacts_dir)
        found = _unusable(root / "failures" if save_failures else root)
        if found is None:
            return
        folder, why = found
        given = f"--artifacts-dir {artifacts_dir}" + (" (restored from the checkpoint)" if restored else "")
        fix = (
            "a resumed run writes where it started: make that a folder you can write to (a relative path is read "
            "from the current folder), or start a new run"
        ) if restored else "pass a folder you can write to (it is created when missing)"
        problem = why if folder == root else f"cannot be used: {folder} {why}"
        raise UsageError(f"{given} {problem}; {fix}", "--artifacts-dir")
    if save_failures and Path(eval_dir).is_dir():  # a missing eval dir is the loader's to name
        failures = Path(eval_dir) / "runs" / "failures"
        found = _unusable(failures)
        if found is not None:
            folder, why = found
            where = "it" if folder == failures else str(folder)
            raise UsageError(
                f"--save-failures cannot write to {failures}: {where} {why}; fix it or pass --artifacts-dir",
                "--save-failures",
            )


def save_failure(
    directory: Path, stem: str, rgb: np.ndarray | None, record: dict[str, Any]
) -> tuple[str | None, str]:
    """Write `<stem>.jpg` (when a frame exists) and `<stem>.json`; return both paths as strings.

    Each file replaces what is there atomically and never through a link out of `directory`.
    """
    from PIL import Image

    image_path: str | None = None
    json_file = directory / f"{stem}.json"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if rgb is not None:
            image_file = directory / f"{stem}.jpg"
            encoded = io.BytesIO()
            Image.fromarray(rgb, "RGB").save(encoded, format="JPEG", quality=90)
            write_atomically(image_file, encoded.getvalue(), root=directory)
            image_path = str(image_file)
        text = json.dumps(record, indent=2, sort_keys=True, ensure_ascii=True) + "\n"
        write_atomically(json_file, text, root=directory)
    except OSError as error:
        raise VideoError(f"could not save failure artifacts for {stem}: {error}") from None
    return image_path, str(json_file)
