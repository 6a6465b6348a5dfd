"""Redaction: typed placeholders, consistent within one request, nothing else touched."""

from __future__ import annotations

import pytest

from vsr_extproc.detectors import Finding, FindingType, Redactor

T = FindingType
ALL = list(FindingType)


def test_the_same_email_gets_the_same_placeholder() -> None:
    redactor = Redactor([T.EMAIL])
    text, replaced = redactor.redact("mail a@x.io, or A@X.io again")
    assert text == "mail <EMAIL_1>, or <EMAIL_1> again"
    assert len(replaced) == 2
    assert redactor.counts[T.EMAIL] == 2


def test_different_values_get_numbered_placeholders() -> None:
    text, _ = Redactor([T.EMAIL]).redact("from a@x.io to b@y.io cc a@x.io")
    assert text == "from <EMAIL_1> to <EMAIL_2> cc <EMAIL_1>"


def test_numbering_is_kept_across_the_messages_of_a_request() -> None:
    redactor = Redactor([T.EMAIL, T.CARD])
    first, _ = redactor.redact("I am a@x.io, card 4111 1111 1111 1111")
    second, _ = redactor.redact("new mail b@y.io; same card 4111111111111111; old a@x.io")
    assert first == "I am <EMAIL_1>, card <CARD_1>"
    assert second == "new mail <EMAIL_2>; same card <CARD_1>; old <EMAIL_1>"
    assert redactor.counts == {T.EMAIL: 3, T.CARD: 2}


def test_a_new_redactor_starts_numbering_again() -> None:
    Redactor([T.EMAIL]).redact("a@x.io b@y.io")
    assert Redactor([T.EMAIL]).redact("b@y.io")[0] == "<EMAIL_1>"


SAMPLES = [
    (T.EMAIL, "jo@example.com", "<EMAIL_1>"),
    (T.PHONE, "+1 415-555-2671", "<PHONE_1>"),
    (T.CARD, "4111 1111 1111 1111", "<CARD_1>"),
    (T.IBAN, "DE89 3704 0044 0532 0130 00", "<IBAN_1>"),
    (T.SSN, "536-22-1234", "<SSN_1>"),
    (T.NATIONAL_ID, "MZZMCL65S28M335A", "<NATIONAL_ID_1>"),  # a codice fiscale
    (T.IP_ADDRESS, "192.168.1.1", "<IP_1>"),
    (T.SECRET, "AKIAIOSFODNN7EXAMPLE", "<SECRET_1>"),
]


@pytest.mark.parametrize(("kind", "value", "placeholder"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_each_type_has_its_placeholder(kind: FindingType, value: str, placeholder: str) -> None:
    text, replaced = Redactor(ALL).redact(f"value: {value} (end)")
    assert text == f"value: {placeholder} (end)"
    assert [finding.type for finding in replaced] == [kind]


def test_context_types_have_their_placeholders() -> None:
    text, _ = Redactor(ALL).redact("born 12/03/1985, German passport C01X00T47")
    assert text == "born <DOB_1>, German passport <PASSPORT_1>"


def test_spans_of_replaced_findings_point_into_the_original_text() -> None:
    original = "a@x.io then 4111111111111111 then b@y.io"
    text, replaced = Redactor([T.EMAIL, T.CARD]).redact(original)
    assert [original[f.start : f.end] for f in replaced] == [
        "a@x.io",
        "4111111111111111",
        "b@y.io",
    ]
    assert text == "<EMAIL_1> then <CARD_1> then <EMAIL_2>"


def test_only_the_chosen_types_are_replaced() -> None:
    text, replaced = Redactor([T.CARD]).redact("a@x.io paid with 4111111111111111")
    assert text == "a@x.io paid with <CARD_1>"
    assert [f.type for f in replaced] == [T.CARD]


@pytest.mark.parametrize("text", ["", "nothing sensitive here.", "version 1.2.3 on 2024-03-01"])
def test_text_without_findings_is_unchanged(text: str) -> None:
    redactor = Redactor(ALL)
    assert redactor.redact(text) == (text, [])
    assert sum(redactor.counts.values()) == 0


def test_given_findings_are_used_instead_of_detecting() -> None:
    text = "call me at noon"
    findings = [Finding(T.PHONE, 8, 10, 0.9), Finding(T.EMAIL, 0, 4, 0.9)]
    assert Redactor([T.PHONE]).redact(text, findings) == ("call me <PHONE_1> noon", findings[:1])


def test_overlapping_given_findings_are_resolved() -> None:
    text = "card 4111111111111111"
    findings = [Finding(T.PHONE, 5, 15, 0.9), Finding(T.CARD, 5, 21, 0.95, "visa")]
    assert Redactor(ALL).redact(text, findings)[0] == "card <CARD_1>"


def test_weak_findings_can_be_kept() -> None:
    text = "call +44 7700 900123 or +1 415-555-2671"
    assert Redactor([T.PHONE], min_confidence=0.8).redact(text)[0] == (
        "call +44 7700 900123 or <PHONE_1>"
    )


def test_the_redactor_holds_no_values() -> None:
    redactor = Redactor([T.EMAIL])
    redactor.redact("secret.person@example.com")
    assert "secret.person" not in repr(vars(redactor))
