"""Local stacks for the end-to-end tier: a real Envoy, the processor, stand-in upstreams."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import yaml

from vsr_extproc.demo.stack import Stack, prepare_stack

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "deploy" / "demo" / "router.yaml"


def demo_document() -> dict[str, Any]:
    return yaml.safe_load(DEMO.read_text())


def start_stack(document: dict[str, Any], tmp: Path) -> Stack:
    """Start a stack on ephemeral ports and wait until every part is ready."""
    document = {**document, "server": {**document.get("server", {}), "drain_delay_s": 0.5}}
    stack = prepare_stack(document, tmp, ephemeral_ports=True)
    try:
        stack.start_standins()
        stack.start_processor()
        stack.start_envoy()
        stack.wait_ready()
    except BaseException:
        stack.stop()
        raise
    return stack


def post_chat(client: httpx.Client, document: Any, **headers: str) -> httpx.Response:
    return client.post(
        "/v1/chat/completions",
        json=document,
        headers={"content-type": "application/json", **headers},
    )
