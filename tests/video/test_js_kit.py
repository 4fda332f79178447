"""The shipped node adapter kit (assay.video.js_kit_path()): its PNG decoder and its packaging."""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from assay.video import js_kit_path, js_kit_types_path
from assay.video.png_encoding import encode_png

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _paeth(left: int, up: int, up_left: int) -> int:
    estimate = left + up - up_left
    distances = (abs(estimate - left), abs(estimate - up), abs(estimate - up_left))
    return (left, up, up_left)[distances.index(min(distances))]


def _filtered_rows(pixels: np.ndarray) -> bytes:
    """Each row with filter type `row % 5`, computed straight from the PNG specification."""
    height, width, _ = pixels.shape
    rows = pixels.reshape(height, width * 3).astype(int)
    out = bytearray()
    for y in range(height):
        kind = y % 5
        out.append(kind)
        for x in range(width * 3):
            left = rows[y, x - 3] if x >= 3 else 0
            up = rows[y - 1, x] if y else 0
            up_left = rows[y - 1, x - 3] if y and x >= 3 else 0
            predicted = (0, left, up, (left + up) // 2, _paeth(left, up, up_left))[kind]
            out.append((rows[y, x] - predicted) % 256)
    return bytes(out)


def _png(pixels: np.ndarray, *, level: int, idat_chunks: int = 1) -> bytes:
    height, width, _ = pixels.shape
    stream = zlib.compress(_filtered_rows(pixels), level)
    step = -(-len(stream) // idat_chunks)
    parts = [_chunk(b"IDAT", stream[at : at + step]) for at in range(0, len(stream), step)]
    header = _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    return b"\x89PNG\r\n\x1a\n" + header + b"".join(parts) + _chunk(b"IEND", b"")


def _decode_in_node(tmp_path: Path, pngs: list[bytes]) -> list[dict]:
    for index, png in enumerate(pngs):
        (tmp_path / f"{index}.png").write_bytes(png)
    script = tmp_path / "decode.mjs"
    script.write_text(
        f"import {{ readFileSync }} from 'node:fs';\n"
        f"import {{ createHash }} from 'node:crypto';\n"
        f"import {{ decodePng }} from {json.dumps(js_kit_path().as_uri())};\n"
        f"const results = [];\n"
        f"for (let i = 0; i < {len(pngs)}; i++) {{\n"
        f"  try {{\n"
        f"    const {{ width, height, rgb }} = decodePng(readFileSync(`${{i}}.png`));\n"
        f"    results.push({{ width, height, sha256: createHash('sha256').update(rgb).digest('hex') }});\n"
        f"  }} catch (error) {{ results.push({{ error: error.message }}); }}\n"
        f"}}\n"
        f"console.log(JSON.stringify(results));\n",
        encoding="utf-8",
    )
    completed = subprocess.run(["node", str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def _expected(pixels: np.ndarray) -> dict:
    return {"width": pixels.shape[1], "height": pixels.shape[0], "sha256": hashlib.sha256(pixels.tobytes()).hexdigest()}


def test_decoder_undoes_every_filter_type_deflated_or_stored(tmp_path):
    generator = np.random.default_rng(11)
    noisy = generator.integers(0, 256, (11, 9, 3), dtype=np.uint8)
    # Smooth gradients make Average and Paeth pick each of their predictors, not only one.
    ys, xs = np.mgrid[0:10, 0:7]
    smooth = np.stack([xs * 30, ys * 20, (xs + ys) * 12], axis=-1).astype(np.uint8)
    pngs = [
        _png(noisy, level=9), _png(noisy, level=0), _png(noisy, level=6, idat_chunks=4),
        _png(smooth, level=9), _png(smooth, level=0),
    ]
    expected = [_expected(noisy)] * 3 + [_expected(smooth)] * 2
    assert _decode_in_node(tmp_path, pngs) == expected


def test_decoder_reads_what_assay_sends(tmp_path):
    generator = np.random.default_rng(5)
    frame = generator.integers(0, 256, (90, 160, 3), dtype=np.uint8)
    frame[:45] //= 16  # a compressible half, so "deflate" really deflates
    pngs = [encode_png(frame, "deflate"), encode_png(frame, "stored")]
    assert _decode_in_node(tmp_path, pngs) == [_expected(frame)] * 2


def test_decoder_names_what_it_cannot_read(tmp_path):
    rgba = _chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0))
    pngs = [b"GIF89a", b"\x89PNG\r\n\x1a\n" + rgba + _chunk(b"IDAT", zlib.compress(b"\0" * 5)) + _chunk(b"IEND", b"")]
    errors = [result["error"] for result in _decode_in_node(tmp_path, pngs)]
    assert errors == ["not a PNG (bad signature)", "PNG must be 8-bit RGB (got bit depth 8, colour type 6)"]


def test_declarations_cover_what_the_kit_exports():
    import re

    exported = set(re.findall(r"^export (?:async )?function (\w+)", js_kit_path().read_text(encoding="utf-8"), re.MULTILINE))
    declared = set(re.findall(r"^export function (\w+)", js_kit_types_path().read_text(encoding="utf-8"), re.MULTILINE))
    assert exported == declared == {"runAdapter", "decodePng"}
