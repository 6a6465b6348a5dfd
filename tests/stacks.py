"""Local stacks for the end-to-end tier: a real Envoy, the processor, stand-in upstreams."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import orjson
import yaml

from vsr_extproc.demo.stack import Stack, prepare_stack

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "deploy" / "demo" / "router.yaml"


def demo_document() -> dict[str, Any]:
    return yaml.safe_load(DEMO.read_text())


def start_stack(document: dict[str, Any], tmp: Path) -> Stack:
    """Start a stack on ephemeral ports and wait until every part is ready."""
    document = {**document, "server": {**document.get("server", {}), "drain_delay_s": 0.5}}
    stack = prepare_stack(document, tmp, ephemeral_ports=True)
    try:
        stack.start_standins()
        stack.start_processor()
        stack.start_envoy()
        stack.wait_ready()
    except BaseException:
        stack.stop()
        raise
    return stack


def post_chat(client: httpx.Client, document: Any, **headers: str) -> httpx.Response:
    return client.post(
        "/v1/chat/completions",
        json=document,
        headers={"content-type": "application/json", **headers},
    )


class SteadyLoad:
    """Background load for fault tests: ``workers`` clients sending one request over and
    over until the block ends. Bounded by the block; every answer is kept."""

    def __init__(self, url: str, document: Any, *, workers: int = 4, timeout: float = 15.0) -> None:
        self.url = url
        self.body = orjson.dumps(document)
        self.workers = workers
        self.timeout = timeout
        self.answers: list[tuple[float, httpx.Response]] = []
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def statuses(self) -> Counter[int]:
        return Counter(answer.status_code for _, answer in self.answers)

    async def _send(self) -> None:
        async with httpx.AsyncClient(base_url=self.url, timeout=self.timeout) as client:
            while not self._stop.is_set():
                answer = await client.post(
                    "/v1/chat/completions",
                    content=self.body,
                    headers={"content-type": "application/json"},
                )
                self.answers.append((time.monotonic(), answer))

    async def __aenter__(self) -> SteadyLoad:
        self._tasks = [asyncio.create_task(self._send()) for _ in range(self.workers)]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)
