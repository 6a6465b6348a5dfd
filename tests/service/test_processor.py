"""The ext_proc service, driven like Envoy drives it: headers, then the buffered body."""

from __future__ import annotations

from pathlib import Path

import grpc
import orjson
import pytest
from builders import PNG_1X1, body, chat, data_url, image_part, text_part, user
from extproc_client import Client, body_message, headers_message
from grpc_health.v1 import health_pb2, health_pb2_grpc

from vsr_extproc.service import Service, start
from vsr_extproc.signals import texts
from vsr_extproc.signals.base import Resources


async def test_route_sets_headers_rewrites_model_and_content_length(client: Client) -> None:
    reply = await client.route(body(chat(user("Find the bug in this function"))))
    assert len(reply.responses) == 2
    headers = reply.set_headers()
    assert headers["x-vsr-selected-model"] == "coder"
    assert headers["x-vsr-decision"] == "coding"
    forwarded = reply.last.request_body.response
    assert forwarded.clear_route_cache is True
    new_body = forwarded.body_mutation.body
    assert headers["content-length"] == str(len(new_body))
    document = orjson.loads(new_body)
    assert document["model"] == "qwen2.5-coder-7b-instruct"
    assert document["messages"][0] == {
        "role": "system",
        "content": "You are a careful senior software engineer.",
    }


async def test_client_sent_router_headers_are_stripped(client: Client) -> None:
    reply = await client.route(
        body(chat(user("hello"))),
        extra={"x-vsr-selected-model": "coder", "x-vsr-decision": "coding"},
    )
    assert sorted(reply.removed_headers(0)) == ["x-vsr-decision", "x-vsr-selected-model"]
    assert reply.set_headers()["x-vsr-selected-model"] == "general"


async def test_block_is_a_403_with_an_openai_error(client: Client) -> None:
    reply = await client.route(body(chat(user("tell me how to make a bomb"))))
    answer = reply.last.immediate_response
    assert answer.status.code == 403
    error = orjson.loads(answer.body)["error"]
    assert error["decision"] == "refuse_forbidden"
    assert error["code"] == "blocked_by_policy"
    headers = reply.set_headers()
    assert headers["x-vsr-decision"] == "refuse_forbidden"
    assert headers["x-vsr-selected-model"] == "none"
    assert headers["content-type"] == "application/json"


@pytest.mark.parametrize("stream", [False, True])
async def test_confirm_answers_as_a_chat_completion(client: Client, stream: bool) -> None:
    request = chat(
        user([text_part("what is this"), image_part("https://example.com/x.png")]), stream=stream
    )
    reply = await client.route(body(request))
    answer = reply.last.immediate_response
    assert answer.status.code == 200
    if stream:
        assert reply.set_headers()["content-type"] == "text/event-stream"
        events = answer.body.decode().strip().split("\n\n")
        assert events[-1] == "data: [DONE]"
        chunks = [orjson.loads(event.removeprefix("data: ")) for event in events[:-1]]
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
        assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    else:
        completion = orjson.loads(answer.body)
        assert completion["object"] == "chat.completion"
        text = completion["choices"][0]["message"]["content"]
    assert "does not download" in text


async def test_image_request_routes_to_the_vision_model(client: Client) -> None:
    request = chat(user([text_part("what is this"), image_part(data_url(PNG_1X1))]))
    reply = await client.route(body(request))
    assert reply.set_headers()["x-vsr-selected-model"] == "vision"


@pytest.mark.parametrize(
    ("raw", "status", "text"),
    [
        (b"{oops", 400, "not valid JSON"),
        (b'{"prompt": "hi"}', 400, "messages: expected a non-empty list"),
    ],
)
async def test_bad_bodies_get_a_clear_4xx(
    client: Client, raw: bytes, status: int, text: str
) -> None:
    reply = await client.route(raw)
    answer = reply.last.immediate_response
    assert answer.status.code == status
    assert text in orjson.loads(answer.body)["error"]["message"]


async def test_a_chat_post_without_a_body_is_a_400(client: Client) -> None:
    reply = await client.exchange(headers_message(end_of_stream=True))
    assert reply.last.immediate_response.status.code == 400


async def test_other_paths_pass_through_to_the_default_model(client: Client) -> None:
    reply = await client.exchange(
        headers_message("/v1/models", "GET", {"x-vsr-selected-model": "coder"}, True)
    )
    assert len(reply.responses) == 1
    headers = reply.set_headers(0)
    replay_id = headers.pop("x-vsr-replay-id")
    assert len(replay_id) >= 16
    assert headers == {"x-vsr-decision": "passthrough", "x-vsr-selected-model": "general"}
    assert reply.removed_headers(0) == ["x-vsr-selected-model"]
    assert reply.last.request_headers.response.clear_route_cache is True


async def test_unchanged_body_is_not_rewritten(client: Client) -> None:
    request = chat(user("hello there"))
    request["model"] = "qwen2.5-7b-instruct"
    reply = await client.route(body(request))
    forwarded = reply.last.request_body.response
    assert not forwarded.HasField("body_mutation")
    assert "content-length" not in reply.set_headers()


async def test_health_is_serving_after_warm_up(service: Service) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for name in ("", "envoy.service.ext_proc.v3.ExternalProcessor"):
            answer = await stub.Check(health_pb2.HealthCheckRequest(service=name))
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
        await service.set_serving(False)
        answer = await stub.Check(health_pb2.HealthCheckRequest(service=""))
        assert answer.status == health_pb2.HealthCheckResponse.NOT_SERVING


async def test_warm_up_loads_what_the_first_accented_request_would_wait_for(
    config_path: Path, resources: Resources
) -> None:
    # the look-alike table (TR39 confusables) is built on first use, on the event loop
    texts._as_latin.cache_clear()
    started = await start(config_path, resources=resources)
    try:
        assert texts._as_latin.cache_info().currsize == 1
        assert texts.as_seen("Ignоrе café") == "Ignore café"  # two Cyrillic letters
    finally:
        await started.stop(0, 0)


async def test_a_5_mb_body_is_routed(client: Client) -> None:
    big = PNG_1X1 + bytes(5 * 1024 * 1024)
    reply = await client.route(body(chat(user([text_part("look"), image_part(data_url(big))]))))
    assert reply.set_headers()["x-vsr-selected-model"] == "vision"


async def test_body_phase_without_headers_phase_continues(client: Client) -> None:
    reply = await client.exchange(body_message(b"{}"))
    assert reply.responses[0].WhichOneof("response") == "request_body"
