"""The evaluation's measures of a score: what a score means, and how far it is from it."""

from __future__ import annotations

import numpy as np
import pytest

from vsr_extproc.eval import calibration_error, reliability


def test_the_reliability_table_says_what_share_of_each_score_bin_is_positive() -> None:
    scores = np.array([0.05, 0.08, 0.92, 0.95, 0.97, 0.99])
    labels = np.array([0, 1, 1, 1, 1, 0])
    table = reliability(scores, labels)
    assert [(row["from"], row["to"], row["count"]) for row in table] == [
        (0.0, 0.1, 2),
        (0.9, 1.0, 4),
    ]  # empty bins are left out
    assert table[0]["positive_rate"] == 0.5
    assert table[1]["positive_rate"] == 0.75
    assert table[1]["mean_score"] == pytest.approx(0.9575)
    # the calibration error weighs each bin's gap by its share of the texts
    expected = (2 * abs(0.065 - 0.5) + 4 * abs(0.9575 - 0.75)) / 6
    assert calibration_error(scores, labels) == pytest.approx(expected)


def test_calibrated_scores_have_no_calibration_error() -> None:
    scores = np.array([0.25] * 4 + [0.75] * 4)
    labels = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    assert calibration_error(scores, labels) == pytest.approx(0.0)
    assert [row["positive_rate"] for row in reliability(scores, labels)] == [0.25, 0.75]
