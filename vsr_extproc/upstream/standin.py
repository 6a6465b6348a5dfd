"""Stand-in upstream model servers for the demo and the tests.

STAND-IN, NOT A MODEL: one process listens on several ports, one per Envoy cluster, and
answers OpenAI chat completions (JSON, or SSE when ``stream: true``) the way a real
OpenAI-compatible server such as vLLM would be called. Instead of generating text it says
who it is and what it received: its cluster and port, the ``model`` it was sent, the
messages and the router's ``x-vsr-*`` headers. That lets the demo show where a request
went and lets the tests prove what reached an upstream (for example, that redacted PII
never did).

A request can script the answer with the ``x-standin-reply`` header (``Script``): the
text, tool calls, how many stream events, delays, usage, and faults — so every path of
the response phase can be seen from a client.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import time
import uuid
import zlib
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


SCRIPT_HEADER = "x-standin-reply"


@dataclass(frozen=True)
class Script:
    """What a stand-in answers when the request carries ``x-standin-reply``: URL-safe
    base64 of a JSON object with these fields (all optional).

    ``content``, ``tool_calls`` ([{"name", "arguments"}]), ``chunks`` (events a streamed
    content is split into), ``delay_ms`` (before each event, and before a JSON answer),
    ``usage`` (send token counts: in a JSON answer, and in a stream's last chunk when the
    client set ``stream_options.include_usage``). For fault tests: ``status`` (answer with
    this HTTP status and an error body), ``malformed`` (invalid JSON, or a stream event
    that is not JSON), ``cut`` (close the connection in the middle of the stream),
    ``gzip`` (send the body gzip-encoded) and ``size_bytes`` (pad the content to at least
    this many bytes). ``identity: false`` leaves out the ``vsr_standin`` field and fixes
    the completion's id and time, so two answers to one script are equal byte for byte.
    """

    content: str | None = None
    tool_calls: tuple[tuple[str, str], ...] = ()
    chunks: int = 2
    delay_ms: float = 0.0
    usage: bool = True
    status: int = 200
    malformed: bool = False
    cut: bool = False
    gzip: bool = False
    size_bytes: int = 0
    #: False: no ``vsr_standin`` field, and a fixed id and time (byte-for-byte tests)
    identity: bool = True

    @classmethod
    def from_header(cls, value: str | None) -> Script:
        if not value:
            return cls()
        try:
            document = orjson.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
        except (ValueError, orjson.JSONDecodeError) as exc:
            raise ValueError(f"{SCRIPT_HEADER}: not URL-safe base64 of JSON ({exc})") from None
        if not isinstance(document, dict):
            raise ValueError(f"{SCRIPT_HEADER}: expected a JSON object")
        calls = tuple(
            (str(call.get("name", "")), str(call.get("arguments", "")))
            for call in document.get("tool_calls") or ()
            if isinstance(call, dict)
        )
        return cls(
            content=document.get("content"),
            tool_calls=calls,
            chunks=max(1, int(document.get("chunks", 2))),
            delay_ms=float(document.get("delay_ms", 0)),
            usage=bool(document.get("usage", True)),
            status=int(document.get("status", 200)),
            malformed=bool(document.get("malformed", False)),
            cut=bool(document.get("cut", False)),
            gzip=bool(document.get("gzip", False)),
            size_bytes=max(0, int(document.get("size_bytes", 0))),
            identity=bool(document.get("identity", True)),
        )


def encode_script(**fields: Any) -> str:
    """The ``x-standin-reply`` value for these fields (for tests and users)."""
    return base64.urlsafe_b64encode(orjson.dumps(fields)).decode().rstrip("=")


def _split(text: str, parts: int) -> list[str]:
    if parts <= 1 or len(text) <= 1:
        return [text]
    size = -(-len(text) // parts)
    return [text[position : position + size] for position in range(0, len(text), size)]


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


async def _chat(spec: StandinSpec, request: web.Request) -> web.StreamResponse:
    try:
        body = orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        return web.json_response(
            {"error": {"message": "stand-in: invalid JSON", "type": "invalid_request_error"}},
            status=400,
        )
    try:
        script = Script.from_header(request.headers.get(SCRIPT_HEADER))
    except ValueError as exc:
        return web.json_response(
            {"error": {"message": f"stand-in: {exc}", "type": "invalid_request_error"}},
            status=400,
        )
    delay = float(request.headers.get("x-standin-delay-ms", "0")) or script.delay_ms
    identity = _identity(spec, request, body)
    completion_id = f"chatcmpl-standin-{uuid.uuid4().hex[:16]}"
    created = int(time.time())
    if not script.identity:
        completion_id, created = "chatcmpl-standin-scripted", 0
    model = identity["received_model"]
    text = script.content if script.content is not None else _summary(identity)
    if script.size_bytes > len(text):
        text += " " + "x" * (script.size_bytes - len(text) - 1)
    headers = {"x-standin-cluster": spec.cluster}
    if script.status != 200:
        error = {"message": f"stand-in: scripted status {script.status}", "type": "server_error"}
        return web.json_response({"error": error}, status=script.status, headers=headers)
    prompt_tokens = sum(
        _tokens(str(m.get("content", "")))
        for m in body.get("messages") or ()
        if isinstance(m, dict)
    )
    completion_tokens = _tokens(text) + sum(_tokens(a) for _, a in script.tool_calls)
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    finish = "tool_calls" if script.tool_calls else "stop"
    if isinstance(body, dict) and body.get("stream"):
        if script.gzip:
            headers["content-encoding"] = "gzip"
        response = web.StreamResponse(headers={**headers, "content-type": "text/event-stream"})
        await response.prepare(request)
        compressor = zlib.compressobj(wbits=31) if script.gzip else None

        async def send(data: bytes, *, last: bool = False) -> None:
            if compressor is not None:
                data = compressor.compress(data) + (
                    compressor.flush() if last else compressor.flush(zlib.Z_SYNC_FLUSH)
                )
            await response.write(data)

        deltas: list[dict[str, Any]] = [
            {
                "delta": {"role": "assistant", "content": piece}
                if position == 0
                else {"content": piece},
                "finish_reason": None,
            }
            for position, piece in enumerate(_split(text, script.chunks))
        ]
        for order, (name, arguments) in enumerate(script.tool_calls):
            pieces = _split(arguments, 2)
            for position, piece in enumerate(pieces):
                function: dict[str, Any] = {"arguments": piece}
                call: dict[str, Any] = {"index": order, "function": function}
                if position == 0:
                    call.update(id=f"call_{order}", type="function")
                    function["name"] = name
                deltas.append({"delta": {"tool_calls": [call]}, "finish_reason": None})
        deltas.append({"delta": {}, "finish_reason": finish})
        for position, choice in enumerate(deltas):
            if delay:
                await asyncio.sleep(delay / 1000)
            chunk: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, **choice}],
            }
            if position == 0 and script.identity:
                chunk[STANDIN_FIELD] = identity
            event = b"data: " + orjson.dumps(chunk) + b"\n\n"
            if script.malformed and position == 1:
                event = b"data: {not json\n\n"
            if script.cut and position == len(deltas) // 2:
                await send(event[: len(event) // 2])
                assert request.transport is not None
                request.transport.close()  # the upstream dies mid-event
                return response
            await send(event)
        options = body.get("stream_options")
        if script.usage and isinstance(options, dict) and options.get("include_usage"):
            last = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": usage,
            }
            await send(b"data: " + orjson.dumps(last) + b"\n\n")
        await send(b"data: [DONE]\n\n", last=True)
        await response.write_eof()
        return response
    if delay:
        await asyncio.sleep(delay / 1000)
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if script.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{order}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            for order, (name, arguments) in enumerate(script.tool_calls)
        ]
    completion: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if script.identity:
        completion[STANDIN_FIELD] = identity
    if script.usage:
        completion["usage"] = usage
    payload = orjson.dumps(completion)
    if script.malformed:
        payload = payload[: len(payload) // 2]
    if script.gzip:
        headers["content-encoding"] = "gzip"
        payload = gzip.compress(payload)
    return web.Response(body=payload, content_type="application/json", headers=headers)


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
