"""The router's own gRPC API (``proto/vsr/v1/router.proto``), served beside ext_proc.

``Explain`` decides a request exactly as the ext_proc stream would — same policy, same
signals — but forwards nothing, and answers with the whole trace.
"""

from __future__ import annotations

from typing import Any

import grpc
import orjson
from google.protobuf import json_format

from vsr_extproc._proto.vsr.v1 import router_pb2, router_pb2_grpc
from vsr_extproc.core.explain import explain_data
from vsr_extproc.core.router import Router
from vsr_extproc.errors import RequestError


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def explain_message(data: dict[str, Any]) -> router_pb2.ExplainResponse:
    """``explain_data`` as the protobuf answer (image indexes lifted out of values)."""
    for signal in data["signals"]:
        value = signal.get("value")
        rows = value.get("images") if isinstance(value, dict) else None
        if isinstance(rows, list):
            signal["images"] = [row["image"] for row in rows if isinstance(row, dict)]
    message = router_pb2.ExplainResponse()
    json_format.ParseDict(_without_nulls(data), message)
    return message


class RouterApi(router_pb2_grpc.RouterServicer):
    def __init__(self, router: Router) -> None:
        self.router = router

    async def Explain(  # noqa: N802 - the gRPC method name
        self, request: router_pb2.ExplainRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> router_pb2.ExplainResponse:
        body = orjson.dumps(json_format.MessageToDict(request.request))
        try:
            decision = await self.router.explain(body)
        except RequestError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        return explain_message(explain_data(decision))
