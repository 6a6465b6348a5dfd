"""A rolling update: one of two processors gets SIGTERM under steady traffic.

The processor turns NOT_SERVING and keeps accepting for its drain delay, long enough for
Envoy's health checks to take it out; then it lets in-flight streams finish. No request
may fail on the way.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator

import pytest
import yaml
from builders import chat, until, user
from stacks import ROOT, SteadyLoad, processor_health

from vsr_extproc.demo.stack import Stack, free_port, prepare_stack

pytestmark = pytest.mark.e2e


@pytest.fixture
def two_processors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    document = yaml.safe_load((ROOT / "deploy" / "examples" / "rules-only.yaml").read_text())
    document["envoy"]["processor"] = [{"port": 1}, {"port": 1}]
    document["server"]["drain_delay_s"] = 5.0
    stack = prepare_stack(document, tmp_path_factory.mktemp("rolling"), ephemeral_ports=True)
    try:
        assert stack.config.envoy is not None
        stack.start_standins()
        for number, endpoint in enumerate(stack.config.envoy.processor):
            stack.start_processor(f"processor{number}", f"127.0.0.1:{endpoint.port}",
                                  f"127.0.0.1:{free_port()}")  # fmt: skip
        stack.start_envoy()
        stack.wait_ready()
        yield stack
    finally:
        stack.stop()


async def test_sigterm_to_one_of_two_processors_loses_no_request(two_processors: Stack) -> None:
    async def both_healthy() -> bool:
        return list((await processor_health(two_processors)).values()) == ["healthy"] * 2

    async with SteadyLoad(two_processors.url, chat(user("Find the bug in my loop"))) as load:
        await until(both_healthy, "Envoy's health checks see both processors", seconds=30)
        await until(lambda: len(load.answers) >= 20, "20 requests are answered")
        leaving = two_processors.children["processor0"].process
        leaving.send_signal(signal.SIGTERM)
        exit_code = await asyncio.get_running_loop().run_in_executor(None, leaving.wait, 30)
        gone = len(load.answers)
        # the requests after it left: on the other processor alone
        await until(lambda: len(load.answers) >= gone + 20, "20 more requests are answered")
    statuses = load.statuses
    assert exit_code == 0
    assert statuses[200] > 50
    assert set(statuses) == {200}, statuses
    assert load.cut == []  # a drained processor cuts no answer short
