"""`vsr-extproc demo` as a terminal or a process manager ends it: nothing is left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from vsr_extproc.demo.stack import _ephemeral, port_is_free

ROOT = Path(__file__).resolve().parents[2]


def _ports(document: dict[str, object]) -> list[int]:
    envoy = document["envoy"]
    assert isinstance(envoy, dict)
    ports = [envoy["listen"]["port"], envoy["admin"]["port"], envoy["router_api"][0]["port"]]
    ports += [endpoint["port"] for endpoint in envoy["processor"]]
    ports += [e["port"] for cluster in envoy["clusters"] for e in cluster["endpoints"]]
    return ports


def _children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(child) for child in found.split()]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_demo_stops_every_child_and_frees_every_port(
    tmp_path: Path, signum: signal.Signals
) -> None:
    document = yaml.safe_load((ROOT / "deploy/examples/rules-only.yaml").read_text())
    _ephemeral(document)
    config = tmp_path / "router.yaml"
    config.write_text(yaml.safe_dump(document))
    log = (tmp_path / "demo.log").open("w")
    demo = subprocess.Popen(
        [sys.executable, "-m", "vsr_extproc.cli", "demo", "--config", str(config)],
        stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path, env={**os.environ},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while "Serving on" not in (tmp_path / "demo.log").read_text():
            assert demo.poll() is None, (tmp_path / "demo.log").read_text()
            assert time.monotonic() < deadline, "the demo did not start"
            time.sleep(0.2)
        children = _children(demo.pid)
        assert len(children) == 3  # stand-ins, processor, Envoy
        demo.send_signal(signum)
        assert demo.wait(timeout=60) == 0
        assert [child for child in children if _alive(child)] == []
        busy = [port for port in _ports(document) if not port_is_free(port)]
        assert busy == []
    finally:
        if demo.poll() is None:
            demo.kill()
        log.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purpose (its parent, the demo, has exited)
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "zombie" not in status.read_text()
