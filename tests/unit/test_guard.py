"""How a guard model's answer is read (``runtime.guard``), how its codes become the safety
signal's categories, and what ``text.guard`` accepts."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from vsr_extproc.config.schema import GuardConfig
from vsr_extproc.errors import GuardUnavailable
from vsr_extproc.runtime.guard import GuardVerdict, parse_verdict
from vsr_extproc.signals.safety import GUARD_CATEGORIES, guard_row


def completion(content: str, first: list[tuple[str, float]] | None = None) -> dict[str, Any]:
    choice: dict[str, Any] = {"message": {"role": "assistant", "content": content}}
    if first is not None:
        choice["logprobs"] = {
            "content": [
                {"token": "\n\n", "logprob": 0.0, "top_logprobs": []},
                {
                    "token": first[0][0],
                    "logprob": math.log(first[0][1]),
                    "top_logprobs": [
                        {"token": token, "logprob": math.log(p)} for token, p in first
                    ],
                },
            ]
        }
    return {"choices": [choice]}


@pytest.mark.parametrize(
    ("answer", "unsafe", "codes", "calibrated"),
    [
        (completion("\n\nsafe"), 0.0, (), False),
        (completion("\n\nunsafe\nS1,S10"), 1.0, ("S1", "S10"), False),
        (completion("unsafe\ns9"), 1.0, ("S9",), False),
        # the probability of the first word, whichever verdict was generated
        (completion("\n\nsafe", [("safe", 0.7), ("unsafe", 0.3)]), 0.3, (), True),
        (completion("\n\nunsafe\nS2", [("unsafe", 0.6), ("safe", 0.3), ("The", 0.1)]),
         0.6 / 0.9, ("S2",), True),
        # a word split into pieces: "un" begins "unsafe"
        (completion("unsafe\nS2", [("un", 0.8), ("safe", 0.2)]), 0.8, ("S2",), True),
    ],
)  # fmt: skip
def test_a_llama_guard_answer_gives_its_verdict_and_probability(
    answer: dict[str, Any], unsafe: float, codes: tuple[str, ...], calibrated: bool
) -> None:
    verdict = parse_verdict(answer)
    assert verdict.unsafe == pytest.approx(unsafe)
    assert verdict.codes == codes
    assert verdict.calibrated is calibrated


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ({"error": "model not found"}, "not a chat completion"),
        ({"choices": []}, "not a chat completion"),
        (completion("I cannot help with that."), "unexpected answer"),
        (completion(""), "unexpected answer"),
        (completion("unsafe\nviolence"), "unexpected hazard codes"),
    ],
)
def test_an_answer_in_another_format_is_no_verdict(answer: dict[str, Any], reason: str) -> None:
    with pytest.raises(GuardUnavailable, match=reason):
        parse_verdict(answer)


CATEGORIES = ["violent_crimes", "weapons", "hate", "self_harm"]


def test_p_unsafe_is_shared_among_the_categories_of_the_codes_named() -> None:
    local = np.array([0.1, 0.1, 0.1, 0.1])
    row = guard_row(GuardVerdict(0.9, ("S1", "S9"), True), local, CATEGORIES, GUARD_CATEGORIES)
    assert row.tolist() == pytest.approx([0.45, 0.45, 0.0, 0.0])


def test_codes_that_count_as_no_category_here_find_none() -> None:
    local = np.array([0.0, 0.9, 0.0, 0.0])
    row = guard_row(GuardVerdict(0.95, ("S6", "S7"), True), local, CATEGORIES, GUARD_CATEGORIES)
    assert row.tolist() == [0.0, 0.0, 0.0, 0.0]


def test_a_verdict_without_codes_is_shared_as_the_fitted_model_shares_its_own() -> None:
    local = np.array([0.2, 0.6, 0.0, 0.0])
    row = guard_row(GuardVerdict(0.5, (), True), local, CATEGORIES, GUARD_CATEGORIES)
    assert row.tolist() == pytest.approx([0.125, 0.375, 0.0, 0.0])


def test_the_default_codes_are_llama_guards_for_the_categories_here() -> None:
    assert GuardConfig(url="http://guard:8000/v1/chat/completions", model="g").categories == {
        "S1": "violent_crimes",
        "S2": "non_violent_crimes",
        "S3": "sex_crimes",
        "S4": "child_sexual_exploitation",
        "S9": "weapons",
        "S10": "hate",
        "S11": "self_harm",
        "S12": "sexual_content",
    }


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"url": "guard:8000/v1/chat/completions"}, "url"),
        ({"categories": {"S7": "privacy"}}, "categories.S7"),
        ({"categories": {"violence": "violent_crimes"}}, "categories.violence"),
        ({"timeout_ms": 0}, "timeout_ms"),
        ({"on_failure": "ignore"}, "on_failure"),
        ({"api_key_env": "my token"}, "api_key_env"),
    ],
)
def test_a_guard_config_that_cannot_work_names_its_field(
    fields: dict[str, Any], where: str
) -> None:
    document = {"url": "http://guard:8000/v1/chat/completions", "model": "g", **fields}
    with pytest.raises(ValidationError) as raised:
        GuardConfig.model_validate(document)
    locations = [".".join(str(part) for part in error["loc"]) for error in raised.value.errors()]
    assert any(location.startswith(where) for location in locations), locations
