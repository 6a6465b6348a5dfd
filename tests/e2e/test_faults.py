"""Faults end to end through a real Envoy: each one a clear answer, nothing hangs.

Every request below has a client timeout, and every test bounds its load in count and
time; everything talks to 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
import yaml
from builders import chat, image_part, text_part, until, user
from stacks import (
    ROOT,
    SteadyLoad,
    demo_document,
    post_chat,
    processor_health,
    processor_metric,
    start_stack,
)

from vsr_extproc.demo.stack import Stack

pytestmark = pytest.mark.e2e

RULES_ONLY = ROOT / "deploy" / "examples" / "rules-only.yaml"
PASSPORT = ROOT / "tests" / "data" / "images" / "passport_photo.jpg"


def _passport_request(text: str = "Summarize this.") -> dict[str, Any]:
    url = "data:image/jpeg;base64," + base64.b64encode(PASSPORT.read_bytes()).decode()
    return chat(user([text_part(text), image_part(url)]))


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The demo policy, plus signals made to fail: OCR with a 1 ms budget (a hang), and a
    vision checkpoint that cannot load (a runtime that raises); the medical cluster has a
    one-second upstream timeout."""
    document = demo_document()
    document["vision"]["model"] = str(tmp_path_factory.mktemp("no-checkpoint"))
    document["signals"]["image_text"].append({"name": "hangs", "detect": "mrz", "timeout_ms": 1})
    document["decisions"].insert(0, {
        "name": "hang_fallback", "priority": 9000,
        "rules": {"all": ["keyword.hang_probe", {"signal": "image_text.hangs",
                                                  "on_error": "match"}]},
        "action": {"type": "route", "models": ["vision"]},
    })  # fmt: skip
    document["decisions"].insert(0, {
        "name": "broken_vision", "priority": 9001,
        "rules": {"all": ["keyword.vision_probe", {"signal": "vision.medical_image",
                                                    "on_error": "match"}]},
        "action": {"type": "route", "models": ["vision"]},
    })  # fmt: skip
    document["signals"]["keyword"] += [
        {"name": "hang_probe", "any": ["hang probe"]},
        {"name": "vision_probe", "any": ["vision probe"]},
    ]
    for cluster in document["envoy"]["clusters"]:
        if cluster["name"] == "medical_vlm":
            cluster["timeout_ms"] = 1000
    stack = start_stack(document, tmp_path_factory.mktemp("faulty"))
    yield stack
    stack.stop()


@pytest.fixture
def client(faulty: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=faulty.url, timeout=30) as http:
        yield http


def _explained(faulty: Stack, document: dict[str, Any]) -> dict[str, Any]:
    with httpx.Client(base_url=faulty.url, timeout=30) as http:
        return dict(http.post("/v1/router/explain", json=document).json())


def test_a_signal_that_hangs_times_out_and_on_error_decides_in_time(
    faulty: Stack, client: httpx.Client
) -> None:
    document = _passport_request("hang probe: summarize this")
    started = time.perf_counter()
    response = post_chat(client, document)
    assert time.perf_counter() - started < 4.0  # well inside Envoy's 5 s message timeout
    assert response.status_code == 200
    assert response.headers["x-vsr-decision"] == "hang_fallback"
    signals = {s["signal"]: s for s in _explained(faulty, document)["signals"]}
    # the runner's timeout, or the signal's own answer just before it (at 95 % of its
    # budget, with the images read by then): which comes first is the scheduler's call
    assert signals["image_text.hangs"]["error"] in (
        "timed out after 1 ms",
        "image 0: not read within 1 ms",
    )


def test_a_model_runtime_that_raises_is_handled_by_on_error(
    faulty: Stack, client: httpx.Client
) -> None:
    document = _passport_request("vision probe: what is this?")
    response = post_chat(client, document)
    assert response.status_code == 200
    assert response.headers["x-vsr-decision"] == "broken_vision"
    error = {s["signal"]: s for s in _explained(faulty, document)["signals"]}[
        "vision.medical_image"
    ]["error"]
    assert "SigLIP checkpoint" in error
    assert "on_error applies" in error


def test_a_slow_upstream_times_out_at_envoy_and_the_router_is_not_blamed(
    client: httpx.Client,
) -> None:
    response = post_chat(
        client,
        chat(user("I have had a fever and a cough for a week, should I see a doctor?")),
        **{"x-standin-delay-ms": "3000"},
    )
    assert response.status_code == 504
    assert response.headers["x-vsr-decision"] == "medical_question"  # routing succeeded
    assert response.headers["x-vsr-selected-model"] == "medical"
    assert response.json()["error"]["code"] != "router_error"


def test_an_upstream_that_is_down_is_envoys_503_with_the_decision(
    faulty: Stack, client: httpx.Client
) -> None:
    faulty.children["standins"].stop()
    try:
        response = post_chat(client, chat(user("Find the bug in my loop")))
        assert response.status_code == 503
        assert response.headers["x-vsr-decision"] == "coding"
        assert "upstream" in response.json()["error"]["message"]
    finally:
        faulty.start_standins()
        faulty.wait_ready()


async def test_the_processor_killed_under_load_fails_closed_and_recovers(
    faulty: Stack,
) -> None:
    async with SteadyLoad(faulty.url, chat(user("hello there, how are you?"))) as load:
        await until(lambda: load.statuses[200] > 0, "the load is answered")
        processor = faulty.children["processor"].process
        os.kill(processor.pid, signal.SIGKILL)
        processor.wait(10)
        await asyncio.sleep(1.5)  # the gap: requests keep arriving
        faulty.start_processor()
        await _ready(faulty)
        recovered = len(load.answers)

        def succeeds_again() -> bool:
            return any(answer.status_code == 200 for _, answer in load.answers[recovered:])

        await until(succeeds_again, "a request succeeds again", seconds=30)
    statuses = load.statuses
    codes = Counter(a.json()["error"]["code"] for _, a in load.answers if a.status_code >= 500)
    assert set(statuses) <= {200, 500}, statuses  # answered, never hung
    assert statuses[500] > 0
    assert set(codes) == {"router_error"}  # the documented fail-closed answer
    assert sum(statuses.values()) > recovered  # and it recovered by itself
    # an answer already streaming through the processor when it died is cut, not passed
    # on unread: only those in flight at the kill, and only after their headers
    assert {status for _, status in load.cut} <= {200}, load.cut
    assert len(load.cut) <= load.workers


async def test_sigterm_drains_a_request_in_flight(faulty: Stack) -> None:
    """OCR of a photographed passport takes ~0.5 s: SIGTERM arrives in the middle of it."""
    body = orjson.dumps(_passport_request())
    async with httpx.AsyncClient(base_url=faulty.url, timeout=30) as client:
        pending = asyncio.create_task(
            client.post("/v1/chat/completions", content=body,
                        headers={"content-type": "application/json"})
        )  # fmt: skip
        await until(lambda: _in_flight(faulty), "the request reaches the processor", every=0.02)
        faulty.children["processor"].process.send_signal(signal.SIGTERM)
        answer = await pending
    assert answer.status_code == 200
    assert answer.headers["x-vsr-decision"] == "identity_document"
    assert faulty.children["processor"].process.wait(30) == 0
    faulty.start_processor()
    faulty.wait_ready()


async def _ready(stack: Stack, seconds: float = 120) -> None:
    """Wait, without blocking the event loop, until the processor's admin /ready says it
    is ready and Envoy's health check has seen it."""
    assert stack.config.envoy is not None
    api = stack.config.envoy.router_api[0]

    async def ready() -> bool:
        async with httpx.AsyncClient(timeout=2) as client:
            try:
                answer = await client.get(f"http://{api.address}:{api.port}/ready")
            except httpx.HTTPError:
                return False
        health = await processor_health(stack)
        return answer.status_code == 200 and list(health.values()) == ["healthy"]

    await until(ready, "Envoy's health check sees the processor ready", seconds=seconds)


async def _in_flight(stack: Stack) -> bool:
    return await processor_metric(stack, "vsr_inflight_streams") >= 1


@pytest.fixture(scope="module")
def fail_open(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    document = yaml.safe_load(RULES_ONLY.read_text())
    document["envoy"]["failure_mode_allow"] = True
    stack = start_stack(document, tmp_path_factory.mktemp("fail-open"))
    yield stack
    stack.stop()


def test_with_fail_open_a_client_still_cannot_pick_its_route(fail_open: Stack) -> None:
    spoof = {"x-vsr-selected-model": "coder", "x-vsr-decision": "coding"}
    with httpx.Client(base_url=fail_open.url, timeout=15) as client:
        routed = post_chat(client, chat(user("hello")), **spoof)
        assert routed.headers["x-standin-cluster"] == "general_llm"
        fail_open.children["processor"].stop()
        unchecked = post_chat(client, chat(user("hello")), **spoof)
    assert unchecked.status_code == 200  # fail-open: the request goes on, unchecked…
    assert unchecked.headers["x-standin-cluster"] == "general_llm"  # …to the default model
    assert unchecked.json()["vsr_standin"]["received_headers"].get("x-vsr-selected-model") is None
