"""Shared pieces of the benchmarks: a processor to drive, one decision, percentiles."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vsr_extproc.demo.stack import _serving, prepare_stack

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def processor(document: dict[str, Any], timeout: float = 300.0) -> Iterator[str]:
    """Run ``vsr-extproc serve`` for a config document; yield its gRPC target once SERVING."""
    with tempfile.TemporaryDirectory(prefix="vsr-bench-") as tmp:
        stack = prepare_stack(document, Path(tmp), ephemeral_ports=True)
        stack.start_processor()
        try:
            assert stack.config.envoy is not None
            endpoint = stack.config.envoy.processor[0]
            target = f"{endpoint.address}:{endpoint.port}"
            stack.wait_until("processor", lambda: _serving(target), timeout)
            yield target
        finally:
            stack.stop()


async def decide_once(stub: Any, body: bytes) -> tuple[float, str]:
    """One request through the ext_proc stream: (milliseconds, decision)."""
    from envoy.config.core.v3 import base_pb2
    from envoy.service.ext_proc.v3 import external_processor_pb2 as ext_proc

    headers = base_pb2.HeaderMap(
        headers=[
            base_pb2.HeaderValue(key=":path", raw_value=b"/v1/chat/completions"),
            base_pb2.HeaderValue(key=":method", raw_value=b"POST"),
        ]
    )
    started = time.perf_counter()
    call = stub.Process()
    await call.write(
        ext_proc.ProcessingRequest(request_headers=ext_proc.HttpHeaders(headers=headers))
    )
    await call.read()
    await call.write(
        ext_proc.ProcessingRequest(request_body=ext_proc.HttpBody(body=body, end_of_stream=True))
    )
    answer = await call.read()
    elapsed = (time.perf_counter() - started) * 1000
    await call.done_writing()
    if answer.HasField("immediate_response"):
        options = answer.immediate_response.headers.set_headers
    else:
        options = answer.request_body.response.header_mutation.set_headers
    decision = next(
        (o.header.raw_value.decode() for o in options if o.header.key == "x-vsr-decision"), "?"
    )
    return elapsed, decision


def describe(label: str, runs: list[float], note: str = "") -> str:
    ordered = sorted(runs)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return (
        f"{label:<38} p50 {statistics.median(runs):7.1f} ms  p99 {p99:7.1f} ms  "
        f"({len(runs)} runs){note}"
    )
