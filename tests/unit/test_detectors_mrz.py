"""Machine-readable zones in OCR text: real ones verify, corrupted ones do not, OCR noise
is repaired."""

from __future__ import annotations

import pytest

from vsr_extproc.detectors import FindingType, MrzMatch, find_mrz, find_pii

VALUES = {c: i for i, c in enumerate("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")} | {"<": 0}


def check(field: str) -> str:
    """The ICAO 9303 check digit, computed independently of the code under test."""
    return str(sum(VALUES[c] * (7, 3, 1)[i % 3] for i, c in enumerate(field)) % 10)


def td3(
    number: str = "L898902C3",
    birth: str = "740812",
    expiry: str = "120415",
    personal: str = "ZE184226B",
    country: str = "UTO",
) -> list[str]:
    first = f"P<{country}ERIKSSON<<ANNA<MARIA".ljust(44, "<")
    optional = personal.ljust(14, "<")
    second = number + check(number) + country + birth + check(birth) + "F"
    second += expiry + check(expiry) + optional + check(optional)
    second += check(second[0:10] + second[13:20] + second[21:43])
    return [first, second]


def td1(number: str = "D23145890", birth: str = "740812", expiry: str = "120415") -> list[str]:
    first = f"I<UTO{number}{check(number)}".ljust(30, "<")
    second = f"{birth}{check(birth)}F{expiry}{check(expiry)}UTO".ljust(29, "<")
    second += check(first[5:30] + second[0:7] + second[8:15] + second[18:29])
    return [first, second, "ERIKSSON<<ANNA<MARIA".ljust(30, "<")]


def td2(number: str = "D23145890", birth: str = "740812", expiry: str = "120415") -> list[str]:
    first = "I<UTOERIKSSON<<ANNA<MARIA".ljust(36, "<")
    second = f"{number}{check(number)}UTO{birth}{check(birth)}F{expiry}{check(expiry)}"
    second = second.ljust(35, "<")
    second += check(second[0:10] + second[13:20] + second[21:35])
    return [first, second]


def replace_at(line: str, index: int, char: str) -> str:
    return line[:index] + char + line[index + 1 :]


def corrupt_digit(line: str, index: int) -> str:
    return replace_at(line, index, str((int(line[index]) + 1) % 10))


def only(text: str) -> MrzMatch:
    matches = find_mrz(text)
    assert len(matches) == 1, matches
    return matches[0]


def test_the_icao_specimen_passport_verifies() -> None:
    lines = [
        "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<",
        "L898902C36UTO7408122F1204159ZE184226B<<<<<10",
    ]
    assert td3() == lines  # the helper builds what ICAO 9303 prints
    match = only("\n".join(lines))
    assert (match.format, match.document_type, match.issuing_country) == ("td3", "P", "UTO")
    assert match.valid
    assert match.confidence == 1.0


@pytest.mark.parametrize(
    ("lines", "layout", "document_type"),
    [(td3(), "td3", "P"), (td1(), "td1", "I"), (td2(), "td2", "I")],
    ids=["td3", "td1", "td2"],
)
def test_each_layout_is_found_among_other_ocr_lines(
    lines: list[str], layout: str, document_type: str
) -> None:
    text = "\n".join(["UTOPIA", "PASSPORT / PASSEPORT", "Surname ERIKSSON", *lines, "Signature"])
    match = only(text)
    assert (match.format, match.document_type, match.valid) == (layout, document_type, True)
    assert all(match.checks.values())
    assert text[match.start : match.end] == "\n".join(lines)
    [finding] = find_pii(text, [FindingType.MRZ])
    assert (finding.start, finding.end, finding.confidence, finding.detail) == (
        match.start,
        match.end,
        1.0,
        layout,
    )


@pytest.mark.parametrize(
    ("line", "index", "failing"),
    [
        (1, 9, {"document_number", "composite"}),
        (1, 19, {"birth_date", "composite"}),
        (1, 27, {"expiry_date", "composite"}),
        (1, 42, {"optional_data", "composite"}),
    ],
    ids=["document-number", "birth-date", "expiry-date", "optional-data"],
)
def test_td3_with_a_corrupted_check_digit_is_invalid(
    line: int, index: int, failing: set[str]
) -> None:
    lines = td3()
    lines[line] = corrupt_digit(lines[line], index)
    match = only("\n".join(lines))
    assert not match.valid
    assert {name for name, passed in match.checks.items() if not passed} == failing
    assert 0 < match.confidence < 0.6


@pytest.mark.parametrize(
    ("lines", "line", "index"),
    [(td1(), 0, 14), (td1(), 1, 6), (td2(), 1, 9), (td2(), 1, 27)],
    ids=["td1-number", "td1-birth", "td2-number", "td2-expiry"],
)
def test_td1_and_td2_with_a_corrupted_check_digit_are_invalid(
    lines: list[str], line: int, index: int
) -> None:
    lines[line] = corrupt_digit(lines[line], index)
    assert not only("\n".join(lines)).valid


def test_only_the_composite_failing_gives_confidence_point_six() -> None:
    lines = td3()
    lines[1] = corrupt_digit(lines[1], 43)
    match = only("\n".join(lines))
    assert match.checks == {
        "document_number": True,
        "birth_date": True,
        "expiry_date": True,
        "optional_data": True,
        "composite": False,
    }
    assert match.confidence == 0.6
    assert [f.confidence for f in find_pii("\n".join(lines), [FindingType.MRZ])] == [0.6]


def test_mrz_where_most_checks_fail_is_not_reported() -> None:
    lines = td3()
    for index in (9, 19, 27, 43):
        lines[1] = corrupt_digit(lines[1], index)
    assert not only("\n".join(lines)).valid
    assert find_pii("\n".join(lines), [FindingType.MRZ]) == []


# --- OCR noise ----------------------------------------------------------------------------------


def o_for_zero_in_dates(lines: list[str]) -> list[str]:
    second = lines[1][:13] + lines[1][13:28].replace("0", "O") + lines[1][28:]
    return [lines[0], second]


NOISY = {
    "O-for-0-in-dates-and-check-digits": o_for_zero_in_dates(td3(birth="800101", expiry="300101")),
    "S-for-5-and-B-for-8-in-dates": [
        td3(birth="851208")[0],
        replace_at(replace_at(td3(birth="851208")[1], 14, "S"), 13, "B"),
    ],
    "letters-in-country-read-as-digits": [
        td3(country="GBR")[0].replace("GBR", "6BR"),
        td3(country="GBR")[1].replace("GBR", "G8R"),
    ],
    "spaces-inside-lines": [
        "P<UTO ERIKSSON<<ANNA<MARIA <<<<<<<<< <<<<<<<<<<",
        "L898902C3 6UTO 7408122 F1204159 ZE184226B<<<<< 10",
    ],
    "fillers-read-as-K-and-(": [
        "P<UTOERIKSSON<<ANNA<MARIA<<<K<<<<<(<<<<<<<KK<",
        "L898902C36UTO7408122F1204159ZE184226B<<K<<10",
    ],
    "guillemets-for-double-fillers": [
        "P<UTOERIKSSON«ANNA<MARIA««««««««««<",
        "L898902C36UTO7408122F1204159ZE184226B«<<<10",
    ],
    "a-line-split-over-two-ocr-lines": [
        "P<UTOERIKSSON<<ANNA<MARIA",
        "<<<<<<<<<<<<<<<<<<<",
        "L898902C36UTO7408122F12",
        "04159ZE184226B<<<<<10",
    ],
    "both-lines-joined": ["".join(td3())],
    "filler-run-one-short": [td3()[0][:-1], td3()[1].replace("<<<<<", "<<<<")],
    "filler-run-one-long": [td3()[0] + "<", td3()[1].replace("<<<<<", "<<<<<<")],
    "zero-read-as-O-in-document-number": [td3()[0], td3()[1].replace("L898902C3", "L8989O2C3")],
    # a photo whose box cut into the line's first glyph: OCR-B's 0 read as D, or as Q
    "zero-read-as-D-in-document-number": [
        td3()[0],
        td3(number="0S3GX4CHG")[1].replace("0S3", "DS3"),
    ],
    "zero-read-as-Q-in-document-number": [td3()[0], td3()[1].replace("L898902C3", "L8989Q2C3")],
    "lower-case": [line.lower() for line in td3()],
    # a photographed page: the 19-filler tail of line 1 read 10 short, UTO read as UT0
    "name-line-filler-tail-ten-short": [td3()[0][:-10].replace("UTO", "UT0"), td3()[1]],
    "name-line-filler-tail-lost": [td3()[0].rstrip("<"), td3()[1]],
    "name-line-filler-tail-eight-long": [td3()[0] + "<" * 8, td3()[1]],
    "optional-data-fillers-four-short": [td3()[0], td3(personal="")[1].replace("<" * 14, "<" * 10)],
    "nationality-read-with-digits": [td3()[0], td3()[1].replace("UTO", "UT0")],
}


@pytest.mark.parametrize("lines", NOISY.values(), ids=NOISY.keys())
def test_ocr_noise_is_repaired_before_verifying(lines: list[str]) -> None:
    text = "\n".join(
        ["REPUBLIC OF UTOPIA", "Passport No. L898902C3", *lines, "", "Holder's signature"]
    )
    match = only(text)
    assert match.valid, match.checks
    assert match.format == "td3"
    assert text[match.start : match.end] == "\n".join(lines)


def test_a_document_number_with_two_letters_read_as_digits_verifies() -> None:
    # an ID card font whose O OCR reads as 0, twice in one number
    lines = td1(number="ROON6X5<<")
    misread = [lines[0].replace("ROON6X5", "R00N6X5"), *lines[1:]]
    match = only("\n".join(misread))
    assert match.format == "td1"
    assert match.valid, match.checks
    assert match.fields()["document_number"].startswith("ROON6X5")


@pytest.mark.parametrize(("letter", "read_as"), [("Q", "0"), ("D", "0"), ("0", "Q"), ("O", "Q")])
def test_a_round_glyph_read_as_another_round_glyph_verifies(letter: str, read_as: str) -> None:
    # OCR reads a round glyph as any of 0, O, Q and D; the check digits tell which it is
    number = f"1GI6L6FH{letter}"
    lines = td1(number=number)
    misread = [lines[0].replace(number, number[:-1] + read_as), *lines[1:]]
    match = only("\n".join(misread))
    assert match.valid, match.checks
    if letter == "Q":  # as read on a photographed card; another swap may pass by chance
        assert match.fields()["document_number"] == number
    # a wrong check digit is not repaired into a pass
    wrong = corrupt_digit(misread[0], 14)
    assert not only("\n".join([wrong, *misread[1:]])).valid


def test_a_filler_run_miscount_cannot_make_a_wrong_check_digit_pass() -> None:
    lines = td3(personal="")
    second = lines[1].replace("<" * 14, "<" * 10)
    broken = corrupt_digit(second, len(second) - 1)  # the composite check, after the run
    assert not only("\n".join([lines[0], broken])).valid


def test_td1_name_line_with_its_fillers_miscounted() -> None:
    first, second, name = td1()
    match = only("\n".join([first, second, name.rstrip("<")]))
    assert match.valid
    assert match.fields()["surname"] == "ERIKSSON"


def test_mrz_lines_merged_with_text_from_the_next_column() -> None:
    first, second = td3()
    text = f"Signature of holder {first}\nDate of issue 16 APR 2012 {second}"
    match = only(text)
    assert match.valid
    assert text[match.start : match.end].endswith(second)


@pytest.mark.parametrize(
    "name_line",
    ["X<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<", "<20PE2<<JES1A<<<<<<<<<<<<<", None],
    ids=["wrong-document-code", "garbled-by-ocr", "lost-by-ocr"],
)
def test_the_checked_line_proves_a_passport_whose_name_line_is_unreadable(
    name_line: str | None,
) -> None:
    second = td3()[1]
    match = only("\n".join(line for line in (name_line, second) if line))
    assert match.valid
    assert match.format == "td3"
    assert (match.document_type, match.issuing_country) == ("", "")


def test_two_lines_of_a_tilted_zone_read_on_one_row() -> None:
    # in a photo at an angle OCR put the start of the name line and the whole second line
    # on one row of its text, and lost the rest of the name line
    first, second = td3()
    match = only(f"PASSPORT / PASSEPORT\n{first[:23]} {second}\nSignature")
    assert match.valid
    assert (match.format, match.document_type, match.issuing_country) == ("td3", "P", "UTO")


def test_a_checked_line_that_fails_a_check_is_not_a_document_without_its_name_line() -> None:
    assert find_mrz(corrupt_digit(td3()[1], 19)) == []


@pytest.mark.parametrize("code", ["I<", "ID"])
def test_an_id_cards_first_character_cut_off_by_the_crop(code: str) -> None:
    # the document type's letter is covered by no check digit: the first line's document
    # number and the second line's dates still prove the card
    first, second, name = td1()
    lines = [code + first[2:], second, name]
    match = only("\n".join([lines[0][1:], *lines[1:]]))
    assert match.valid
    assert match.format == "td1"
    assert (match.document_type, match.issuing_country) == ("", "")
    # and only when every check passes
    assert not find_mrz("\n".join([lines[0][1:], corrupt_digit(second, 6), name]))
    # a line that keeps its document type is read as it is
    assert only("\n".join(lines)).document_type == code.rstrip("<")


@pytest.mark.parametrize("read_as", ["[", "<"])
def test_an_id_cards_document_type_read_as_a_filler(read_as: str) -> None:
    # an I with serifs read as ``[`` (a filler to the repair): no document type is ``<``,
    # and no check digit covers the letter
    first, second, name = td1()
    match = only("\n".join([read_as + first[1:], second, name]))
    assert match.valid
    assert (match.document_type, match.issuing_country) == ("", "")
    assert not find_mrz("\n".join([read_as + first[1:], corrupt_digit(second, 6), name]))


def test_a_td2_line_is_not_taken_for_a_padded_td3_line() -> None:
    (match,) = find_mrz("\n".join(td2()))
    assert match.format == "td2"
    (match,) = find_mrz(td2()[1])
    assert match.format == "td2"


def test_blank_lines_between_mrz_lines_are_tolerated() -> None:
    assert only("\n\n".join(td1())).valid


def test_two_documents_in_one_text() -> None:
    text = "\n".join([*td3(), "second page", *td1()])
    assert [match.format for match in find_mrz(text)] == ["td3", "td1"]


def test_td1_document_number_longer_than_nine_characters() -> None:
    number = "D23145890123"
    first = f"I<UTO{number[:9]}<{number[9:]}{check(number)}".ljust(30, "<")
    second = "7408122F1204159UTO".ljust(29, "<")
    second += check(first[5:30] + second[0:7] + second[8:15] + second[18:29])
    match = only("\n".join([first, second, "ERIKSSON<<ANNA<MARIA".ljust(30, "<")]))
    assert match.valid
    assert match.fields()["document_number"] == number


@pytest.mark.parametrize(
    "text",
    [
        "Just a paragraph of text, nothing to see here.",
        "<div class='a'><span>x</span></div>\n<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<",
        "if (a << 2 < b) { c <<= 1; }",
        "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO74AB122F1204159ZE184226B<<<<<10",
    ],
    ids=["prose", "html-and-fillers", "shift-operators", "letters-in-date"],
)
def test_non_mrz_text(text: str) -> None:
    assert find_mrz(text) == []


def test_match_exposes_no_personal_data_unless_asked() -> None:
    match = only("\n".join(td3()))
    shown = repr(match)
    for secret in ("ERIKSSON", "ANNA", "L898902C3", "740812", "ZE184226B"):
        assert secret not in shown
    fields = match.fields()
    assert fields["surname"] == "ERIKSSON"
    assert fields["given_names"] == "ANNA MARIA"
    assert fields["document_number"] == "L898902C3"
    assert fields["birth_date"] == "740812"
    assert fields["sex"] == "F"


def test_a_date_line_above_a_passports_zone_does_not_make_it_an_id_card() -> None:
    """A TD3 whose optional data is all fillers also passes TD2's checks once its second
    line's filler run is cut to TD2's width, and the date printed above the zone can be
    joined to a damaged name line to make a TD2 name line: the reading that changed
    fewer characters of the checked line wins."""
    name, second = td3(personal="")
    text = "\n".join(["Date of expiry", "10OCT2031", name[1:], second])
    match = only(text)
    assert match.valid
    assert match.format == "td3"
    assert text[match.start : match.end] == second
