"""The name rules beside the named-entity model: greetings and titles, and the gazetteer of
given names and surnames (Faker's person providers), without loading a spaCy pipeline."""

from __future__ import annotations

import itertools

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


@pytest.mark.parametrize(
    ("text", "last_of_first"),
    [
        # a line break in the second half of the window is the cut
        ("word " * 300 + "\n" + "x " * 900, "\n"),
        # else the last sentence's end, so that no name is cut in two
        ("Please ask Maria Gonzalez to call. " * 70, "call."),
        # else the last space: a word is never cut
        ("gonzalez " * 400, " "),
    ],
)
def test_a_message_is_read_in_pieces_that_cut_no_word(text: str, last_of_first: str) -> None:
    from vsr_extproc.runtime.entities import PIECE_CHARS, pieces

    spans = pieces(text)
    assert len(spans) >= 2
    assert spans[0][0] == 0
    assert spans[-1][1] == len(text)
    assert all(end == start for (_, end), (start, _) in itertools.pairwise(spans))
    assert all(0 < end - start <= PIECE_CHARS for start, end in spans)
    first = text[spans[0][0] : spans[0][1]]
    assert first.rstrip(" ").endswith(last_of_first.rstrip(" ")) or first.endswith(last_of_first)


def test_a_run_without_a_space_is_cut_where_it_must_be_and_blank_text_is_not_read() -> None:
    from vsr_extproc.runtime.entities import PIECE_CHARS, pieces

    assert pieces("a" * (PIECE_CHARS + 5)) == [(0, PIECE_CHARS), (PIECE_CHARS, PIECE_CHARS + 5)]
    assert pieces("   \n ") == []
    assert pieces("Hi Maria") == [(0, 8)]
