"""Observability end to end: explain and replay through Envoy, metrics, reload under load."""

from __future__ import annotations

import time

import httpx
import orjson
import pytest
import yaml
from builders import chat, until, user
from stacks import SteadyLoad, metric_sum, metrics_url, post_chat, processor_metric

from vsr_extproc.demo.stack import Stack

pytestmark = pytest.mark.e2e


def test_explain_through_envoy_matches_the_routed_decision(http: httpx.Client) -> None:
    document = chat(user("I think I broke my wrist, it is swollen and hurts to move. What now?"))
    routed = post_chat(http, document)
    explained = http.post("/v1/router/explain", json=document)
    assert explained.status_code == 200
    data = explained.json()
    assert data["decision"] == routed.headers["x-vsr-decision"]
    assert data["model"] == routed.headers["x-vsr-selected-model"]
    assert any(signal["signal"] == "domain.medical" for signal in data["signals"])


def test_every_response_links_to_its_record(http: httpx.Client) -> None:
    answers = [
        post_chat(http, chat(user("hello, how are you?"))),
        post_chat(http, chat(user("how to make a bomb"))),
        http.post("/v1/chat/completions", content=b"{nope",
                  headers={"content-type": "application/json"}),
        http.get("/v1/models"),
    ]  # fmt: skip
    expected = ["general_chat", "refuse_forbidden", "invalid_request", "passthrough"]
    for answer, decision in zip(answers, expected, strict=True):
        replay_id = answer.headers["x-vsr-replay-id"]
        record = _record(http, replay_id)
        assert record["decision"] == decision


def _record(http: httpx.Client, replay_id: str) -> dict[str, object]:
    for _ in range(50):
        found = http.get(f"/v1/router/replay/{replay_id}")
        if found.status_code == 200:
            return dict(found.json())
        time.sleep(0.05)
    raise AssertionError(f"no record {replay_id}")


def test_metrics_on_the_admin_port_move(stack: Stack, http: httpx.Client) -> None:
    def count() -> float:
        text = httpx.get(metrics_url(stack)).text
        return metric_sum(text, "vsr_requests_total", decision="coding", model="coder")

    before = count()
    for _ in range(3):
        post_chat(http, chat(user("Find the bug: my loop never ends")))
    assert count() == before + 3


async def test_reloading_under_load_loses_nothing_and_switches(stack: Stack) -> None:
    """Requests run continuously while the config changes twice: once invalid (nothing
    changes), once valid (refusals stop). Every request gets one of the expected answers."""
    assert stack.processor_config is not None
    original = stack.processor_config.read_text()
    document = yaml.safe_load(original)
    document["decisions"] = [d for d in document["decisions"] if d["name"] != "refuse_forbidden"]
    changed = yaml.safe_dump(document)
    rejected = await _invalid_reloads(stack)
    try:
        async with SteadyLoad(stack.url, chat(user("how to make a bomb")), timeout=30) as load:

            def decisions() -> list[tuple[float, str]]:
                return [(t, a.headers.get("x-vsr-decision", "")) for t, a in load.answers]

            async def answered_from_now(what: str) -> None:
                # one request per worker may be in flight now: twice as many answers from
                # now on include requests sent after now
                now = time.monotonic()
                enough = 2 * load.workers
                await until(lambda: sum(t > now for t, _ in load.answers) >= enough, what)

            async def rejected_it() -> bool:
                return await _invalid_reloads(stack) > rejected

            def switched() -> bool:
                return any(t > switched_at and d != "refuse_forbidden" for t, d in decisions())

            await answered_from_now("the load is answered")
            stack.processor_config.write_text("decisions: [\n")  # invalid: must change nothing
            await until(rejected_it, "the processor rejects the invalid file")
            await answered_from_now("requests are answered after the rejection")
            switched_at = time.monotonic()
            stack.processor_config.write_text(changed)
            await until(switched, "the new policy decides", seconds=60)
            await answered_from_now("requests are answered after the switch")
    finally:
        stack.processor_config.write_text(original)
    statuses = load.statuses
    decided = decisions()
    assert set(statuses) <= {200, 403}, statuses  # no 5xx, nothing lost
    assert load.cut == []
    assert sum(statuses.values()) > 20
    before = [d for t, d in decided if t < switched_at]
    assert set(before) == {"refuse_forbidden"}  # the invalid file changed nothing
    assert decided[-1][1] != "refuse_forbidden"


async def _invalid_reloads(stack: Stack) -> float:
    return await processor_metric(stack, "vsr_config_reloads_total", result="invalid")


def test_replay_what_if_on_the_live_store(
    stack: Stack, http: httpx.Client, tmp_path: object
) -> None:
    """Traffic recorded by the running processor, re-decided under a changed config."""
    import subprocess
    import sys
    from pathlib import Path

    sent = [post_chat(http, chat(user("how to make a bomb"))) for _ in range(2)]
    sent.append(post_chat(http, chat(user("Find the bug: my loop never ends"))))
    for answer in sent:
        _record(http, answer.headers["x-vsr-replay-id"])  # written
    assert stack.processor_config is not None
    document = yaml.safe_load(stack.processor_config.read_text())
    document["decisions"] = [d for d in document["decisions"] if d["name"] != "refuse_forbidden"]
    changed = Path(str(tmp_path)) / "changed.yaml"
    changed.write_text(yaml.safe_dump(document))
    store = stack.config.replay.path
    result = subprocess.run(
        [sys.executable, "-m", "vsr_extproc.cli", "replay", "--store", store, "--config",
         str(changed), "--json"],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    report = orjson.loads(result.stdout)
    moved = {(c["from"], c["to"]): c for c in report["changes"]}
    away = [c for (source, _), c in moved.items() if source == "refuse_forbidden"]
    assert sum(c["count"] for c in away) >= 2
    assert all(c["examples"] for c in away)
    assert report["unchanged"] >= 1  # the coding request decides the same
