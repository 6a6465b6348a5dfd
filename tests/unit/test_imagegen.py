"""The image evaluation corpus: its MRZs follow ICAO 9303, it is the same on every run, and
its two splits share no seed, font, style, locale or source file."""

from __future__ import annotations

import itertools

import pytest

from vsr_extproc.detectors import find_mrz
from vsr_extproc.eval import imagegen, images

SPECIMEN = imagegen.Holder(
    surname="Eriksson",
    given="Anna María",
    country="UTO",
    number="L898902C3",
    birth="740812",
    expiry="120415",
    sex="F",
    personal="ZE184226B",
)


def test_the_generator_draws_the_icao_specimen_passport_and_id_card() -> None:
    # ICAO Doc 9303 part 4 (TD3) and part 5 (TD1) specimens
    assert imagegen.td3_lines(SPECIMEN) == [
        "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<",
        "L898902C36UTO7408122F1204159ZE184226B<<<<<10",
    ]
    card = imagegen.Holder(**{**SPECIMEN.__dict__, "number": "D23145890", "personal": ""})
    assert imagegen.td1_lines(card) == [
        "I<UTOD231458907<<<<<<<<<<<<<<<",
        "7408122F1204159UTO<<<<<<<<<<<6",
        "ERIKSSON<<ANNA<MARIA<<<<<<<<<<",
    ]


def test_names_are_transliterated_and_fit_the_line() -> None:
    assert imagegen.mrz_name("Müller-Lüdenscheidt", "José María", 39) == (
        "MULLER<LUDENSCHEIDT<<JOSE<MARIA".ljust(39, "<")
    )
    assert len(imagegen.mrz_name("A" * 50, "B", 30)) == 30


@pytest.mark.parametrize("layout", ["td1", "td2", "td3"])
def test_every_generated_mrz_verifies_on_its_drawn_text(layout: str) -> None:
    for index in range(20):
        draw = imagegen.Draw("dev", layout, index)
        lines = {"td1": imagegen.td1_lines, "td2": imagegen.td2_lines, "td3": imagegen.td3_lines}[
            layout
        ](draw.holder())
        (match,) = find_mrz("\n".join(lines))
        assert match.valid, lines
        assert match.format == layout


def test_the_splits_share_no_seed_font_style_locale_or_state() -> None:
    dev, test = imagegen.STYLES["dev"], imagegen.STYLES["test"]
    assert dev.seed != test.seed
    for attribute in ("mono", "text", "locales", "countries", "pygments_styles"):
        assert not set(getattr(dev, attribute)) & set(getattr(test, attribute)), attribute
    assert dev.photo_right != test.photo_right
    assert not set(dev.credential_files) & set(test.credential_files)


def test_the_corpus_has_at_least_four_hundred_images_and_twenty_credential_shapes() -> None:
    per_split = sum(sum(kinds.values()) for kinds in imagegen.COUNTS.values())
    assert 2 * per_split >= 400
    assert len(imagegen.CREDENTIALS) >= 15


def _outcome(
    scenario: str, kind: str, matched: dict[str, bool], on_truth: dict[str, bool], complete: bool
) -> images.Outcome:
    expected, absent = imagegen.EXPECTED[scenario]
    sample = imagegen.Sample(
        name=f"test/{kind}", split="test", scenario=scenario, kind=kind,
        expected=expected, absent=absent, data=b"", truth="",
    )  # fmt: skip
    full = dict.fromkeys(images.DETECTIONS, False)
    return images.Outcome(sample, full | matched, full | on_truth, complete, seconds=0.5, lines=10)


def test_the_report_counts_recall_precision_and_the_stage_of_each_miss() -> None:
    outcomes = [
        _outcome("mrz", "td3", {"mrz": True}, {"mrz": True}, True),
        _outcome("mrz", "td3", {}, {"mrz": True}, True),  # OCR lost it
        _outcome("code", "code", {}, {"code": False}, True),  # the detector misses the text
        _outcome("code", "code", {}, {"code": True}, False),  # OCR stopped at its budget
        _outcome("lookalike", "receipt", {"secrets": True}, {}, True),  # a false alarm
    ]
    result = images.report(outcomes)
    assert result["scenarios"]["mrz"]["detections"]["mrz"]["found"] == "1/2"
    assert result["scenarios"]["code"]["detections"]["code"]["recall"] == 0.0
    assert result["precision"]["secrets"] == 0.0
    stages = sorted((p["image"], p["detection"], p["what"], p["stage"]) for p in result["problems"])
    assert stages == [
        ("test/code", "code", "miss", "budget"),
        ("test/code", "code", "miss", "detector"),
        ("test/receipt", "secrets", "false alarm", "ocr"),
        ("test/td3", "mrz", "miss", "ocr"),
    ]


def _document(text: str) -> bool:
    from vsr_extproc.signals.image_text import ImageTextEntry, TextDetector

    detector = TextDetector(ImageTextEntry(name="document_photo", detect="document"))
    return detector(text).matched


def test_a_document_without_an_mrz_is_a_form_with_an_identifying_value() -> None:
    licence = (
        "DRIVING LICENCE\n1. Surname\nMUSTER\n2. Given names\nANNA\n3. Date ofbirth\n12.03.1981"
    )
    assert _document(licence)
    statement = (
        "Account statement\nAnna Muster\nAccount number: DE89 3704 0044 0532 0130 00\nPeriod: May"
    )
    assert _document(statement)
    # the same value in a sentence, in code, or a form without one is not a document
    assert not _document(
        "My daughter was born on 12.03.1981 and she started school this year, so we moved.\n"
        "The new house is larger and the garden is lovely, she says, and the school is near.\n"
        "We will visit you in the summer when the weather is better and the roads are dry."
    )
    assert not _document('def age():\n    born = "12.03.1981"  # date of birth\n    return born\n')
    assert not _document("RECEIPT\nCoffee 2.50\nCake 3.10\nTOTAL 5.60\nThank you")


def test_an_id_card_as_ocr_reads_it_is_a_document_and_not_code() -> None:
    """OCR runs a card's capitals together ("DNINUM", "HEALTHINSURANCE") and misreads a
    check letter as a digit; the line model alone calls its country line ("PITCAIRN
    (ILES)", like a call) code. Cards drawn beyond ``dev``'s corpus, as read."""
    from vsr_extproc.detectors.code import code_score

    glued = "BHUTAN\nHEALTH INSURANCECARD\nSurname\nHOFIG\nGiven names\nADELINE\nDNINUM\n69223882T"
    misread = (
        "ITALIA\nIDENTITYCARD\nSurname\nROSSI\nGivennames\nESMEE\nCODICEFISCALE\nMLPGCN20R54G7340"
    )
    country = (
        "PITCAIRN (ILES)\nHEALTHINSURANCE CARD\nSurname\nLAINE\nGiven names\nSABINEMASSON LE"
        "\nOIB\n38426071593"
    )
    for card in (glued, misread, country):
        assert _document(card), card
    assert code_score(country).score < 0.5


def test_dev_draws_code_in_languages_the_corpus_never_shows_and_test_never_does() -> None:
    assert not set(imagegen.ELSEWHERE_FOLDERS) & set(imagegen.CODE_FOLDERS)
    drawn = list(itertools.islice(imagegen.more("dev", "code_elsewhere", 100, 1), 3))
    for sample in drawn:
        assert sample.conditions[0].split("/")[0] in imagegen.ELSEWHERE_FOLDERS
        assert sample.expected == {"code"}
        assert sample.scenario == "code_elsewhere"
    # one image by its name is the same image
    assert imagegen.sample(drawn[1].name).data == drawn[1].data
    with pytest.raises(ValueError, match="drawn for dev only"):
        next(imagegen.more("test", "code_elsewhere", 100, 1))


def test_identity_cards_are_drawn_carrying_a_valid_national_number() -> None:
    from vsr_extproc.detectors.national_ids import find_national_ids

    drawn = list(itertools.islice(imagegen.more("test", "id_number_cards", 100, 1), 3))
    # one card a kind, in turn; the number drawn under its name is one the detector
    # validates, and the card is an identity document
    kinds = list(imagegen.CARD_NAMES)
    assert [sample.conditions[0] for sample in drawn] == [
        kinds[i % len(kinds)] for i in (100, 101, 102)
    ]
    for sample in drawn:
        assert sample.expected == {"document"}
        assert len(find_national_ids(sample.truth)) == 1
    assert imagegen.sample(drawn[2].name).data == drawn[2].data
    # dev draws its own cards (its fonts and people) to tune on
    assert next(imagegen.more("dev", "id_number_cards", 100, 1)).data != drawn[0].data
