"""Choose the decision and the model for a request, and say why.

Every decision is evaluated. Matching decisions are ranked by priority (highest first),
then confidence (highest first), then declaration order. A ``route`` decision takes the
first model of its list that can serve the request (modalities, capabilities, context
window); when none can, the next matching decision is tried and the trace says so. When no
decision matches, or none that matched can be served, the default decision applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from vsr_extproc.core.policy import (
    ActionKind,
    DecisionSpec,
    ModelSpec,
    Policy,
    Requirements,
    RouteAction,
    requirements_of,
)
from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.core.rules import NodeTrace, OnError, evaluate, leaves, verdict
from vsr_extproc.core.signals import SignalResult


class RequestOutcome(StrEnum):
    ROUTED = "routed"
    BLOCKED = "blocked"
    CONFIRMED = "confirmed"
    #: a leaf with ``on_error: fail`` met a failed signal
    REFUSED = "refused"
    #: no model of any applicable decision can serve the request
    UNROUTABLE = "unroutable"


@dataclass(frozen=True, slots=True)
class DecisionTrace:
    name: str
    priority: int
    order: int
    matched: bool
    confidence: float
    rule: NodeTrace | None

    @property
    def decided_by(self) -> str | None:
        return self.rule.decided_by if self.rule is not None else None


@dataclass(frozen=True, slots=True)
class SkippedModel:
    decision: str
    model: str
    reason: str


@dataclass(frozen=True, slots=True)
class RoutingDecision:
    """The verdict for one request, with everything needed to explain it."""

    decision: DecisionSpec
    outcome: RequestOutcome
    model: ModelSpec | None
    confidence: float
    results: Mapping[str, SignalResult]
    traces: tuple[DecisionTrace, ...]
    #: why the winner beat the other matching decisions
    reason: str
    skipped: tuple[SkippedModel, ...] = ()
    #: matching decisions passed over because none of their models fit
    fallthrough: tuple[str, ...] = ()
    #: for REFUSED: the failed signal; for UNROUTABLE: why nothing fits
    problem: str | None = None

    @property
    def name(self) -> str:
        return self.decision.name

    @property
    def matched_signals(self) -> tuple[str, ...]:
        return tuple(key for key, result in self.results.items() if result.matched)


def decide(
    policy: Policy, request: NormalizedRequest, results: Mapping[str, SignalResult]
) -> RoutingDecision:
    """Evaluate every decision of ``policy`` against the signal ``results``."""
    traces = tuple(_trace(spec, results) for spec in policy.decisions)
    aborted = _aborted_leaf(traces)
    if aborted is not None:
        return RoutingDecision(
            _spec(policy, aborted[0]),
            RequestOutcome.REFUSED,
            None,
            0.0,
            results,
            traces,
            f"signal {aborted[1].signal} failed and decision {aborted[0]!r} requires it",
            problem=f"{aborted[1].signal}: {aborted[1].error}",
        )
    candidates = sorted(
        (trace for trace in traces if trace.matched),
        key=lambda trace: (-trace.priority, -trace.confidence, trace.order),
    )
    requirements = requirements_of(request)
    skipped: list[SkippedModel] = []
    fallthrough: list[str] = []
    for position, trace in enumerate(candidates):
        spec = _spec(policy, trace.name)
        model = _choose(policy, spec, requirements, skipped)
        if model is None and spec.action.kind is ActionKind.ROUTE:
            fallthrough.append(spec.name)
            continue
        reason = _why(trace, candidates[position + 1 :], fallthrough)
        return RoutingDecision(
            spec,
            _OUTCOMES[spec.action.kind],
            model,
            trace.confidence,
            results,
            traces,
            reason,
            tuple(skipped),
            tuple(fallthrough),
        )
    default = policy.default
    model = _choose(policy, default, requirements, skipped)
    reason = "no decision matched; the default applies"
    if fallthrough:
        reason = f"{_fell_through(fallthrough)}; the default applies"
    if model is None and default.action.kind is ActionKind.ROUTE:
        return RoutingDecision(
            default,
            RequestOutcome.UNROUTABLE,
            None,
            0.0,
            results,
            traces,
            reason,
            tuple(skipped),
            tuple(fallthrough),
            problem="; ".join(f"{s.model}: {s.reason}" for s in skipped),
        )
    return RoutingDecision(
        default,
        _OUTCOMES[default.action.kind],
        model,
        1.0,
        results,
        traces,
        reason,
        tuple(skipped),
        tuple(fallthrough),
    )


_OUTCOMES = {
    ActionKind.ROUTE: RequestOutcome.ROUTED,
    ActionKind.BLOCK: RequestOutcome.BLOCKED,
    ActionKind.CONFIRM: RequestOutcome.CONFIRMED,
}


def settled(policy: Policy, request: NormalizedRequest, known: Mapping[str, SignalResult]) -> bool:
    """Whether ``decide`` must choose the same decision whatever the signals not yet in
    ``known`` will say, so that they need not finish (``SignalRunner.run``).

    True when one decision's rule is already certain to match and every other decision
    of its priority or higher is certain not to; no leaf with ``on_error: fail`` waits on
    a signal (a failure there refuses the whole request); the decision can be served (a
    route with a model for this request: otherwise the next decision would be tried); and
    the signals its action turns into headers have finished.
    """
    for spec in policy.decisions:
        for leaf in leaves(spec.rule) if spec.rule is not None else ():
            if leaf.on_error is OnError.FAIL:
                result = known.get(leaf.signal)
                if result is None:
                    return False
                if result.failed:
                    return True  # the request is refused, whatever else is found
    verdicts = [
        (spec, True if spec.rule is None else verdict(spec.rule, known))
        for spec in policy.decisions
    ]
    certain = [spec for spec, value in verdicts if value is True]
    if not certain:
        return False
    winner = max(certain, key=lambda spec: spec.priority)
    if any(
        spec is not winner and spec.priority >= winner.priority and value is not False
        for spec, value in verdicts
    ):
        return False
    action = winner.action
    if isinstance(action, RouteAction):
        if any(signal not in known for signal, _, _ in action.signal_headers):
            return False
        return _choose(policy, winner, requirements_of(request), []) is not None
    return True


def _trace(spec: DecisionSpec, results: Mapping[str, SignalResult]) -> DecisionTrace:
    if spec.rule is None:
        return DecisionTrace(spec.name, spec.priority, spec.order, True, 1.0, None)
    node = evaluate(spec.rule, results)
    confidence = node.confidence if node.matched else 0.0
    return DecisionTrace(spec.name, spec.priority, spec.order, node.matched, confidence, node)


def _aborted_leaf(traces: tuple[DecisionTrace, ...]) -> tuple[str, NodeTrace] | None:
    for trace in traces:
        if trace.rule is None:
            continue
        for node in trace.rule.walk():
            if node.aborted:
                return trace.name, node
    return None


def _spec(policy: Policy, name: str) -> DecisionSpec:
    for spec in policy.decisions:
        if spec.name == name:
            return spec
    return policy.default


def _choose(
    policy: Policy,
    spec: DecisionSpec,
    requirements: Requirements,
    skipped: list[SkippedModel],
) -> ModelSpec | None:
    if not isinstance(spec.action, RouteAction):
        return None
    for name in spec.action.models:
        model = policy.models[name]
        unmet = requirements.unmet_by(model)
        if unmet is None:
            return model
        skipped.append(SkippedModel(spec.name, name, unmet))
    return None


def _why(winner: DecisionTrace, rest: list[DecisionTrace], fallthrough: list[str]) -> str:
    if not rest:
        reason = "the only matching decision"
    else:
        other = rest[0]
        if winner.priority != other.priority:
            reason = f"priority {winner.priority} > {other.priority} of {other.name!r}"
        elif winner.confidence != other.confidence:
            reason = (
                f"same priority as {other.name!r}; confidence "
                f"{winner.confidence:.3f} > {other.confidence:.3f}"
            )
        else:
            reason = f"same priority and confidence as {other.name!r}; declared first"
    if fallthrough:
        reason = f"{reason}; {_fell_through(fallthrough)}"
    return reason


def _fell_through(names: list[str]) -> str:
    quoted = ", ".join(repr(name) for name in names)
    return f"{quoted} matched first but none of their models can serve this request"
