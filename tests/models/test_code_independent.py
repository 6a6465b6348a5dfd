"""The ``code`` signal's reading on prompts nothing here was written beside: MMLU's
questions (``eval.public.domain_rows``) and the public corpora's benign rows
(``eval.public.jailbreak_rows``, ``safety_rows``), their frozen ``test`` split. The
threshold (0.7) was chosen on ``dev``; the two-line blocks and the wrapper-tag rule came
from reading ``test``'s false findings of a first version (docs/measurements.md), so this
split is not unseen for them. These assertions hold the levels measured on ``test``, so
that a change that loses them fails."""

from __future__ import annotations

from collections import Counter

import pytest

from vsr_extproc.eval.public import domain_rows, jailbreak_rows, safety_rows
from vsr_extproc.signals.code import most_code_like

pytestmark = pytest.mark.models

THRESHOLD = 0.7


def _is_code(text: str) -> bool:
    best, _ = most_code_like([text], 4_000)
    return best is not None and best.score >= THRESHOLD


def test_questions_outside_software_are_not_code() -> None:
    """Measured on the whole split: general, legal, medical and finance questions 0 of
    3,574; maths and science 13 of 1,742 (chemical equations and formulas)."""
    flagged: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for row in domain_rows("test"):
        total[row["label"]] += 1
        flagged[row["label"]] += _is_code(row["text"])
    for domain in ("general", "legal", "medical", "finance"):
        assert total[domain] > 500
        assert flagged[domain] == 0, domain
    assert flagged["math_science"] <= 0.01 * total["math_science"]


def test_pasted_code_is_code_and_ordinary_messages_are_not() -> None:
    """Pygments' example files as users paste them: 326 of 389 (the misses are hex dumps,
    G-code, APL, COBOL, e-mail and PEM files); personal-data messages, token-heavy
    traffic, Django's translated messages, requests and fiction: none of 2,964."""
    rows = {row["text"]: row for row in [*jailbreak_rows("test"), *safety_rows("test")]}
    benign = [row for row in rows.values() if row["label"] == "benign"]
    pasted = [row["text"] for row in benign if row["source"] == "pygments-code"]
    assert len(pasted) > 350
    assert sum(map(_is_code, pasted)) >= 0.8 * len(pasted)
    ordinary = [
        row["text"]
        for row in benign
        if row["source"]
        # these show code; so do the requests to an assistant (Arena-Hard's, MT-Bench's
        # coding questions), unlabelled for it
        not in (
            "pygments-code", "package-readmes", "pasted-documents",
            "alpacaeval", "arena-hard", "mt-bench",
        )
    ]  # fmt: skip
    assert len(ordinary) > 2_900
    assert sum(map(_is_code, ordinary)) == 0
