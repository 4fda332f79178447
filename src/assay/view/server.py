"""The live results viewer: read-only JSON routes over the store, on the shared loopback web app, and in
label mode (`assay view --label`) the label queue and a write route guarded by the per-start token.

Routes take their arguments as query parameters (unit ids hold `/`, `#` and `@`); the video frame
route decodes only a video the store recorded for that unit, never a path from the request.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from assay.core.results_store import StoreError
from assay.errors import AssayError
from assay.view.data import ViewData
from assay.view.labelling import MAX_LABEL_BYTES, WRITE_TOKEN_HEADER, LabelSession, agreement
from assay.web.app import ApiError, Binding, create_web_app, json_response, read_json_body, require_write_token

__all__ = ["STATIC_DIR", "create_view_app", "render_frame_png"]

STATIC_DIR = Path(__file__).resolve().parent / "static"


def render_frame_png(video: str, time_s: float) -> bytes:
    """The exact frame `assay video run` sent for `time_s`, as lossless PNG."""
    from assay.video.decode import select_frame_at

    image = select_frame_at(Path(video), time_s).to_image()
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def _api_error(error: Exception) -> ApiError:
    """What a request that failed on `error` answers; the store's own trouble is the server's, not the request's."""
    if isinstance(error, StoreError):
        return ApiError(503, "store_unusable", str(error))
    if isinstance(error, AssayError):
        return ApiError(400, "bad_request", str(error))
    return ApiError(404, "not_found", str(error.args[0] if error.args else error))


def _json_endpoint(handler: Callable[[dict[str, Any]], Any], before: Callable[[], None] | None = None) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        try:
            if before is not None:
                before()
            return json_response(handler(dict(request.query_params)))
        except (AssayError, LookupError) as error:
            raise _api_error(error) from None

    return endpoint


def _label_routes(session: LabelSession) -> list[Route]:
    """Label mode: the session (with the write token), the queue, its units, and writing a label."""

    async def put_label(request: Request) -> Response:
        require_write_token(request, session.write_token, WRITE_TOKEN_HEADER)
        payload = await read_json_body(request, max_bytes=MAX_LABEL_BYTES)
        try:
            session.follow_store()
            return json_response(session.put_label(payload))
        except (AssayError, LookupError) as error:
            raise _api_error(error) from None

    return [
        Route("/api/label/session", _json_endpoint(session.session), methods=["GET"]),
        Route("/api/label/queue", _json_endpoint(session.queue, session.follow_store), methods=["GET"]),
        Route("/api/label/item", _json_endpoint(session.item, session.follow_store), methods=["GET"]),
        Route("/api/label", put_label, methods=["PUT"]),
    ]


def create_view_app(data: ViewData, binding: Binding, *, labelling: LabelSession | None = None) -> Starlette:
    """The viewer's app; with `labelling`, label mode's routes too (the store must then be writable)."""

    async def frame(request: Request) -> Response:
        params = dict(request.query_params)
        try:
            data.follow_store()
            video, time_s = data.frame_source(params)
        except (AssayError, LookupError) as error:
            raise _api_error(error) from None
        if not Path(video).is_file():
            raise ApiError(404, "video_missing", f"The recorded video is no longer at {video}.")
        try:
            png = await run_in_threadpool(render_frame_png, video, time_s)
        except AssayError as error:
            raise ApiError(422, "video_error", str(error)) from None
        return Response(png, media_type="image/png", headers={"cache-control": "private, max-age=3600"})

    def read(handler: Callable[[dict[str, Any]], Any]) -> Callable[[Request], Any]:
        # the store file as it is now (one replaced is opened anew; in label mode, with its labels)
        return _json_endpoint(handler, labelling.follow_store if labelling is not None else data.follow_store)

    routes = [
        Route("/api/runs", read(data.runs), methods=["GET"]),
        Route("/api/run", read(data.run), methods=["GET"]),
        Route("/api/units", read(data.units), methods=["GET"]),
        Route("/api/unit", read(data.unit), methods=["GET"]),
        Route("/api/traces", read(data.traces), methods=["GET"]),
        Route("/api/compare", read(data.compare), methods=["GET"]),
        Route("/api/trend", read(data.trend), methods=["GET"]),
        Route("/api/frame", frame, methods=["GET"]),
        Route("/api/agreement", read(lambda params: agreement(data, params)), methods=["GET"]),
        *(_label_routes(labelling) if labelling is not None else ()),
    ]
    return create_web_app(api_routes=routes, static_dir=STATIC_DIR, binding=binding)
