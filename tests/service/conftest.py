"""The real grpc.aio processor on an ephemeral port, driven by scripted Envoy streams."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
import yaml
from extproc_client import Client

from vsr_extproc.service import Service, start
from vsr_extproc.signals.base import Resources

DEMO = Path(__file__).resolve().parents[2] / "deploy" / "demo" / "router.yaml"


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    """The demo config, listening on an ephemeral port."""
    config = yaml.safe_load(DEMO.read_text())
    config["server"]["listen"] = "127.0.0.1:0"
    config["admin"] = {"listen": "127.0.0.1:0"}
    config["replay"]["path"] = str(tmp_path / "replay.sqlite3")
    config["debug"] = {"token": "s3cret-debug-token-1"}
    config["reload"] = {"interval_ms": 200}
    path = tmp_path / "router.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="session")
def resources() -> Resources:
    """Models loaded once for the whole session, shared by every service under test."""
    return Resources()


@pytest.fixture
async def service(config_path: Path, resources: Resources) -> AsyncIterator[Service]:
    started = await start(config_path, resources=resources)
    yield started
    await started.stop(0, 0)


@pytest.fixture
async def client(service: Service) -> AsyncIterator[Client]:
    limit = 64 * 1024 * 1024
    options = [("grpc.max_receive_message_length", limit), ("grpc.max_send_message_length", limit)]
    async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}", options=options) as channel:
        yield Client(channel)
