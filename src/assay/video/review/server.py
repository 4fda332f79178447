"""The review server's HTTP API over one eval directory (spec/video.md §22.3) on the shared web app.

Routes list cases, serve documents, videos and exact frames, save sample edits under a per-file
lock, and (beyond GlassKit) report an earlier run's results for the timeline.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from assay.core.fsutil import OutsideRoot, remove_stale_temporary_files_beside, write_atomically
from assay.errors import AssayError
from assay.video.loading import EVAL_CONFIG_FILE_NAMES
from assay.video.review.documents import (
    VIDEO_CONTENT_TYPES,
    ReviewCase,
    build_case_document,
    case_file_summary,
    eval_config_for,
    is_confined,
    list_case_files,
    load_review_case,
)
from assay.video.review.edits import apply_samples_update, parse_samples_update
from assay.video.review.file_response import FileDigests, file_response
from assay.video.review.frames import FrameRenderer, FrameSuperseded
from assay.video.review.results import find_prior_run, load_prior_run, sample_outcomes
from assay.web.app import ApiError, Binding, create_web_app, json_response, new_write_token, read_json_body, require_write_token

__all__ = ["STATIC_DIR", "WRITE_TOKEN_HEADER", "ReviewServer", "create_review_app"]

STATIC_DIR = Path(__file__).resolve().parent / "static"
WRITE_TOKEN_HEADER = "X-GlassKit-Write-Token"
# assay's own: a save sent as the page is left cannot ask first what changed on disk, so it names the revision it
# was made on and is refused (409 case_file_changed) if the file is no longer that one.
BASE_REVISION_HEADER = "X-Assay-Base-Revision"
FRAME_CLIENT_HEADER = "X-GlassKit-Frame-Client"
FRAME_GENERATION_HEADER = "X-GlassKit-Frame-Generation"
MAX_PUT_BYTES = 2 * 1024 * 1024
_CLIENT_PATTERN = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_MAX_GENERATION = 2**53 - 1
MAX_FRAME_TIME_S = 1e9  # about 31 years


@dataclass
class ReviewServer:
    """Everything one launch of the review server keeps: paths, token, locks, caches."""

    eval_dir: Path  # resolved
    binding: Binding
    write_token: str = field(default_factory=new_write_token)
    results_path: Path | None = None
    materialize: Callable[..., Path] | None = None
    frames: FrameRenderer = field(default_factory=FrameRenderer)
    digests: FileDigests = field(default_factory=FileDigests)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    # case file name -> (revision, target -> tick -> id): the ids a client chose in its last PUT
    _ids: dict[str, tuple[str, dict[str, dict[int, str]]]] = field(default_factory=dict)
    # case file name -> a fully loaded case with its video, reused while no input file changed
    _loaded: dict[str, _CachedCase] = field(default_factory=dict)
    _ids_version: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A save killed mid-write leaves its temporary file beside the case file; this launch owns them.
        try:
            remove_stale_temporary_files_beside(self.eval_dir, list_case_files(self.eval_dir))
        except AssayError:
            pass  # no cases yet: the eval-directory route reports that

    # -- lookups ---------------------------------------------------------------------------------
    def case_path(self, case_id: str) -> Path:
        """The case file named `case_id`, only if discovery lists it and it stays inside the eval dir."""
        try:
            paths = list_case_files(self.eval_dir)
        except AssayError:
            paths = []
        for path in paths:
            if path.name == case_id:
                return path
        raise ApiError(404, "case_file_not_found", f"No case file named {case_id!r} in this eval.")

    def overrides_for(self, review: ReviewCase) -> dict[str, dict[int, str]]:
        remembered = self._ids.get(review.path.name)
        if remembered is None or remembered[0] != review.revision:
            return {}
        return remembered[1]

    def load(self, case_id: str, *, touch_video: bool = True) -> ReviewCase:
        path = self.case_path(case_id)
        inputs = self._input_identity(path)
        cached = self._loaded.get(path.name)
        if cached is not None and cached.inputs == inputs and cached.video == _identity(cached.review.video_path):
            return cached.review
        config, config_error = eval_config_for(self.eval_dir)
        if config is None:
            raise ApiError(409, "invalid_eval_config", config_error or "the eval config is invalid")
        try:
            review = load_review_case(path, config, materialize=self.materialize, touch_video=touch_video)
        except OSError as error:
            raise ApiError(404, "case_file_not_found", f"Could not read case file {case_id!r}: {error}") from None
        if review.video_path is not None and review.load_error is None:
            # Only complete loads are kept: a missing video may appear at any moment.
            self._loaded[path.name] = _CachedCase(inputs, _identity(review.video_path), review)
        return review

    def _input_identity(self, case_path: Path) -> tuple[Any, ...]:
        return (_identity(case_path), *(_identity(self.eval_dir / name) for name in EVAL_CONFIG_FILE_NAMES))

    def document(self, review: ReviewCase) -> dict[str, Any]:
        """The case document, built once per revision and set of client-chosen ids."""
        overrides = self.overrides_for(review)
        cached = self._loaded.get(review.path.name)
        key = (review.revision, self._ids_version.get(review.path.name, 0))
        if cached is not None and cached.review is review:
            if cached.document is None or cached.document_key != key:
                cached.document, cached.document_key = build_case_document(review, overrides), key
            return cached.document
        return build_case_document(review, overrides)

    def lock_for(self, case_id: str) -> asyncio.Lock:
        return self._locks.setdefault(case_id, asyncio.Lock())

    # -- handlers --------------------------------------------------------------------------------
    async def eval_directory(self, request: Request) -> Response:
        if request.method == "HEAD":
            raise ApiError(404, "route_not_found", "HEAD is not served for /api/eval-directory.")

        def collect() -> dict[str, Any]:
            config, config_error = eval_config_for(self.eval_dir)
            try:
                paths = list_case_files(self.eval_dir)
            except AssayError as error:
                raise ApiError(409, "invalid_eval_directory", str(error)) from None
            source = None
            for name in EVAL_CONFIG_FILE_NAMES:
                candidate = self.eval_dir / name
                if candidate.is_file() and is_confined(candidate, self.eval_dir):
                    source = candidate.read_text(encoding="utf-8", errors="replace")
                    break
            return {
                "eval_dir": str(self.eval_dir),
                "write_token": self.write_token,
                "eval_config_source": source,
                "cases": [case_file_summary(path, config, config_error) for path in paths],
            }

        return json_response(await anyio.to_thread.run_sync(collect))

    async def case_document(self, request: Request) -> Response:
        case_id = request.path_params["case_id"]
        head, slash, _ = case_id.rpartition("/")
        if slash and any(path.name == head for path in list_case_files(self.eval_dir)):
            raise ApiError(404, "route_not_found", f"No API route matches {request.method} {request.url.path}.")
        document = await anyio.to_thread.run_sync(lambda: self.document(self.load(case_id)))
        return json_response(document)

    async def video(self, request: Request) -> Any:
        case_id = request.path_params["case_id"]
        review = await anyio.to_thread.run_sync(lambda: self.load(case_id))
        if review.video_path is None:
            message = (review.load_error or {}).get("message") or "The case's video is unavailable."
            raise ApiError(404, "video_unavailable", message)
        content_type = VIDEO_CONTENT_TYPES.get(review.video_path.suffix.lower(), "application/octet-stream")
        return await file_response(request, review.video_path, content_type, self.digests)

    async def frame(self, request: Request) -> Response:
        case_id = request.path_params["case_id"]
        values = request.query_params.getlist("at")
        t = _frame_time(values)
        requester = _frame_requester(request)
        review = await anyio.to_thread.run_sync(lambda: self.load(case_id))
        if review.video_path is None:
            message = (review.load_error or {}).get("message") or "The case's video is unavailable."
            raise ApiError(404, "video_unavailable", message)
        try:
            frame = await self.frames.render(review.video_path, t, requester)
        except FrameSuperseded:
            raise ApiError(409, "frame_request_superseded", "A newer frame request replaced this one.") from None
        except AssayError as error:
            raise ApiError(422, "frame_unavailable", str(error)) from None
        headers = {
            "cache-control": "no-store",
            "etag": f'"rgb-sha256-{frame.sha256}"',
            "x-glasskit-frame-sha256": f"sha256-{frame.sha256}",
            "x-glasskit-requested-time": format(t, ".9g"),
            "x-glasskit-media-time": format(frame.media_time, ".17g"),
        }
        if frame.index is not None:
            headers["x-glasskit-frame-index"] = str(frame.index)
        body = b"" if request.method == "HEAD" else frame.png
        response = Response(body, media_type="image/png", headers=headers)
        if request.method == "HEAD":
            response.headers["content-length"] = str(len(frame.png))
        return response

    async def put_samples(self, request: Request) -> Response:
        require_write_token(request, self.write_token, WRITE_TOKEN_HEADER)
        case_id = request.path_params["case_id"]
        self.case_path(case_id)
        payload = await read_json_body(request, max_bytes=MAX_PUT_BYTES)
        update = parse_samples_update(payload)
        base_revision = request.headers.get(BASE_REVISION_HEADER)
        async with self.lock_for(case_id):

            def save() -> dict[str, Any]:
                review = self.load(case_id)
                if base_revision is not None and base_revision != review.revision:
                    raise ApiError(
                        409, "case_file_changed",
                        f"{review.path.name} changed on disk after the page that sent these edits loaded it; "
                        "they were not saved over it.",
                    )
                if review.case is None:
                    if review.load_error and review.load_error["code"] == "invalid_encoding":
                        raise ApiError(409, "case_file_structure_changed", "The case file is no longer valid UTF-8.")
                    message = (review.load_error or {}).get("message") or "it does not load"
                    raise ApiError(
                        409,
                        "case_file_structure_changed",
                        f"The case file no longer loads (was it edited on disk?); fix it and save again: {message}",
                    )
                config, _ = eval_config_for(self.eval_dir)
                assert config is not None  # load() refused an invalid config already
                applied = apply_samples_update(review.path, review.data, config, update, review.video_info)
                try:
                    # Through a symlinked case file to its target, and only inside the eval dir.
                    write_atomically(review.path, applied.candidate, root=self.eval_dir)
                except OutsideRoot as error:
                    raise ApiError(409, "case_file_outside_eval_dir", f"Could not write {review.path}: {error}") from None
                except OSError as error:
                    raise ApiError(500, "case_file_write_failed", f"Could not write {review.path}: {error}") from None
                previous = self.overrides_for(review)
                self._ids[review.path.name] = (
                    hashlib.sha256(applied.candidate).hexdigest(),
                    {**previous, **applied.ids_by_target},
                )
                self._ids_version[review.path.name] = self._ids_version.get(review.path.name, 0) + 1
                return self.document(self.load(case_id))

            document = await anyio.to_thread.run_sync(save)
        # Each save stands alone: the browser opens a fresh connection for the next one.
        return json_response(document, headers={"connection": "close"})

    async def results(self, request: Request) -> Response:
        case_id = request.path_params["case_id"]

        def collect() -> dict[str, Any]:
            review = self.load(case_id, touch_video=False)
            path = self.results_path or find_prior_run(self.eval_dir)
            run = load_prior_run(path) if path is not None else None
            if run is None or review.case is None:
                return {"source": run.describe() if run else None, "targets": {}}
            expectations = {
                target.id: {sample.tick: sample.expected for sample in target.samples if sample.has_expectation}
                for target in review.case.targets
            }
            return {"source": run.describe(), "targets": sample_outcomes(run, review.case.name, expectations)}

        return json_response(await anyio.to_thread.run_sync(collect))


@dataclass
class _CachedCase:
    inputs: tuple[Any, ...]
    video: Any
    review: ReviewCase
    document: dict[str, Any] | None = None
    document_key: Any = None


def _identity(path: Path | None) -> Any:
    if path is None:
        return None
    try:
        status = os.stat(path)
    except OSError:
        return None
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def _frame_time(values: list[str]) -> float:
    if len(values) != 1:
        raise ApiError(400, "invalid_frame_time", "Give exactly one `at` query parameter.")
    try:
        t = float(values[0])
    except ValueError:
        raise ApiError(400, "invalid_frame_time", "`at` must be a number of seconds.") from None
    if not math.isfinite(t) or t < 0:
        raise ApiError(400, "invalid_frame_time", "`at` must be a finite, nonnegative number of seconds.")
    if t > MAX_FRAME_TIME_S:
        # Far past any video's end; the seek would overflow the stream's timestamp arithmetic.
        raise ApiError(400, "invalid_frame_time", f"`at` must be at most {MAX_FRAME_TIME_S:,.0f} seconds.")
    return round(t, 9)


def _frame_requester(request: Request) -> tuple[str, int] | None:
    client = request.headers.getlist(FRAME_CLIENT_HEADER)
    generation = request.headers.getlist(FRAME_GENERATION_HEADER)
    if not client and not generation:
        return None
    bad = ApiError(
        400,
        "invalid_frame_request",
        f"{FRAME_CLIENT_HEADER} ([A-Za-z0-9._:-], at most 128) and {FRAME_GENERATION_HEADER} "
        "(decimal digits, at most 2^53-1) must be given together.",
    )
    if len(client) != 1 or len(generation) != 1 or not _CLIENT_PATTERN.fullmatch(client[0]):
        raise bad
    text = generation[0]
    if not (text.isascii() and text.isdigit()) or len(text) > 16 or int(text) > _MAX_GENERATION:
        raise bad
    return client[0], int(text)


def create_review_app(server: ReviewServer) -> Starlette:
    """The Starlette app of one review server (bind it with `assay.web.app.serve`)."""
    prefix = "/api/case-files/{case_id:path}"
    routes = [
        Route("/api/eval-directory", server.eval_directory, methods=["GET"]),
        Route(prefix + "/video", server.video, methods=["GET", "HEAD"]),
        Route(prefix + "/frame", server.frame, methods=["GET", "HEAD"]),
        Route(prefix + "/samples", server.put_samples, methods=["PUT"]),
        Route(prefix + "/results", server.results, methods=["GET"]),
        Route(prefix, server.case_document, methods=["GET"]),
    ]
    return create_web_app(api_routes=routes, static_dir=STATIC_DIR, binding=server.binding)

