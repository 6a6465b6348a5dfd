"""``vsr-extproc demo``: the whole stack on loopback, a table of sample requests, then serve.

Starts the stand-in upstreams (labelled as such: they report what they received instead
of generating text), the processor and a real Envoy; sends the sample requests in
``deploy/demo/requests`` through Envoy; prints request → decision → model → which upstream
answered; then keeps serving until Ctrl-C, which stops every child.
"""

from __future__ import annotations

import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from vsr_extproc.demo import demo_files
from vsr_extproc.demo.stack import Stack, port_is_free, prepare_stack

REQUESTS = demo_files() / "requests"
NO_VISION = """
No SigLIP checkpoint is configured, so the vision signals cannot see images. What still
works: the passport is recognised by its machine-readable zone (OCR, ICAO check digits)
and the code screenshot by OCR, secrets included. What does not: the chest X-ray is not
recognised as a medical image (13-chest-xray goes to the general vision model) and the car
photo with a medical question is not flagged (15-…). With network access, or a local
checkpoint directory:  vsr-extproc demo --vision-model google/siglip-base-patch16-224"""


@dataclass(frozen=True)
class Row:
    request: str
    status: int
    decision: str
    model: str
    answered_by: str


def send(client: httpx.Client, url: str, name: str, body: bytes | None) -> Row:
    """One request through Envoy, summarised as a table row."""
    if body is None:
        response = client.get(f"{url}/v1/models")
    else:
        response = client.post(
            f"{url}/v1/chat/completions",
            content=body,
            headers={"content-type": "application/json"},
        )
    return Row(
        name,
        response.status_code,
        response.headers.get("x-vsr-decision", "-"),
        response.headers.get("x-vsr-selected-model", "-"),
        _answered_by(response),
    )


def _answered_by(response: httpx.Response) -> str:
    cluster = response.headers.get("x-standin-cluster")
    if cluster:
        return f"stand-in {cluster}"
    if response.headers.get("x-vsr-selected-model") == "none":
        return "the router itself"
    return "Envoy" if response.status_code >= 500 else "-"


def sample_requests(directory: Path = REQUESTS) -> list[tuple[str, bytes | None]]:
    samples: list[tuple[str, bytes | None]] = [
        (path.stem, path.read_bytes()) for path in sorted(directory.glob("*.json"))
    ]
    samples.append(("GET /v1/models", None))
    return samples


def format_rows(rows: list[Row]) -> str:
    header = ("request", "status", "decision", "model", "answered by")
    cells = [header] + [
        (r.request, str(r.status), r.decision, r.model, r.answered_by) for r in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)) for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(line.rstrip() for line in lines)


def run_demo(
    config_path: Path,
    *,
    port: int | None = None,
    once: bool = False,
    vision_model: str | None = None,
) -> int:
    document: dict[str, Any] = yaml.safe_load(config_path.read_text())
    if port is not None:
        document["envoy"]["listen"]["port"] = port
    if vision_model is not None:
        document.setdefault("vision", {})["model"] = vision_model
    stack = prepare_stack(document)
    busy = [p for p in _ports(stack) if not port_is_free(p)]
    if busy:
        print(
            f"ports already in use: {', '.join(map(str, busy))}. Stop what holds them, or "
            "pick another listener port with PORT=… (make demo) / --port.",
            file=sys.stderr,
        )
        return 1
    print(f"logs and generated configs: {stack.workdir}")
    # a closed terminal (SIGHUP), `timeout` or a process manager (SIGTERM) stops every
    # child as Ctrl-C does, so none is left holding its port
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)
    try:
        _start(stack)
        with httpx.Client(timeout=30.0) as client:
            rows = [send(client, stack.url, name, body) for name, body in sample_requests()]
        print()
        print(format_rows(rows))
        print()
        print(
            "The upstreams are stand-ins for real model servers: each answers with the "
            "cluster it stands for and the request it received."
        )
        if not document.get("vision", {}).get("model"):
            print(NO_VISION)
        if once:
            return 0
        print(f"Serving on {stack.url} (Envoy admin {stack.admin_url}). Ctrl-C stops it all.")
        print(
            f"  try: curl -s {stack.url}/v1/chat/completions -H 'content-type: "
            f"application/json' -d @{REQUESTS / '02-find-the-bug.json'} -i"
        )
        while all(child.alive() for child in stack.children.values()):
            time.sleep(0.5)
        dead = [child for child in stack.children.values() if not child.alive()]
        for child in dead:
            print(f"{child.name} stopped unexpectedly:\n{child.log_tail()}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, _Stopped):
        print("\nstopping…")
        return 0
    finally:
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(signum, signal.SIG_IGN)  # a second signal must not cut this short
        stack.stop()


class _Stopped(Exception):
    """SIGTERM or SIGHUP arrived."""


def _stop(signum: int, frame: object) -> None:
    raise _Stopped(signal.Signals(signum).name)


def _start(stack: Stack) -> None:
    stack.start_standins()
    stack.start_processor()
    stack.start_envoy()
    stack.wait_ready()


def _ports(stack: Stack) -> list[int]:
    envoy = stack.config.envoy
    assert envoy is not None
    ports = [envoy.listen.port, envoy.admin.port]
    ports += [endpoint.port for endpoint in envoy.processor]
    ports += [e.port for cluster in envoy.clusters for e in cluster.endpoints]
    return ports
