"""Metrics that families feed: findings counted once per request, runtimes by label."""

from __future__ import annotations

from vsr_extproc.core.signals import SignalResult
from vsr_extproc.signals import finding_counts


def _pii(name: str, value: object) -> SignalResult:
    return SignalResult("pii", name, True, 0.9, value, 1.0)


def test_a_finding_that_several_pii_signals_count_is_counted_once() -> None:
    results = [
        _pii("any", {"email": 1, "card": 2, "read_chars": 120}),
        _pii("payment", {"card": 2}),
        _pii("names", {"person": 1, "names": "unavailable"}),
        SignalResult("keyword", "card", True, 1.0, {"email": 5}, 1.0),
    ]
    assert finding_counts(results) == {"email": 1, "card": 2, "person": 1}


def test_model_runtimes_are_labelled_by_the_family_that_asked_for_them() -> None:
    from dataclasses import dataclass

    from vsr_extproc.signals.base import Resources

    @dataclass
    class Missing:
        reason: str

    resources = Resources()
    resources.begin_compile(None)
    resources.get(("ocr", 1600), object, runtime=("ocr", "pp-ocrv4"))
    resources.get(("siglip", "x"), lambda: Missing("no checkpoint"), runtime=("vision", "x"))
    resources.get(("haar-faces",), object)  # not a model runtime: not listed
    assert resources.runtimes() == [("ocr", "pp-ocrv4", True), ("vision", "x", False)]
    resources.begin_compile(None)
    resources.get(("ocr", 1600), object)
    resources.release_unused()
    assert resources.runtimes() == [("ocr", "pp-ocrv4", True)]
