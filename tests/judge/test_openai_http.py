"""The transport's pieces that need no server: server-sent-event decoding, status details, body bytes."""

from __future__ import annotations

import asyncio
import datetime
import json

import pytest

from assay.judge.openai_http import EventStreamDecoder, encode_body, request_headers, status_detail


def decode(*chunks: bytes) -> list[bytes]:
    decoder = EventStreamDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.finish()


STREAM = (
    b": a comment the server sends to keep the line open\n"
    b"event: response.created\nid: 1\nretry: 5\ndata: {\"a\": 1}\n\n"
    b"data: first line\ndata:second line\n\n"
    b"data: [DONE]\n\n"
)


def test_each_event_yields_its_data_with_multi_line_data_joined():
    assert decode(STREAM) == [b'{"a": 1}', b"first line\nsecond line", b"[DONE]"]


@pytest.mark.parametrize("newline", [b"\r\n", b"\r"])
def test_crlf_and_lone_cr_end_lines_too(newline):
    assert decode(STREAM.replace(b"\n", newline)) == decode(STREAM)


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_events_split_anywhere_across_reads_decode_the_same(newline):
    stream = STREAM.replace(b"\n", newline)
    assert decode(*(stream[i : i + 1] for i in range(len(stream)))) == decode(STREAM)
    for cut in range(len(stream)):
        assert decode(stream[:cut], stream[cut:]) == decode(STREAM), cut


def test_a_last_event_without_its_blank_line_is_still_delivered_and_empty_events_are_not():
    assert decode(b'data: {"a": 1}\n\ndata: {"cut": tr') == [b'{"a": 1}', b'{"cut": tr']
    assert decode(b"data:\n\ndata\n\n: only a comment\n\n") == []


def test_status_detail_is_the_openai_error_message_or_an_excerpt_of_the_body():
    assert status_detail(429, b'{"error": {"message": "slow down", "type": "rate_limit"}}') == "HTTP 429: slow down"
    assert status_detail(404, b'{"detail": "Not Found"}') == 'HTTP 404: {"detail": "Not Found"}'
    assert status_detail(503, b"") == "HTTP 503"
    assert status_detail(500, {"error": "plain words"}) == "HTTP 500: plain words"
    long = status_detail(502, ("<p>bad\n\n gateway</p>" * 50).encode())
    assert long.startswith("HTTP 502: <p>bad gateway</p><p>bad gateway</p>") and long.endswith("…")
    assert len(long) == len("HTTP 502: ") + 201


def test_bodies_are_the_sdks_bytes_compact_and_unescaped():
    body = {"model": "m", "messages": [{"role": "user", "content": "Grüße 東京"}], "temperature": 0.0}
    assert encode_body(body) == json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    assert encode_body({"at": datetime.datetime(2026, 1, 2, 3, 4, 5)}) == b'{"at":"2026-01-02T03:04:05"}'
    with pytest.raises(ValueError):
        encode_body({"temperature": float("nan")})


def test_headers_carry_the_key_and_the_organization_and_project_from_the_environment():
    headers = request_headers("k", {"OPENAI_ORG_ID": "org", "OPENAI_PROJECT_ID": ""})
    assert headers["Authorization"] == "Bearer k" and headers["OpenAI-Organization"] == "org"
    assert "OpenAI-Project" not in headers and headers["Content-Type"] == headers["Accept"] == "application/json"
    assert "Authorization" not in request_headers(None, {})


@pytest.mark.parametrize(
    ("base_url", "said"),
    [
        ("http://127.0.0.1:187310/v1", "the base URL is not a valid URL (Port out of range 0-65535)"),
        ("http://[::1/v1", "the base URL is not a valid URL"),
        ("htp://127.0.0.1:8000/v1", "the base URL is not an http(s) URL; give one like http://127.0.0.1:8000/v1"),
        ("127.0.0.1:8000/v1", "the base URL is not an http(s) URL; give one like http://127.0.0.1:8000/v1"),
    ],
)
def test_the_preflight_probe_says_why_a_base_url_is_no_url_and_never_raises(base_url, said):
    # A judge's base_url with a typo once stopped the whole run as "internal error: ValueError".
    from assay.judge.openai_http import probe_endpoint

    reason = asyncio.run(probe_endpoint(base_url, api_key=None, timeout=2))
    assert reason is not None and reason.startswith(said)


def test_the_preflight_probe_passes_an_endpoint_that_answers(fake_openai):
    from assay.judge.openai_http import probe_endpoint

    assert asyncio.run(probe_endpoint(fake_openai.base_url, api_key=None, timeout=5)) is None
    assert [request.path for request in fake_openai.requests] == ["/v1/models"]


def test_a_byte_order_mark_opening_the_body_is_skipped_wherever_the_chunks_split_it():
    """The SSE standard skips it (browsers do); it was read into the first line, so the first event was lost."""
    body = b"\xef\xbb\xbfdata: {\"a\": 1}\n\ndata: {\"b\": 2}\n\n"
    for cut in range(len(body) + 1):
        decoder = EventStreamDecoder()
        events = decoder.feed(body[:cut]) + decoder.feed(body[cut:]) + decoder.finish()
        assert events == [b'{"a": 1}', b'{"b": 2}'], cut
    decoder = EventStreamDecoder()  # one later in the body is data, as the standard says
    assert decoder.feed(b"data: x\xef\xbb\xbf\n\n") == [b"x\xef\xbb\xbf"]
