"""Prometheus metrics of one processor, exposed on the admin port at ``/metrics``.

Each ``Metrics`` owns its registry, so several processors in one process (tests) never
share counters. Label values are bounded: decisions, models, signals and PII types come
from the config, outcomes and image formats from short fixed lists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from vsr_extproc.core.decision import RoutingDecision
from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.core.signals import SignalResult

_TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304)
_ANSWER_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160)
_PER_TOKEN_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28)
_FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter", "function_call"})
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
_KNOWN_FORMATS = frozenset({"png", "jpeg", "webp", "gif", "bmp", "tiff"})


#: findings of one request by type (``signals.finding_counts``)
FindingCounter = Callable[[Iterable[SignalResult]], dict[str, int]]


class Metrics:
    def __init__(self, count_findings: FindingCounter | None = None) -> None:
        #: reads the findings out of a request's signal results; the families know how,
        #: and the service hands their counter in (the Envoy edge imports no family)
        self.count_findings = count_findings
        self.registry = CollectorRegistry()
        registry = self.registry
        self.requests = Counter(
            "vsr_requests",
            "Requests by decision, model and outcome (routed, blocked, confirmed, error, …)",
            ["decision", "model", "outcome"],
            registry=registry,
        )
        self.decision_seconds = Histogram(
            "vsr_decision_seconds",
            "Time from the request body to the answer, signals included",
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.signal_seconds = Histogram(
            "vsr_signal_seconds",
            "Latency of each signal",
            ["family", "name"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.signal_errors = Counter(
            "vsr_signal_errors",
            "Signals that failed, by kind (error or timeout)",
            ["family", "name", "kind"],
            registry=registry,
        )
        self.judged = Counter(
            "vsr_signal_judged",
            "Results of signals that can be judged by more than one model (a guard model "
            "beside the router, or the fitted one when the guard gave no verdict), by judge",
            ["family", "name", "judged_by"],
            registry=registry,
        )
        self.images = Counter(
            "vsr_images_inspected",
            "Images of routed requests, by format",
            ["format"],
            registry=registry,
        )
        self.pii = Counter(
            "vsr_pii_findings",
            "PII findings by type (counts only)",
            ["type"],
            registry=registry,
        )
        self.reloads = Counter(
            "vsr_config_reloads",
            "Config reloads by result (success, invalid)",
            ["result"],
            registry=registry,
        )
        self.in_flight = Gauge(
            "vsr_inflight_streams", "ext_proc streams being processed", registry=registry
        )
        self.models = Gauge(
            "vsr_model_loaded",
            "Model runtimes: 1 loaded, 0 unavailable",
            ["runtime", "model"],
            registry=registry,
        )
        self.replay_dropped = Counter(
            "vsr_replay_dropped",
            "Decision records dropped (queue full or store failing); routing was unaffected",
            registry=registry,
        )

        # the response phase; names follow OpenTelemetry's GenAI semantic conventions
        # (gen_ai.client.token.usage, gen_ai.client.operation.duration,
        # gen_ai.server.time_to_first_token, gen_ai.server.time_per_output_token)
        answer_labels = ["model", "decision"]
        self.token_usage = Histogram(
            "gen_ai_client_token_usage",
            "Tokens per answer by gen_ai_token_type (input, output); estimated=true when the "
            "upstream sent no usage and the router counted about four characters a token",
            [*answer_labels, "gen_ai_token_type", "estimated"],
            buckets=_TOKEN_BUCKETS,
            registry=registry,
        )
        self.operation_duration = Histogram(
            "gen_ai_client_operation_duration_seconds",
            "From the request leaving the router to the answer's end",
            answer_labels,
            buckets=_ANSWER_BUCKETS,
            registry=registry,
        )
        self.time_to_first_token = Histogram(
            "gen_ai_server_time_to_first_token_seconds",
            "From the request leaving the router to the first token of a streamed answer",
            answer_labels,
            buckets=_ANSWER_BUCKETS,
            registry=registry,
        )
        self.time_per_output_token = Histogram(
            "gen_ai_server_time_per_output_token_seconds",
            "Time per output token after the first, of streamed answers",
            answer_labels,
            buckets=_PER_TOKEN_BUCKETS,
            registry=registry,
        )
        self.answers = Counter(
            "vsr_answers",
            "Answers of routed requests by status class and finish reason (gone: the client "
            "or the upstream left before the end)",
            [*answer_labels, "status", "finish_reason"],
            registry=registry,
        )
        self.response_decisions = Counter(
            "vsr_response_decisions",
            "Response decisions that acted on an answer, by action (block, redact, annotate)",
            ["decision", "action"],
            registry=registry,
        )

    def answered_by_model(self, model: str, decision: str, outcome: dict[str, Any]) -> None:
        """One answer's usage and timings (``ResponseExchange.outcome``)."""
        labels = (model, decision)
        usage = outcome["usage"]
        estimated = "true" if usage["estimated"] else "false"
        self.token_usage.labels(*labels, "input", estimated).observe(usage["input_tokens"])
        self.token_usage.labels(*labels, "output", estimated).observe(usage["output_tokens"])
        timings = outcome["timings"]
        if timings["total_s"] is not None:
            self.operation_duration.labels(*labels).observe(timings["total_s"])
        if timings["first_token_s"] is not None:
            self.time_to_first_token.labels(*labels).observe(timings["first_token_s"])
        if timings["per_output_token_s"] is not None:
            self.time_per_output_token.labels(*labels).observe(timings["per_output_token_s"])
        status = outcome["status"]
        reason = outcome["finish_reason"]
        self.answers.labels(
            *labels,
            f"{status // 100}xx" if isinstance(status, int) else "none",
            (reason if reason in _FINISH_REASONS else "other")
            if reason
            else ("none" if outcome["ended"] else "gone"),
        ).inc()
        for acted in outcome["decisions"]:
            self.response_decisions.labels(acted["decision"], acted["action"]).inc()

    def signal(self, result: SignalResult, *, timed_out: bool) -> None:
        """The signal runner's observer."""
        self.signal_seconds.labels(result.family, result.name).observe(result.latency_ms / 1000)
        if result.error is not None:
            kind = "timeout" if timed_out else "error"
            self.signal_errors.labels(result.family, result.name, kind).inc()
        judge = result.value.get("judged_by") if isinstance(result.value, dict) else None
        if judge in ("guard", "local"):
            self.judged.labels(result.family, result.name, judge).inc()

    def decided(
        self, decision: RoutingDecision, request: NormalizedRequest, seconds: float
    ) -> None:
        model = decision.model.name if decision.model else "none"
        self.requests.labels(decision.name, model, decision.outcome.value).inc()
        self.decision_seconds.observe(seconds)
        for image in request.images:
            name = image.format or "unknown"
            self.images.labels(name if name in _KNOWN_FORMATS else "other").inc()
        found = self.count_findings(decision.results.values()) if self.count_findings else {}
        for kind, count in found.items():
            self.pii.labels(kind).inc(count)

    def answered(self, decision: str, outcome: str, seconds: float | None = None) -> None:
        """A request the router answered without a decision (invalid, passthrough)."""
        self.requests.labels(decision, "none", outcome).inc()
        if seconds is not None:
            self.decision_seconds.observe(seconds)

    def runtimes(self, states: Iterable[tuple[str, str, bool]]) -> None:
        """(runtime, model, loaded) of every model runtime the policy uses."""
        self.models.clear()
        for runtime, model, loaded in states:
            self.models.labels(runtime, model).set(1 if loaded else 0)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
