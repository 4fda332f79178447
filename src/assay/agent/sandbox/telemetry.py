"""Spans from inside a sandbox that cannot reach the run's receiver: a receiver in the sandbox, and its spool.

A container without the host's network (the default) cannot reach 127.0.0.1 of the host, and no
OpenTelemetry SDK exports to a file or a Unix socket by environment variables alone. So a small OTLP/HTTP
receiver (Python's standard library only) listens on the sandbox's own loopback, and `ctx.telemetry.env`
points the agent's SDK at it; each export it takes is one file in a spool folder outside the workdir,
which assay collects after every send window and before the sandbox goes, and attributes like any other
export. Nothing leaves the sandbox but through the provider's own exec.
"""

from __future__ import annotations

import io
import tarfile
from typing import Any

from assay.agent.sandbox.commands import SandboxError

SPOOL = "/tmp/.assay-otlp"  # outside the workdir: the change ledger never sees it
_TIMEOUT_SECONDS = 30.0
_MEDIA = {"pb": "application/x-protobuf", "json": "application/json"}

RECEIVER = r'''"""assay's OTLP/HTTP receiver inside a sandbox: each POST .../v1/traces becomes one file in the spool."""
import http.server
import itertools
import os
import sys
import time

SPOOL = sys.argv[1]
LIMIT = 64 * 1024 * 1024
KINDS = {"application/x-protobuf": "pb", "application/protobuf": "pb", "application/json": "json"}
NUMBERS = itertools.count()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", media="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts, size = [], 0
            while True:
                length = int(self.rfile.readline(256).split(b";")[0].strip() or b"0", 16)
                if length == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                size += length
                if size > LIMIT:
                    return None
                parts.append(self.rfile.read(length))
                self.rfile.readline(8)
        length = int(self.headers.get("Content-Length") or 0)
        return None if length > LIMIT else self.rfile.read(length)

    def do_POST(self):
        if not self.path.split("?")[0].endswith("/v1/traces"):
            return self.answer(404, b"only /v1/traces is served here\n")
        kind = KINDS.get((self.headers.get("Content-Type") or "").split(";")[0].strip().lower())
        body = self.body()
        if body is None:
            self.close_connection = True
            return self.answer(413, b"the export is too large\n")
        if kind is None:
            return self.answer(415, b"OTLP/HTTP is application/x-protobuf or application/json\n")
        name = "%d-%d.%s" % (time.time_ns(), next(NUMBERS), kind)
        with open(os.path.join(SPOOL, "." + name), "wb") as spooled:
            spooled.write(body)
        os.rename(os.path.join(SPOOL, "." + name), os.path.join(SPOOL, name))  # whole, or not there
        if kind == "json":
            self.answer(200, b"{}", "application/json")
        else:
            self.answer(200, b"", "application/x-protobuf")

    def refuse(self):
        self.send_response(405)
        self.send_header("Allow", "POST")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_PUT = do_DELETE = do_PATCH = refuse


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
with open(os.path.join(SPOOL, ".port"), "w") as announced:
    announced.write(str(server.server_address[1]))
os.rename(os.path.join(SPOOL, ".port"), os.path.join(SPOOL, "port"))
server.serve_forever()
'''

_START = (
    # The script comes on stdin, written by the sandbox's own user (no folder of root's in its way).
    'command -v python3 >/dev/null 2>&1 || { echo "the image has no python3 to run it" >&2; exit 127; }; '
    'mkdir -p "$1" && cat > "$1/receiver.py" || exit 1; '
    'python3 "$1/receiver.py" "$1" </dev/null >/dev/null 2>"$1/receiver.log" & '
    'i=0; while [ ! -s "$1/port" ]; do i=$((i+1)); '
    'if [ $i -gt 200 ]; then echo "it did not start:" >&2; tail -c 400 "$1/receiver.log" >&2; exit 1; fi; '
    'sleep 0.05; done; cat "$1/port"'
)
_COLLECT = (
    'cd "$1" 2>/dev/null || exit 0; set --; '
    'for f in *.pb *.json; do [ -f "$f" ] && set -- "$@" "$f"; done; '
    '[ $# -eq 0 ] && exit 0; tar -cf - -- "$@" && rm -f -- "$@"'
)


async def _run(backend: Any, argv: list[str], stdin: bytes | None = None) -> Any:
    return await backend.exec(
        argv, env={}, cwd="/", timeout=_TIMEOUT_SECONDS, on_stdout=None, on_stderr=None, signals=(), user=None,
        stdin=stdin,
    )


async def start_receiver(backend: Any) -> str:
    """Start the receiver in the sandbox; returns the base URL commands export to (`http://127.0.0.1:PORT`).
    SandboxError says why it could not start (no python3 in the image, …)."""
    started = await _run(backend, ["sh", "-c", _START, "start-receiver", SPOOL], RECEIVER.encode())
    port = started.stdout.decode("utf-8", "replace").strip()
    if started.exit_code != 0 or not port.isdigit():
        said = started.stderr.decode("utf-8", "replace").strip() or f"exit code {started.exit_code}"
        raise SandboxError(f"the OTLP receiver inside the sandbox did not start: {said}")
    return f"http://127.0.0.1:{port}"


async def collect_exports(backend: Any) -> list[tuple[str, bytes]]:
    """Every export the receiver spooled since the last collection, oldest first, as (content type, body);
    what was collected leaves the spool."""
    collected = await _run(backend, ["sh", "-c", _COLLECT, "collect-spans", SPOOL])
    if collected.exit_code != 0:
        said = collected.stderr.decode("utf-8", "replace").strip() or f"exit code {collected.exit_code}"
        raise SandboxError(f"the spans spooled in the sandbox could not be collected: {said}")
    if not collected.stdout:
        return []
    exports = []
    with tarfile.open(fileobj=io.BytesIO(collected.stdout)) as archive:
        for member in archive.getmembers():
            extracted = archive.extractfile(member) if member.isfile() else None
            kind = member.name.rsplit(".", 1)[-1]
            if extracted is not None and kind in _MEDIA:
                exports.append((member.name, _MEDIA[kind], extracted.read()))
    # Names start with the time the receiver took them in nanoseconds, then its own count.
    exports.sort(key=lambda item: tuple(int(part) for part in item[0].split(".")[0].split("-")))
    return [(media, body) for _, media, body in exports]


__all__ = ["RECEIVER", "SPOOL", "collect_exports", "start_receiver"]
