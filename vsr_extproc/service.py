"""Run the processor: the gRPC server, its health service, warm-up, reload and drain.

The gRPC server carries ext_proc, the router's own API (``vsr.v1.Router``) and the
health service; an HTTP admin port carries metrics, explain and replay. Health reports
SERVING only after the policy is compiled (models loaded) and one synthetic request has
run through every signal (models warmed). The config file is watched (and SIGHUP
reloads it): a valid file becomes the new policy in one swap, an invalid one changes
nothing. SIGTERM turns health to NOT_SERVING, stops accepting new streams and lets
in-flight ones finish within the configured grace period.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import hashlib
import inspect
import ipaddress
import signal
import struct
import zlib
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import orjson
import structlog
from aiohttp import web
from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as ext_proc_grpc
from grpc_health.v1 import _async as health_async
from grpc_health.v1 import health_pb2, health_pb2_grpc

from vsr_extproc._proto.vsr.v1 import router_pb2_grpc
from vsr_extproc.admin import make_admin_app
from vsr_extproc.config.compile import compile_policy, read_config
from vsr_extproc.config.schema import RouterConfig
from vsr_extproc.core.policy import Policy
from vsr_extproc.core.router import Router
from vsr_extproc.core.runner import SignalRunner
from vsr_extproc.detectors import Detector
from vsr_extproc.envoy.api import RouterApi
from vsr_extproc.envoy.servicer import DebugAccess, ExternalProcessor
from vsr_extproc.errors import ConfigError
from vsr_extproc.fetch import RemoteImageFetcher
from vsr_extproc.metrics import Metrics
from vsr_extproc.observe import Observer
from vsr_extproc.signals import finding_counts
from vsr_extproc.signals.base import Resources

if TYPE_CHECKING:
    from vsr_extproc.replay.store import ReplayRecorder

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


# One request that touches every signal family a config can reference, images included,
# and the lazily loaded tables a first user would otherwise pay for on the event loop:
# look-alike letters for accented Latin text (about 90 ms), phone metadata (about 35 ms).
_WARM_UP_TEXT = "Warm-up: summarise the plot of a short story set in a café, tel. +1 415 555 0132."
_WARM_UP_BODY = orjson.dumps(
    {
        "model": "auto",
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": _WARM_UP_TEXT},
                    {"type": "image_url", "image_url": {"url": _warm_up_image()}},
                ],
            },
        ],
    }
)


@dataclass
class Service:
    """A started processor: its servers, router, health, metrics and decision records."""

    server: grpc.aio.Server
    router: Router
    health: health_async.HealthServicer
    fetcher: RemoteImageFetcher | None
    port: int
    config: RouterConfig
    config_path: Path
    resources: Resources
    metrics: Metrics
    recorder: ReplayRecorder | None
    observer: Observer
    #: the ext_proc servicer (its debug access is swapped on reload)
    processor: ExternalProcessor
    #: the content digest of the config file the live policy was compiled from
    digest: str
    admin: web.AppRunner | None = None
    admin_port: int | None = None
    serving: bool = False
    #: the config whose live sections (debug, images.fetch, reload) are applied; ``config``
    #: stays the one the processor started with
    live_config: RouterConfig = field(init=False)
    #: the content of the last file that failed to load: not reported again until it changes
    _failed_digest: str = ""
    _watcher: asyncio.Task[None] | None = None
    _settling: asyncio.Task[None] | None = None
    _reloading: asyncio.Lock = field(default_factory=asyncio.Lock)

    def __post_init__(self) -> None:
        self.live_config = self.config

    async def warm_up(self, policy: Policy | None = None) -> None:
        await self.router.explain(_WARM_UP_BODY, policy)

    async def set_serving(self, serving: bool) -> None:
        self.serving = serving
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if serving
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for name in ("", EXT_PROC_SERVICE):
            await self.health.set(name, status)

    async def reload(self, why: str) -> bool:
        """Validate and compile the config file again; swap the policy only if both work.

        New models load (and the policy warms up) before the swap; models the new policy no
        longer uses are released after it. Requests in flight keep the policy they started
        with. An invalid file changes nothing but a log line and a counter.
        """
        async with self._reloading:
            try:
                config, digest = read_config(self.config_path)
            except ConfigError as exc:
                return self._reload_failed(why, exc)
            if digest == self.digest and why == "changed":
                return True
            loop = asyncio.get_running_loop()
            try:
                policy = await loop.run_in_executor(
                    None, partial(compile_policy, config, self.resources, fingerprint=digest)
                )
                await self.warm_up(policy)
            except ConfigError as exc:
                return self._reload_failed(why, exc)
            except Exception as exc:  # a model that cannot load, a checkpoint that mismatches
                log.exception("reload_failed", why=why, keeping=self.router.policy.fingerprint)
                return self._reload_failed(why, ConfigError([f"{type(exc).__name__}: {exc}"]))
            previous = self.router.swap(policy)
            self.digest = digest
            released = self.resources.release_unused()
            for leftover in released:
                if inspect.isawaitable(leftover):
                    await leftover
            if released and gc.get_freeze_count():
                # Released models may sit in the frozen heap, where nothing is collected:
                # thaw it now, and freeze it again once the requests that started on the
                # old policy have had their time (the drain grace period) to finish.
                gc.unfreeze()
                if self._settling is not None:
                    self._settling.cancel()
                self._settling = asyncio.create_task(
                    _freeze_later(self.config.server.grace_period_s)
                )
            self.metrics.reloads.labels("success").inc()
            self.metrics.runtimes(runtime_states(self.resources))
            applied = await self._apply_live(config)
            restart = needs_restart(self.config, config)
            log.info(
                "reloaded",
                why=why,
                policy=policy.fingerprint,
                previous=previous.fingerprint,
                decisions=len(policy.decisions),
                released=len(released),
                applied=applied or None,
                needs_restart=restart or None,
            )
            return True

    async def _apply_live(self, config: RouterConfig) -> list[str]:
        """Apply the service settings a reload can change without a restart: debug access,
        remote image fetching and the reload settings themselves. Returns what changed."""
        live = self.live_config
        applied = []
        if config.debug != live.debug:
            self.processor.debug = _debug_access(config)
            applied.append("debug")
        if config.images.fetch != live.images.fetch:
            old, fetch = self.fetcher, config.images.fetch
            self.fetcher = RemoteImageFetcher(fetch) if fetch.enabled else None
            self.router.fetcher = self.fetcher
            if old is not None:
                # requests in flight may still be fetching with it: close it after the grace
                asyncio.get_running_loop().call_later(
                    config.server.grace_period_s, lambda: asyncio.ensure_future(old.close())
                )
            applied.append("images.fetch")
        self.live_config = config
        if config.reload != live.reload:
            if config.reload.watch:
                self.start_watching()
            applied.append("reload")  # a running watcher reads the new settings itself
        return applied

    def _reload_failed(self, why: str, error: ConfigError) -> bool:
        self.metrics.reloads.labels("invalid").inc()
        log.error(
            "reload_failed",
            why=why,
            source=error.source,
            problems=error.problems,
            keeping=self.router.policy.fingerprint,
        )
        return False

    async def watch(self) -> None:
        """Reload whenever the config file's content changes, as ``reload`` says (in the
        config that is live: a reload can change the interval or stop the watching).

        A file that failed to load is reported once, not on every look, until it changes.
        """
        while self.live_config.reload.watch:
            await asyncio.sleep(self.live_config.reload.interval_ms / 1000)
            try:
                digest = hashlib.sha256(self.config_path.read_bytes()).hexdigest()[:12]
            except OSError:
                continue  # mid-rename by an editor or a ConfigMap update; look again
            if digest in (self.digest, self._failed_digest):
                continue
            try:
                loaded = await self.reload("changed")
            except Exception:  # never let one bad reload end the watching
                log.exception("reload_failed", why="changed")
                loaded = False
            self._failed_digest = "" if loaded else digest

    def start_watching(self) -> None:
        """Watch the config file (``watch``), unless a watcher already runs."""
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.create_task(self.watch())

    async def start_admin(self, listen: str) -> None:
        """Serve the admin HTTP port (metrics, explain, replay) on ``listen`` (host:port)."""
        host, _, port = listen.rpartition(":")
        app = make_admin_app(
            self.router,
            self.metrics,
            self.recorder,
            lambda: self.serving,
            max_body_bytes=self.config.limits.max_body_bytes,
        )
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host or "127.0.0.1", int(port))
        await site.start()
        self.admin = runner
        sockets = getattr(site._server, "sockets", None) or []
        self.admin_port = sockets[0].getsockname()[1] if sockets else int(port)

    async def stop(self, grace_s: float | None = None, drain_delay_s: float | None = None) -> None:
        """Drain: NOT_SERVING first, keep accepting for the drain delay, then let in-flight
        streams finish within the grace period."""
        await self.set_serving(False)
        if self._watcher is not None:
            self._watcher.cancel()
        if self._settling is not None:
            self._settling.cancel()
        delay = self.config.server.drain_delay_s if drain_delay_s is None else drain_delay_s
        if delay:
            log.info("not_serving", delay_s=delay)
            await asyncio.sleep(delay)
        grace = self.config.server.grace_period_s if grace_s is None else grace_s
        await self.server.stop(grace)
        if self.admin is not None:
            await self.admin.cleanup()
        if self.fetcher is not None:
            await self.fetcher.close()
        if self.recorder is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.recorder.close)


#: sections a running processor cannot change: they take effect after a restart
RESTART_SECTIONS = ("server", "admin", "replay", "envoy")


def needs_restart(running: RouterConfig, loaded: RouterConfig) -> list[str]:
    """What of ``loaded`` differs from the config the processor started with and needs a
    restart (or, for the response phase, Envoy's config generated again) to apply."""
    changed = [name for name in RESTART_SECTIONS if getattr(loaded, name) != getattr(running, name)]
    if loaded.responses.enabled != running.responses.enabled:
        # Envoy sends answers to the processor only if its bootstrap says so
        changed.append("responses.enabled (regenerate the Envoy config)")
    elif running.responses.decisions and not loaded.responses.decisions:
        # answers that are only measured reach the processor through Envoy's observing
        # filter, which only a config generated without response decisions has (the
        # other way round works at once: the routing filter can always read answers)
        changed.append("responses.decisions (regenerate the Envoy config)")
    return changed


def runtime_states(resources: Resources) -> list[tuple[str, str, bool]]:
    """(runtime, model, loaded) for the model runtimes a policy uses, for the metrics: as
    each family's builder named them when it asked for them."""
    return resources.runtimes()


def _open_recorder(config: RouterConfig, metrics: Metrics) -> ReplayRecorder | None:
    """The recorder over the configured store. A PostgreSQL store that cannot be reached
    does not stop the start: its records are dropped and counted until it can."""
    settings = config.replay
    if not settings.enabled:
        return None
    from vsr_extproc.replay.store import ReplayRecorder, open_store

    return ReplayRecorder(
        open_store(settings),
        max_age_s=settings.max_age_hours * 3600,
        max_records=settings.max_records,
        lost=metrics.replay_dropped.inc,
    )


def _kept_names(config: RouterConfig, resources: Resources) -> Detector | None:
    """The named-entity model that takes names out of kept replay content (None when
    content is not kept or the model is not installed; the records then say so)."""
    if not (config.replay.enabled and config.replay.keep_content):
        return None
    from vsr_extproc.signals.pii import entity_model

    model = entity_model(resources)
    return model.find if model is not None else None


def build(
    config_path: str | Path, listen: str | None = None, resources: Resources | None = None
) -> Service:
    """The processor's components, assembled and bound to ``listen`` (host:port; port 0
    picks one; default: the config's), not yet started: the compiled policy and its
    router, metrics, the replay recorder and the observer that writes to both, the gRPC
    server with ext_proc, the router API and health. ``resources`` lets several services
    in one process share loaded models."""
    path = Path(config_path)
    resources = resources or Resources()
    config, digest = read_config(path)
    policy = compile_policy(config, resources, fingerprint=digest)
    fetch = config.images.fetch
    fetcher = RemoteImageFetcher(fetch) if fetch.enabled else None
    metrics = Metrics(count_findings=finding_counts)
    router = Router(policy, SignalRunner(metrics.signal), fetcher=fetcher)
    recorder = _open_recorder(config, metrics)
    observer = Observer(
        metrics,
        recorder,
        keep_content=config.replay.keep_content,
        max_content_chars=config.replay.max_content_chars,
        entities=_kept_names(config, resources),
    )
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
    processor = ExternalProcessor(router, observer, _debug_access(config))
    ext_proc_grpc.add_ExternalProcessorServicer_to_server(processor, server)
    router_pb2_grpc.add_RouterServicer_to_server(RouterApi(router), server)  # type: ignore[no-untyped-call]
    health = health_async.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    address = listen or config.server.listen
    try:
        port = server.add_insecure_port(address)
    except RuntimeError:  # gRPC's way of saying the bind failed
        port = 0
    if port == 0:
        raise OSError(f"cannot listen on {address}: the address is in use or not available")
    metrics.runtimes(runtime_states(resources))
    return Service(
        server=server,
        router=router,
        health=health,
        fetcher=fetcher,
        port=port,
        config=config,
        config_path=path,
        resources=resources,
        metrics=metrics,
        recorder=recorder,
        observer=observer,
        processor=processor,
        digest=digest,
    )


async def start(
    config_path: str | Path,
    listen: str | None = None,
    resources: Resources | None = None,
    *,
    admin_listen: str | None = None,
    freeze: bool = False,
) -> Service:
    """Build the service (``build``) and start it: NOT_SERVING while the admin port opens
    and one synthetic request warms every signal, then SERVING, then the config watcher.

    ``freeze`` (the server process) freezes the heap once everything is loaded, before
    health says SERVING.
    """
    service = build(config_path, listen, resources)
    config = service.config
    await service.set_serving(False)
    await service.server.start()
    admin = admin_listen or config.admin.listen
    if admin:
        await service.start_admin(admin)
    await service.warm_up()
    if freeze:
        freeze_heap()
    await service.set_serving(True)
    if config.reload.watch:
        service.start_watching()
    address = listen or config.server.listen
    log.info(
        "serving",
        address=address.rsplit(":", 1)[0] + f":{service.port}",
        admin=f"{admin.rsplit(':', 1)[0]}:{service.admin_port}" if admin else None,
        policy=service.router.policy.fingerprint,
        decisions=len(service.router.policy.decisions),
        signals=sorted(service.router.policy.signals),
    )
    return service


def _debug_access(config: RouterConfig) -> DebugAccess:
    debug = config.debug
    return DebugAccess(
        debug.request_header,
        debug.token_header,
        debug.token,
        tuple(ipaddress.ip_network(cidr, strict=False) for cidr in debug.trusted_sources),
    )


def freeze_heap() -> None:
    """Exempt everything alive now (libraries, models, the compiled policy) from garbage
    collection; only objects made later are scanned.

    Python's full collections otherwise walk all of it: 60-140 ms each on the demo config
    (measured), stalling whatever is in flight; a bench run's 2,000-token chat turns had a
    p99 of 274 ms with them and 29 ms with the heap frozen.
    """
    gc.collect()
    gc.freeze()


async def _freeze_later(delay_s: float) -> None:
    await asyncio.sleep(delay_s)
    freeze_heap()


async def serve(
    config_path: str | Path, listen: str | None = None, admin_listen: str | None = None
) -> None:
    """Serve until SIGTERM or SIGINT, then drain. SIGHUP reloads the config."""
    stopping = asyncio.Event()
    hangup = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    # before start(): a SIGHUP that arrives while the models load is not lost (nor fatal)
    loop.add_signal_handler(signal.SIGHUP, hangup.set)
    service = await start(config_path, listen, admin_listen=admin_listen, freeze=True)

    async def reload_on_hangup() -> None:
        while True:
            await hangup.wait()
            hangup.clear()  # SIGHUPs during a reload make one more reload, not several
            try:
                await service.reload("SIGHUP")
            except Exception:  # the next SIGHUP must still be heard
                log.exception("reload_failed", why="SIGHUP")

    reloading = asyncio.create_task(reload_on_hangup())
    await stopping.wait()
    reloading.cancel()
    log.info("draining", grace_s=service.config.server.grace_period_s)
    await service.stop()
    log.info("stopped")
