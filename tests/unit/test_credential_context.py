"""The learned reading of a value's surroundings (``detectors.credential_context``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scipy.sparse import csr_matrix

from vsr_extproc.detectors import FindingType, find_pii
from vsr_extproc.detectors import credential_context as reader
from vsr_extproc.eval import credential_context as fitting


def _secrets(text: str) -> list[str]:
    return [text[f.start : f.end] for f in find_pii(text, {FindingType.SECRET})]


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # phrasings no rule list holds: what is done with the value tells it
        ("I reuse Winter2021! on basically every site, is that bad?", "Winter2021!"),
        ("When the alarm beeps at the back door, punch 4417 before it goes off.", "4417"),
        # and in other languages, whose verbs no list of the rules holds
        ("Entra com joao.silva e depois Orchid55% no portal", "Orchid55%"),
        ("Для входа в почту набери Winter2021! и не меняй ничего", "Winter2021!"),
    ],
)
def test_a_credential_told_in_words_no_rule_holds_is_read_from_its_surroundings(
    text: str, secret: str
) -> None:
    assert fitting.rules(text) == []
    assert _secrets(text) == [secret]
    (finding,) = reader.find_told_credentials(text)
    assert (finding.confidence, finding.detail) == (0.6, "pin" if secret.isdigit() else "password")


@pytest.mark.parametrize(
    "text",
    [
        "My Wi-Fi network is called Violet4821 and the router is an RT-AX86U.",
        "Order 48213377 shipped yesterday, tracking JD014600006512345678.",
        "Version 2.14.3 fixed the login timeout on build 4471.",
        "Call me at extension 4410 about the server migration.",
        "Nan's mobile is 07700 900461, can you put it in my contacts?",  # a number's groups
    ],
)
def test_values_that_name_something_else_are_not_read_as_credentials(text: str) -> None:
    assert reader.find_told_credentials(text) == []


def test_the_served_score_is_the_fitted_models_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fitting and serving share ``feature_indices``; the weights file holds the model as
    fitted (intercept last, little-endian), so a score read back is the fit's probability."""
    texts = [
        ("log in with Kq8mLp2x9 please", [(12, 21)]),
        ("the safe opens with 4708", [(20, 24)]),
        ("order A1b2c3d4 shipped", []),
        ("build 4471 is out", []),
    ]
    examples = [e for text, spans in texts for e in fitting._examples(text, spans, "writer 1")]
    assert {e.label for e in examples} == {True, False}
    model = fitting.fit(examples)
    weights = tmp_path / "weights.bin"
    fitting.write(model, weights)
    monkeypatch.setattr(reader, "WEIGHTS", weights)
    reader._weights.cache_clear()
    try:
        for example in examples:
            served = reader.score(example.text, example.start, example.end)
            ones = [1.0] * len(example.indices)
            at = ([0] * len(example.indices), example.indices)
            row = csr_matrix((ones, at), shape=(1, reader.BUCKETS))
            assert served == pytest.approx(model.predict_proba(row)[0, 1], abs=1e-5)
    finally:
        reader._weights.cache_clear()


def test_without_its_weights_the_reading_finds_nothing_and_the_rules_still_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader, "WEIGHTS", tmp_path / "missing.bin")
    reader._weights.cache_clear()
    try:
        assert reader.find_told_credentials("I reuse Winter2021! on every site") == []
        assert _secrets("my password is Tr0ub4dor&3") == ["Tr0ub4dor&3"]
    finally:
        reader._weights.cache_clear()


def test_a_text_full_of_candidates_is_read_only_to_its_limit() -> None:
    text = "log in with Kq8mLp2x9 " * 5_000
    assert len(list(reader.scored(text))) == reader.MAX_CANDIDATES
