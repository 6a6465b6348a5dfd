"""Response decisions: the request's rule language over what the model answered.

A response decision has a name, a priority, a rule over ``tool_call`` and ``output``
signals (``all`` / ``any`` / ``not``, thresholds, ``on_error``, exactly as in request
decisions) and one action:

* ``block``: the client gets an OpenAI-style error naming the decision instead of the
  answer (in a stream: an error event and the end of the stream);
* ``redact``: findings of the listed types in the text and in tool-call arguments become
  typed placeholders (``<PASSPORT_1>``), the arguments stay valid JSON;
* ``annotate``: headers on a JSON answer; the decision is logged, counted and recorded.

Among matching decisions, the highest priority comes first (then the one declared first).
When it blocks, the answer is blocked. Otherwise every matching decision acts:
redactions add up (each replaces its types) and so do annotations, so a lower-priority
redaction is never lost to a higher-priority annotation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, ClassVar, Literal, Protocol

from vsr_extproc.core.answer import Answer
from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.core.rules import NodeTrace, Rule, evaluate, leaves
from vsr_extproc.core.signals import Outcome, SignalResult


class AnswerSignal(Protocol):
    family: ClassVar[str]
    name: str
    #: the finding types it looks for (what a redact decision replaces by default)
    sought: frozenset[str]

    def on_answer(self, answer: Answer, request: NormalizedRequest | None) -> Outcome: ...


@dataclass(frozen=True, slots=True)
class BlockAnswer:
    message: str
    status: int = 403
    kind: Literal["block"] = "block"


@dataclass(frozen=True, slots=True)
class RedactAnswer:
    types: frozenset[str]
    kind: Literal["redact"] = "redact"


@dataclass(frozen=True, slots=True)
class AnnotateAnswer:
    headers: tuple[tuple[str, str], ...] = ()
    kind: Literal["annotate"] = "annotate"


ResponseAction = BlockAnswer | RedactAnswer | AnnotateAnswer


@dataclass(frozen=True, slots=True)
class ResponseDecisionSpec:
    name: str
    priority: int
    rule: Rule
    action: ResponseAction
    order: int
    description: str = ""


@dataclass(frozen=True, slots=True)
class ResponseVerdict:
    """The response decision that won, and why."""

    decision: ResponseDecisionSpec
    trace: NodeTrace
    results: Mapping[str, SignalResult]

    @property
    def name(self) -> str:
        return self.decision.name

    @property
    def action(self) -> ResponseAction:
        return self.decision.action

    def explain(self) -> dict[str, Any]:
        return {
            "decision": self.name,
            "action": self.action.kind,
            "matched": sorted(key for key, result in self.results.items() if result.matched),
            "signals": {
                key: {
                    "matched": result.matched,
                    "confidence": result.confidence,
                    "value": result.value,
                    "error": result.error,
                }
                for key, result in self.results.items()
            },
        }


@dataclass(frozen=True, slots=True)
class ResponsePolicy:
    """What the response phase does; ``enabled`` False makes it do nothing at all."""

    enabled: bool = False
    decisions: tuple[ResponseDecisionSpec, ...] = ()
    signals: Mapping[str, AnswerSignal] = field(default_factory=dict)
    window_chars: int = 256
    max_answer_bytes: int = 8 * 1024 * 1024
    block_unreadable: bool = True

    @property
    def guards(self) -> bool:
        """Whether any decision reads the answer (else answers are only measured)."""
        return bool(self.decisions)

    @property
    def guards_text(self) -> bool:
        """Whether a decision reads the answer's text (a stream's text is then held back
        by the window)."""
        return any(signal.family == "output" for signal in self.signals.values())

    @property
    def guards_calls(self) -> bool:
        return any(signal.family == "tool_call" for signal in self.signals.values())

    def decide(
        self, answer: Answer, request: NormalizedRequest | None
    ) -> tuple[list[ResponseVerdict], dict[str, SignalResult]]:
        """The matching decisions, first the one that wins, and every signal's result."""
        results = {key: _run(signal, answer, request) for key, signal in self.signals.items()}
        matched = []
        for decision in self.decisions:
            trace = evaluate(decision.rule, results)
            if trace.matched:
                used = {leaf.signal: results[leaf.signal] for leaf in leaves(decision.rule)}
                matched.append(ResponseVerdict(decision, trace, used))
        matched.sort(key=lambda verdict: (-verdict.decision.priority, verdict.decision.order))
        return matched, results

    def redact_types(self, verdicts: list[ResponseVerdict]) -> frozenset[str]:
        """The types the redact decisions among ``verdicts`` replace: each one's own list,
        or what its signals look for."""
        types: set[str] = set()
        for verdict in verdicts:
            action = verdict.action
            if not isinstance(action, RedactAnswer):
                continue
            if action.types:
                types |= action.types
            else:
                for key in verdict.results:
                    if key in self.signals:
                        types |= self.signals[key].sought
        return frozenset(types)


def _run(signal: AnswerSignal, answer: Answer, request: NormalizedRequest | None) -> SignalResult:
    started = perf_counter()
    try:
        outcome = signal.on_answer(answer, request)
    except Exception as exc:  # a guard that fails is reported, and its rule's on_error decides
        return SignalResult.failure(signal, f"{type(exc).__name__}: {exc}", started)
    return SignalResult.of(signal, outcome, started)
