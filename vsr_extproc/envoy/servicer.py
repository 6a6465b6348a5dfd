"""The ext_proc stream loop: one gRPC stream per HTTP request.

1. ``request_headers``: strip client-sent ``x-vsr-*`` headers. Paths that are not chat
   completions (``GET /v1/models``, …) are sent to the passthrough model and the stream
   ends here.
2. ``request_body`` (BUFFERED): parse once, run the signals, decide, and reply with either
   routing headers plus the rewritten body, or an immediate answer. Then the stream ends,
   so a slow upstream never holds a processor stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from time import perf_counter
from typing import Any

import structlog
from envoy.service.ext_proc.v3 import external_processor_pb2 as ext_proc
from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as ext_proc_grpc

from vsr_extproc.core.answers import Answer, decision_answer, error_answer
from vsr_extproc.core.decision import RoutingDecision
from vsr_extproc.core.policy import Policy, RouteAction
from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.core.rewrite import Redaction, rewrite_body
from vsr_extproc.core.router import Router
from vsr_extproc.envoy.convert import (
    DECISION_HEADER,
    MODEL_HEADER,
    NO_MODEL,
    REDACTED_HEADER,
    ROUTER_HEADER_PREFIX,
    body_response,
    header_map,
    headers_response,
    immediate_response,
)
from vsr_extproc.errors import RequestError

log = structlog.get_logger("vsr_extproc.request")

PASSTHROUGH = "passthrough"


@dataclass(slots=True)
class Exchange:
    """What the body phase needs from the headers phase of the same stream."""

    policy: Policy
    request_id: str
    started: float


class ExternalProcessor(ext_proc_grpc.ExternalProcessorServicer):  # type: ignore[misc]
    def __init__(self, router: Router) -> None:
        self.router = router

    async def Process(  # noqa: N802 - the gRPC method name
        self, requests: AsyncIterator[ext_proc.ProcessingRequest], context: Any
    ) -> AsyncIterator[ext_proc.ProcessingResponse]:
        exchange: Exchange | None = None
        async for message in requests:
            phase = message.WhichOneof("request")
            if phase == "request_headers":
                exchange, response = self._on_headers(message.request_headers)
                yield response
                if exchange is None:
                    return
            elif phase == "request_body" and exchange is not None:
                yield await self._on_body(exchange, message.request_body.body)
                return
            else:
                # a phase this processor did not ask for: let the request continue
                yield _unchanged(phase)

    def _on_headers(
        self, headers: ext_proc.HttpHeaders
    ) -> tuple[Exchange | None, ext_proc.ProcessingResponse]:
        values = header_map(headers)
        policy = self.router.policy
        spoofed = [name for name in values if name.startswith(ROUTER_HEADER_PREFIX)]
        path = values.get(":path", "").partition("?")[0]
        if values.get(":method") == "POST" and path in policy.chat_paths:
            if headers.end_of_stream:
                return None, _answer(
                    error_answer(
                        400,
                        "the request has no body; expected a JSON chat completion request",
                        error_type="invalid_request_error",
                        code="invalid_request",
                    ),
                    "invalid_request",
                )
            exchange = Exchange(policy, values.get("x-request-id", ""), perf_counter())
            return exchange, headers_response(remove=spoofed)
        model = policy.passthrough_model
        routing = [(DECISION_HEADER, PASSTHROUGH)]
        if model is not None:
            routing.append((MODEL_HEADER, model))
        return None, headers_response(routing, spoofed, clear_route_cache=True)

    async def _on_body(self, exchange: Exchange, body: bytes) -> ext_proc.ProcessingResponse:
        policy = exchange.policy
        try:
            request = self.router.parse(body, policy)
            decision = await self.router.decide(request, policy)
            response = _respond(decision, request)
        except RequestError as exc:
            _log_rejected(exchange, exc)
            answer = error_answer(exc.status, str(exc), error_type=exc.error_type, code=exc.code)
            return _answer(answer, exc.code)
        except Exception:
            log.exception("request_failed", request_id=exchange.request_id)
            answer = error_answer(
                500,
                "the router failed while deciding this request",
                error_type="router_error",
                code="internal_error",
            )
            return _answer(answer, "internal_error")
        _log_decided(exchange, decision)
        return response


def _respond(decision: RoutingDecision, request: NormalizedRequest) -> ext_proc.ProcessingResponse:
    answer = decision_answer(decision, stream=request.stream)
    if answer is not None:
        return _answer(answer, decision.name)
    action = decision.decision.action
    model = decision.model
    if not isinstance(action, RouteAction) or model is None:
        raise TypeError(f"decision {decision.name!r} has neither an answer nor a model")
    headers = [(MODEL_HEADER, model.name), (DECISION_HEADER, decision.name)]
    headers += action.headers
    headers += [
        (header, value)
        for signal, header, value in action.signal_headers
        if decision.results[signal].matched
    ]
    redaction = Redaction(action.redact) if action.redact else None
    new_body = rewrite_body(request, model, action, redaction)
    if redaction is not None and redaction.counts:
        summary = ",".join(f"{kind}={count}" for kind, count in redaction.counts.items())
        headers.append((REDACTED_HEADER, summary))
    return body_response(headers, new_body)


def _answer(answer: Answer, decision: str) -> ext_proc.ProcessingResponse:
    headers = [(DECISION_HEADER, decision), (MODEL_HEADER, NO_MODEL)]
    return immediate_response(answer, headers, details=f"vsr_{decision}")


def _unchanged(phase: str | None) -> ext_proc.ProcessingResponse:
    if phase == "request_body":
        return ext_proc.ProcessingResponse(request_body=ext_proc.BodyResponse())
    if phase == "response_headers":
        return ext_proc.ProcessingResponse(response_headers=ext_proc.HeadersResponse())
    if phase == "response_body":
        return ext_proc.ProcessingResponse(response_body=ext_proc.BodyResponse())
    if phase == "request_trailers":
        return ext_proc.ProcessingResponse(request_trailers=ext_proc.TrailersResponse())
    if phase == "response_trailers":
        return ext_proc.ProcessingResponse(response_trailers=ext_proc.TrailersResponse())
    return ext_proc.ProcessingResponse(request_headers=ext_proc.HeadersResponse())


def _log_decided(exchange: Exchange, decision: RoutingDecision) -> None:
    log.info(
        "decided",
        request_id=exchange.request_id,
        decision=decision.name,
        outcome=decision.outcome.value,
        model=decision.model.name if decision.model else None,
        matched=list(decision.matched_signals),
        signals_ms={key: round(r.latency_ms, 3) for key, r in decision.results.items()},
        errors={key: r.error for key, r in decision.results.items() if r.error},
        latency_ms=round((perf_counter() - exchange.started) * 1000, 3),
    )


def _log_rejected(exchange: Exchange, error: RequestError) -> None:
    log.info(
        "rejected",
        request_id=exchange.request_id,
        outcome="error",
        status=error.status,
        code=error.code,
        latency_ms=round((perf_counter() - exchange.started) * 1000, 3),
    )
