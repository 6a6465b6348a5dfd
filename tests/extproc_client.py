"""A scripted Envoy: drives the processor's ext_proc stream the way Envoy does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc
from envoy.config.core.v3 import base_pb2
from envoy.service.ext_proc.v3 import external_processor_pb2 as ext_proc
from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as ext_proc_grpc


def headers_message(
    path: str = "/v1/chat/completions",
    method: str = "POST",
    extra: dict[str, str] | None = None,
    end_of_stream: bool = False,
) -> ext_proc.ProcessingRequest:
    values = {":path": path, ":method": method, ":authority": "router", "x-request-id": "r-1"}
    values.update(extra or {})
    return ext_proc.ProcessingRequest(
        request_headers=ext_proc.HttpHeaders(
            headers=base_pb2.HeaderMap(
                headers=[
                    base_pb2.HeaderValue(key=k, raw_value=v.encode()) for k, v in values.items()
                ]
            ),
            end_of_stream=end_of_stream,
        )
    )


def body_message(body: bytes) -> ext_proc.ProcessingRequest:
    return ext_proc.ProcessingRequest(request_body=ext_proc.HttpBody(body=body, end_of_stream=True))


@dataclass
class Reply:
    """What the processor answered on one stream."""

    responses: list[ext_proc.ProcessingResponse]

    @property
    def last(self) -> ext_proc.ProcessingResponse:
        return self.responses[-1]

    def set_headers(self, index: int = -1) -> dict[str, str]:
        response = self.responses[index]
        phase = response.WhichOneof("response")
        if phase == "immediate_response":
            mutation = response.immediate_response.headers
        else:
            mutation = getattr(response, phase).response.header_mutation
        return {h.header.key: h.header.raw_value.decode() for h in mutation.set_headers}

    def removed_headers(self, index: int = 0) -> list[str]:
        response = self.responses[index]
        phase = response.WhichOneof("response")
        return list(getattr(response, phase).response.header_mutation.remove_headers)


class Client:
    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.stub = ext_proc_grpc.ExternalProcessorStub(channel)

    async def exchange(self, *messages: ext_proc.ProcessingRequest) -> Reply:
        """Send the messages one by one, as Envoy does, collecting every answer."""
        call = self.stub.Process()
        responses = []
        for message in messages:
            await call.write(message)
            response = await call.read()
            if response is grpc.aio.EOF:
                break
            responses.append(response)
        await call.done_writing()
        rest = await call.read()
        assert rest is grpc.aio.EOF, "the processor must end the stream after its last answer"
        return Reply(responses)

    async def route(self, body: bytes, **header_options: Any) -> Reply:
        return await self.exchange(headers_message(**header_options), body_message(body))
