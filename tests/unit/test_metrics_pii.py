"""``vsr_pii_findings_total`` counts each finding of a request once."""

from __future__ import annotations

from vsr_extproc.core.signals import SignalResult
from vsr_extproc.metrics import pii_counts


def _pii(name: str, value: object) -> SignalResult:
    return SignalResult("pii", name, True, 0.9, value, 1.0)


def test_a_finding_that_several_pii_signals_count_is_counted_once() -> None:
    results = [
        _pii("any", {"email": 1, "card": 2, "read_chars": 120}),
        _pii("payment", {"card": 2}),
        _pii("names", {"person": 1, "names": "unavailable"}),
        SignalResult("keyword", "card", True, 1.0, {"email": 5}, 1.0),
    ]
    assert pii_counts(results) == {"email": 1, "card": 2, "person": 1}
