"""Answers that are only measured: the routing stream hands its decision on and ends; the
observing stream (Envoy's ext_proc filter in observability mode) carries the answer and
is never replied to."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import httpx
import orjson
import pytest
import yaml
from builders import body, chat, until, user
from envoy.config.core.v3 import base_pb2
from envoy.service.ext_proc.v3 import external_processor_pb2 as ext_proc
from extproc_client import Client
from google.protobuf import struct_pb2
from stacks import metric_sum

from vsr_extproc.service import Service, start
from vsr_extproc.signals.base import Resources


@pytest.fixture
def measured_path(config_path: Path) -> Path:
    """The demo config with a response phase that only measures."""
    document = yaml.safe_load(config_path.read_text())
    document["responses"] = {"enabled": True}
    config_path.write_text(yaml.safe_dump(document))
    return config_path


@pytest.fixture
async def measured(measured_path: Path, resources: Resources) -> AsyncIterator[Service]:
    started = await start(measured_path, resources=resources)
    yield started
    await started.stop(0, 0)


async def _metric(service: Service, name: str, **labels: str) -> float:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{service.admin_port}") as admin:
        text = (await admin.get("/metrics")).text
    return metric_sum(text, name, **labels)


async def _answers(service: Service, **labels: str) -> float:
    return await _metric(service, "vsr_answers_total", **labels)


def _observed(
    decided: dict[str, object] | None,
    status: str = "200",
    chunks: tuple[bytes, ...] = (),
) -> list[ext_proc.ProcessingRequest]:
    """What the observing filter sends: the answer's headers, then its chunks; the
    routing filter's ``vsr`` metadata with the first message, as Envoy forwards it."""
    headers = {":status": status, "content-type": "text/event-stream"}
    first = ext_proc.ProcessingRequest(
        observability_mode=True,
        response_headers=ext_proc.HttpHeaders(
            headers=base_pb2.HeaderMap(
                headers=[
                    base_pb2.HeaderValue(key=k, raw_value=v.encode()) for k, v in headers.items()
                ]
            ),
            end_of_stream=not chunks,
        ),
    )
    if decided is not None:
        metadata = struct_pb2.Struct()
        metadata.update({"answer": decided})
        first.metadata_context.filter_metadata["vsr"].CopyFrom(metadata)
    rest = [
        ext_proc.ProcessingRequest(
            observability_mode=True,
            response_body=ext_proc.HttpBody(body=chunk, end_of_stream=i == len(chunks) - 1),
        )
        for i, chunk in enumerate(chunks)
    ]
    return [first, *rest]


async def _send_unanswered(service: Service, messages: list[ext_proc.ProcessingRequest]) -> None:
    """Stream the messages as Envoy does in observability mode: without waiting for a
    reply, and expecting none."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        call = Client(channel).stub.Process()
        for message in messages:
            await call.write(message)
        await call.done_writing()
        assert await call.read() is grpc.aio.EOF, "an observed answer is never replied to"


async def test_a_measured_decision_hands_its_answer_to_the_observing_filter(
    measured: Service,
) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{measured.port}") as channel:
        # the stream ends after the body: Client.exchange asserts it
        reply = await Client(channel).route(body(chat(user("hello there, how are you?"))))
    headers = reply.set_headers()
    assert headers["x-vsr-observe-answer"] == "1"
    decided = reply.last.dynamic_metadata.fields["vsr"].struct_value.fields["answer"]
    handed = dict(decided.struct_value.items())
    assert handed["replay_id"] == headers["x-vsr-replay-id"]
    assert handed["decision"] == headers["x-vsr-decision"] == "general_chat"
    assert handed["model"] == headers["x-vsr-selected-model"] == "general"
    assert handed["input_tokens"] == 7  # 25 characters, about four a token
    assert abs(float(handed["released_at"]) - time.time()) < 60


async def test_a_guarded_decision_keeps_its_stream_for_the_answer(client: Client) -> None:
    # the demo config has response decisions: its answers are processed in line
    reply = await client.route(body(chat(user("hello there, how are you?"))))
    assert "x-vsr-observe-answer" not in reply.set_headers()
    assert "vsr" not in reply.last.dynamic_metadata.fields


async def test_an_observed_stream_is_measured_and_joins_its_decision_record(
    measured: Service,
) -> None:
    labels = {"decision": "general_chat", "model": "general", "status": "2xx"}
    before = await _answers(measured, **labels)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{measured.port}") as channel:
        reply = await Client(channel).route(body(chat(user("hello there, how are you?"))))
    decided = dict(
        reply.last.dynamic_metadata.fields["vsr"].struct_value.fields["answer"].struct_value.items()
    )
    chunks = (
        b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n',
        b'data: {"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}\n\n',
        b"data: [DONE]\n\n",
    )
    await _send_unanswered(measured, _observed(decided, chunks=chunks))

    async def counted() -> bool:
        return await _answers(measured, **labels) == before + 1

    await until(counted, "the observed answer to be counted")
    recorder = measured.recorder
    assert recorder is not None
    replay_id = str(decided["replay_id"])

    async def recorded() -> bool:
        record = await asyncio.to_thread(recorder.get, replay_id)
        return record is not None and record.response is not None

    await until(recorded, "the answer to join its decision record")
    record = await asyncio.to_thread(recorder.get, replay_id)
    assert record is not None
    assert record.response is not None
    assert record.response["finish_reason"] == "stop"
    assert record.response["stream"] is True
    # no usage in the stream: 7 input tokens from the request, 2 output from "Hello"
    assert record.response["usage"] == {"input_tokens": 7, "output_tokens": 2, "estimated": True}
    assert record.response["timings"]["first_token_s"] is not None


async def test_an_observed_stream_without_a_decision_is_ignored(measured: Service) -> None:
    before = await _answers(measured)
    # the processor ends such a stream at its first message: Envoy then sends no more
    await _send_unanswered(measured, _observed(None, chunks=(b"data: [DONE]\n\n",))[:1])
    assert await _answers(measured) == before


async def test_an_observed_answer_is_measured_never_guarded(service: Service) -> None:
    """The demo has response decisions; an observed answer (from an Envoy config generated
    before a reload added them) cannot be held or changed, so none is said to act on it."""
    decided = {"replay_id": "r-1", "decision": "general_chat", "model": "general"}
    call = {
        "index": 0,
        "id": "c1",
        "function": {"name": "save_memory", "arguments": '{"note": "passport C01X00T47"}'},
    }
    event = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}
    chunks = (b"data: " + orjson.dumps(event) + b"\n\n", b"data: [DONE]\n\n")
    answers = await _answers(service, decision="general_chat")
    acted = await _metric(service, "vsr_response_decisions_total")

    async def counted() -> bool:
        return await _answers(service, decision="general_chat") == answers + 1

    await _send_unanswered(service, _observed(decided, chunks=chunks))
    await until(counted, "the observed answer to be counted")
    assert await _metric(service, "vsr_response_decisions_total") == acted
