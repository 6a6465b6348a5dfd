"""Replay across replicas: two processors behind one Envoy record into one PostgreSQL
database, so every replay id a client is given can be looked up through Envoy, whichever
processor Envoy asks.

With a SQLite file per processor, a lookup that reaches the other processor is a 404;
here every id must be found through Envoy and on each processor's own admin API, and both
processors must have decided some of the requests. Envoy keeps a worker's streams on one
processor during a short burst, so requests are sent, each on its own connection, until
both have decided some (bounded), rather than assuming a split.

Answers are measured (``responses.enabled`` without decisions): Envoy's observing filter
may hand an answer to the processor that did not decide its request, and the answer must
still join its record.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator

import httpx
import orjson
import pytest
import yaml
from builders import chat, user
from postgres import PostgresServer
from stacks import ROOT, post_chat

from vsr_extproc.demo.stack import Stack, free_port, prepare_stack

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

MOST_REQUESTS = 200


@pytest.fixture
def shared_store_stack(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer, postgres_url: str
) -> Iterator[Stack]:
    document = yaml.safe_load((ROOT / "deploy" / "examples" / "rules-only.yaml").read_text())
    document["replay"] = {"url": postgres_url}
    document["responses"] = {"enabled": True}
    document["server"]["drain_delay_s"] = 0.5
    admins = [free_port(), free_port()]
    envoy = document["envoy"]
    envoy["listen"]["port"] = free_port()
    envoy["admin"]["port"] = free_port()
    envoy["processor"] = [{"address": "127.0.0.1", "port": free_port()} for _ in admins]
    envoy["router_api"] = [{"address": "127.0.0.1", "port": port} for port in admins]
    for cluster in envoy["clusters"]:
        for endpoint in cluster["endpoints"]:
            endpoint["port"] = free_port()
    stack = prepare_stack(document, tmp_path_factory.mktemp("shared-replay"))
    try:
        assert stack.config.envoy is not None
        stack.start_standins()
        for number, (endpoint, admin) in enumerate(
            zip(stack.config.envoy.processor, admins, strict=True)
        ):
            stack.start_processor(f"processor{number}", f"127.0.0.1:{endpoint.port}",
                                  f"127.0.0.1:{admin}")  # fmt: skip
        stack.start_envoy()
        stack.wait_ready()
        yield stack
    finally:
        stack.stop()


def test_every_replay_id_is_found_through_envoy_and_on_every_processor(
    shared_store_stack: Stack,
) -> None:
    asked = ["Find the bug: my loop never ends", "hello, how are you?", "how to make a bomb"]
    decisions: dict[str, str] = {}
    deciders: Counter[str] = Counter()
    while len(deciders) < 2 and len(decisions) < MOST_REQUESTS:
        with httpx.Client(base_url=shared_store_stack.url, timeout=30.0) as client:
            answer = post_chat(client, chat(user(asked[len(decisions) % len(asked)])))
        decisions[answer.headers["x-vsr-replay-id"]] = answer.headers["x-vsr-decision"]
        deciders = _deciders(shared_store_stack, set(decisions))
    assert set(deciders) == {"processor0", "processor1"}, deciders

    assert shared_store_stack.config.envoy is not None
    apis = shared_store_stack.config.envoy.router_api
    admins = [f"http://{api.address}:{api.port}" for api in apis]
    with httpx.Client(base_url=shared_store_stack.url, timeout=30.0) as client:
        for replay_id, decision in decisions.items():
            record = _found(client, replay_id, answered=decision != "refuse_forbidden")
            assert record["decision"] == decision
            for admin in admins:  # the processor that did not decide it finds it too
                direct = httpx.get(f"{admin}/v1/router/replay/{replay_id}", timeout=10.0)
                assert direct.status_code == 200, (admin, replay_id, direct.text)
                assert direct.json()["decision"] == decision
    # every request was decided by exactly one processor: none twice, none lost
    deciders = _deciders(shared_store_stack, set(decisions))
    assert sum(deciders.values()) == len(decisions), deciders


def _found(client: httpx.Client, replay_id: str, *, answered: bool) -> dict[str, object]:
    """The record, once written (the writer flushes every 10 ms) and, for a request that
    reached a model, once its measured answer has joined it."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        answer = client.get(f"/v1/router/replay/{replay_id}")
        if answer.status_code == 200:
            record = dict(answer.json())
            response = record.get("response")
            if not answered:
                assert response is None, record
                return record
            if isinstance(response, dict):
                assert response["status"] == 200, record
                return record
        time.sleep(0.05)
    raise AssertionError(f"no record {replay_id} (answered: {answered}) through Envoy")


def _deciders(stack: Stack, ids: set[str]) -> Counter[str]:
    """How many of ``ids`` each processor decided, from its JSON log."""
    counts: Counter[str] = Counter()
    for name, child in stack.children.items():
        if not name.startswith("processor"):
            continue
        lines = child.log_path.read_text(errors="replace").splitlines()
        for number, line in enumerate(lines, start=1):
            if not line.startswith("{"):
                continue
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                if number == len(lines):
                    continue  # the processor is still writing its last line
                raise
            if entry.get("event") == "decided" and entry.get("replay_id") in ids:
                counts[name] += 1
    return counts
