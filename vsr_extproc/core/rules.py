"""The rule language: a typed, frozen AST and its one evaluator.

A rule is a tree of ``all`` / ``any`` / ``not`` over leaves that name a signal
(``family.name``), optionally with a confidence threshold and an ``on_error`` policy.
Every node keeps the config path it came from, so a trace and an error can point at it.

Evaluating a tree returns a ``NodeTrace`` tree: the trace *is* the evaluation, never a
second computation kept in sync with it.

Confidence is the confidence in a node's verdict: a matched leaf carries its signal's
confidence, an unmatched leaf ``1 - confidence``; ``all`` takes its weakest child, ``any``
its strongest matching child, ``not`` keeps its child's. A failed signal contributes
confidence 0 and the verdict its leaf's ``on_error`` names.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum

from vsr_extproc.core.signals import SignalResult


class OnError(StrEnum):
    NO_MATCH = "no_match"
    MATCH = "match"
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class Leaf:
    signal: str
    path: str
    threshold: float | None = None
    on_error: OnError = OnError.NO_MATCH


@dataclass(frozen=True, slots=True)
class AllOf:
    children: tuple[Rule, ...]
    path: str


@dataclass(frozen=True, slots=True)
class AnyOf:
    children: tuple[Rule, ...]
    path: str


@dataclass(frozen=True, slots=True)
class Not:
    child: Rule
    path: str


Rule = Leaf | AllOf | AnyOf | Not


def leaves(rule: Rule) -> Iterator[Leaf]:
    """Every leaf of a rule, in order."""
    if isinstance(rule, Leaf):
        yield rule
    elif isinstance(rule, Not):
        yield from leaves(rule.child)
    else:
        for child in rule.children:
            yield from leaves(child)


@dataclass(frozen=True, slots=True)
class NodeTrace:
    """How one node of a rule evaluated.

    ``decided_by`` is the path of the leaf that settled the verdict: the weakest matching
    leaf of a matched ``all``, its surest failing child otherwise; the strongest matching
    leaf of a matched ``any``.
    """

    path: str
    kind: str
    matched: bool
    confidence: float
    decided_by: str | None
    children: tuple[NodeTrace, ...] = ()
    signal: str | None = None
    error: str | None = None
    #: a leaf with ``on_error: fail`` met a failed signal
    aborted: bool = False

    def walk(self) -> Iterator[NodeTrace]:
        yield self
        for child in self.children:
            yield from child.walk()


def evaluate(rule: Rule, results: Mapping[str, SignalResult]) -> NodeTrace:
    """Evaluate a rule against the signal results of one request."""
    if isinstance(rule, Leaf):
        return _leaf(rule, results[rule.signal])
    if isinstance(rule, Not):
        child = evaluate(rule.child, results)
        return NodeTrace(
            rule.path, "not", not child.matched, child.confidence, child.decided_by, (child,)
        )
    children = tuple(evaluate(child, results) for child in rule.children)
    if isinstance(rule, AllOf):
        return _all(rule.path, children)
    return _any(rule.path, children)


def verdict(rule: Rule, known: Mapping[str, SignalResult]) -> bool | None:
    """What ``rule`` evaluates to whatever the signals not yet in ``known`` will say: True
    or False when it is already certain, None while it depends on one of them (Kleene's
    three-valued logic: an ``any`` with a true child is true, an ``all`` with a false
    child is false, whatever the others)."""
    if isinstance(rule, Leaf):
        result = known.get(rule.signal)
        return None if result is None else _leaf(rule, result).matched
    if isinstance(rule, Not):
        child = verdict(rule.child, known)
        return None if child is None else not child
    values = [verdict(child, known) for child in rule.children]
    decisive = isinstance(rule, AnyOf)  # True settles an any; False settles an all
    if decisive in values:
        return decisive
    return None if None in values else not decisive


def _leaf(leaf: Leaf, result: SignalResult) -> NodeTrace:
    if result.error is not None:
        return NodeTrace(
            leaf.path,
            "signal",
            leaf.on_error is OnError.MATCH,
            0.0,
            leaf.path,
            signal=leaf.signal,
            error=result.error,
            aborted=leaf.on_error is OnError.FAIL,
        )
    matched = result.matched and (leaf.threshold is None or result.confidence >= leaf.threshold)
    confidence = result.confidence if matched else 1.0 - result.confidence
    return NodeTrace(leaf.path, "signal", matched, confidence, leaf.path, signal=leaf.signal)


def _all(path: str, children: tuple[NodeTrace, ...]) -> NodeTrace:
    failing = [child for child in children if not child.matched]
    if failing:
        surest = max(failing, key=lambda child: child.confidence)
        return NodeTrace(path, "all", False, surest.confidence, surest.decided_by, children)
    weakest = min(children, key=lambda child: child.confidence)
    return NodeTrace(path, "all", True, weakest.confidence, weakest.decided_by, children)


def _any(path: str, children: tuple[NodeTrace, ...]) -> NodeTrace:
    matching = [child for child in children if child.matched]
    if matching:
        strongest = max(matching, key=lambda child: child.confidence)
        return NodeTrace(path, "any", True, strongest.confidence, strongest.decided_by, children)
    weakest = min(children, key=lambda child: child.confidence)
    return NodeTrace(path, "any", False, weakest.confidence, None, children)
