"""A JSON answer whose body Envoy sends ahead of the reply to its headers (the generated
config's ``send_body_without_waiting_for_header_response``): the processor answers the
headers only once the guards have read the whole answer, so it can still be refused,
redacted or annotated; without that setting the answer is buffered by a mode override."""

from __future__ import annotations

from pathlib import Path

import grpc
import orjson
import pytest
import yaml
from builders import body, chat, user
from envoy.config.core.v3 import base_pb2
from envoy.extensions.filters.http.ext_proc.v3 import processing_mode_pb2
from envoy.service.ext_proc.v3 import external_processor_pb2 as ext_proc
from extproc_client import Client, body_message, headers_message

PASSPORT = "C01X00T47"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
STREAMED = processing_mode_pb2.ProcessingMode.STREAMED


@pytest.fixture
def config_path(config_path: Path) -> Path:
    """The demo config, with a decision that adds a header to any answer calling a tool."""
    document = yaml.safe_load(config_path.read_text())
    document["signals"]["tool_call"].append({"name": "any_call"})
    document["responses"]["decisions"].append(
        {
            "name": "note_calls",
            "priority": 1,
            "rules": "tool_call.any_call",
            "action": {"type": "annotate", "headers": {"x-agent-acted": "yes"}},
        }
    )
    config_path.write_text(yaml.safe_dump(document))
    return config_path


def _answer(message: dict[str, object]) -> bytes:
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 9, "total_tokens": 12},
    }
    return orjson.dumps(completion)


def _answer_headers(size: int) -> ext_proc.ProcessingRequest:
    values = {":status": "200", "content-type": "application/json", "content-length": str(size)}
    return ext_proc.ProcessingRequest(
        response_headers=ext_proc.HttpHeaders(
            headers=base_pb2.HeaderMap(
                headers=[
                    base_pb2.HeaderValue(key=k, raw_value=v.encode()) for k, v in values.items()
                ]
            )
        )
    )


def _parts(answer: bytes, count: int) -> list[ext_proc.ProcessingRequest]:
    size = -(-len(answer) // count)
    pieces = [answer[i : i + size] for i in range(0, len(answer), size)]
    return [
        ext_proc.ProcessingRequest(
            response_body=ext_proc.HttpBody(body=piece, end_of_stream=i == len(pieces) - 1)
        )
        for i, piece in enumerate(pieces)
    ]


async def _answered(
    client: Client, answer: bytes, *, early: bool, parts: int = 3
) -> list[ext_proc.ProcessingResponse]:
    """Route a request, then send its answer as Envoy would; every reply to the answer."""
    call = client.stub.Process()
    opening = headers_message()
    opening.protocol_config.response_body_mode = STREAMED
    opening.protocol_config.send_body_without_waiting_for_header_response = early
    await call.write(opening)
    assert (await call.read()).HasField("request_headers")
    await call.write(body_message(body(chat(user("What is the capital of France?")))))
    routed = await call.read()
    assert routed.HasField("request_body"), "the request was routed to a model"
    replies = []
    await call.write(_answer_headers(len(answer)))
    if not early:  # Envoy waits for the reply to the headers, then sends the body whole
        replies.append(await call.read())
        await call.write(_parts(answer, 1)[0])
    else:
        for part in _parts(answer, parts):
            await call.write(part)
    await call.done_writing()
    while (reply := await call.read()) is not grpc.aio.EOF:
        replies.append(reply)
    return replies


def _phases(replies: list[ext_proc.ProcessingResponse]) -> list[str]:
    return [str(reply.WhichOneof("response")) for reply in replies]


def _mutations(replies: list[ext_proc.ProcessingResponse]) -> list[bytes | None]:
    return [
        reply.response_body.response.body_mutation.body
        if reply.response_body.response.HasField("body_mutation")
        else None
        for reply in replies
        if reply.HasField("response_body")
    ]


async def test_a_benign_answer_leaves_as_it_came_once_read_whole(client: Client) -> None:
    answer = _answer({"role": "assistant", "content": "Paris is the capital of France."})
    replies = await _answered(client, answer, early=True)
    # no override was asked for: the headers were answered once the answer was read whole,
    # then each part, unchanged
    assert _phases(replies) == [
        "response_headers",
        "response_body",
        "response_body",
        "response_body",
    ]
    assert "content-length" in list(
        replies[0].response_headers.response.header_mutation.remove_headers
    )
    assert not replies[0].HasField("mode_override")
    assert _mutations(replies) == [None, None, None]


async def test_a_memory_write_with_a_passport_is_refused_before_its_headers_leave(
    client: Client,
) -> None:
    arguments = orjson.dumps({"note": f"Jane Doe, passport number {PASSPORT}"}).decode()
    call = {"id": "c1", "type": "function",
            "function": {"name": "save_memory", "arguments": arguments}}  # fmt: skip
    answer = _answer({"role": "assistant", "content": None, "tool_calls": [call]})
    replies = await _answered(client, answer, early=True)
    assert _phases(replies) == ["immediate_response"]
    refusal = replies[0].immediate_response
    assert refusal.status.code == 403
    assert orjson.loads(refusal.body)["error"]["decision"] == "refuse_memory_pii"
    assert PASSPORT.encode() not in refusal.body


async def test_a_key_in_an_answer_read_whole_is_redacted(client: Client) -> None:
    text = f"Use aws_access_key_id={AWS_KEY} in the config."
    answer = _answer({"role": "assistant", "content": text})
    replies = await _answered(client, answer, early=True)
    assert _phases(replies)[0] == "response_headers"
    sent = b"".join(part or b"" for part in _mutations(replies))
    assert AWS_KEY.encode() not in sent
    assert "<SECRET_1>" in orjson.loads(sent)["choices"][0]["message"]["content"]


async def test_headers_a_decision_adds_travel_with_the_held_headers(client: Client) -> None:
    call = {"id": "c1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}  # fmt: skip
    answer = _answer({"role": "assistant", "content": None, "tool_calls": [call]})
    replies = await _answered(client, answer, early=True)
    assert _phases(replies)[0] == "response_headers"
    set_headers = replies[0].response_headers.response.header_mutation.set_headers
    assert {h.header.key: h.header.raw_value for h in set_headers} == {"x-agent-acted": b"yes"}
    assert _mutations(replies) == [None, None, None]


async def test_without_early_bodies_a_json_answer_is_buffered_by_a_mode_override(
    client: Client,
) -> None:
    answer = _answer({"role": "assistant", "content": "Paris is the capital of France."})
    replies = await _answered(client, answer, early=False)
    assert _phases(replies) == ["response_headers", "response_body"]
    mode = replies[0].mode_override.response_body_mode
    assert mode == processing_mode_pb2.ProcessingMode.BUFFERED
