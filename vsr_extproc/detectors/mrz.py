"""Machine-readable zones (ICAO Doc 9303) of passports and ID cards in OCR text.

Three layouts: TD3 (passports, 2 lines of 44), TD2 (2 lines of 36) and TD1 (ID cards,
3 lines of 30). Each carries check digits (weights 7, 3, 1; ``<`` = 0, ``A`` = 10 ...
``Z`` = 35) over the document number, the birth and expiry dates, the optional data and a
composite of them, so a real MRZ proves itself.

OCR of a document photo is noisy, so before verifying we repair what the layout allows:

* whitespace inside lines is dropped, ``«`` read for ``<<`` and ``(``/``[``/``{`` read for
  ``<`` are mapped back, and a ``K`` inside a run of fillers (``<<K<<``) is taken for ``<``;
* each field is repaired by its character class: O/Q/D→0, I/L→1, S→5, B→8, Z→2, G→6 in
  dates and check digits, the reverse in country codes, sex and names;
* a document number or optional data whose check fails may swap one confusable character
  (any of 0, O, Q and D for another, I↔1, S↔5, B↔8, Z↔2, G↔6), or two that are the
  same character, when that makes both its own and the composite check pass;
* a line whose length is off has its longest filler run padded or trimmed (OCR miscounts
  long runs of ``<`` by any amount; a run carries nothing but its length, and the check
  digits after it must still pass);
* a line may arrive split over several OCR lines, both lines joined into one, or joined
  with text from the next column;
* the name line has no check digit: when OCR lost or garbled it, the other lines still
  prove the document if every one of their checks passes (the match then leaves the
  document type and issuing country empty); so does an ID card's (TD1) first line whose
  first character, the document type's letter, a crop close to the zone cut off.

``MrzMatch`` exposes only the layout, document type, issuing country and check results, so
it can be logged; the holder's name and numbers are reachable only through ``fields()``.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from vsr_extproc.detectors.findings import Finding, FindingType

_CHARSET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_VALUES = {char: value for value, char in enumerate(_CHARSET)} | {"<": 0}
_WEIGHTS = (7, 3, 1)

_TO_DIGIT = str.maketrans("OQDILSBZG", "001115826")
_TO_LETTER = str.maketrans("015826", "OISBZG")
# what OCR may have read in place of each character: a round glyph is any of 0, O, Q, D
_CONFUSABLE = {"O": "0QD", "0": "OQD", "Q": "0O", "D": "0O", "I": "1", "1": "I",
               "S": "5", "5": "S", "B": "8", "8": "B", "Z": "2", "2": "Z",
               "G": "6", "6": "G"}  # fmt: skip
_STAND_INS = max(len(others) for others in _CONFUSABLE.values())

_MRZ_LINE = re.compile(r"[A-Z0-9<]+")
_OCR_FILLERS = str.maketrans({"«": "<<", "‹": "<", "(": "<", "[": "<", "{": "<"})
_WHITESPACE = re.compile(r"\s+")
_TEXT_LINE = re.compile(r"[^\r\n]+")
_LENGTH_TOLERANCE = 2
_LONG_RUN = 3
_MAX_FRAGMENTS = 6
_MIN_FRAGMENT = 5
# words of MRZ characters as OCR writes them, separated by single spaces
_MRZ_STRETCH = re.compile(r"[A-Z0-9<«‹(\[{]+(?: [A-Z0-9<«‹(\[{]+)*")
_MIN_MERGED = 20
_LOWER_WORD = re.compile(r"[a-z]{2,}")
_UPPER_WORD = re.compile(r"[A-Z][A-Z0-9<]{4,}")


def check_digit(field_text: str) -> int:
    """The ICAO 9303 check digit of ``field_text`` (characters ``0-9``, ``A-Z`` and ``<``)."""
    return sum(_VALUES[char] * _WEIGHTS[index % 3] for index, char in enumerate(field_text)) % 10


def _check_passes(field_text: str, check_char: str) -> bool:
    # an empty optional field may carry "<" as its check digit, which reads as 0
    if check_char != "<" and not check_char.isdigit():
        return False
    return check_digit(field_text) == _VALUES[check_char]


# --- layouts --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Slice:
    row: int
    start: int
    end: int
    kind: str  # "digit", "letter" or "alnum": which OCR repair applies

    def read(self, rows: Sequence[str]) -> str:
        return rows[self.row][self.start : self.end]


@dataclass(frozen=True, slots=True)
class _Layout:
    name: str
    rows: int
    width: int
    document_types: str
    slices: Mapping[str, _Slice]
    checked: tuple[str, ...]  # fields followed by a check digit in slice "<field>_check"
    composite: tuple[_Slice, ...]
    name_slice: _Slice


def _two_line_layout(name: str, width: int, document_types: str, checked_optional: bool) -> _Layout:
    optional_end = width - 2 if checked_optional else width - 1
    slices = {
        "document_type": _Slice(0, 0, 2, "letter"),
        "issuing_country": _Slice(0, 2, 5, "letter"),
        "document_number": _Slice(1, 0, 9, "alnum"),
        "document_number_check": _Slice(1, 9, 10, "digit"),
        "nationality": _Slice(1, 10, 13, "letter"),
        "birth_date": _Slice(1, 13, 19, "digit"),
        "birth_date_check": _Slice(1, 19, 20, "digit"),
        "sex": _Slice(1, 20, 21, "letter"),
        "expiry_date": _Slice(1, 21, 27, "digit"),
        "expiry_date_check": _Slice(1, 27, 28, "digit"),
        "optional_data": _Slice(1, 28, optional_end, "alnum"),
        "composite_check": _Slice(1, width - 1, width, "digit"),
    }
    checked: tuple[str, ...] = ("document_number", "birth_date", "expiry_date")
    if checked_optional:
        slices["optional_data_check"] = _Slice(1, width - 2, width - 1, "digit")
        checked += ("optional_data",)
    composite = (
        _Slice(1, 0, 10, "alnum"),
        _Slice(1, 13, 20, "alnum"),
        _Slice(1, 21, width - 1, "alnum"),
    )
    name_slice = _Slice(0, 5, width, "letter")
    return _Layout(name, 2, width, document_types, slices, checked, composite, name_slice)


_TD1 = _Layout(
    "td1",
    3,
    30,
    "IAC",
    {
        "document_type": _Slice(0, 0, 2, "letter"),
        "issuing_country": _Slice(0, 2, 5, "letter"),
        "document_number": _Slice(0, 5, 14, "alnum"),
        "document_number_check": _Slice(0, 14, 15, "digit"),
        "optional_data": _Slice(0, 15, 30, "alnum"),
        "birth_date": _Slice(1, 0, 6, "digit"),
        "birth_date_check": _Slice(1, 6, 7, "digit"),
        "sex": _Slice(1, 7, 8, "letter"),
        "expiry_date": _Slice(1, 8, 14, "digit"),
        "expiry_date_check": _Slice(1, 14, 15, "digit"),
        "nationality": _Slice(1, 15, 18, "letter"),
        "optional_data_2": _Slice(1, 18, 29, "alnum"),
        "composite_check": _Slice(1, 29, 30, "digit"),
    },
    ("document_number", "birth_date", "expiry_date"),
    (
        _Slice(0, 5, 30, "alnum"),
        _Slice(1, 0, 7, "alnum"),
        _Slice(1, 8, 15, "alnum"),
        _Slice(1, 18, 29, "alnum"),
    ),
    _Slice(2, 0, 30, "letter"),
)
_TD2 = _two_line_layout("td2", 36, "IACP", checked_optional=False)
_TD3 = _two_line_layout("td3", 44, "P", checked_optional=True)
_LAYOUTS = (_TD3, _TD2, _TD1)
_WIDEST = max(layout.width for layout in _LAYOUTS)

# A real MRZ names a country, has a document number and dates; a birth date may leave
# month and day unknown ("<<"), never the year.
_COUNTRY = re.compile(r"[A-Z][A-Z<]{2}")
_BIRTH_DATE = re.compile(r"\d\d[0-9<]{4}")
_EXPIRY_DATE = re.compile(r"\d{6}")
_ALPHANUMERIC = re.compile(r"[A-Z0-9]")


# --- the result -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MrzMatch:
    """An MRZ found in text: where, which layout, and which check digits pass.

    Safe to log: it holds no name or number. ``fields()`` parses those on demand.
    """

    start: int
    end: int
    format: str  # "td1", "td2" or "td3"
    document_type: str  # "P", "ID", "I"...: the code without fillers; "" if the name line was lost
    issuing_country: str  # ICAO code without fillers: "D", "UTO", "GBR"; "" likewise
    valid: bool  # every check digit passes after OCR repair
    checks: dict[str, bool] = field(hash=False)
    _rows: tuple[str, ...] = field(repr=False, compare=False, hash=False)

    @property
    def confidence(self) -> float:
        """1.0 when every check passes, 0.6 when only the composite fails, 0.4 when at least
        half pass, 0 otherwise (not reported as a finding)."""
        passed = sum(self.checks.values())
        if self.valid:
            return 1.0
        if passed == len(self.checks) - 1 and not self.checks["composite"]:
            return 0.6
        return 0.4 if passed * 2 >= len(self.checks) else 0.0

    def fields(self) -> dict[str, str]:
        """The parsed (OCR-repaired) fields, holder's name and numbers included: never log."""
        layout = next(layout for layout in _LAYOUTS if layout.name == self.format)
        parsed = {
            name: piece.read(self._rows)
            for name, piece in layout.slices.items()
            if not name.endswith("_check")
        }
        parsed["document_number"] = _document_number(self._rows, layout)[0]
        surname, _, given = layout.name_slice.read(self._rows).partition("<<")
        parsed["surname"] = surname.replace("<", " ").strip()
        parsed["given_names"] = given.replace("<", " ").strip()
        return {name: value.replace("<", " ").strip() for name, value in parsed.items()}


# --- OCR clean-up ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Fragment:
    start: int
    end: int
    chars: str


def _fillers_for_k(chars: str) -> str:
    """A "K" right after a "<" and before a "<", a "K" or the end is a misread filler."""
    out = list(chars)
    for index in range(1, len(out)):
        following = out[index + 1] if index + 1 < len(out) else "<"
        if out[index] == "K" and out[index - 1] == "<" and following in "<K":
            out[index] = "<"
    return "".join(out)


def _fragments(text: str) -> Iterator[list[_Fragment]]:
    """Runs of consecutive text lines that read as MRZ characters after clean-up. A line
    that OCR merged with text beside it (a caption in the next column) contributes its
    MRZ part: the longest stretch of upper-case words that holds a filler."""
    run: list[_Fragment] = []
    for line in _TEXT_LINE.finditer(text):
        content = line.group()
        if not content.strip():
            continue  # blank lines between MRZ lines do not break the run
        fragment = _mrz_fragment(content, line.start())
        if fragment is not None:
            run.extend(_rows_side_by_side(text, fragment))
        elif run:
            yield run
            run = []
    if run:
        yield run


def _rows_side_by_side(text: str, fragment: _Fragment) -> list[_Fragment]:
    """``fragment``, or its words apart when it is too long to be one row: in a tilted
    photo OCR can put the start of one MRZ line and the next line on one row of its text
    (``P<CANCARTER<<NOAH<<<<<< YENQFC05Q3CAN…``). Apart, the words can be grouped into rows
    again (``_row_splits``), the line with the check digits among them."""
    if len(fragment.chars) <= _WIDEST + _LENGTH_TOLERANCE:
        return [fragment]
    words = [
        _Fragment(fragment.start + word.start(), fragment.start + word.end(), chars)
        for word in re.finditer(r"\S+", text[fragment.start : fragment.end])
        if (chars := _mrz_chars(word.group())) is not None
    ]
    if len(words) < 2 or len(words) > _MAX_FRAGMENTS:
        return [fragment]
    return words


def _mrz_fragment(content: str, offset: int) -> _Fragment | None:
    # a lower-case word beside upper-case text is another column's; a line all in lower
    # case (or with a stray lower-case letter) is OCR's reading of the MRZ itself
    merged = _LOWER_WORD.search(content) is not None and _UPPER_WORD.search(content) is not None
    chars = None if merged else _mrz_chars(content)
    if chars is not None:
        start = offset + len(content) - len(content.lstrip())
        return _Fragment(start, offset + len(content.rstrip()), chars)
    # merged with other text: of the stretches of whole upper-case words that hold a
    # filler, the one closest in length to an MRZ line
    best: tuple[int, _Fragment] | None = None
    for stretch in _MRZ_STRETCH.finditer(content):
        words = list(re.finditer(r"\S+", stretch.group()))
        for first, last in itertools.combinations_with_replacement(range(len(words)), 2):
            low, high = stretch.start() + words[first].start(), stretch.start() + words[last].end()
            chars = _mrz_chars(content[low:high])
            if chars is None or "<" not in chars or len(chars) < _MIN_MERGED:
                continue
            distance = min(abs(len(chars) - layout.width) for layout in _LAYOUTS)
            if best is None or distance < best[0]:
                best = (distance, _Fragment(offset + low, offset + high, chars))
    return None if best is None else best[1]


def _mrz_chars(content: str) -> str | None:
    """``content`` as MRZ characters (fillers repaired, whitespace dropped), or None."""
    chars = _WHITESPACE.sub("", content.upper().translate(_OCR_FILLERS))
    has_filler_or_digits = "<" in chars or sum(char.isdigit() for char in chars) >= 3
    if len(chars) >= _MIN_FRAGMENT and has_filler_or_digits and _MRZ_LINE.fullmatch(chars):
        return _fillers_for_k(chars)
    return None


def _fit_width(row: str, width: int) -> tuple[str, int] | None:
    """``row`` brought to ``width`` by lengthening or shortening its longest filler run,
    with the size of the change.

    OCR miscounts long runs of ``<`` by any amount (a 19-filler tail read as 9), and a run
    carries no information but its length: a check digit that depends on the positions
    after it still has to pass, and the name line has none. So a run of three or more
    fillers may absorb any difference up to half the width; a shorter run, only two
    characters (a single ``<`` dropped or doubled inside a field). A row that is too short
    and has no run long enough to absorb it, but holds a filler, is padded at its end.
    """
    delta = len(row) - width
    if delta == 0:
        return row, 0
    if abs(delta) > width // 2:
        return None
    runs = [match for match in re.finditer(r"<+", row) if len(match.group()) > delta]
    if runs:
        longest = max(runs, key=lambda match: (len(match.group()), match.start()))
        if abs(delta) <= _LENGTH_TOLERANCE or len(longest.group()) >= _LONG_RUN:
            kept = len(longest.group()) - delta
            fitted = row[: longest.start()] + "<" * kept + row[longest.end() :]
            return fitted, abs(delta)
    if delta < 0 and "<" in row:
        return row + "<" * -delta, -delta
    return None


def _row_splits(
    fragments: Sequence[_Fragment], layout: _Layout
) -> Iterator[tuple[list[str], list[int]]]:
    """Ways to cut the fragments into ``layout.rows`` rows, with each row's length change:
    the joined text cut at every ``width`` characters, and every grouping of whole
    fragments into rows of about ``width``."""
    chars = [fragment.chars for fragment in fragments]
    joined = "".join(chars)
    seen: set[tuple[str, ...]] = set()
    if len(joined) == layout.rows * layout.width:
        rows = [joined[i * layout.width : (i + 1) * layout.width] for i in range(layout.rows)]
        seen.add(tuple(rows))
        yield rows, [0] * layout.rows
    for cuts in itertools.combinations(range(1, len(chars)), layout.rows - 1):
        fitted = [
            _fit_width("".join(chars[low:high]), layout.width)
            for low, high in itertools.pairwise((0, *cuts, len(chars)))
        ]
        if any(row is None for row in fitted):
            continue
        rows = [row[0] for row in fitted if row is not None]
        if tuple(rows) not in seen:
            seen.add(tuple(rows))
            yield rows, [row[1] for row in fitted if row is not None]


# --- parsing and verification -----------------------------------------------------------------


def _repaired(rows: Sequence[str], layout: _Layout) -> list[str]:
    """Rows with each field repaired by its character class."""
    repaired = [list(row) for row in rows]
    for piece in (*layout.slices.values(), layout.name_slice):
        if piece.kind == "alnum":
            continue
        table = _TO_DIGIT if piece.kind == "digit" else _TO_LETTER
        value = piece.read(rows).translate(table)
        repaired[piece.row][piece.start : piece.end] = value
    return ["".join(row) for row in repaired]


def _replace(rows: list[str], piece: _Slice, value: str) -> list[str]:
    changed = list(rows)
    row = changed[piece.row]
    changed[piece.row] = row[: piece.start] + value + row[piece.end :]
    return changed


def _document_number(rows: Sequence[str], layout: _Layout) -> tuple[str, str]:
    """The document number and its check digit; TD1 numbers over 9 characters continue in
    the optional data, ending with their check digit, and leave "<" in the check place."""
    number = layout.slices["document_number"].read(rows)
    check = layout.slices["document_number_check"].read(rows)
    if layout is _TD1 and check == "<" and number[-1] != "<":
        extension = layout.slices["optional_data"].read(rows).split("<", 1)[0]
        if len(extension) >= 2:
            return number + extension[:-1], extension[-1].translate(_TO_DIGIT)
    return number, check


def _composite_passes(rows: Sequence[str], layout: _Layout) -> bool:
    covered = "".join(piece.read(rows) for piece in layout.composite)
    return _check_passes(covered, layout.slices["composite_check"].read(rows))


def _field_passes(rows: Sequence[str], layout: _Layout, name: str) -> bool:
    if name == "document_number":
        return _check_passes(*_document_number(rows, layout))
    return _check_passes(layout.slices[name].read(rows), layout.slices[f"{name}_check"].read(rows))


def _swaps(value: str) -> Iterator[str]:
    """``value`` with one confusable character swapped, then with two that are the same
    character (a font whose ``O`` OCR reads as ``0`` misreads every one of them): first
    for each character's likeliest stand-in, then for the others (``Q`` or ``D`` for a
    ``0``)."""
    places = [index for index, char in enumerate(value) if char in _CONFUSABLE]
    for rank in range(_STAND_INS):
        for index in places:
            if rank < len(others := _CONFUSABLE[value[index]]):
                yield value[:index] + others[rank] + value[index + 1 :]
        for first, second in itertools.combinations(places, 2):
            others = _CONFUSABLE[value[first]]
            if value[first] == value[second] and rank < len(others):
                swapped = others[rank]
                yield (
                    value[:first]
                    + swapped
                    + value[first + 1 : second]
                    + swapped
                    + value[second + 1 :]
                )


def _swap_confusables(rows: list[str], layout: _Layout, name: str) -> list[str] | None:
    """Rows with the first swap of confusable characters of field ``name`` (``_swaps``)
    that makes both its check and the composite check pass, or None. The composite weighs
    a document number or optional data as their own check does, so it adds little: about
    one wrong swap in ten passes, which is why the likeliest are tried first (the zone is
    found either way; the field's value may then be off)."""
    piece = layout.slices[name]
    for value in _swaps(piece.read(rows)):
        candidate = _replace(rows, piece, value)
        if _field_passes(candidate, layout, name) and _composite_passes(candidate, layout):
            return candidate
    return None


def _plausible(rows: Sequence[str], layout: _Layout) -> bool:
    read = {name: piece.read(rows) for name, piece in layout.slices.items()}
    return (
        read["document_type"][0] in layout.document_types
        and _COUNTRY.fullmatch(read["issuing_country"]) is not None
        and _COUNTRY.fullmatch(read["nationality"]) is not None
        and _BIRTH_DATE.fullmatch(read["birth_date"]) is not None
        and _EXPIRY_DATE.fullmatch(read["expiry_date"]) is not None
        and _ALPHANUMERIC.search(read["document_number"]) is not None
        and read["sex"] in ("M", "F", "X", "<")
    )


def _verify(rows: Sequence[str], layout: _Layout) -> tuple[list[str], dict[str, bool]] | None:
    """Repaired rows and check results, or None when the rows are not this layout."""
    repaired = _repaired(rows, layout)
    if not _plausible(repaired, layout):
        return None
    for name in layout.checked:
        if layout.slices[name].kind != "alnum" or _field_passes(repaired, layout, name):
            continue
        swapped = _swap_confusables(repaired, layout, name)
        if swapped is not None:
            repaired = swapped
    checks = {name: _field_passes(repaired, layout, name) for name in layout.checked}
    checks["composite"] = _composite_passes(repaired, layout)
    return repaired, checks


def _without_fillers(value: str) -> str:
    return value.replace("<", "")


def _readings(
    fragments: Sequence[_Fragment], layout: _Layout
) -> Iterator[tuple[list[str], int, int, bool]]:
    """Rows of ``layout`` from ``fragments``, with the length change, the part of it made
    to the lines that carry check digits, and whether part of the zone was not read. The
    name line (the first of TD2 and TD3, the last of TD1) carries no check digit: when OCR
    lost or garbled it, the other lines' check digits still prove the document, so a
    reading without it is tried too; and a TD1 first line that does not start with a
    document type, as if it had lost its first character, or as if it were misread when
    that character is a filler. Those are kept only if every check passes."""
    name_row = layout.name_slice.row
    for rows, changes in _row_splits(fragments, layout):
        checked = sum(change for row, change in enumerate(changes) if row != name_row)
        yield rows, sum(changes), checked, False
    checked_layout = dataclasses.replace(layout, rows=layout.rows - 1)
    for rows, changes in _row_splits(fragments, checked_layout):
        nationality = layout.slices["nationality"]
        if layout.rows == 2:
            country = rows[0][nationality.start : nationality.end]
            stand_in = (layout.document_types[0] + "<" + country).ljust(layout.width, "<")
        else:
            stand_in = "<" * layout.width
        yield [*rows[:name_row], stand_in, *rows[name_row:]], sum(changes), sum(changes), True
    first = fragments[0]
    if layout.slices["document_type"].row != name_row and first.chars[:1] not in (
        layout.document_types
    ):
        # a TD1 card's first line holds its document number, so it cannot stand in for a
        # lost line; but a photo cropped close to the zone cuts off its first character
        # alone, the document type's letter, which no check digit covers; and a letter
        # read as a filler (an ``I`` with serifs read ``[``) is that letter too: no
        # document type is ``<``
        letter = layout.document_types[0]
        readings = [letter + first.chars]
        if first.chars.startswith("<"):
            readings.append(letter + first.chars[1:])
        for chars in readings:
            cut = [dataclasses.replace(first, chars=chars)]
            for rows, changes in _row_splits([*cut, *fragments[1:]], layout):
                yield rows, sum(changes), sum(changes), True


def _candidates(run: Sequence[_Fragment]) -> Iterator[tuple[tuple[int, ...], MrzMatch]]:
    for first in range(len(run)):
        for last in range(first, min(len(run), first + _MAX_FRAGMENTS)):
            fragments = run[first : last + 1]
            for layout in _LAYOUTS:
                for rows, change, checked_change, partial in _readings(fragments, layout):
                    verified = _verify(rows, layout)
                    if verified is None:
                        continue
                    repaired, checks = verified
                    valid = all(checks.values())
                    if partial and not valid:
                        continue
                    read = {
                        name: "" if partial else _without_fillers(piece.read(repaired))
                        for name, piece in layout.slices.items()
                        if name in ("document_type", "issuing_country")
                    }
                    match = MrzMatch(
                        start=fragments[0].start,
                        end=fragments[-1].end,
                        format=layout.name,
                        document_type=read["document_type"],
                        issuing_country=read["issuing_country"],
                        valid=valid,
                        checks=checks,
                        _rows=tuple(repaired),
                    )
                    # a valid reading first; of those, the one whose lines with check digits
                    # needed the fewest length fixes (a TD2 line padded to TD3 width passes
                    # TD3's checks too, and a TD3 line cut to TD2 width TD2's, when its
                    # optional data is all fillers: a date line above the name line then
                    # made a TD2 name line with it); then a complete one, with the fewest
                    # fixes in all
                    fixes = -change if valid else 0
                    rank = (
                        valid,
                        -checked_change if valid else 0,
                        not partial,
                        fixes,
                        sum(checks.values()),
                        -change,
                        -len(fragments),
                    )
                    yield rank, match


def find_mrz(text: str) -> list[MrzMatch]:
    """Every MRZ in ``text`` (OCR output, other lines around it allowed), sorted by start.

    Of candidate readings that share lines, the one with the most passing checks wins,
    then the one that needed the fewest length fixes.
    """
    if "<" not in text and "«" not in text:
        return []
    found: list[MrzMatch] = []
    for run in _fragments(text):
        ranked = sorted(_candidates(run), key=lambda scored: scored[0], reverse=True)
        for _, match in ranked:
            if all(match.end <= kept.start or kept.end <= match.start for kept in found):
                found.append(match)
    found.sort(key=lambda match: match.start)
    return found


def mrz_findings(text: str) -> list[Finding]:
    """``find_mrz`` as findings of type MRZ; an MRZ where most checks fail is left out."""
    return [
        Finding(FindingType.MRZ, match.start, match.end, match.confidence, match.format)
        for match in find_mrz(text)
        if match.confidence > 0
    ]
