"""Runs a trace receiver in its own process and sends it bodies built to take memory (tests only).

python receiver_bombs.py  ->  prints one JSON line: the status each bomb was answered with.
The test measures this process's peak RSS, so what the bombs cost the receiver is this process's alone.
"""

from __future__ import annotations

import gzip
import json

import httpx

from assay.agent.traces.receiver import TraceReceiver


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def empty_spans(count: int) -> bytes:
    """An ExportTraceServiceRequest of `count` empty spans: 2 bytes each on the wire."""
    return _field(1, _field(2, b"\x12\x00" * count))


def main() -> None:
    received = []
    receiver = TraceReceiver(lambda spans, token: received.append(len(spans)))
    receiver.start()
    url = f"http://127.0.0.1:{receiver.port}/v1/traces"
    statuses = {}
    with httpx.Client(timeout=120) as client:
        # ~62 KB of gzip that inflates to ~64 MiB of empty JSON objects.
        objects = b'{"resourceSpans": [' + b"{}," * (21 * 1024 * 1024) + b"{}]}"
        bomb = gzip.compress(objects, 9)
        statuses["json_objects"] = [len(bomb), client.post(url, content=bomb, headers={
            "Content-Type": "application/json", "Content-Encoding": "gzip"}).status_code]
        del objects, bomb
        # 31 M empty spans, 62 MiB of protobuf (sent gzipped).
        bomb = gzip.compress(empty_spans(31 * 1024 * 1024), 1)
        statuses["protobuf_spans"] = [len(bomb), client.post(url, content=bomb, headers={
            "Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}).status_code]
        del bomb
        # Just past the spans-per-export limit, in under a megabyte: refused after decoding, still small.
        statuses["protobuf_over_span_limit"] = [0, client.post(url, content=empty_spans(10_001), headers={
            "Content-Type": "application/x-protobuf"}).status_code]
    receiver.stop()
    print(json.dumps({"statuses": statuses, "received": received}))


if __name__ == "__main__":
    main()
