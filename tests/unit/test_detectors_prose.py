"""Passwords and PINs told in sentences (``detectors.prose``), through ``find_pii``, and the
``eval pii`` slice of them."""

from __future__ import annotations

import pytest

from vsr_extproc.detectors import FindingType, find_pii


def _secrets(text: str) -> list[str]:
    return [text[f.start : f.end] for f in find_pii(text, {FindingType.SECRET})]


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        ("my password is Tr0ub4dor&3, can you check why it fails?", ["Tr0ub4dor&3"]),
        ("I reset the pw to Tr0ub4dor&3 yesterday and the app still refuses it", ["Tr0ub4dor&3"]),
        ("The password I was given at onboarding was monkey6528, and it expired.", ["monkey6528"]),
        (
            "When the installer asks, enter Charlie1987* as the administrator password.",
            ["Charlie1987*"],
        ),
        ("Log in with password 'r0ck3t16' on the conference room PC.", ["r0ck3t16"]),
        ("Mein Passwort ist jetzt Xy7#pQ2!, bitte nicht weitergeben.", ["Xy7#pQ2!"]),
        ("Le mot de passe du wifi est b3ll430.", ["b3ll430"]),
        # the user's name beside it is not a secret
        (
            "Your username is user_1ItZ4 and your temporary password is 6uZudk7AfSXt.",
            ["6uZudk7AfSXt"],
        ),
        ("The code for the door is 4821, press enter after.", ["4821"]),
        ("My card PIN is 070814 and the machine keeps it.", ["070814"]),
    ],
)
def test_a_password_or_pin_told_in_a_sentence_is_a_secret(text: str, secrets: list[str]) -> None:
    assert _secrets(text) == secrets


@pytest.mark.parametrize(
    "text",
    [
        "The password must be at least 12 characters and include 1 symbol such as ! or #.",
        "My wifi password does not work with my iPhone15 since iOS 17.2.",  # a product
        "My password expires on 2025-03-01, should I change it before?",
        "I opened ticket INC-48213 about my password last week.",
        "After the 4.2.1 update my password fails.",
        "Mon mot de passe expire le 15/04/2025, dois-je le changer avant ?",
        "¿Olvidaste tu contraseña? Ingrese su dirección de correo.",
        "Registrant Postal Code: 45103",  # a code that is no PIN
        "NoUpgrade = etc/passwd etc/group etc/shadow",  # a path
        "Change the password of the user to new_password.",  # an identifier
        "The password field is <input type=password name=pw>.",  # markup
        "Please pin the 2.0 release and remind me of my PIN letter from 12 May.",
    ],
)
def test_text_about_passwords_without_one_holds_no_secret(text: str) -> None:
    assert _secrets(text) == []


def test_an_assignment_and_a_sentence_about_the_same_value_report_it_once() -> None:
    text = "the new password is passwd=Tr0ub4dor&3"
    findings = find_pii(text, {FindingType.SECRET})
    assert [(text[f.start : f.end], f.confidence) for f in findings] == [("Tr0ub4dor&3", 0.8)]


def test_credentials_in_sentences_meet_their_measured_levels() -> None:
    """The ``test`` split of ``vsr-extproc eval pii``'s credentials in sentences (measured:
    passwords 66/90, PINs 18/30, none of the 40 texts about passwords without one flagged;
    before the sentences were read: 0/90 and 0/30)."""
    from vsr_extproc.eval.credentials import evaluate_credentials

    report = evaluate_credentials("test")
    assert report["passwords"]["total"] == 90
    assert report["passwords"]["found"] >= 63
    assert report["pins"]["found"] >= 16
    assert report["texts_without_a_credential"]["flagged"] == 0
    assert report["other_findings_in_texts_with_one"] == 0
