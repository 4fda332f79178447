"""`assay view --export DIR`: the viewer as a static site (HTML, JS, CSS and data scripts) for CI artifacts.

Each API answer the pages need is written as `data/<key hash>.js`, loaded with a script tag, so
the site also works opened from disk (`file://`), where browsers refuse fetch().
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.core.run.kinds import kind_view
from assay.core.run_diff import CHANGE_KINDS
from assay.errors import AssayError
from assay.view.data import PAGE_SIZE, ViewData, api_key
from assay.view.labelling import agreement

__all__ = ["ExportLimits", "export_site", "key_hash"]

RUN_LIST_LIMIT = 500


@dataclass(frozen=True)
class ExportLimits:
    units_per_run: int = 5000  # unit pages (and details) exported per run and filter
    frames_per_run: int = 200  # decoded frames of failing video units per run
    runs: int = RUN_LIST_LIMIT


def key_hash(key: str) -> str:
    """Two FNV-1a 32-bit hashes of the UTF-8 key (app.js computes the same)."""
    digest = ""
    for basis in (0x811C9DC5, 0x01000193 ^ 0x5BD1E995):
        value = basis
        for byte in key.encode("utf-8"):
            value ^= byte
            value = (value * 0x01000193) & 0xFFFFFFFF
        digest += f"{value:08x}"
    return digest


class _Writer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.count = 0
        (root / "data").mkdir(parents=True, exist_ok=True)
        (root / "frames").mkdir(parents=True, exist_ok=True)

    def answer(self, path: str, params: Mapping[str, Any], produce: Callable[[Mapping[str, Any]], Any]) -> Any:
        key = api_key(path, params)
        try:
            document = produce(params)
        except LookupError:
            return None
        body = json.dumps(document, ensure_ascii=False, separators=(",", ":"), default=str).replace("</", "<\\/")
        script = f"window.assayData({json.dumps(key)},{body});\n"
        (self.root / "data" / f"{key_hash(key)}.js").write_text(script, encoding="utf-8")
        self.count += 1
        return document


def export_site(data: ViewData, directory: Path, *, limits: ExportLimits = ExportLimits(), static_dir: Path | None = None) -> int:
    """Write the site; returns how many data documents were written."""
    from assay.view.server import STATIC_DIR, render_frame_png

    static = static_dir or STATIC_DIR
    if directory.exists() and not directory.is_dir():
        raise AssayError(f"{directory} is a file; --export takes a folder to write the site into")
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("app.js", "labels.js", "app.css"):
        shutil.copyfile(static / name, directory / name)
    index = (static / "index.html").read_text(encoding="utf-8")
    (directory / "index.html").write_text(
        index.replace('<meta name="assay-mode" content="live">', '<meta name="assay-mode" content="static">'),
        encoding="utf-8",
    )
    writer = _Writer(directory)
    listing = writer.answer("runs", {"limit": str(limits.runs)}, data.runs)
    writer.answer("agreement", {}, lambda params: agreement(data, params))
    runs = listing["runs"] if listing else []
    for run in runs:
        run_id = run["run_id"]
        writer.answer("run", {"run": run_id}, data.run)
        writer.answer("trend", {"run": run_id}, data.trend)
        exported_units: list[str] = []
        for verdict in ("", "failed,errored"):
            offset = 0
            while offset < limits.units_per_run:
                page = writer.answer(
                    "units", {"run": run_id, "verdict": verdict, "offset": str(offset), "limit": str(PAGE_SIZE)}, data.units
                )
                exported_units += [row["unit_id"] for row in page["units"]]
                offset += PAGE_SIZE
                if offset >= page["total"]:
                    break
        if kind_view(run["kind"]).trace_row is not None:  # the kind has a Traces page
            offset = 0
            while offset < limits.units_per_run:
                page = writer.answer("traces", {"run": run_id, "offset": str(offset), "limit": str(PAGE_SIZE)}, data.traces)
                offset += PAGE_SIZE
                if page is None or offset >= page["total"]:
                    break
        frames = 0
        for unit_id in dict.fromkeys(exported_units):
            unit = writer.answer("unit", {"run": run_id, "unit": unit_id}, data.unit)
            if unit and unit.get("has_frame") and unit["verdict"] in ("failed", "errored") and frames < limits.frames_per_run:
                try:
                    video, time_s = data.frame_source({"run": run_id, "unit": unit_id})
                    png = render_frame_png(video, time_s)
                except Exception:  # noqa: BLE001, S112 - a missing or unreadable video leaves the frame out
                    continue
                key = api_key("frame", {"run": run_id, "unit": unit_id})
                (directory / "frames" / f"{key_hash(key)}.png").write_bytes(png)
                frames += 1
    # Compare pages for each run against the previous run of the same kind.
    previous: dict[str, str] = {}
    for run in reversed(runs):
        kind = run["kind"]
        if kind in previous:
            for change in CHANGE_KINDS:
                writer.answer(
                    "compare",
                    {"a": previous[kind], "b": run["run_id"], "change": change, "offset": "0", "limit": str(PAGE_SIZE)},
                    data.compare,
                )
        previous[kind] = run["run_id"]
    return writer.count
