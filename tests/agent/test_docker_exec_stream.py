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


def test_a_command_without_stdin_keeps_the_output_that_came_with_the_headers(tmp_path):
    """A command with no stdin was read through docker-py's `exec_start(stream=True, demux=True)`, which reads the raw
    socket too: a remote daemon's `grep -c` printed nothing, 1 run in 5 (its "0" had come with the headers)."""
    import asyncio
    import json
    from types import SimpleNamespace

    from assay.agent.sandbox.docker import DockerSandbox

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]

    def answer(connection: socket.socket) -> None:
        with connection:
            pending = b""
            while True:
                while b"\r\n\r\n" not in pending:
                    data = connection.recv(65536)
                    if not data:
                        return
                    pending += data
                head, _, pending = pending.partition(b"\r\n\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(pending) < length:
                    pending += connection.recv(65536)
                pending = pending[length:]
                path = head.split(b" ")[1]
                if path.endswith(b"/start"):  # the upgrade, with the command's whole output in the same segment
                    connection.sendall(b"HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
                                       b"Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n" + _frame(1, b"0\n"))
                    connection.shutdown(socket.SHUT_WR)
                    while connection.recv(65536):
                        pass
                    return
                body = json.dumps({"Id": "exec-1"} if path.endswith(b"/exec") else {"ExitCode": 1}).encode()
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                   b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    def daemon() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(connection,), daemon=True).start()

    threading.Thread(target=daemon, daemon=True).start()
    client = SimpleNamespace(api=docker.APIClient(base_url=f"tcp://127.0.0.1:{port}", version="1.41"))
    sandbox = DockerSandbox(client, SimpleNamespace(id="container-1"), "s", "/workspace", {}, tmp_path)
    try:
        output = asyncio.run(sandbox.exec(["grep", "-c", " /workspace ", "/proc/mounts"], env={}, cwd="/workspace",
                                          timeout=10, on_stdout=None, on_stderr=None, signals=(), user=None, stdin=None))
    finally:
        listener.close()
    assert (output.exit_code, output.stdout) == (1, b"0\n")
