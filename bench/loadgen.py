"""A small, low-overhead HTTP/1.1 load generator for loopback benchmarks.

Python clients such as httpx spend more CPU per request than the processor under test, and
on a 2-core machine that skews every number. This one keeps persistent connections, writes
pre-encoded requests and parses only the status line and Content-Length.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class LoadResult:
    latencies_ms: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    errors: int = 0
    elapsed_s: float = 0.0

    @property
    def requests(self) -> int:
        return len(self.latencies_ms)

    @property
    def rate(self) -> float:
        return self.requests / self.elapsed_s if self.elapsed_s else 0.0

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        if not ordered:
            return float("nan")
        index = min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))
        return ordered[index]


def encode_request(
    host: str, path: str, body: bytes, headers: Sequence[tuple[str, str]] = ()
) -> bytes:
    lines = [
        f"POST {path} HTTP/1.1",
        f"host: {host}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        *(f"{name}: {value}" for name, value in headers),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    chunked = False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if chunked:
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    elif length:
        await reader.readexactly(length)
    return status


async def _connection(
    host: str,
    port: int,
    requests: Sequence[bytes],
    deadline: float,
    budget: list[int],
    result: LoadResult,
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    position = 0
    try:
        while time.perf_counter() < deadline and budget[0] > 0:
            budget[0] -= 1
            payload = requests[position % len(requests)]
            position += 1
            started = time.perf_counter()
            writer.write(payload)
            try:
                status = await _read_response(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                result.errors += 1
                writer.close()
                reader, writer = await asyncio.open_connection(host, port)
                continue
            result.latencies_ms.append((time.perf_counter() - started) * 1000)
            result.statuses[status] = result.statuses.get(status, 0) + 1
    finally:
        writer.close()


async def run_load(
    host: str,
    port: int,
    requests: Sequence[bytes],
    *,
    concurrency: int,
    duration_s: float,
    max_requests: int = 1_000_000,
) -> LoadResult:
    """Send ``requests`` round-robin on ``concurrency`` connections for ``duration_s``."""
    result = LoadResult()
    budget = [max_requests]
    started = time.perf_counter()
    deadline = started + duration_s
    await asyncio.gather(
        *(_connection(host, port, requests, deadline, budget, result) for _ in range(concurrency))
    )
    result.elapsed_s = time.perf_counter() - started
    return result
