"""Start-up, readiness and graceful drain of the processor."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import grpc
import orjson
import pytest
import yaml
from builders import body, chat, image_part, text_part, until, user
from extproc_client import Client, body_message, headers_message
from grpc_health.v1 import health_pb2, health_pb2_grpc

from vsr_extproc.config.compile import read_config
from vsr_extproc.demo.stack import free_port
from vsr_extproc.service import Service, build, start
from vsr_extproc.signals.base import Resources


async def test_in_flight_streams_finish_during_drain(service: Service) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        call = Client(channel).stub.Process()
        await call.write(headers_message())
        await call.read()
        stopping = asyncio.create_task(service.stop(grace_s=5.0, drain_delay_s=0))
        await until(lambda: _refuses_new_connections(service), "the server is draining")
        await call.write(body_message(body(chat(user("find the bug")))))
        answer = await call.read()
        headers = {
            h.header.key: h.header.raw_value.decode()
            for h in answer.request_body.response.header_mutation.set_headers
        }
        assert headers["x-vsr-decision"] == "coding"
        await call.done_writing()  # the stream ends: stop need not wait out its grace
        await stopping
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=2
            )
        assert refused.value.code() is grpc.StatusCode.UNAVAILABLE


async def test_health_turns_not_serving_before_the_server_stops(service: Service) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        call = Client(channel).stub.Process()
        await call.write(headers_message())
        await call.read()
        stopping = asyncio.create_task(service.stop(grace_s=5.0, drain_delay_s=0))
        not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
        # well inside the 5 s grace, which the open stream holds the server in
        await until(lambda: _health(service, not_serving), "health says NOT_SERVING", seconds=2)
        assert not stopping.done()
        await call.done_writing()
        await stopping


async def _refuses_new_connections(service: Service) -> bool:
    """Whether a new connection is refused: the server has begun to stop."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as fresh:
        try:
            await health_pb2_grpc.HealthStub(fresh).Check(
                health_pb2.HealthCheckRequest(), timeout=1
            )
        except grpc.aio.AioRpcError as refused:
            return refused.code() is grpc.StatusCode.UNAVAILABLE
    return False


async def _health(service: Service, status: int) -> bool:
    answer = await service.health.Check(health_pb2.HealthCheckRequest(), None)
    return bool(answer.status == status)


async def test_an_undecodable_image_is_still_decided(client: Client) -> None:
    broken = "data:image/png;base64," + "iVBORw0KGgo" + "!!!!"
    reply = await client.route(body(chat(user([text_part("what is this?"), image_part(broken)]))))
    # decided, not failed: the OCR signals report the bad image, and the demo policy treats
    # an image it cannot read as possibly an identity document (kept on premises)
    assert reply.set_headers()["x-vsr-decision"] == "identity_document"
    assert reply.set_headers()["x-vsr-selected-model"] == "restricted"


def test_sigterm_drains_and_exits_cleanly(config_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vsr_extproc.cli",
            "serve",
            "--config",
            str(config_path),
            "--listen",
            f"127.0.0.1:{port}",
            "--log-json",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = []
        for line in process.stderr or ():
            lines.append(line)
            if '"serving"' in line:
                break
        os.kill(process.pid, signal.SIGTERM)
        rest = process.communicate(timeout=20)[1]
        assert process.returncode == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    events = [orjson.loads(line)["event"] for line in (*lines, *rest.splitlines()) if line]
    assert events[-4:] == ["serving", "draining", "not_serving", "stopped"]


async def test_two_processors_cannot_share_a_port(config_path: Path, resources: Resources) -> None:
    first = await start(config_path, "127.0.0.1:0", resources)
    try:
        with pytest.raises(OSError, match=r"cannot listen on .*: the address is in use"):
            await start(config_path, f"127.0.0.1:{first.port}", resources)
    finally:
        await first.stop(0, 0)


async def test_build_returns_the_service_wired_and_bound_but_not_started(
    config_path: Path, resources: Resources
) -> None:
    service = build(config_path, "127.0.0.1:0", resources)
    try:
        assert service.port > 0  # bound, so a second processor on it would be refused
        assert not service.serving
        assert service.admin is None  # the admin port opens only when it starts
        assert service.processor.observer is service.observer
        assert service.observer.recorder is service.recorder is not None
        assert service.router.fetcher is service.fetcher
        assert service.digest == read_config(config_path)[1]
        assert service.router.policy.fingerprint == service.digest
    finally:
        await service.server.stop(None)
        if service.recorder is not None:
            service.recorder.close()


@pytest.fixture
def fetching_config(config_path: Path) -> Path:
    document = yaml.safe_load(config_path.read_text())
    document["images"] = {"fetch": {"enabled": True, "allow_hosts": ["images.example.com"]}}
    enabled = config_path.with_name("fetching.yaml")
    enabled.write_text(yaml.safe_dump(document))
    return enabled


async def test_remote_images_are_fetched_only_when_enabled(
    config_path: Path, fetching_config: Path, resources: Resources
) -> None:
    fetching = await start(fetching_config, "127.0.0.1:0", resources)
    closed = await start(config_path, "127.0.0.1:0", resources)
    try:
        assert fetching.router.fetcher is not None
        assert closed.router.fetcher is None
    finally:
        await fetching.stop(0, 0)
        await closed.stop(0, 0)


def test_sighup_reloads_the_config(config_path: Path) -> None:
    document = yaml.safe_load(config_path.read_text())
    document["reload"] = {"watch": False}
    config_path.write_text(yaml.safe_dump(document))
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "vsr_extproc.cli", "serve", "--config", str(config_path),
         "--listen", f"127.0.0.1:{port}", "--log-json"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if '"serving"' in line:
                break
        document["decisions"] = document["decisions"][1:]
        config_path.write_text(yaml.safe_dump(document))
        os.kill(process.pid, signal.SIGHUP)
        for line in process.stderr:
            if '"reloaded"' in line:
                assert orjson.loads(line)["why"] == "SIGHUP"
                break
        os.kill(process.pid, signal.SIGTERM)
        process.communicate(timeout=30)
        assert process.returncode == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
