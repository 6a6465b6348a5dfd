"""The response phase's cost on a streamed answer, side by side in one run.

Four stacks of deploy/examples/rules-only.yaml behind a real Envoy, with stand-in
upstreams that stream a scripted answer:

* ``off``: no response phase (Envoy never sends the answer to the processor);
* ``measured``: ``responses.enabled`` without decisions (usage and latency only): Envoy
  copies each answer to the processor through its observing filter and does not wait;
* ``calls``: the demo's tool-call decisions only (a memory write with personal data, a
  destructive shell command): every chunk waits for the processor, no text is held;
* ``guarded``: the demo's response decisions (tool calls, and an ``output`` guard that
  holds text back by ``guard_window_chars``).

Three answers: ``burst``, ``CHUNKS`` events written as fast as the stand-in can, headers
and events together (the processor's reply to the headers is then on the first byte's
path); ``paced``, headers first, then an event every ``PACE_MS`` as a model writes tokens
(the reply to the headers is then made while the first token is awaited, as with a real
model, whose headers precede its first token by the prompt's processing); and ``json``,
the same text as one JSON answer to a request that does not stream (read whole by the
guards before any of it, headers included, leaves).

The stacks take turns, one request at a time on one connection each, so that drift on the
machine touches all alike. Each processor must have counted every answer by the end
(``vsr_answers_total``), or the run fails: a response phase that did not see the answers
would look free. Reported: time to the first byte of the answer's body at the client, and
the time to its end, p50 and p99; the added time per event is the difference in the whole
answer's time divided by the number of events (Envoy may hand several events to the
processor as one chunk, so per chunk it is at most that many times more).
"""

from __future__ import annotations

import copy
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from vsr_extproc.demo.stack import Stack, prepare_stack
from vsr_extproc.upstream.standin import SCRIPT_HEADER, encode_script

ROOT = Path(__file__).resolve().parents[1]
RULES_ONLY = ROOT / "deploy" / "examples" / "rules-only.yaml"
DEMO = ROOT / "deploy" / "demo" / "router.yaml"
CHUNKS = 40
#: ~40 tokens of ordinary text per event
WORDS = "The answer goes on with ordinary words about the request. "


def _document(kind: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(RULES_ONLY.read_text())
    document["replay"] = {"enabled": False}
    if kind == "off":
        return document
    demo = yaml.safe_load(DEMO.read_text())
    if kind == "measured":
        document["responses"] = {"enabled": True}
        return document
    document["signals"]["tool_call"] = demo["signals"]["tool_call"]
    document["responses"] = copy.deepcopy(demo["responses"])
    if kind == "calls":
        decisions = document["responses"]["decisions"]
        document["responses"]["decisions"] = [
            decision for decision in decisions if decision["rules"].startswith("tool_call.")
        ]
        return document
    document["signals"]["output"] = demo["signals"]["output"]
    return document


def _start(document: dict[str, Any], workdir: Path) -> Stack:
    stack = prepare_stack(document, workdir, ephemeral_ports=True)
    stack.start_standins()
    stack.start_processor()
    stack.start_envoy()
    stack.wait_ready()
    return stack


def _ask_once(
    client: httpx.Client, headers: dict[str, str], *, stream: bool = True
) -> tuple[float, float, int]:
    body = {
        "model": "auto",
        "stream": stream,
        "messages": [{"role": "user", "content": "tell me about the weather"}],
    }
    started = time.perf_counter()
    first = 0.0
    size = 0
    with client.stream("POST", "/v1/chat/completions", json=body, headers=headers) as answer:
        for part in answer.iter_raw():
            if not first and part:
                first = time.perf_counter()
            size += len(part)
    return (first - started) * 1000, (time.perf_counter() - started) * 1000, size


def _check_counted(stack: Stack, expected: int, kind: str) -> None:
    """Wait (briefly) until the processor has counted ``expected`` answers."""
    from prometheus_client.parser import text_string_to_metric_families

    assert stack.config.envoy is not None
    api = stack.config.envoy.router_api[0]
    counted = 0.0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        text = httpx.get(f"http://{api.address}:{api.port}/metrics", timeout=10).text
        counted = sum(
            sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == "vsr_answers_total"
        )
        if counted >= expected:
            return
        time.sleep(0.1)
    raise AssertionError(f"{kind}: the processor counted {counted:g} of {expected} answers")


#: the paced answer: a model that sends its headers, then an event every ``PACE_MS``
PACED_EVENTS = 12
PACE_MS = 3
#: the three answers, as the stand-ins' scripts
SCRIPTS: dict[str, dict[str, Any]] = {
    "burst": {"content": WORDS * CHUNKS, "chunks": CHUNKS, "identity": False},
    "paced": {
        "content": WORDS * PACED_EVENTS,
        "chunks": PACED_EVENTS,
        "delay_ms": PACE_MS,
        "identity": False,
    },
    "json": {"content": WORDS * CHUNKS, "identity": False},
}


def measure(samples: int) -> dict[str, dict[str, dict[str, list[float]]]]:
    """Per scenario (``burst``: ``CHUNKS`` events at once; ``paced``: headers first, then
    ``PACED_EVENTS`` events ``PACE_MS`` apart, as a model writes; ``json``: the same text as
    one JSON answer), per stack: first-byte and whole-answer times."""
    rounds = {"burst": samples, "paced": max(samples // 3, 20), "json": samples}
    kinds = ("off", "measured", "calls", "guarded")
    runs: dict[str, dict[str, list[tuple[float, float, int]]]] = {
        scenario: {kind: [] for kind in kinds} for scenario in SCRIPTS
    }
    with tempfile.TemporaryDirectory(prefix="vsr-bench-responses-") as tmp:
        stacks: dict[str, Stack] = {}
        try:
            for kind in kinds:
                stacks[kind] = _start(_document(kind), Path(tmp) / kind)
            clients = {kind: httpx.Client(base_url=stacks[kind].url, timeout=30) for kind in kinds}
            for scenario, script in SCRIPTS.items():
                headers = {SCRIPT_HEADER: encode_script(**script)}
                for round_ in range(rounds[scenario] + 10):
                    for kind in kinds:
                        run = _ask_once(clients[kind], headers, stream=scenario != "json")
                        if round_ >= 10:  # the first rounds warm up
                            runs[scenario][kind].append(run)
            for client in clients.values():
                client.close()
            answers = sum(count + 10 for count in rounds.values())
            for kind in kinds[1:]:
                _check_counted(stacks[kind], answers, kind)
        finally:
            for stack in stacks.values():
                stack.stop()
    results: dict[str, dict[str, dict[str, list[float]]]] = {}
    for scenario, by_kind in runs.items():
        results[scenario] = {}
        for kind, measured in by_kind.items():
            sizes = {size for _, _, size in measured}
            assert len(sizes) == 1, f"{scenario}/{kind}: answers differ in size: {sizes}"
            results[scenario][kind] = {
                "first_byte_ms": [first for first, _, _ in measured],
                "total_ms": [total for _, total, _ in measured],
            }
    return results


def _p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def report(results: dict[str, dict[str, dict[str, list[float]]]]) -> None:
    for scenario, by_kind in results.items():
        script = SCRIPTS[scenario]
        events = script.get("chunks", 1)
        if scenario == "json":
            print(f"-- {scenario}: one JSON answer of {len(script['content'])} characters")
        elif "delay_ms" in script:
            print(
                f"-- {scenario}: {events} events {script['delay_ms']} ms apart, after the headers"
            )
        else:
            print(f"-- {scenario}: {events} events at once")
        for kind, runs in by_kind.items():
            first, total = runs["first_byte_ms"], runs["total_ms"]
            print(
                f"{kind:<9} first byte p50 {_p(first, 50):7.2f} ms  p99 {_p(first, 99):7.2f} ms"
                f"   whole answer p50 {_p(total, 50):7.2f} ms  p99 {_p(total, 99):7.2f} ms"
            )
        base = by_kind["off"]
        for kind in ("measured", "calls", "guarded"):
            runs = by_kind[kind]
            added_first = _p(runs["first_byte_ms"], 50) - _p(base["first_byte_ms"], 50)
            added_total = _p(runs["total_ms"], 50) - _p(base["total_ms"], 50)
            ratio = _p(runs["total_ms"], 50) / _p(base["total_ms"], 50)
            detail = (
                f", {added_total / events:+.3f} ms per event ({events} events, whole answer "
                if events > 1
                else " (whole answer "
            )
            print(
                f"{kind} vs off: first byte {added_first:+.2f} ms p50"
                f"{detail}{added_total:+.2f} ms; with/without {ratio:.3f})"
            )


def main(samples: int = 100) -> dict[str, dict[str, dict[str, list[float]]]]:
    results = measure(samples)
    report(results)
    return results
