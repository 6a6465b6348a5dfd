"""The name rules beside the named-entity model: greetings and titles, and the gazetteer of
given names and surnames (Faker's person providers), without loading a spaCy pipeline."""

from __future__ import annotations

import pytest

from vsr_extproc.runtime.entities import Gazetteer, _cued_names


@pytest.fixture(scope="module")
def gazetteer() -> Gazetteer:
    return Gazetteer.load()


def _spans(text: str, spans: list[tuple[int, int]]) -> list[str]:
    return [text[start:end] for start, end in spans]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Dear Roelien, thanks for the call.", ["Roelien"]),
        ("Mr. Okafor asked for a refund.", ["Okafor"]),
        ("My name is Ubul Csonka and I need help.", ["Ubul Csonka"]),
        ("Thanks, Priya", ["Priya"]),
        ("Hi there, can you help?", []),
        ("Dear Sir or Madam,", []),
    ],
)
def test_a_greeting_title_or_introduction_names_a_person(text: str, names: list[str]) -> None:
    assert _spans(text, _cued_names(text)) == names


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Please add Tomáš Novák as a beneficiary.", ["Tomáš Novák"]),
        ("Ella lives on 71 street.", ["Ella"]),
        ("Can you ask Mikayla about the invoice?", ["Mikayla"]),
        ("Will you review this?", []),  # a word that is also a given name
        ("May I ask a question?", []),
        ("The Grace period ends on Monday.", []),
        ("Mark as read and archive.", []),
        ("The Paris office is closed.", []),
    ],
)
def test_the_gazetteer_reads_names_and_leaves_words_that_are_also_names(
    gazetteer: Gazetteer, text: str, names: list[str]
) -> None:
    assert _spans(text, gazetteer.names(text)) == names


def test_the_model_reads_only_the_sentences_that_may_hold_a_name() -> None:
    from vsr_extproc.runtime.entities import name_runs

    text = (
        "What is the 4% rule for retirement withdrawals? How do SSRIs work and how long "
        "before they help? Please ask Abderrahman Kempers to call me back. He knows the TSH "
        "results.\nEser: Remember me?\nWhy does the sky look blue. ARAYA INDUSTRIAL will "
        "ship it. Mr. Smith signed."
    )
    read = [text[start:end] for start, end in name_runs(text)]
    assert read == [
        " Please ask Abderrahman Kempers to call me back.",
        "Eser: Remember me?",
        " ARAYA INDUSTRIAL will ship it. Mr. Smith signed.",
    ]
    # a sentence whose only capital opens it, acronyms of up to four letters and "I" aside
    assert name_runs("What do I do when my TSH is high? The doctor said to wait.") == []
