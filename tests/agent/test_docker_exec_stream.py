"""The output of `docker exec` read from an upgraded connection: bytes that arrive with the HTTP response's
headers are kept. Over a TCP proxy (a remote daemon) the first frame often comes in the same segment as the
headers; read from the raw socket it was lost, and with it a command's first line (the ledger's snapshot
then failed to parse, 1 run in 2 of tests/agent/test_sandbox_docker_workspace.py's remote-daemon test)."""

from __future__ import annotations

import socket
import threading

import docker

from assay.agent.sandbox.docker import demux_frames, stream_reader


def _frame(kind: int, payload: bytes) -> bytes:
    return bytes([kind, 0, 0, 0]) + len(payload).to_bytes(4, "big") + payload


def test_frames_sent_with_the_upgrade_headers_are_read_not_lost():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]

    def daemon() -> None:
        connection, _ = listener.accept()
        with connection:
            request = b""
            while b"\r\n\r\n" not in request:
                request += connection.recv(65536)
            head, _, body = request.partition(b"\r\n\r\n")
            length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(body) < length:  # read it all: closing on unread bytes would reset the connection
                body += connection.recv(65536)
            # headers and the first two frames in one segment, as a proxy passes them on; then the rest
            connection.sendall(b"HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
                               b"Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n"
                               + _frame(1, b"0 4b825dc6\n") + _frame(2, b"warning\n"))
            connection.sendall(_frame(1, b"12 34\n"))
            connection.shutdown(socket.SHUT_WR)  # the command's end: the reader sees the end of the stream
            while connection.recv(65536):
                pass

    thread = threading.Thread(target=daemon, daemon=True)
    thread.start()
    api = docker.APIClient(base_url=f"tcp://127.0.0.1:{port}", version="1.41")
    connection = api.exec_start("exec-id", socket=True)
    frames = list(demux_frames(stream_reader(connection)))
    getattr(connection, "_sock", connection).shutdown(socket.SHUT_RDWR)
    thread.join(timeout=10)
    listener.close()
    assert frames == [(b"0 4b825dc6\n", None), (None, b"warning\n"), (b"12 34\n", None)]
