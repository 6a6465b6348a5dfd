"""The rule evaluator: verdicts, confidence, the deciding leaf and on_error."""

from __future__ import annotations

import pytest

from vsr_extproc.core.rules import AllOf, AnyOf, Leaf, Not, OnError, Rule, evaluate, verdict
from vsr_extproc.core.signals import SignalResult


def result(key: str, matched: bool, confidence: float, error: str | None = None) -> SignalResult:
    family, name = key.split(".")
    return SignalResult(family, name, matched, confidence, None, 0.1, error)


RESULTS = {
    "a.yes": result("a.yes", True, 0.9),
    "a.weak": result("a.weak", True, 0.6),
    "a.no": result("a.no", False, 0.2),
    "a.broken": result("a.broken", False, 0.0, "RuntimeError: boom"),
}


def leaf(signal: str, path: str = "", **kwargs: object) -> Leaf:
    return Leaf(signal, path or signal, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("rule", "matched", "confidence", "decided_by"),
    [
        (leaf("a.yes"), True, 0.9, "a.yes"),
        (leaf("a.no"), False, 0.8, "a.no"),
        (leaf("a.yes", threshold=0.95), False, 0.1, "a.yes"),
        (AllOf((leaf("a.yes"), leaf("a.weak")), "all"), True, 0.6, "a.weak"),
        (AllOf((leaf("a.yes"), leaf("a.no")), "all"), False, 0.8, "a.no"),
        (AnyOf((leaf("a.no"), leaf("a.weak"), leaf("a.yes")), "any"), True, 0.9, "a.yes"),
        (AnyOf((leaf("a.no"), leaf("a.no", "second")), "any"), False, 0.8, None),
        (Not(leaf("a.no"), "not"), True, 0.8, "a.no"),
        (Not(leaf("a.yes"), "not"), False, 0.9, "a.yes"),
        (Not(Not(leaf("a.yes"), "inner"), "outer"), True, 0.9, "a.yes"),
    ],
    ids=[
        "leaf matched",
        "leaf not matched",
        "threshold above confidence",
        "all: weakest",
        "all: the failing child decides",
        "any: the strongest match",
        "any: none",
        "not inverts",
        "not of a match",
        "double negation",
    ],
)
def test_verdicts(rule: Rule, matched: bool, confidence: float, decided_by: str | None) -> None:
    trace = evaluate(rule, RESULTS)
    assert trace.matched is matched
    assert trace.confidence == pytest.approx(confidence)
    assert trace.decided_by == decided_by


@pytest.mark.parametrize(
    ("on_error", "matched", "aborted"),
    [(OnError.NO_MATCH, False, False), (OnError.MATCH, True, False), (OnError.FAIL, False, True)],
)
def test_on_error(on_error: OnError, matched: bool, aborted: bool) -> None:
    trace = evaluate(leaf("a.broken", on_error=on_error), RESULTS)
    assert trace.matched is matched
    assert trace.aborted is aborted
    assert trace.error == "RuntimeError: boom"
    assert trace.confidence == 0.0


def test_trace_keeps_every_node() -> None:
    rule = AllOf((leaf("a.yes", "r.all[0]"), Not(leaf("a.no", "r.all[1].not"), "r.all[1]")), "r")
    paths = [node.path for node in evaluate(rule, RESULTS).walk()]
    assert paths == ["r", "r.all[0]", "r.all[1]", "r.all[1].not"]


def test_a_verdict_is_certain_only_when_no_missing_signal_can_change_it() -> None:
    yes, no = result("a.yes", True, 0.9), result("a.no", False, 0.9)
    known = {"a.yes": yes, "a.no": no}  # "a.later" has not answered yet
    later, on = Leaf("a.later", "l"), Leaf("a.yes", "y")
    off = Leaf("a.no", "n")
    assert verdict(AnyOf((later, on), "any"), known) is True
    assert verdict(AllOf((later, off), "all"), known) is False
    assert verdict(AllOf((later, on), "all"), known) is None
    assert verdict(AnyOf((later, off), "any"), known) is None
    assert verdict(Not(later, "not"), known) is None
    assert verdict(Not(off, "not"), known) is True
    failed = {"a.later": result("a.later", False, 0.0, error="timed out")}
    assert verdict(Leaf("a.later", "l", on_error=OnError.MATCH), failed) is True
