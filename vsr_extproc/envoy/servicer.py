"""The ext_proc stream loop: one gRPC stream per HTTP request.

1. ``request_headers``: strip client-sent ``x-vsr-*`` headers and give the request its
   replay id. Paths that are not chat completions (``GET /v1/models``, …) are sent to the
   passthrough model and the stream ends here.
2. ``request_body`` (BUFFERED): parse once, run the signals, decide, and reply with either
   routing headers plus the rewritten body, or an immediate answer. Then the stream ends,
   so a slow upstream never holds a processor stream — unless the policy has a response
   phase and the decision's route takes part in it:
3. ``response_headers``: JSON answers that a response decision reads are buffered (a
   mode override), streams stay in streamed mode; anything else ends the stream here.
   The generated Envoy config sends an answer's body without waiting for the reply to
   its headers (``send_body_without_waiting_for_header_response``: a stream's first
   token then waits for one round trip, not two). Envoy then ignores mode overrides, so
   a JSON answer's headers are answered only once its body has been read
   (``HeldHeaders``): it can still be refused or annotated, as when buffered.
4. ``response_body``: measured and guarded (``vsr_extproc.response.guard``); the stream
   ends with the answer.

Answers that are only measured (no response decision reads them) do not keep the routing
stream: the decision is handed to Envoy's observing filter as metadata, and that filter
opens a second stream, in observability mode, that carries the answer and is never
answered (``_observe``).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from time import perf_counter, time
from typing import Any

import structlog
from envoy.service.ext_proc.v3 import external_processor_pb2 as ext_proc
from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as ext_proc_grpc

from vsr_extproc.core.answers import Answer, decision_answer, error_answer
from vsr_extproc.core.decision import RoutingDecision
from vsr_extproc.core.policy import Policy, RouteAction, estimate_tokens
from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.core.rewrite import Redaction, rewrite_body
from vsr_extproc.core.router import Router
from vsr_extproc.envoy.convert import (
    DEBUG_REASON_HEADER,
    DEBUG_SIGNALS_HEADER,
    DECISION_HEADER,
    MODEL_HEADER,
    NO_MODEL,
    REDACTED_HEADER,
    REPLAY_HEADER,
    ROUTER_HEADER_PREFIX,
    body_response,
    client_address,
    header_map,
    headers_response,
    immediate_response,
    observe_answer,
    observed_decision,
    response_body,
    response_headers,
    response_refusal,
)
from vsr_extproc.errors import RequestError
from vsr_extproc.metrics import Metrics
from vsr_extproc.observe import Observer, Seen
from vsr_extproc.response.guard import BodyPlan, HeadersPlan, ResponseExchange

PASSTHROUGH = "passthrough"
# a body larger than this is parsed, scanned or redacted off the event loop
OFF_LOOP_BYTES = 65_536
log = structlog.get_logger("vsr_extproc.response")


@dataclass(frozen=True)
class DebugAccess:
    """Who may see debug headers: they must ask, and be trusted by token or address."""

    request_header: str = "x-router-debug"
    token_header: str = "x-router-debug-token"
    token: str | None = None
    trusted: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()

    def granted(self, headers: dict[str, str], address: str | None) -> bool:
        if headers.get(self.request_header) != "1":
            return False
        offered = headers.get(self.token_header)
        # in constant time: a comparison that stops at the first wrong character would tell
        # an attacker, by timing, how much of a guess was right
        if (
            self.token is not None
            and offered is not None
            and hmac.compare_digest(offered.encode(), self.token.encode())
        ):
            return True
        if address is None or not self.trusted:
            return False
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self.trusted)


@dataclass(slots=True)
class HeldHeaders:
    """A JSON answer's headers, not yet answered while its body arrives ahead of them."""

    remove: tuple[str, ...]
    #: the body's parts so far, each still to be answered
    parts: list[bytes] = field(default_factory=list)


@dataclass(slots=True)
class Exchange:
    """What the body phase needs from the headers phase of the same stream."""

    policy: Policy
    seen: Seen
    debug: bool
    #: request headers the upstream must not receive (the debug token)
    remove: tuple[str, ...] = ()
    #: the response phase of a routed request that takes part in it
    answer: ResponseExchange | None = None
    decision: str = ""
    model: str = ""
    #: Envoy sends an answer's body without waiting for the reply to its headers
    early_body: bool = False
    held: HeldHeaders | None = None


def _new_replay_id() -> str:
    from vsr_extproc.replay.record import new_replay_id

    return new_replay_id()


class ExternalProcessor(ext_proc_grpc.ExternalProcessorServicer):  # type: ignore[misc]
    def __init__(
        self,
        router: Router,
        observer: Observer | None = None,
        debug: DebugAccess | None = None,
    ) -> None:
        self.router = router
        self.observer = observer or Observer(Metrics())
        self.debug = debug or DebugAccess()

    async def Process(  # noqa: N802 - the gRPC method name
        self, requests: AsyncIterator[ext_proc.ProcessingRequest], context: Any
    ) -> AsyncIterator[ext_proc.ProcessingResponse]:
        exchange: Exchange | None = None
        in_flight = self.observer.metrics.in_flight
        in_flight.inc()
        try:
            async for message in requests:
                phase = message.WhichOneof("request")
                if message.observability_mode:
                    # the observing filter's stream: an answer to measure, never replied to
                    await self._observe(message, requests)
                    return
                if phase == "request_headers":
                    exchange, response = self._on_headers(message)
                    if exchange is not None:
                        config = message.protocol_config
                        exchange.early_body = config.send_body_without_waiting_for_header_response
                    yield response
                    if exchange is None:
                        return
                elif phase == "request_body" and exchange is not None:
                    yield await self._on_body(exchange, message.request_body.body)
                    if exchange.answer is None:
                        return
                elif phase == "response_headers" and exchange and exchange.answer:
                    response, more, plan = _on_response_headers(exchange.answer, message)
                    if more and exchange.early_body and plan.buffered:
                        exchange.held = HeldHeaders(plan.remove)
                        continue  # answered once the body has been read
                    yield response
                    if not more:
                        return
                elif phase == "response_body" and exchange and exchange.answer and exchange.held:
                    body = message.response_body
                    responses, more = await _on_held_body(exchange, exchange.held, body)
                    for response in responses:
                        yield response
                    if not more:
                        return
                elif phase == "response_body" and exchange and exchange.answer:
                    body = message.response_body
                    response, more = await self._on_response_body(exchange.answer, body)
                    yield response
                    if not more:
                        return
                else:
                    # a phase this processor did not ask for: let the request continue
                    yield _unchanged(phase)
        finally:
            in_flight.dec()
            if exchange is not None and exchange.answer is not None:
                # the end of the answer, a refusal, or a client or upstream gone mid-way
                seen, answer = exchange.seen, exchange.answer
                self.observer.responded(seen, exchange.decision, exchange.model, answer)

    async def _observe(
        self, first: ext_proc.ProcessingRequest, requests: AsyncIterator[ext_proc.ProcessingRequest]
    ) -> None:
        """Measure an answer that passes to the client unheld.

        The routing stream that decided the request has ended; what it decided arrives as
        metadata with the first message, and timings are wall-clock (``time``), so the
        replica that observes need not be the one that decided.
        """
        decided = observed_decision(first)
        if decided is None:
            log.warning("observed_answer_without_decision")
            return
        policy = self.router.policy
        replay_id = str(decided.get("replay_id", ""))
        seen = Seen(str(decided.get("request_id", "")), replay_id, policy.fingerprint,
                    perf_counter())  # fmt: skip
        answer = ResponseExchange(
            # nothing observed can be changed or refused: measured, never guarded (even
            # when a reload has since added a response decision)
            replace(policy.responses, decisions=()),
            None,
            released_at=_number(decided.get("released_at"), time()),
            clock=time,
            input_estimate=int(_number(decided.get("input_tokens"), 0)),
        )
        message: ext_proc.ProcessingRequest | None = first
        try:
            while message is not None:
                phase = message.WhichOneof("request")
                if phase == "response_headers":
                    answer.on_headers(header_map(message.response_headers))
                    if message.response_headers.end_of_stream:
                        answer.on_body(b"", True)
                elif phase == "response_body":
                    body = message.response_body
                    if len(body.body) > OFF_LOOP_BYTES:
                        await asyncio.to_thread(answer.on_body, body.body, body.end_of_stream)
                    else:
                        answer.on_body(body.body, body.end_of_stream)
                if answer.ended_at is not None:
                    break
                message = await anext(requests, None)
        except Exception:
            log.exception("observe_failed", replay_id=replay_id)
        finally:
            decision, model = str(decided.get("decision", "")), str(decided.get("model", ""))
            self.observer.responded(seen, decision, model, answer)

    async def _on_response_body(
        self, answer: ResponseExchange, body: ext_proc.HttpBody
    ) -> tuple[ext_proc.ProcessingResponse, bool]:
        plan = await _read_body(answer, body)
        if plan.refuse is not None:
            status, error = plan.refuse
            return response_refusal(status, error, phase="body"), False
        return response_body(plan.body, plan.headers), not body.end_of_stream

    def _on_headers(
        self, message: ext_proc.ProcessingRequest
    ) -> tuple[Exchange | None, ext_proc.ProcessingResponse]:
        headers = message.request_headers
        values = header_map(headers)
        policy = self.router.policy
        seen = Seen(values.get("x-request-id", ""), _new_replay_id(), policy.fingerprint,
                    perf_counter())  # fmt: skip
        spoofed = [name for name in values if name.startswith(ROUTER_HEADER_PREFIX)]
        path = values.get(":path", "").partition("?")[0]
        if values.get(":method") == "POST" and path in policy.chat_paths:
            if headers.end_of_stream:
                error = RequestError("the request has no body; expected a JSON chat request")
                self.observer.rejected(seen, b"", error)
                return None, _answer(_error(error), error.code, seen.replay_id)
            debug = self.debug.granted(values, client_address(message))
            remove = (self.debug.token_header,) if self.debug.token_header in values else ()
            exchange = Exchange(policy, seen, debug, remove)
            return exchange, headers_response(remove=spoofed)
        model = policy.passthrough_model
        routing = [(DECISION_HEADER, PASSTHROUGH), (REPLAY_HEADER, seen.replay_id)]
        if model is not None:
            routing.append((MODEL_HEADER, model))
        self.observer.passed_through(seen, path, model)
        return None, headers_response(routing, spoofed, clear_route_cache=True)

    async def _on_body(self, exchange: Exchange, body: bytes) -> ext_proc.ProcessingResponse:
        policy = exchange.policy
        seen = exchange.seen
        structlog.contextvars.bind_contextvars(request_id=seen.request_id)
        try:
            request = self.router.parse(body, policy)
            decision = await self.router.decide(request, policy)
            if _redacts_a_large_body(decision, body):
                # redaction scans every text: on a thread, so the loop serves other streams
                response = await asyncio.to_thread(_respond, decision, request, exchange)
            else:
                response = _respond(decision, request, exchange)
            if _takes_part_in_responses(decision, policy):
                model = decision.model.name if decision.model else ""
                if policy.responses.guards:
                    exchange.answer = ResponseExchange(policy.responses, request)
                    exchange.decision, exchange.model = decision.name, model
                else:
                    observe_answer(response, _decided(seen, decision.name, model, request))
                response.request_body.response.header_mutation.remove_headers.append(
                    "accept-encoding"  # answers are read as the model wrote them
                )
        except RequestError as exc:
            self.observer.rejected(seen, body, exc)
            return _answer(_error(exc), exc.code, seen.replay_id)
        except Exception:
            self.observer.failed(seen, body)
            answer = error_answer(
                500,
                "the router failed while deciding this request",
                error_type="router_error",
                code="internal_error",
            )
            return _answer(answer, "internal_error", seen.replay_id)
        finally:
            structlog.contextvars.unbind_contextvars("request_id")
        self.observer.decided(seen, body, request, decision)
        return response


def _takes_part_in_responses(decision: RoutingDecision, policy: Policy) -> bool:
    """Whether the answer to this decision goes through the response phase."""
    action = decision.decision.action
    return (
        policy.responses.enabled
        and isinstance(action, RouteAction)
        and action.process_response
        and decision.model is not None
    )


def _decided(
    seen: Seen, decision: str, model: str, request: NormalizedRequest
) -> dict[str, object]:
    """What the observing stream needs to measure an answer it did not decide."""
    return {
        "replay_id": seen.replay_id,
        "request_id": seen.request_id,
        "decision": decision,
        "model": model,
        "input_tokens": estimate_tokens(request.text_chars, len(request.images)),
        "released_at": time(),
    }


def _number(value: object, default: float) -> float:
    return float(value) if isinstance(value, int | float) else default


def _on_response_headers(
    answer: ResponseExchange, message: ext_proc.ProcessingRequest
) -> tuple[ext_proc.ProcessingResponse, bool, HeadersPlan]:
    """Plan the answer once its headers are known: the reply, False when the stream ends
    here, and the plan."""
    try:
        plan = answer.on_headers(header_map(message.response_headers))
    except Exception:
        log.exception("response_failed")
        plan = answer.headers_failed()
    if plan.refuse is not None:
        status, error = plan.refuse
        return response_refusal(status, error, phase="headers"), False, plan
    if plan.mode == "pass" or message.response_headers.end_of_stream:
        return response_headers(remove=plan.remove), False, plan
    return response_headers(remove=plan.remove, buffered=plan.buffered), True, plan


async def _on_held_body(
    exchange: Exchange, held: HeldHeaders, body: ext_proc.HttpBody
) -> tuple[list[ext_proc.ProcessingResponse], bool]:
    """A part of a JSON answer whose headers are held: nothing is answered until the
    guards have read the whole (or given up reading it); then the headers' reply, with the
    decisions' headers, and one reply for each part, in order."""
    assert exchange.answer is not None
    answer = exchange.answer
    held.parts.append(body.body)
    plan = await _read_body(answer, body)
    if plan.refuse is not None:
        status, error = plan.refuse
        return [response_refusal(status, error, phase="body")], False
    if not body.end_of_stream and answer.mode != "pass":
        return [], True
    exchange.held = None
    responses = [response_headers(remove=held.remove, set_headers=plan.headers)]
    if plan.body is None or plan.body == b"".join(held.parts):
        responses += [response_body(None) for _ in held.parts]  # each part as it came
    else:
        responses += [response_body(b"") for _ in held.parts[1:]]
        responses.append(response_body(plan.body))
    return responses, not body.end_of_stream


async def _read_body(answer: ResponseExchange, body: ext_proc.HttpBody) -> BodyPlan:
    size = len(body.body)
    whole = answer.buffered and body.end_of_stream and answer.bytes_in + size > OFF_LOOP_BYTES
    try:
        if size > OFF_LOOP_BYTES or whole:
            # a large answer read whole (in one part or many) is parsed and scanned off the
            # loop, so other streams are served meanwhile
            return await asyncio.to_thread(answer.on_body, body.body, body.end_of_stream)
        return answer.on_body(body.body, body.end_of_stream)
    except Exception:
        log.exception("response_failed")
        return answer.failed()


def _redacts_a_large_body(decision: RoutingDecision, body: bytes) -> bool:
    """Whether redaction may take long enough to block the loop: a large body, or names
    to find in text the pii signal did not read whole (the named-entity model reads ~20
    characters a millisecond on two cores; what the signal read is cached)."""
    action = decision.decision.action
    if not isinstance(action, RouteAction) or not action.redact:
        return False
    return len(body) > OFF_LOOP_BYTES or (action.entities is not None and len(body) > 2_048)


def _error(error: RequestError) -> Answer:
    return error_answer(error.status, str(error), error_type=error.error_type, code=error.code)


def _respond(
    decision: RoutingDecision, request: NormalizedRequest, exchange: Exchange
) -> ext_proc.ProcessingResponse:
    answer = decision_answer(decision, stream=request.stream)
    if answer is not None:
        return _answer(answer, decision.name, exchange.seen.replay_id)
    action = decision.decision.action
    model = decision.model
    if not isinstance(action, RouteAction) or model is None:
        raise TypeError(f"decision {decision.name!r} has neither an answer nor a model")
    headers = [
        (MODEL_HEADER, model.name),
        (DECISION_HEADER, decision.name),
        (REPLAY_HEADER, exchange.seen.replay_id),
        *action.headers,
    ]
    headers += [
        (header, value)
        for signal, header, value in action.signal_headers
        if decision.results[signal].matched
    ]
    if exchange.debug:
        headers.append((DEBUG_SIGNALS_HEADER, ",".join(decision.matched_signals) or "-"))
        headers.append((DEBUG_REASON_HEADER, _header_safe(decision.reason)))
    redaction = Redaction(action.redact, action.entities) if action.redact else None
    new_body = rewrite_body(request, model, action, redaction)
    if redaction is not None and redaction.counts:
        summary = ",".join(f"{kind}={count}" for kind, count in redaction.counts.items())
        headers.append((REDACTED_HEADER, summary))
    return body_response(headers, new_body, remove=exchange.remove)


def _header_safe(text: str, limit: int = 512) -> str:
    printable = "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in text)
    return printable[:limit]


def _answer(answer: Answer, decision: str, replay_id: str) -> ext_proc.ProcessingResponse:
    headers = [(DECISION_HEADER, decision), (MODEL_HEADER, NO_MODEL), (REPLAY_HEADER, replay_id)]
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
