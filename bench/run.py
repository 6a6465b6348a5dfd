"""``make bench``: the numbers the README quotes, from one run on this machine.

Routing overhead (deterministic signals): a real Envoy in front of stand-in upstreams, once
with the processor and once without it (the same bootstrap minus the ext_proc filter).
Reports p50/p99 at one request at a time, their difference, the throughput at 32
connections, and the processor's CPU time per request, from which the requests per second
one processor process sustains follow (it is single-threaded, so one core's worth).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
import yaml

from bench.loadgen import LoadResult, encode_request, run_load
from vsr_extproc.demo.stack import Stack, prepare_stack

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "deploy" / "demo" / "router.yaml"
SAMPLES = ROOT / "deploy" / "demo" / "requests"
TEXT_SAMPLES = ("01-small-talk", "02-find-the-bug", "03-agent-tool-loop", "07-streamed-chat")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def without_processor(bootstrap_path: Path) -> None:
    """Rewrite a bootstrap: no ext_proc filter, every request to the default model."""
    bootstrap: dict[str, Any] = yaml.safe_load(bootstrap_path.read_text())
    listener = bootstrap["static_resources"]["listeners"][0]
    hcm = listener["filter_chains"][0]["filters"][0]["typed_config"]
    hcm["http_filters"] = [f for f in hcm["http_filters"] if "ext_proc" not in f["name"]]
    routes = hcm["route_config"]["virtual_hosts"][0]["routes"]
    routes[-1] = {"name": "baseline", "match": {"prefix": "/"}, "route": routes[0]["route"]}
    bootstrap_path.write_text(yaml.safe_dump(bootstrap, sort_keys=False))


def start(document: dict[str, Any], workdir: Path, *, processor: bool) -> Stack:
    stack = prepare_stack(document, workdir, ephemeral_ports=True)
    stack.start_standins()
    if processor:
        stack.start_processor()
    else:
        assert stack.envoy_config is not None
        without_processor(stack.envoy_config)
    stack.start_envoy()
    stack.wait_ready(processors=processor)
    return stack


def requests_for(stack: Stack) -> list[bytes]:
    assert stack.config.envoy is not None
    host = f"{stack.config.envoy.listen.address}:{stack.config.envoy.listen.port}"
    bodies = [
        orjson.dumps(orjson.loads((SAMPLES / f"{n}.json").read_bytes())) for n in TEXT_SAMPLES
    ]
    return [encode_request(host, "/v1/chat/completions", body) for body in bodies]


def load(stack: Stack, concurrency: int, duration: float) -> LoadResult:
    assert stack.config.envoy is not None
    listen = stack.config.envoy.listen
    return asyncio.run(
        run_load(
            listen.address,
            listen.port,
            requests_for(stack),
            concurrency=concurrency,
            duration_s=duration,
        )
    )


def describe(label: str, result: LoadResult) -> str:
    ok = result.statuses.get(200, 0)
    return (
        f"{label:<34} {result.requests:>7} req  {result.rate:>8.0f} req/s  "
        f"p50 {result.percentile(50):6.2f} ms  p99 {result.percentile(99):6.2f} ms  "
        f"200s {ok}/{result.requests}  errors {result.errors}"
    )


def routing_overhead(duration: float) -> dict[str, Any]:
    document = yaml.safe_load(DEMO.read_text())
    numbers: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="vsr-bench-") as tmp:
        baseline = start(document, Path(tmp) / "baseline", processor=False)
        try:
            load(baseline, 1, 1.0)  # warm-up
            numbers["baseline_c1"] = load(baseline, 1, duration)
        finally:
            baseline.stop()
        routed = start(document, Path(tmp) / "routed", processor=True)
        try:
            load(routed, 1, 1.0)
            numbers["routed_c1"] = load(routed, 1, duration)
            pid = routed.children["processor"].process.pid
            before = cpu_seconds(pid)
            numbers["routed_c32"] = load(routed, 32, duration)
            numbers["processor_cpu_s"] = cpu_seconds(pid) - before
        finally:
            routed.stop()
    return numbers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measurement")
    args = parser.parse_args(argv)
    print(f"vsr-extproc bench — {os.cpu_count()} CPUs, {args.duration:g} s per measurement")
    print("\n== routing overhead: Envoy → stand-in upstream, deterministic signals only")
    numbers = routing_overhead(args.duration)
    base, routed, loaded = numbers["baseline_c1"], numbers["routed_c1"], numbers["routed_c32"]
    print(describe("without processor, 1 connection", base))
    print(describe("with processor, 1 connection", routed))
    print(describe("with processor, 32 connections", loaded))
    added50 = routed.percentile(50) - base.percentile(50)
    added99 = routed.percentile(99) - base.percentile(99)
    per_request_ms = numbers["processor_cpu_s"] / max(loaded.requests, 1) * 1000
    print(f"added by the processor: p50 {added50:+.2f} ms, p99 {added99:+.2f} ms")
    print(
        f"processor CPU per request: {per_request_ms:.3f} ms → one process sustains "
        f"≈{1000 / per_request_ms:,.0f} req/s on one core"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
