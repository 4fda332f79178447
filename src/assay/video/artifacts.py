"""Failure artifacts (`--save-failures`): the frame as JPEG and the result as JSON, per failed sample.

File stems are safe on every filesystem: unsafe characters are replaced, long prefixes truncated,
and either change appends a short hash of the original prefix so distinct names stay distinct.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

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
    root = Path(artifacts_dir) if artifacts_dir is not None else eval_dir / "runs"
    return root / "failures" / f"trial-{trial:03d}"


def save_failure(
    directory: Path, stem: str, rgb: np.ndarray | None, record: dict[str, Any]
) -> tuple[str | None, str]:
    """Write `<stem>.jpg` (when a frame exists) and `<stem>.json`; return both paths as strings."""
    from PIL import Image

    directory.mkdir(parents=True, exist_ok=True)
    image_path: str | None = None
    if rgb is not None:
        image_file = directory / f"{stem}.jpg"
        Image.fromarray(rgb, "RGB").save(image_file, format="JPEG", quality=90)
        image_path = str(image_file)
    json_file = directory / f"{stem}.json"
    json_file.write_text(json.dumps(record, indent=2, sort_keys=True, ensure_ascii=True) + "\n", encoding="utf-8")
    return image_path, str(json_file)
