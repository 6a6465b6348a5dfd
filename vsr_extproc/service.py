"""Run the processor: the gRPC server, its health service, warm-up and graceful drain.

The health service reports SERVING only after the policy is compiled (models loaded) and
one synthetic request has run through every signal (models warmed). SIGTERM turns health
to NOT_SERVING, stops accepting new streams and lets in-flight ones finish within the
configured grace period.
"""

from __future__ import annotations

import asyncio
import base64
import signal
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import grpc
import orjson
import structlog
from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as ext_proc_grpc
from grpc_health.v1 import _async as health_async
from grpc_health.v1 import health_pb2, health_pb2_grpc

from vsr_extproc.config.compile import load_policy
from vsr_extproc.config.schema import RouterConfig
from vsr_extproc.core.router import Router
from vsr_extproc.envoy.servicer import ExternalProcessor
from vsr_extproc.fetch import RemoteImageFetcher
from vsr_extproc.signals.base import Resources

log = structlog.get_logger("vsr_extproc.service")

EXT_PROC_SERVICE = "envoy.service.ext_proc.v3.ExternalProcessor"


def _warm_up_image(width: int = 64, height: int = 48) -> str:
    """A small grey PNG as a data URL, written without an imaging library."""
    raw = b"".join(b"\x00" + b"\x80\x80\x80" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
    return "data:image/png;base64," + base64.b64encode(png + chunk(b"IEND", b"")).decode()


# one request that touches every signal family a config can reference, images included
_WARM_UP_BODY = orjson.dumps(
    {
        "model": "auto",
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Warm-up: summarise the plot of a short story."},
                    {"type": "image_url", "image_url": {"url": _warm_up_image()}},
                ],
            },
        ],
    }
)


@dataclass
class Service:
    """A started processor: its server, router, health servicer and bound port."""

    server: grpc.aio.Server
    router: Router
    health: health_async.HealthServicer
    fetcher: RemoteImageFetcher | None
    port: int
    config: RouterConfig
    config_path: Path
    resources: Resources

    async def warm_up(self) -> None:
        await self.router.explain(_WARM_UP_BODY)

    async def set_serving(self, serving: bool) -> None:
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if serving
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for name in ("", EXT_PROC_SERVICE):
            await self.health.set(name, status)

    async def stop(self, grace_s: float | None = None) -> None:
        await self.set_serving(False)
        grace = self.config.server.grace_period_s if grace_s is None else grace_s
        await self.server.stop(grace)
        if self.fetcher is not None:
            await self.fetcher.close()


async def start(
    config_path: str | Path, listen: str | None = None, resources: Resources | None = None
) -> Service:
    """Load the config, start serving on ``listen`` (host:port; port 0 picks one).

    ``resources`` lets several services in one process share loaded models.
    """
    path = Path(config_path)
    resources = resources or Resources()
    config, policy = load_policy(path, resources)
    fetch = config.images.fetch
    fetcher = RemoteImageFetcher(fetch) if fetch.enabled else None
    router = Router(policy, fetcher=fetcher)
    limit = config.server.max_message_bytes
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", limit),
            # two processes silently sharing a port would split nothing: one gets every
            # stream. Refuse to start instead.
            ("grpc.so_reuseport", 0),
        ]
    )
    ext_proc_grpc.add_ExternalProcessorServicer_to_server(ExternalProcessor(router), server)
    health = health_async.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    address = listen or config.server.listen
    try:
        port = server.add_insecure_port(address)
    except RuntimeError:  # gRPC's way of saying the bind failed
        port = 0
    if port == 0:
        raise OSError(f"cannot listen on {address}: the address is in use or not available")
    service = Service(server, router, health, fetcher, port, config, path, resources)
    await service.set_serving(False)
    await server.start()
    await service.warm_up()
    await service.set_serving(True)
    log.info(
        "serving",
        address=address.rsplit(":", 1)[0] + f":{port}",
        policy=policy.fingerprint,
        decisions=len(policy.decisions),
        signals=sorted(policy.signals),
    )
    return service


async def serve(config_path: str | Path, listen: str | None = None) -> None:
    """Serve until SIGTERM or SIGINT, then drain."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    service = await start(config_path, listen)
    await stopping.wait()
    log.info("draining", grace_s=service.config.server.grace_period_s)
    await service.stop()
    log.info("stopped")
