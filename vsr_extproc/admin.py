"""The processor's HTTP admin port.

* ``GET /metrics`` — Prometheus exposition.
* ``POST /v1/router/explain`` — an OpenAI chat request in, the routing decision and its
  whole trace out (the JSON twin of the gRPC ``vsr.v1.Router/Explain``).
* ``GET /v1/router/replay/{id}`` — the decision record behind a response's
  ``x-vsr-replay-id``, from the configured store (read on a worker thread: a database
  read must not hold up the event loop that also serves ext_proc); 503 while the store
  cannot be reached.
* ``GET /ready`` — 200 once serving, 503 while warming up or draining.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import orjson
from aiohttp import web

from vsr_extproc.core.explain import explain_data
from vsr_extproc.core.router import Router
from vsr_extproc.errors import ReplayStoreError, RequestError
from vsr_extproc.metrics import Metrics


class RecordReader(Protocol):
    def get(self, replay_id: str) -> Any:
        """A record by id, or None; may block on a database (called off the loop)."""
        ...


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(
        body=orjson.dumps(data, default=str), status=status, content_type="application/json"
    )


def _error(status: int, message: str, code: str) -> web.Response:
    error = {"message": message, "type": "invalid_request_error", "code": code}
    return _json({"error": error}, status)


def make_admin_app(
    router: Router,
    metrics: Metrics,
    records: RecordReader | None,
    ready: Callable[[], bool],
    *,
    max_body_bytes: int,
) -> web.Application:
    app = web.Application(client_max_size=max_body_bytes)

    async def get_metrics(request: web.Request) -> web.Response:
        return web.Response(body=metrics.exposition(), content_type="text/plain", charset="utf-8")

    async def explain(request: web.Request) -> web.Response:
        try:
            decision = await router.explain(await request.read())
        except RequestError as exc:
            return _error(exc.status, str(exc), exc.code)
        return _json(explain_data(decision))

    async def replay(request: web.Request) -> web.Response:
        if records is None:
            return _error(404, "decision recording is off (replay.enabled)", "replay_disabled")
        try:
            record = await asyncio.to_thread(records.get, request.match_info["replay_id"])
        except ReplayStoreError:
            # the processor's log says why; a client is not told where the database is
            return _error(503, "the replay store cannot answer now", "replay_unavailable")
        if record is None:
            return _error(404, "no record with that id (expired, or never made)", "not_found")
        return _json(dataclasses.asdict(record))

    async def readiness(request: web.Request) -> web.Response:
        return _json({"ready": ready()}, 200 if ready() else 503)

    routes: list[tuple[str, str, Callable[[web.Request], Awaitable[web.StreamResponse]]]] = [
        ("GET", "/metrics", get_metrics),
        ("POST", "/v1/router/explain", explain),
        ("GET", "/v1/router/replay/{replay_id}", replay),
        ("GET", "/ready", readiness),
    ]
    for method, path, handler in routes:
        app.router.add_route(method, path, handler)
    return app
