"""Failure artifacts (`--save-failures`): the frame as JPEG and the result as JSON, per failed sample.

File stems are safe on every filesystem: unsafe characters are replaced, long prefixes truncated,
and either change appends a short hash of the original prefix so distinct names stay distinct.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from assay.core.fsutil import make_directories_under, write_atomically
from assay.errors import VideoError

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


def failure_directory(artifacts_dir: str | None, eval_dir: Path, trial: int) -> Path:
    """`<artifacts dir or <eval dir>/runs>/failures/trial-NNN`, created; a link out of its root is refused.

    The root is the `--artifacts-dir` a person chose, else the eval dir: a `runs` or `failures` link
    planted in it must not send the files elsewhere (`OutsideRoot`, an OSError).
    """
    root = Path(artifacts_dir) if artifacts_dir is not None else Path(eval_dir)
    base = root if artifacts_dir is not None else root / "runs"
    directory = base / "failures" / f"trial-{trial:03d}"
    try:
        return make_directories_under(root, directory)
    except OSError as error:
        raise VideoError(f"could not save failure artifacts in {directory}: {error}") from None


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
