"""The ``domain`` signal on a set nothing here was written beside: a slice of the frozen
``test`` split of MMLU's questions, labelled by subject (``eval.public.domain_rows``; the
whole split is ``vsr-extproc eval domain``). The issue's target, top-1 accuracy ≥ 0.85,
is met on the set written for this project (0.955) and **not** on this one (0.787 on the
whole split): these assertions hold the measured level, so that a change that loses it
fails."""

from __future__ import annotations

import pytest

from vsr_extproc.eval import evaluate_domain, load_models
from vsr_extproc.eval.public import domain_rows

pytestmark = [pytest.mark.models, pytest.mark.slow]


def test_mmlu_questions_are_routed_to_their_subjects_domain_at_the_measured_level() -> None:
    rows = domain_rows("test")[::4]
    report = evaluate_domain(load_models(None), rows)
    assert report["examples"] > 1000
    assert report["accuracy"] >= 0.76
    recall = {name: row["recall"] for name, row in report["per_domain"].items()}
    # measured on this slice (accuracy 0.788): legal 0.919, math_science 0.910, finance
    # 0.837; general knowledge (0.350), medicine (0.708) and computer science (0.538) are
    # the misses the README reports
    assert min(recall["legal"], recall["math_science"], recall["finance"]) >= 0.8
