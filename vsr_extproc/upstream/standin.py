"""Stand-in upstream model servers for the demo and the tests.

STAND-IN, NOT A MODEL: one process listens on several ports, one per Envoy cluster, and
answers OpenAI chat completions (JSON, or SSE when ``stream: true``) the way a real
OpenAI-compatible server such as vLLM would be called. Instead of generating text it says
who it is and what it received: its cluster and port, the ``model`` it was sent, the
messages and the router's ``x-vsr-*`` headers. That lets the demo show where a request
went and lets the tests prove what reached an upstream (for example, that redacted PII
never did).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from vsr_extproc.config.schema import RouterConfig

STANDIN_FIELD = "vsr_standin"


@dataclass(frozen=True)
class StandinSpec:
    cluster: str
    host: str
    port: int


def _identity(spec: StandinSpec, request: web.Request, body: Any) -> dict[str, Any]:
    messages = body.get("messages") if isinstance(body, dict) else None
    return {
        "stand_in": True,
        "cluster": spec.cluster,
        "port": spec.port,
        "received_model": body.get("model") if isinstance(body, dict) else None,
        "received_messages": messages,
        "received_headers": {
            name.lower(): value
            for name, value in request.headers.items()
            if name.lower().startswith("x-vsr-") or name.lower() == "content-length"
        },
        "path": request.path,
    }


def _summary(identity: dict[str, Any]) -> str:
    count = len(identity["received_messages"] or ())
    return (
        f"[stand-in for cluster {identity['cluster']}] received model "
        f"{identity['received_model']!r} with {count} messages"
    )


async def _chat(spec: StandinSpec, request: web.Request) -> web.StreamResponse:
    try:
        body = orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        return web.json_response(
            {"error": {"message": "stand-in: invalid JSON", "type": "invalid_request_error"}},
            status=400,
        )
    delay = float(request.headers.get("x-standin-delay-ms", "0"))
    if delay:
        await asyncio.sleep(delay / 1000)
    identity = _identity(spec, request, body)
    completion_id = f"chatcmpl-standin-{uuid.uuid4().hex[:16]}"
    created = int(time.time())
    model = identity["received_model"]
    text = _summary(identity)
    headers = {"x-standin-cluster": spec.cluster}
    if isinstance(body, dict) and body.get("stream"):
        response = web.StreamResponse(headers={**headers, "content-type": "text/event-stream"})
        await response.prepare(request)
        chunks: list[dict[str, Any]] = [
            {"delta": {"role": "assistant", "content": text}, "finish_reason": None},
            {"delta": {}, "finish_reason": "stop"},
        ]
        for position, choice in enumerate(chunks):
            chunk: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, **choice}],
            }
            if position == 0:
                chunk[STANDIN_FIELD] = identity
            await response.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response
    completion = {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        STANDIN_FIELD: identity,
    }
    return web.Response(
        body=orjson.dumps(completion), content_type="application/json", headers=headers
    )


async def _models(spec: StandinSpec, request: web.Request) -> web.Response:
    listing = {
        "object": "list",
        "data": [{"id": f"standin-{spec.cluster}", "object": "model", "owned_by": "stand-in"}],
        STANDIN_FIELD: _identity(spec, request, {}),
    }
    return web.json_response(listing, headers={"x-standin-cluster": spec.cluster})


def make_app(spec: StandinSpec) -> web.Application:
    app = web.Application(client_max_size=256 * 1024 * 1024)

    async def chat(request: web.Request) -> web.StreamResponse:
        return await _chat(spec, request)

    async def models(request: web.Request) -> web.Response:
        return await _models(spec, request)

    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    return app


class Standins:
    """Several stand-in servers in one event loop."""

    def __init__(self, specs: Sequence[StandinSpec]) -> None:
        self.specs = list(specs)
        self._runners: list[web.AppRunner] = []

    async def start(self) -> None:
        for spec in self.specs:
            runner = web.AppRunner(make_app(spec), access_log=None)
            await runner.setup()
            await web.TCPSite(runner, spec.host, spec.port).start()
            self._runners.append(runner)

    async def stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()


async def run_forever(specs: Sequence[StandinSpec]) -> None:
    servers = Standins(specs)
    await servers.start()
    try:
        await asyncio.Event().wait()
    finally:
        await servers.stop()


def specs_for(config: RouterConfig) -> list[StandinSpec]:
    """One stand-in per endpoint of each cluster in the config's ``envoy`` section."""
    if config.envoy is None:
        raise ValueError("the config has no envoy section, so no clusters to stand in for")
    return [
        StandinSpec(cluster.name, endpoint.address, endpoint.port)
        for cluster in config.envoy.clusters
        for endpoint in cluster.endpoints
    ]
