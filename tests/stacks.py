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
from prometheus_client.parser import text_string_to_metric_families

from vsr_extproc.config.envoy import PROCESSOR_CLUSTER
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


def metrics_url(stack: Stack) -> str:
    """The processor's Prometheus metrics, on its admin port."""
    assert stack.config.envoy is not None
    api = stack.config.envoy.router_api[0]
    return f"http://{api.address}:{api.port}/metrics"


def metric_sum(text: str, name: str, **labels: str) -> float:
    """The sum of a metric's samples in Prometheus ``text`` whose labels include ``labels``."""
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and labels.items() <= sample.labels.items():
                total += sample.value
    return total


async def processor_metric(stack: Stack, name: str, **labels: str) -> float:
    """``metric_sum`` of the processor's metrics, read without blocking the event loop."""
    async with httpx.AsyncClient(timeout=5) as client:
        return metric_sum((await client.get(metrics_url(stack))).text, name, **labels)


async def processor_health(stack: Stack) -> dict[str, str]:
    """What Envoy's health checks last said of each processor: its address and its health
    flags on Envoy's admin /clusters, ``healthy`` or why not (``/failed_active_hc``, …)."""
    async with httpx.AsyncClient(timeout=5) as client:
        text = (await client.get(f"{stack.admin_url}/clusters")).text
    health = {}
    for line in text.splitlines():  # cluster::host::stat::value
        fields = line.split("::")
        if len(fields) == 4 and fields[0] == PROCESSOR_CLUSTER and fields[2] == "health_flags":
            health[fields[1]] = fields[3]
    return health


class SteadyLoad:
    """Background load for fault tests: ``workers`` clients sending one request over and
    over until the block ends. Bounded by the block; every answer is kept, and so is the
    status of every answer whose body was cut after its headers came (``cut``): Envoy
    resets a stream whose answer had begun when the processor guarding it dies, rather
    than pass the rest unread. A connection lost before any headers still raises."""

    def __init__(self, url: str, document: Any, *, workers: int = 4, timeout: float = 15.0) -> None:
        self.url = url
        self.body = orjson.dumps(document)
        self.workers = workers
        self.timeout = timeout
        self.answers: list[tuple[float, httpx.Response]] = []
        self.cut: list[tuple[float, int]] = []
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def statuses(self) -> Counter[int]:
        return Counter(answer.status_code for _, answer in self.answers)

    async def _send(self) -> None:
        async with httpx.AsyncClient(base_url=self.url, timeout=self.timeout) as client:
            while not self._stop.is_set():
                async with client.stream(
                    "POST",
                    "/v1/chat/completions",
                    content=self.body,
                    headers={"content-type": "application/json"},
                ) as answer:
                    try:
                        await answer.aread()
                    except (httpx.RemoteProtocolError, httpx.ReadError):
                        self.cut.append((time.monotonic(), answer.status_code))
                        continue
                self.answers.append((time.monotonic(), answer))

    async def __aenter__(self) -> SteadyLoad:
        self._tasks = [asyncio.create_task(self._send()) for _ in range(self.workers)]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)
