"""The ``safety`` family's config and verdict rules, without a model: the probabilities a
model would give are set by hand."""

from __future__ import annotations

import typing
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import yaml
from pydantic import ValidationError

from vsr_extproc.signals.safety import (
    BANK,
    CATEGORIES,
    Category,
    SafetyEntry,
    SafetySignal,
)

ORDER = tuple(CATEGORIES)


def _signal(**entry: Any) -> SafetySignal:
    model: Any = SimpleNamespace(categories=ORDER)
    return SafetySignal(SafetyEntry(name="s", **entry), embedder=None, model=model, budget=None)  # type: ignore[arg-type]


def _row(**probabilities: float) -> np.ndarray:
    return np.asarray([[probabilities.get(name, 0.0) for name in ORDER]])


def test_the_bank_the_taxonomy_and_the_config_name_the_same_categories() -> None:
    bank = yaml.safe_load(BANK.read_text())
    assert tuple(bank["categories"]) == ORDER
    assert set(typing.get_args(Category)) == set(ORDER)
    assert all(len(category["exemplars"]) >= 10 for category in bank["categories"].values())


def test_a_category_is_found_at_its_threshold_and_listed_with_its_probability() -> None:
    outcome = _signal(threshold=0.5).outcome(_row(weapons=0.7, violent_crimes=0.1), {})
    assert outcome.matched
    assert outcome.value["categories"] == {"weapons": 0.7}
    assert outcome.value["likely"] == {"weapons": 0.7, "violent_crimes": 0.1}


def test_a_request_torn_between_categories_is_still_unsafe() -> None:
    torn = _row(hate=0.3, harassment=0.3)
    outcome = _signal(threshold=0.5, categories=["hate", "harassment"]).outcome(torn, {})
    assert outcome.matched
    assert outcome.value["categories"] == {"hate": 0.3}  # the likelier one is named
    # torn between two entries: the entry holding the likeliest category takes it
    split = _row(weapons=0.35, self_harm=0.2)
    assert _signal(threshold=0.5, categories=["weapons"]).outcome(split, {}).matched
    assert not _signal(threshold=0.5, categories=["self_harm"]).outcome(split, {}).matched


def test_without_likeliest_an_entry_matches_only_where_its_own_categories_are_clear() -> None:
    """The demo's ``severe`` entry (refused with 403): an unsafe request whose likeliest
    category is violent crimes at 0.2 ("Write a persuasive essay arguing for stricter gun
    control laws" scored so) is not refused; the catch-all ``sensitive`` entry moderates it."""
    unclear = _row(violent_crimes=0.2, hate=0.15, weapons=0.1)
    severe = ["child_sexual_exploitation", "sex_crimes", "weapons", "violent_crimes"]
    assert _signal(threshold=0.4, categories=severe).outcome(unclear, {}).matched
    strict = _signal(threshold=0.4, categories=severe, likeliest=False)
    assert not strict.outcome(unclear, {}).matched
    assert strict.outcome(_row(violent_crimes=0.45), {}).matched
    assert strict.outcome(_row(violent_crimes=0.25, weapons=0.2), {}).matched  # together
    assert _signal(threshold=0.4).outcome(unclear, {}).matched  # every category: unsafe


def test_a_category_with_its_own_threshold_is_judged_by_it_alone() -> None:
    signal = _signal(threshold=0.4, categories=["hate"], thresholds={"hate": 0.95})
    assert not signal.outcome(_row(hate=0.8), {}).matched
    assert signal.outcome(_row(hate=0.96), {}).matched


def test_the_riskiest_chunk_decides() -> None:
    rows = np.vstack([_row(drugs=0.05), _row(drugs=0.9), _row(drugs=0.2)])
    outcome = _signal().outcome(rows, {"read": "all"})
    assert outcome.value["riskiest_chunk"] == 1
    assert outcome.value["read"] == "all"


@pytest.mark.parametrize(
    "entry",
    [
        {"categories": ["arson"]},
        {"thresholds": {"hate": 1.5}},
        {"categories": ["weapons"], "thresholds": {"hate": 0.5}},
    ],
)
def test_a_bad_entry_is_refused_with_a_clear_error(entry: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SafetyEntry(name="s", **entry)
