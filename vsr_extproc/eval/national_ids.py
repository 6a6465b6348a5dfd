"""National identity numbers in messages (``vsr-extproc eval pii``, beside ``pii.jsonl``).

``data/national_id_messages.json`` holds, per split, messages with one ``{id}`` slot
naming (or not naming) one of the 37 kinds ``detectors.national_ids`` knows, in the kind's
language or in English, and messages with one ``{number}`` slot where a number that is not
an identity stands (an order, an invoice, a phone, a build); and, apart
(``with_birth_date``), forms and rows where a number named by nothing stands beside the
holder's birth date. ``dev`` was written beside the detector (and holds a set scored once
as ``test`` and then read); ``test``'s writers never saw the detector (its ``about`` says
who wrote what). Each ``{id}`` is filled ``FILLS`` times with a number Faker's providers
make for the kind's country (an implementation independent of python-stdnum, which the
detector validates with; for Aadhaar, PAN, Czech and Chinese numbers, the first Faker draws
that stdnum accepts) or, for the kinds Faker lacks, drawn here from each number's published
rules (``GENERATED``), as written or without its separators; each ``{number}`` with a number
that is not one but shares the shapes: random digits of 8–13 (some in groups), a phone
number of one of the kinds' countries, an EAN-13, a Unix time or a date-stamped order
number, under the split's own seed.
"""

from __future__ import annotations

import datetime
import random
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

MESSAGES = Path(__file__).resolve().parent / "data" / "national_id_messages.json"
FILLS = 2
_SEEDS = {"dev": 11, "test": 6151}
# Faker's locale and provider method that make each kind's numbers
PROVIDERS = {
    "es_dni": ("es_ES", "nif"),
    "es_nie": ("es_ES", "nie"),
    "it_cf": ("it_IT", "ssn"),
    "fr_nir": ("fr_FR", "ssn"),
    "nl_bsn": ("nl_NL", "ssn"),
    "pl_pesel": ("pl_PL", "ssn"),
    "se_pnr": ("sv_SE", "ssn"),
    "br_cpf": ("pt_BR", "cpf"),
    "fi_hetu": ("fi_FI", "ssn"),
    "no_fnr": ("no_NO", "ssn"),
    "tr_tckn": ("tr_TR", "ssn"),
    "ro_cnp": ("ro_RO", "ssn"),
    "ca_sin": ("en_CA", "ssn"),
    "il_id": ("he_IL", "ssn"),
    "ee_ik": ("et_EE", "ssn"),
    "hr_oib": ("hr_HR", "ssn"),
    "be_nn": ("nl_BE", "ssn"),
    "ch_ahv": ("de_CH", "ssn"),
    "at_vnr": ("de_AT", "ssn"),
    "ar_cuit": ("es_AR", "ssn"),
    "mx_curp": ("es_MX", "curp"),
    "gr_amka": ("el_GR", "ssn"),
    "th_pin": ("th_TH", "ssn"),
    "cl_rut": ("es_CL", "rut"),
    "us_itin": ("en_US", "itin"),
    "ua_rntrc": ("uk_UA", "ssn"),
    "in_aadhaar": ("en_IN", "aadhaar_id"),
    "cn_ric": ("zh_CN", "ssn"),
    "in_pan": ("en_IN", "pan"),
    "cz_rc": ("cs_CZ", "birth_number"),
}
# Faker's Aadhaar numbers are random digits (one in ten passes the Verhoeff check), its
# Chinese numbers name birthplaces no register holds, and one in a thousand of its PANs and
# one in fifty of its Czech birth numbers break their rules: of those, the valid ones are
# drawn
DRAWN_VALID = frozenset({"in_aadhaar", "cn_ric", "in_pan", "cz_rc"})
_LIVING = datetime.date(1900, 1, 1)  # the earliest birth date a form's reader accepts
# the separators people leave out (a Finnish number's ``-``/``A``/``+`` is its century)
_SEPARATORS = re.compile(r"[ .\-/]")
_KEEPS_ITS_SEPARATOR = frozenset({"fi_hetu"})


def _born(chooser: random.Random) -> datetime.date:
    return datetime.date(1940, 1, 1) + datetime.timedelta(chooser.randrange(24_000))


def _digits(chooser: random.Random, count: int) -> list[int]:
    return [chooser.randrange(10) for _ in range(count)]


_NO_PREFIX = frozenset({"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"})


def _gb_nino(chooser: random.Random) -> str:
    """Two prefix letters (neither D, F, I, Q, U nor V, the second not O; not BG, GB, KN,
    NK, NT, TN or ZZ), six digits, a suffix A-D; spaced in pairs or not."""
    letters = "ABCEGHJKLMNPRSTWXYZ"
    while (prefix := chooser.choice(letters) + chooser.choice(letters)) in _NO_PREFIX:
        pass
    digits = "".join(map(str, _digits(chooser, 6)))
    suffix = chooser.choice("ABCD")
    if chooser.random() < 0.5:
        return f"{prefix} {digits[:2]} {digits[2:4]} {digits[4:]} {suffix}"
    return f"{prefix}{digits}{suffix}"


def _de_idnr(chooser: random.Random) -> str:
    """Ten digits, one of them twice, the rest once, not starting with 0; ISO 7064
    MOD 11,10's check digit."""
    while True:
        twice = chooser.randrange(10)
        others = chooser.sample([d for d in range(10) if d != twice], 8)
        digits = [twice, twice, *others]
        chooser.shuffle(digits)
        if digits[0]:
            break
    product = 10
    for digit in digits:
        total = (digit + product) % 10 or 10
        product = 2 * total % 11
    digits.append((11 - product) % 10)
    text = "".join(map(str, digits))
    return f"{text[:2]} {text[2:5]} {text[5:8]} {text[8:]}" if chooser.random() < 0.3 else text


def _dk_cpr(chooser: random.Random) -> str:
    """The birth date as DDMMYY, a seventh digit that gives its century (0-3 for 1900-1999,
    4 for 2000-2036), three more."""
    born = _born(chooser)
    century = chooser.randrange(4) if born.year < 2000 else 4
    serial = "".join(map(str, [century, *_digits(chooser, 3)]))
    return f"{born:%d%m%y}-{serial}"


def _kr_rrn(chooser: random.Random) -> str:
    """YYMMDD, a digit for sex and century (1-2: 1900s, 3-4: 2000s), a place of birth
    (00-95), three more, and the check digit: 11 less the weighted sum (2-9, 2-5) modulo
    11, modulo 10."""
    born = _born(chooser)
    sex = chooser.choice((1, 2)) + (2 if born.year >= 2000 else 0)
    place = chooser.randrange(96)
    digits = [int(c) for c in f"{born:%y%m%d}{sex}{place:02}"] + _digits(chooser, 3)
    weights = (2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5)
    digits.append((11 - sum(w * d for w, d in zip(weights, digits, strict=True)) % 11) % 10)
    text = "".join(map(str, digits))
    return f"{text[:6]}-{text[6:]}"


def _jp_in(chooser: random.Random) -> str:
    """Eleven digits and the check digit of the Individual Number's ordinance: the n-th
    digit from the right weighted n+1 (n ≤ 6) or n-5; 11 less the sum modulo 11, 0 for a
    remainder of 0 or 1."""
    digits = _digits(chooser, 11)
    total = sum(d * (n + 1 if n <= 6 else n - 5) for n, d in enumerate(reversed(digits), 1))
    digits.append(0 if total % 11 <= 1 else 11 - total % 11)
    text = "".join(map(str, digits))
    return f"{text[:4]} {text[4:8]} {text[8:]}" if chooser.random() < 0.5 else text


def _luhn_digit(digits: list[int]) -> int:
    total = 0
    for n, digit in enumerate(reversed(digits)):
        doubled = digit * 2 if n % 2 == 0 else digit
        total += doubled - 9 if doubled > 9 else doubled
    return (10 - total % 10) % 10


def _za_idnr(chooser: random.Random) -> str:
    """YYMMDD, four digits (the sex), citizenship (0 or 1), an 8, a Luhn check digit."""
    digits = [int(c) for c in f"{_born(chooser):%y%m%d}"] + _digits(chooser, 4)
    digits += [chooser.choice((0, 1)), 8]
    digits.append(_luhn_digit(digits))
    return "".join(map(str, digits))


def _bg_egn(chooser: random.Random) -> str:
    """YYMMDD (the month plus 40 for a birth from 2000), three digits, a check digit
    (weights 2, 4, 8, 5, 10, 9, 7, 3, 6, modulo 11, 10 read as 0)."""
    born = _born(chooser)
    month = born.month + (40 if born.year >= 2000 else 0)
    digits = [int(c) for c in f"{born:%y}{month:02}{born:%d}"] + _digits(chooser, 3)
    weights = (2, 4, 8, 5, 10, 9, 7, 3, 6)
    digits.append(sum(w * d for w, d in zip(weights, digits, strict=True)) % 11 % 10)
    return "".join(map(str, digits))


#: the kinds no Faker provider makes (or makes only as a reserved dummy: its NINOs all
#: start with ZZ): drawn here from each number's published rules, not python-stdnum's code
GENERATED: dict[str, Callable[[random.Random], str]] = {
    "gb_nino": _gb_nino,
    "de_idnr": _de_idnr,
    "dk_cpr": _dk_cpr,
    "kr_rrn": _kr_rrn,
    "jp_in": _jp_in,
    "za_idnr": _za_idnr,
    "bg_egn": _bg_egn,
}


def _fakers(split: str) -> list[Any]:
    from faker import Faker

    fakers = []
    for index, locale in enumerate(sorted({locale for locale, _ in PROVIDERS.values()})):
        faker = Faker(locale)
        faker.seed_instance(_SEEDS[split] * 1000 + index)
        fakers.append(faker)
    return fakers


# each kind's Faker seed is its place here: the first 24 in alphabetical order, then the
# kinds added since, so that a kind's numbers stay the same when kinds are added
_ADDED = (
    "us_itin", "ua_rntrc", "in_aadhaar", "cn_ric", "in_pan", "cz_rc", "gb_nino", "de_idnr",
    "dk_cpr", "kr_rrn", "jp_in", "za_idnr", "bg_egn",
)  # fmt: skip
_SEED_ORDER = (
    *sorted(kind for kind in PROVIDERS if kind not in _ADDED),
    *_ADDED,
)


def _numbers(split: str) -> dict[str, Callable[[], str]]:
    return {
        kind: _maker(kind, _SEEDS[split] * 100 + index) for index, kind in enumerate(_SEED_ORDER)
    }


def draw_number(kind: str, seed: int) -> str:
    """One number of ``kind`` from Faker's provider for its country, seeded (valid by
    stdnum for ``DRAWN_VALID``), for another corpus to draw (``imagegen``'s ID cards)."""
    return _maker(kind, seed)()


def _maker(kind: str, seed: int) -> Callable[[], str]:
    """Numbers of ``kind`` from Faker's provider for its country, seeded ``seed``."""
    from faker import Faker

    from vsr_extproc.detectors.national_ids import KINDS

    if kind in GENERATED:
        chooser = random.Random(seed)
        return lambda: GENERATED[kind](chooser)
    locale, method = PROVIDERS[kind]
    faker = Faker(locale)
    faker.seed_instance(seed)
    make = getattr(faker, method)
    if kind in DRAWN_VALID:
        return _valid_only(make, KINDS[kind])
    return lambda: str(make())


def _valid_only(make: Callable[[], Any], valid: Callable[[str], bool]) -> Callable[[], str]:
    def draw() -> str:
        while not valid(value := str(make())):
            pass
        return value

    return draw


def _not_an_id(chooser: random.Random, fakers: list[Any]) -> str:
    """A number that is not an identity: random digits (8–13, some in groups), or one of
    the numbers that share their shapes — a phone number of one of the kinds' countries
    (Faker's, as it writes them), an EAN-13 barcode, a Unix time, a date-stamped order."""
    shape = chooser.randrange(6)
    if shape == 0:
        return str(chooser.choice(fakers).phone_number())
    if shape == 1:
        return str(chooser.choice(fakers).ean13())
    if shape == 2:
        return str(chooser.randrange(1_000_000_000, 1_900_000_000))
    if shape == 3:
        date = f"{chooser.randrange(2015, 2027)}{chooser.randrange(1, 13):02}"
        return f"{date}{chooser.randrange(1, 29):02}{chooser.randrange(10**5):05}"
    digits = "".join(chooser.choice("0123456789") for _ in range(chooser.randint(8, 13)))
    if shape == 4:  # in groups of three or four
        size = chooser.choice((3, 4))
        separator = chooser.choice(" -.")
        return separator.join(digits[i : i + size] for i in range(0, len(digits), size))
    return digits


def _filled(template: str, values: dict[str, str]) -> tuple[str, dict[str, tuple[int, int]]]:
    """``template`` with each ``{slot}`` of ``values`` replaced, and where each value went."""
    pieces: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    position = 0
    for start, slot in sorted((template.index("{" + slot + "}"), slot) for slot in values):
        pieces.append(template[position:start])
        offset = sum(map(len, pieces))
        pieces.append(values[slot])
        spans[slot] = (offset, offset + len(values[slot]))
        position = start + len(slot) + 2
    pieces.append(template[position:])
    return "".join(pieces), spans


def national_id_rows(split: str, part: str = "named") -> list[dict[str, Any]]:
    """The split's messages, each slot filled ``FILLS`` times: ``{"text", "span", "kind"}``
    (``span`` None and ``kind`` "none" for a message without an identity number).

    ``part`` "named": the messages above; "with_birth_date": numbers named by nothing
    beside the holder's birth date, ``{dob}`` filled with the date the number encodes
    (python-stdnum reads it) as the template's ``dob_format`` writes it."""
    messages = orjson.loads(MESSAGES.read_bytes())[split]
    if part == "with_birth_date":
        messages = messages["with_birth_date"]
    chooser = random.Random(_SEEDS[split] + (part != "named"))
    makers = _numbers(split)
    fakers = _fakers(split)
    rows = []
    for message in messages["with_id"]:
        template, kind = message["text"], message["kind"]
        for _ in range(FILLS):
            value = str(makers[kind]())
            values = {"id": value}
            if "dob_format" in message:
                # a living person's: Faker's Romanian numbers are born 1800-2099
                while not _LIVING <= _birth_date(kind, value) <= datetime.date.today():
                    value = str(makers[kind]())
                values = {"id": value}
                values["dob"] = _birth_date(kind, value).strftime(message["dob_format"])
            elif chooser.random() < 0.5 and kind not in _KEEPS_ITS_SEPARATOR:
                values["id"] = _SEPARATORS.sub("", value)
            text, spans = _filled(template, values)
            rows.append({"text": text, "span": spans["id"], "kind": kind})
    for message in messages["without_id"]:
        template = message["text"]
        for _ in range(FILLS):
            values = {"number": _not_an_id(chooser, fakers)}
            if "dob_format" in message:
                born = datetime.date(1930, 1, 1) + datetime.timedelta(chooser.randrange(30_000))
                values["dob"] = born.strftime(message["dob_format"])
            text, _ = _filled(template, values)
            rows.append({"text": text, "span": None, "kind": "none"})
    return rows


def _birth_date(kind: str, number: str) -> datetime.date:
    from vsr_extproc.detectors.national_ids import BIRTH_DATES

    return BIRTH_DATES[kind](number)


def evaluate_national_ids(split: str, part: str = "named") -> dict[str, Any]:
    """Recall of the identity numbers by kind (a ``national_id`` finding that overlaps the
    number), the messages without one that are flagged, and how many of the found were
    given the right kind, through ``find_pii``."""
    from vsr_extproc.detectors import FindingType, find_pii

    found: Counter[str] = Counter()
    total: Counter[str] = Counter()
    right_kind = flagged = without = 0
    errors = []
    for row in national_id_rows(split, part):
        text = row["text"]
        findings = [f for f in find_pii(text) if f.type is FindingType.NATIONAL_ID]
        if row["span"] is None:
            without += 1
            flagged += bool(findings)
            if findings:
                errors.append({"text": text, "flagged": [text[f.start : f.end] for f in findings]})
            continue
        start, end = row["span"]
        hit = next((f for f in findings if f.start < end and start < f.end), None)
        total[row["kind"]] += 1
        if hit is None:
            errors.append({"text": text, "missed": text[start:end], "kind": row["kind"]})
            continue
        found[row["kind"]] += 1
        right_kind += hit.detail == row["kind"]
    return {
        "split": split,
        "part": part,
        "found": sum(found.values()),
        "total": sum(total.values()),
        "right_kind": right_kind,
        "per_kind": {kind: f"{found[kind]}/{total[kind]}" for kind in sorted(total)},
        "texts_without_one": {"flagged": flagged, "total": without},
        "errors": errors,
    }
