"""The admin port's replay lookup: the store is read off the event loop that also serves
ext_proc, and a store that cannot answer is a 503, not a crash."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from vsr_extproc.admin import make_admin_app
from vsr_extproc.config.compile import load_policy
from vsr_extproc.core.router import Router
from vsr_extproc.errors import ReplayStoreUnavailable
from vsr_extproc.metrics import Metrics
from vsr_extproc.replay import ReplayRecord

RULES_ONLY = Path(__file__).resolve().parents[2] / "deploy" / "examples" / "rules-only.yaml"

RECORD = ReplayRecord(
    id="r1",
    time=1.0,
    request_id="req",
    request_hash="0" * 64,
    policy="p",
    decision="coding",
    outcome="routed",
    model="coder",
    signals={},
    trace={},
    response={"status": 200},
)


class HeldStore:
    """A store whose read waits until the test lets it go (or gives up after a while)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def get(self, replay_id: str) -> ReplayRecord | None:
        self.entered.set()
        return RECORD if self.release.wait(2.0) else None


class DownStore:
    def get(self, replay_id: str) -> ReplayRecord | None:
        raise ReplayStoreUnavailable("postgresql://vsr:***@db.internal:5432/replay is unreachable")


async def serve(records: Any) -> AsyncIterator[str]:
    app = make_admin_app(
        Router(load_policy(RULES_ONLY)[1]), Metrics(), records, lambda: True,
        max_body_bytes=1 << 20,
    )  # fmt: skip
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.fixture
def held() -> HeldStore:
    return HeldStore()


@pytest.fixture
async def held_admin(held: HeldStore) -> AsyncIterator[str]:
    async for url in serve(held):
        yield url


async def test_a_slow_store_read_does_not_hold_up_the_event_loop(
    held: HeldStore, held_admin: str
) -> None:
    """The store answers only once a coroutine on the same loop lets it go: a read on the
    loop itself would wait out its 2 s and find nothing (404)."""
    async with httpx.AsyncClient(base_url=held_admin, timeout=10) as client:
        lookup = asyncio.create_task(client.get("/v1/router/replay/r1"))
        assert await asyncio.to_thread(held.entered.wait, 5.0)
        held.release.set()
        answer = await lookup
    assert answer.status_code == 200
    assert answer.json()["response"] == {"status": 200}


async def test_a_store_that_cannot_answer_is_a_503_that_names_no_database() -> None:
    async for url in serve(DownStore()):
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            answer = await client.get("/v1/router/replay/r1")
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "replay_unavailable"
    assert "db.internal" not in answer.text
