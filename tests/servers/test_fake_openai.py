"""The fake OpenAI-compatible server itself: streaming, tool calls and request recording via the SDK."""

from __future__ import annotations

import asyncio
import json

from servers.fake_openai import chat_reply, json_body, tool_call


def test_streamed_reply_reassembles_to_the_scripted_content(fake_openai):
    from openai import AsyncOpenAI

    fake_openai.enqueue(chat_reply("hello streaming world, this is long enough to split"))

    async def go():
        client = AsyncOpenAI(base_url=fake_openai.base_url, api_key="k", max_retries=0)
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        parts = [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
        await client.close()
        return "".join(parts)

    assert asyncio.run(go()) == "hello streaming world, this is long enough to split"
    assert fake_openai.requests[0].body["stream"] is True


def test_tool_calls_and_responder_fallback(fake_openai):
    from openai import AsyncOpenAI

    fake_openai.enqueue(chat_reply(None, tool_calls=[tool_call("lookup", {"q": "x"}, "call_1")]))
    fake_openai.respond_with(lambda request: chat_reply(f"echo: {request.prompt}"))

    async def go():
        client = AsyncOpenAI(base_url=fake_openai.base_url, api_key="k", max_retries=0)
        first = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
        second = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "b"}])
        await client.close()
        return first, second

    first, second = asyncio.run(go())
    call = first.choices[0].message.tool_calls[0]
    assert (call.id, call.function.name, call.function.arguments) == ("call_1", "lookup", '{"q": "x"}')
    assert first.choices[0].finish_reason == "tool_calls"
    assert second.choices[0].message.content == "echo: b"


def test_arbitrary_json_bodies_are_served_verbatim(fake_openai):
    import urllib.request

    fake_openai.enqueue(json_body({"object": "response", "output": []}, status=201))
    request = urllib.request.Request(fake_openai.base_url + "/responses", data=b"{}", method="POST")
    with urllib.request.urlopen(request) as response:
        assert response.status == 201 and response.read() == b'{"object": "response", "output": []}'
    assert fake_openai.requests[0].path == "/v1/responses"


def test_replies_in_pieces_arrive_whole_and_each_request_records_its_connection(fake_openai):
    import http.client
    from urllib.parse import urlsplit

    from servers.fake_openai import in_pieces

    fake_openai.enqueue(in_pieces(chat_reply("a reply long enough to need many pieces"), 5), chat_reply("second"))
    address = urlsplit(fake_openai.base_url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=5)
    bodies = []
    for _ in range(2):
        connection.request("POST", "/v1/chat/completions", body=b"{}", headers={"Content-Type": "application/json"})
        bodies.append(json.loads(connection.getresponse().read()))
    connection.close()
    assert bodies[0]["choices"][0]["message"]["content"] == "a reply long enough to need many pieces"
    first, second = fake_openai.requests
    assert first.client_port == second.client_port != 0  # one kept-alive connection
