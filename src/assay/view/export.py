"""`assay view --export DIR`: the viewer as a static site (HTML, JS, CSS and data scripts) for CI artifacts.

Each API answer the pages need is written as `data/<key hash>.js`, loaded with a script tag, so
the site also works opened from disk (`file://`), where browsers refuse fetch().
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.core.run.kinds import kind_view
from assay.core.run_diff import CHANGE_KINDS
from assay.errors import AssayError, UsageError
from assay.view.data import PAGE_SIZE, ViewData, api_key
from assay.view.labelling import agreement

__all__ = ["ExportLimits", "export_site", "key_hash"]

RUN_LIST_LIMIT = 500
FRAMES_LEFT_OUT = ("Frame not in this export: it holds the frames of failing units only (up to {limit} per run); "
                   "`assay view` shows any unit's frame.")


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
    """Write the site into `directory` (`~` expanded); returns how many data documents were written.

    A folder it cannot write into is refused before anything is written (`UsageError`); a write that
    fails after all is an `AssayError` naming the file. Both messages start `--export <folder>`."""
    from assay.view.server import STATIC_DIR, render_frame_png

    static = static_dir or STATIC_DIR
    try:
        directory = directory.expanduser()
    except RuntimeError:  # `~name/…` of a user this machine does not know
        raise UsageError(f"--export {directory} cannot be created: there is no user {directory.parts[0][1:]!r} "
                         "whose home folder `~` could name", "--export") from None
    _check_folder(directory)
    final = directory.resolve() if directory.is_symlink() else directory  # a link to the site's folder stays a link
    staging = _staging_folder(final)
    try:
        count = _write_site(data, staging or final, limits, static, render_frame_png)
        if staging is not None:
            _put_in_place(staging, final)
        return count
    except OSError as error:
        # A write into the folder failed after all (a read-only file system, a full disk, a folder where
        # the site puts a file): named as the checks above name their reasons. Anything else is not ours.
        written = [name for name in (error.filename, error.filename2)
                   if name is not None and any(_under(Path(name), folder) for folder in (final, staging) if folder)]
        if not written:
            raise
        shown = str(written[0]).replace(str(staging), str(final), 1) if staging else written[0]
        raise AssayError(f"--export {directory} cannot be written: {shown}: {error.strerror or error}") from None
    finally:
        if staging is not None:  # interrupted or failed: the half-written site goes, an earlier one stays whole
            shutil.rmtree(staging, ignore_errors=True)


def _staging_folder(final: Path) -> Path | None:
    """A new folder beside `final` the site is written into, then moved to `final` whole: a site cut short (Ctrl-C,
    a full disk) left an `index.html` whose pages said "not included" for what it had not reached yet. None where
    nothing can be made beside it (a folder given in a parent this user cannot write): written in place."""
    import secrets

    final.parent.mkdir(parents=True, exist_ok=True)
    staging = final.parent / f".{final.name}.assay-export-{secrets.token_hex(4)}"
    try:
        staging.mkdir()  # (the mode a folder gets, not mkdtemp's 0700: a web server may serve the site)
    except OSError:
        return None
    return staging


def _put_in_place(staging: Path, final: Path) -> None:
    """`final` becomes the site written in `staging`; an earlier export there is set aside, then removed."""
    import secrets

    aside = None
    if final.exists():
        aside = final.parent / f".{final.name}.assay-replaced-{secrets.token_hex(4)}"
        final.rename(aside)
    staging.rename(final)
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


def _under(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def _check_folder(directory: Path) -> None:
    """Refuse an `--export` folder the site cannot be written into, before anything is written (the same
    reasons, in the same words, as an unwritable `--junit` file)."""
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--export {directory} is a file, not a folder; give a folder to write the site into", "--export")
    folder = directory
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"--export {directory} cannot be created: {folder} is a file, not a folder", "--export")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"--export {directory} cannot be written: no permission in {folder}", "--export")
    if directory.is_dir() and not _an_earlier_export(directory):
        present = sorted(child.name for child in directory.iterdir())
        if present:  # the site writes index.html, app.js, … over whatever is there: a project's own files
            shown = ", ".join(present[:5]) + (f" and {len(present) - 5} more" if len(present) > 5 else "")
            raise UsageError(f"--export {directory} already holds files that are not an assay export ({shown}); give "
                             "a new or empty folder (an earlier export is replaced)", "--export")


def _an_earlier_export(directory: Path) -> bool:
    """Whether `directory` is a site `--export` wrote: its index.html is the viewer's, in static mode."""
    try:
        return _STATIC_MARK in (directory / "index.html").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


_STATIC_MARK = '<meta name="assay-mode" content="static">'


def _write_site(
    data: ViewData, directory: Path, limits: ExportLimits, static: Path, render_frame_png: Callable[..., bytes]
) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    for stale in ("data", "frames"):  # written in place: an earlier export's documents, whose runs may be gone since
        shutil.rmtree(directory / stale, ignore_errors=True)
    for name in ("app.js", "labels.js", "app.css"):
        shutil.copyfile(static / name, directory / name)
    index = (static / "index.html").read_text(encoding="utf-8")
    (directory / "index.html").write_text(
        index.replace('<meta name="assay-mode" content="live">', _STATIC_MARK),
        encoding="utf-8",
    )
    writer = _Writer(directory)
    listing = writer.answer("runs", {"limit": str(limits.runs)}, data.runs)
    writer.answer("agreement", {}, lambda params: agreement(data, params))
    # What the site's pages need to tell a unit it left out from one its run never had.
    writer.answer("export", {}, lambda _: {"units_per_run": limits.units_per_run})
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
            params = {"run": run_id, "unit": unit_id}
            try:
                unit = data.unit(params)
            except LookupError:
                continue
            if unit.get("has_frame"):
                # A unit page whose frame the site leaves out says so, instead of asking for a file that is not
                # there (an error in the browser's console, and "video moved, or not exported" on the page).
                if unit["verdict"] not in ("failed", "errored") or frames >= limits.frames_per_run:
                    unit.update(has_frame=False, frame_left_out=FRAMES_LEFT_OUT.format(limit=limits.frames_per_run))
                else:
                    try:
                        video, time_s = data.frame_source(params)
                        png = render_frame_png(video, time_s)
                    except Exception as error:  # noqa: BLE001 - a missing or unreadable video leaves the frame out
                        unit.update(has_frame=False, frame_left_out=f"Frame not in this export: the recorded video could not be "
                                                                    f"read when the site was written ({error}).")
                    else:
                        key = api_key("frame", params)
                        (directory / "frames" / f"{key_hash(key)}.png").write_bytes(png)
                        frames += 1
            writer.answer("unit", params, lambda _, unit=unit: unit)
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
