"""What happens after every answer: one log line, the metrics, and a replay record.

The ext_proc edge reports each request here once. Nothing in this module can delay or
fail routing: logging is a line, metrics are counters, and the replay record is handed,
unbuilt, to a recorder that builds it on its own thread and drops rather than blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter, time
from typing import Any, Protocol

import structlog

from vsr_extproc.core.decision import RoutingDecision
from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.detectors import Detector
from vsr_extproc.errors import RequestError
from vsr_extproc.metrics import Metrics
from vsr_extproc.response.guard import ResponseExchange

log = structlog.get_logger("vsr_extproc.request")


@dataclass(frozen=True, slots=True)
class Seen:
    """The identity of one request, as the edge saw it."""

    request_id: str
    replay_id: str
    policy: str
    started: float

    @property
    def seconds(self) -> float:
        return perf_counter() - self.started


class Recorder(Protocol):
    def defer(self, replay_id: str, build: Callable[[], Any]) -> bool: ...

    def respond(self, replay_id: str, response: dict[str, Any]) -> bool: ...


class Observer:
    def __init__(
        self,
        metrics: Metrics,
        recorder: Recorder | None = None,
        *,
        keep_content: bool = False,
        max_content_chars: int | None = None,
        entities: Detector | None = None,
    ) -> None:
        self.metrics = metrics
        self.recorder = recorder
        self.keep_content = keep_content
        self.max_content_chars = max_content_chars
        #: finds names to redact in kept content (the recorder's thread runs it)
        self.entities = entities

    def decided(
        self, seen: Seen, body: bytes, request: NormalizedRequest, decision: RoutingDecision
    ) -> None:
        seconds = seen.seconds
        self.metrics.decided(decision, request, seconds)
        log.info(
            "decided",
            request_id=seen.request_id,
            replay_id=seen.replay_id,
            decision=decision.name,
            outcome=decision.outcome.value,
            model=decision.model.name if decision.model else None,
            matched=list(decision.matched_signals),
            signals_ms={key: round(r.latency_ms, 3) for key, r in decision.results.items()},
            errors={key: r.error for key, r in decision.results.items() if r.error},
            images=len(request.images),
            latency_ms=round(seconds * 1000, 3),
        )
        self._record(seen, body, request, decision, outcome=None, error=None)

    def rejected(self, seen: Seen, body: bytes, error: RequestError) -> None:
        seconds = seen.seconds
        self.metrics.answered(error.code, "error", seconds)
        log.info(
            "rejected",
            request_id=seen.request_id,
            replay_id=seen.replay_id,
            outcome="error",
            status=error.status,
            code=error.code,
            latency_ms=round(seconds * 1000, 3),
        )
        self._record(seen, body, None, None, outcome="error", error=error.code)

    def failed(self, seen: Seen, body: bytes) -> None:
        self.metrics.answered("internal_error", "error", seen.seconds)
        log.exception("request_failed", request_id=seen.request_id, replay_id=seen.replay_id)
        self._record(seen, body, None, None, outcome="error", error="internal_error")

    def responded(self, seen: Seen, decision: str, model: str, answer: ResponseExchange) -> None:
        """The end of an answer's response phase (its end, a refusal, or a party gone)."""
        outcome = answer.outcome()
        self.metrics.answered_by_model(model, decision, outcome)
        log.info(
            "answered",
            request_id=seen.request_id,
            replay_id=seen.replay_id,
            decision=decision,
            model=model,
            status=outcome["status"],
            finish_reason=outcome["finish_reason"],
            usage=outcome["usage"],
            response_decision=outcome["decision"],
            unreadable=outcome["unreadable"],
            ended=outcome["ended"],
        )
        if self.recorder is not None and not self.recorder.respond(seen.replay_id, outcome):
            self.metrics.replay_dropped.inc()

    def passed_through(self, seen: Seen, path: str, model: str | None) -> None:
        self.metrics.answered("passthrough", "passthrough")
        log.info(
            "passthrough",
            request_id=seen.request_id,
            replay_id=seen.replay_id,
            path=path,
            model=model,
        )
        self._record(seen, b"", None, None, outcome="passthrough", error="passthrough")

    def _record(
        self,
        seen: Seen,
        body: bytes,
        request: NormalizedRequest | None,
        decision: RoutingDecision | None,
        *,
        outcome: str | None,
        error: str | None,
    ) -> None:
        if self.recorder is None:
            return
        at = time()

        def build() -> Any:
            """Runs later, on the recorder's thread (hashing, PII redaction)."""
            from vsr_extproc.replay.record import make_record

            try:
                return make_record(
                    seen.replay_id,
                    seen.request_id,
                    body,
                    request,
                    decision,
                    outcome=outcome,
                    keep_content=self.keep_content,
                    max_content_chars=self.max_content_chars,
                    entities=self.entities,
                    policy_fingerprint=seen.policy,
                    error=error,
                    at=at,
                )
            except Exception:
                # a record that cannot be built is lost; the request it describes is not
                log.exception("replay_record_failed", replay_id=seen.replay_id)
                self.metrics.replay_dropped.inc()
                return None

        if not self.recorder.defer(seen.replay_id, build):
            self.metrics.replay_dropped.inc()
