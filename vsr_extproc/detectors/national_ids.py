"""National identity and taxpayer numbers of 36 countries, validated by their rules.

A Spanish DNI (``12345678Z``), an Italian *codice fiscale*, a French NIR, a Dutch BSN, a
Polish PESEL, a Brazilian CPF, a German Steuer-ID, a Korean 주민등록번호, an Indian PAN, a
British National Insurance number … are the identifiers people paste into support messages
and forms beside their name. Each kind here has its written form (the separators people use),
the names it goes by (python-stdnum's description of it, and its official names in its
languages and in English; an abbreviation also with dots, ``D.N.I.``, and in any case
unless it is also a word: ``SIN``, ``NIE``, ``PAN`` count in capitals, or in any case as a
field's name, ``pan_number``, ``"sin": …``), and a validator from python-stdnum (check
digits, and the date or region fields the number encodes; the NINO, which stdnum lacks, by
HMRC's rules). A number is reported only when its validator accepts it, and:

* named: a kind's name ("DNI", "PESEL", "codice fiscale", "henkilötunnukseni") or a name of
  identity numbers in general ("national ID", "identity card number", "personal
  identification number", "social security number", "tax ID") starts at most 100
  characters before it (the nearest valid number after the name is the one it names: a
  sentence may go on before giving it), or ends at most 48 characters after it
  ("12345678Z (DNI)"): confidence 0.9;
* or unnamed beside the holder's birth date: a number whose kind encodes it and has a
  check digit (a PESEL, the Swedish, Norwegian, Romanian, Estonian, Belgian, Greek, Korean,
  Czech, South African and Bulgarian numbers; not the Danish CPR, which has no check: any
  date-stamped number is one) and a date written within 150 characters that is that date
  ("Anna Nowak, 14.02.1990, 90021412345"), as in a form or a spreadsheet's row: confidence
  0.85;
* or alone, for the few forms no other number takes: a *codice fiscale* or a CURP (16 and
  18 characters of letters and digits in a fixed order, with a check letter), a Chinese
  resident identity number (18 characters: a registered birthplace, a date, a check), a
  Swiss AHV number as written (``756.1234.5678.97``, an EAN-13 check), a CPF or a Chilean
  RUT with its dots and dash (``123.456.789-09``, two check digits; ``12.345.678-5``), a
  Spanish NIE (``X1234567L``): confidence 0.8.

Most kinds are 9 to 13 bare digits, and one random number of their length in 10 to 1,600
passes their check (measured with stdnum on 100,000 of each: a BSN, a SIN, an OIB, a RUT, a
Japanese Individual Number one in 10 or 11; a Danish CPR one in 31; a PESEL one in 53; a
Norwegian number one in 833; a South African one in 1,613). Without its name such a number
is an order, an account or a phone number as likely as an identity, so it is never
reported alone, unless the birth date it encodes is written beside it; and a general name
right after an identifier's word ("order ID number", "customer ID"), or followed by one
("the ID number of your order"), names that identifier, not an identity. A name may not
continue a word of the Latin script; in Thai, written without spaces between words, it may
stand inside one. The US SSN has its own detector (``pii.find_ssns``).

Cost: the names and the numbers are looked for only around runs of seven digits (or of
four after a letter, where a PAN's or a NINO's shape stands), the one scan of the whole
text (about 8 ns a character of prose).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import import_module

from vsr_extproc.detectors.dates import written_dates
from vsr_extproc.detectors.findings import Finding, FindingType

# A label's number starts within this many characters after it, or ends this many before
# it: a sentence that names the number may go on before giving it ("my Turkish ID number
# … they asked for 94265923280")
_AFTER = 100
_BEFORE = 48
# An unnamed number that encodes a birth date written this near it is the holder's.
_BORN_NEAR = 150
LABELLED, BORN_ON, ALONE = 0.9, 0.85, 0.8


@dataclass(frozen=True, slots=True)
class _Kind:
    name: str  # the finding's detail: ISO 3166 country and the number's short name
    module: str  # python-stdnum's module for it
    shape: str  # the written form, separators as people write them
    acronyms: tuple[str, ...]  # its abbreviations, also written with dots (D.N.I.)
    words: str  # the words that name it (a regular expression, matched case-insensitively)
    alone: str | None = None  # a written form distinctive enough to report without a label
    born_on: bool = True  # unnamed beside the birth date it encodes (where it encodes one)
    lettered: bool = False  # fewer than seven digits: looked for around runs of four


# acronyms that are also words ("sin", "nas", "run", Polish "nie"): matched in capitals only
_WORDLIKE = frozenset({"SIN", "NAS", "RUN", "NIE", "CF", "PAN"})


def _spelled(letters: str) -> str:
    """``DNI`` as ``DNI``, ``D.N.I`` or ``D. N. I``."""
    return r"(?:\. ?)?".join(re.escape(letter) for letter in letters)


def _acronym(letters: str) -> str:
    """``DNI`` as ``DNI``, ``dni``, ``D.N.I`` or ``D. N. I``; one that is also a word, in
    capitals, or in any case as a field's name: right before a word for number
    (``pan_number``, ``sinNo``) or as a key (``"pan": …``, ``sin=…``)."""
    spelled = _spelled(letters)
    if letters in _WORDLIKE:
        field = r"(?=[\s_-]?(?:numbers?|nos?\b|nr\b|num\b|#)|[\"']?\s?[:=])"
        return f"(?-i:{spelled})|{re.escape(letters)}{field}"
    return spelled


# The names come from python-stdnum's description of each number (its module's docstring:
# "NN, NISS, RRN (Belgian national number)", "Identity Number (Mispar Zehut, מספר זהות,
# Israeli identity number)") and from the number's official names in its languages.
# Words that inflect (Finnish, Norwegian, Estonian, Turkish) take their endings; Hebrew's
# article (ה) may stand before a noun.
_KINDS = (
    _Kind(
        "es_dni",
        "es.dni",
        r"\d{8}[ -]?[A-Z]",
        ("DNI", "NIF"),
        r"documento nacional de identidad|n[uú]mero de identificaci[oó]n fiscal",
    ),
    _Kind(
        "es_nie",
        "es.nie",
        r"[XYZ][ -]?\d{7}[ -]?[A-Z]",
        ("NIE",),
        r"n[uú]mero de identi(?:dad|ficaci[oó]n) de extranjeros?|foreigner(?:'s)? number",
        alone=r"[XYZ]-?\d{7}-?[A-Z]",
    ),
    _Kind(
        "it_cf",
        "it.codicefiscale",
        r"[A-Z]{6}[0-9LMNP-V]{2}[A-Z][0-9LMNP-V]{2}[A-Z][0-9LMNP-V]{3}[A-Z]",
        ("CF",),
        r"codice fiscale|tax code",
        alone=r"[A-Z]{6}[0-9LMNP-V]{2}[A-Z][0-9LMNP-V]{2}[A-Z][0-9LMNP-V]{3}[A-Z]",
    ),
    _Kind(
        "fr_nir",
        "fr.nir",
        r"[12] ?\d\d ?\d\d ?(?:\d\d|2[AB]) ?\d{3} ?\d{3} ?\d\d",
        ("NIR", "INSEE"),
        r"num[ée]ro (?:d.inscription au r[ée]pertoire|de s[ée]curit[ée] sociale|de s[ée]cu)"
        r"|s[ée]cu(?:rit[ée] sociale)?|carte vitale",
    ),
    _Kind(
        "nl_bsn",
        "nl.bsn",
        r"\d{4}\.?\d\d\.?\d{3}|\d{9}",
        ("BSN",),
        r"burgerservicenummer|sofi-?nummer|citizen service number",
    ),
    _Kind("pl_pesel", "pl.pesel", r"\d{11}", ("PESEL",), ""),
    _Kind(
        "se_pnr",
        "se.personnummer",
        r"(?:\d\d)?\d{6}[-+ ]?\d{4}",
        (),
        r"personnummer\w*|personal identity number",
    ),
    _Kind(
        "br_cpf",
        "br.cpf",
        r"\d{3}\.?\d{3}\.?\d{3}-?\d\d",
        ("CPF",),
        r"cadastro de pessoas? f[ií]sicas?",
        alone=r"\d{3}\.\d{3}\.\d{3}-\d\d",
    ),
    _Kind(
        "fi_hetu",
        "fi.hetu",
        r"\d{6}[-+A-FU-Y]\d{3}[0-9A-Y]",
        ("HETU",),
        r"henkil[öo]tunnu(?:s|kse)\w*|personbeteckning\w*|personal identity code",
    ),
    _Kind(
        "no_fnr",
        "no.fodselsnummer",
        r"\d{6} ?\d{5}",
        (),
        r"f[øo]dselsnummer\w*|personnummer\w*|birth number",
    ),
    _Kind(
        "tr_tckn",
        "tr.tckimlik",
        r"\d{11}",
        ("TCKN",),
        r"(?:T\.? ?C\.? )?kimlik (?:no\b\.?|numara\w*)",
    ),
    _Kind(
        "ro_cnp",
        "ro.cnp",
        r"\d{13}",
        ("CNP",),
        r"cod(?:ul)? numeric personal|personal numeric(?:al)? code|numerical personal code",
    ),
    _Kind(
        "ca_sin",
        "ca.sin",
        r"\d{3}[ -]?\d{3}[ -]?\d{3}",
        ("SIN", "NAS"),
        r"social insurance number|num[ée]ro d.assurance sociale",
    ),
    _Kind(
        "il_id",
        "il.idnr",
        r"\d{8}-?\d",
        (),
        r"(?:mispar|teudat) zehut|מספר ה?זהות|תעודת ה?זהות|ת\.ז\.?",
    ),
    _Kind(
        "ee_ik",
        "ee.ik",
        r"\d{11}",
        (),
        r"isikukood\w*|personal identification code",
    ),
    _Kind("hr_oib", "hr.oib", r"\d{11}", ("OIB",), r"osobn\w+ identifikacijsk\w+ broj\w*"),
    _Kind(
        "be_nn",
        "be.nn",
        r"\d\d\.?\d\d\.?\d\d[-.]?\d{3}\.?\d\d",
        ("RRN", "NISS", "INSZ"),
        r"rijksregisternummer|num[ée]ro (?:national|de registre national)|national number"
        r"|registre national",
    ),
    _Kind(
        "ch_ahv",
        "ch.ssn",
        r"756\.?\d{4}\.?\d{4}\.?\d\d",
        ("AHV", "AVS", "OASI"),
        r"AHV-Nummer|num[ée]ro AVS|Sozialversicherungsnummer",
        alone=r"756\.\d{4}\.\d{4}\.\d\d",
    ),
    _Kind(
        "at_vnr",
        "at.vnr",
        r"\d{4} ?\d{6}",
        ("VNR", "SVNR", "VSNR"),
        r"(?:Sozial)?versicherungsnummer|SV-Nummer",
    ),
    _Kind(
        "ar_cuit",
        "ar.cuit",
        r"\d\d-?\d{8}-?\d",
        ("CUIT", "CUIL"),
        r"c[oó]digo [uú]nico de identificaci[oó]n (?:tributaria|laboral)",
    ),
    _Kind(
        "mx_curp",
        "mx.curp",
        r"[A-Z]{4}\d{6}[HM][A-Z]{5}[0-9A-Z]\d",
        ("CURP",),
        r"clave [uú]nica de registro de poblaci[oó]n",
        alone=r"[A-Z]{4}\d{6}[HM][A-Z]{5}[0-9A-Z]\d",
    ),
    _Kind(
        "gr_amka", "gr.amka", r"\d{11}", ("AMKA", "ΑΜΚΑ"), r"αριθμ\w* μητρώου κοινωνικής ασφάλισης"
    ),
    _Kind(
        "th_pin",
        "th.pin",
        r"\d-?\d{4}-?\d{5}-?\d\d-?\d",
        (),
        r"Thai ID|เลขประจำตัวประชาชน|บัตรประชาชน",
    ),
    _Kind(
        "cl_rut",
        "cl.rut",
        r"\d{1,2}\.?\d{3}\.?\d{3}-?[\dK]",
        ("RUT", "RUN"),
        r"rol [uú]nico (?:tributario|nacional)",
        alone=r"\d{1,2}\.\d{3}\.\d{3}-[\dK]",
    ),
    _Kind(
        "us_itin",
        "us.itin",
        r"9\d\d[- ]?\d\d[- ]?\d{4}",
        ("ITIN",),
        r"individual taxpayer identification number|n[uú]mero ITIN",
    ),
    _Kind(
        "ua_rntrc",
        "ua.rntrc",
        r"\d{10}",
        ("РНОКПП", "ІПН", "ИНН", "RNTRC"),
        r"ідентифікаційн\w+ (?:код|номер)\w*|податков\w+ номер\w*|реєстраційн\w+ номер\w*"
        r"|облікової картки платника податків",
    ),
    _Kind(
        "in_aadhaar",
        "in_.aadhaar",
        r"\d{4}[ -]?\d{4}[ -]?\d{4}",
        ("UIDAI",),
        r"aadhaa?r\w*|आधार|unique identification number",
    ),
    _Kind(
        "cn_ric",
        "cn.ric",
        r"\d{17}[\dX]",
        (),
        r"(?:居民|公民)?身份证(?:号码|号)?|公民身份号码|resident identity card|Chinese ID",
        alone=r"\d{17}[\dX]",
    ),
    _Kind(
        "de_idnr",
        "de.idnr",
        r"\d\d ?\d{3} ?\d{3} ?\d{3}",
        (),
        r"(?:steuerliche )?identifikationsnummer|steuer-?id(?:entifikationsnummer)?(?:-?nr\.?)?"
        r"|steuer-?idnr\.?|(?-i:IdNr)\.?|tax identification number",
    ),
    _Kind(
        "dk_cpr",
        "dk.cpr",
        r"\d{6}-?\d{4}",
        ("CPR",),
        r"CPR-?nummer\w*|personnummer\w*|det centrale personregister",
        born_on=False,  # no check digit: any date-stamped number would pass
    ),
    _Kind(
        "kr_rrn",
        "kr.rrn",
        r"\d{6}-?\d{7}",
        ("RRN",),
        r"주민(?:등록)? ?번호|주민등록증|resident registration number",
    ),
    _Kind(
        "jp_in",
        "jp.in_",
        r"\d{4}[ -]?\d{4}[ -]?\d{4}",
        (),
        r"個人番号|マイナンバー|(?-i:My ?Number)|individual number",
    ),
    _Kind(
        "cz_rc",
        "cz.rc",
        # (born before 1954: nine digits and no check, so only with its slash)
        r"\d{6} ?/ ?\d{3,4}|\d{10}",
        ("RČ",),
        r"rodn\w+ čísl\w*|rodne cislo|birth number",
    ),
    _Kind(
        "za_idnr",
        "za.idnr",
        r"\d{6} ?\d{4} ?\d\d ?\d",
        (),
        r"(?:SA|South African) ID|identiteitsnommer|ID-nommer|identity document number",
    ),
    _Kind(
        "bg_egn",
        "bg.egn",
        r"\d{10}",
        ("ЕГН", "EGN"),
        r"единен граждански номер",
    ),
    # a PAN has four digits, a NINO six: they are looked for around runs of four
    _Kind(
        "in_pan",
        "in_.pan",
        r"[A-Z]{3}[ABCFGHJLPT][A-Z]\d{4}[A-Z]",
        ("PAN",),
        r"permanent account number|पैन(?: कार्ड| नंबर| संख्या)?",
        lettered=True,
    ),
    _Kind(
        "gb_nino",
        "",  # python-stdnum has none: HMRC's rules (``_nino``)
        r"[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d\d ?\d\d ?\d\d ?[A-D]",
        ("NINO",),
        r"NI (?:number|no\b\.?)",
        lettered=True,
    ),
)

# Words that name a national identity number of any kind.
_GENERAL = (
    r"national (?:identity|identification|ID|insurance|registration)(?: card)?"
    r"(?: numbers?| no\.?| #| codes?)?"
    r"|(?:identity|ID) card(?: numbers?| no\.?)?"
    r"|(?:identity|identification) (?:numbers?|no\.?|codes?)"
    r"|personal (?:identification |identity |ID |numeric |numerical )?(?:numbers?|codes?|no\.?)"
    r"|citizen(?:ship)? (?:ID|(?:identification )?numbers?)|tax (?:ID|identification numbers?)"
    r"|taxpayer (?:ID|numbers?)|ID (?:numbers?|no\.?|nr\.?|#|codes?)"
    r"|social (?:security|insurance) (?:numbers?|no\.?|#|codes?)"
)
# The things other than a person that an identifier's number names
_IDENTIFIED = (
    r"order|invoice|tracking|customer|client|user|account|member|employee|staff|student"
    r"|ticket|case|transaction|session|request|device|product|vendor|supplier|booking"
    r"|patient|policy|parcel|package|shipment|payment|purchase|return"
)
# One of them right before a general label: the label names that identifier ("order ID
# number") ...
_OTHER_IDENTIFIER = re.compile(f"(?i)\\b(?:{_IDENTIFIED})\\s*\\Z")
# ... or right after it ("the ID number of your order")
_OF_OTHER_IDENTIFIER = re.compile(
    f"(?i)\\s+(?:of|for|on)\\s+(?:(?:your|the|this|that|my|our|an?)\\s+)?(?:{_IDENTIFIED})\\b"
)
_EDGE_BEFORE = r"(?<![0-9A-Za-z])(?<![0-9A-Za-z][.\-/])"
_EDGE_AFTER = r"(?![0-9A-Za-z])(?![.\-/][0-9A-Za-z])"
# a word or phrase that names a kind, or names identity numbers in general. It may not
# continue a word of the Latin script (Thai writes no spaces between words), but a field's
# name in code joins its words as it likes: ``national_id``, ``nationalId``, ``tcKimlikNo``,
# ``ahvNumber`` (a capital after a small letter ends or starts a word)
_LATIN_LETTER = "A-Za-z\u00c0-\u024f"
# Germanic languages shorten a word's "-nummer" to "-nr." ("Rijksregisternr.", "SV-Nr.")
_SHORTENED_NUMBER = re.compile(r"nummer(\\w\*)?", re.IGNORECASE)


def _with_short_forms(words: str) -> str:
    """``words`` where each "…nummer" may also be written "…nr" or "…nr."."""
    return _SHORTENED_NUMBER.sub(lambda m: f"(?:nummer{m.group(1) or ''}|nr\\.?)", words)


def _names(kind: _Kind, acronym: Callable[[str], str] = _acronym) -> str:
    words = [_with_short_forms(kind.words)] if kind.words else []
    return "|".join([*map(acronym, kind.acronyms), *words])


_NAMES = tuple(map(_names, _KINDS))
_CAMEL = "(?-i:(?<=[a-z])(?=[A-Z]))"


def _joined(names: str) -> str:
    """``names`` with each space between two words also written as ``_``, ``-`` or nothing."""
    return names.replace(" ", "[ _-]?")


_ANY_NAME = (
    # (the look-ahead for a letter first: it fails at once on digits, and a text the label
    # scan reads is one with many digits)
    f"(?i)(?=[^\\W\\d_])(?:(?<![{_LATIN_LETTER}])|{_CAMEL})(?:"
    + _joined("|".join(_NAMES))
    + f"|(?P<general>{_joined(_GENERAL)}))"
)
_LABELS = re.compile(f"{_ANY_NAME}(?:(?![{_LATIN_LETTER}])|{_CAMEL})")
# in text read from an image, a name may run into the next word: OCR drops the spaces
# between a card's capitals ("DNINUM", "RODNECISLOPERSONALNO.")
_READ_LABELS = re.compile(_ANY_NAME)
# which kinds a label found names (its context was read by ``_LABELS``)
_NAMED_BY = tuple(re.compile(f"(?i:{_joined(_names(kind, _spelled))})") for kind in _KINDS)


_SHAPES = tuple(re.compile(f"(?i){_EDGE_BEFORE}(?:{kind.shape}){_EDGE_AFTER}") for kind in _KINDS)
# the forms reported alone, one group each (``a<index>``)
_ALONE = re.compile(
    f"(?i){_EDGE_BEFORE}(?:"
    + "|".join(f"(?P<a{index}>{kind.alone})" for index, kind in enumerate(_KINDS) if kind.alone)
    + f"){_EDGE_AFTER}"
)
# every kind's number but the ``lettered`` holds seven digits or more, eight characters
# apart at most (a CURP's six, seven letters, its check digit); a lettered one, four in a
# row after a letter (a PAN's four, a NINO's six in pairs). Numbers are searched for
# around these only (one scan: group ``lettered``, where that kind's shape stands)
_DIGIT_RUNS = re.compile(
    r"\d(?:(?:\D{0,8}\d){6}|(?P<lettered>(?:(?<=[A-Za-z]\d)|(?<=[A-Za-z] \d))\d ?\d\d))"
)
_LETTERED = re.compile(
    f"(?i){_EDGE_BEFORE}(?:"
    + "|".join(kind.shape for kind in _KINDS if kind.lettered)
    + f"){_EDGE_AFTER}"
)
_AROUND = 24  # a number reaches this far beyond its run of digits, at most
_LABEL_REACH = _AFTER + 64  # how far before a number its label's start may be, at most


def _nino(number: str) -> bool:
    """A UK National Insurance number by HMRC's rules (python-stdnum has none): two
    prefix letters (not D, F, I, Q, U or V; the second not O; not BG, GB, KN, NK, NT, TN
    or ZZ), six digits, a suffix A-D. HMRC's own example, QQ 12 34 56 C, is no one's."""
    compact = "".join(number.split()).upper()
    return bool(_NINO.fullmatch(compact)) and compact[:2] not in _NO_NINO_PREFIX


_NINO = re.compile(r"[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]\d{6}[A-D]")
_NO_NINO_PREFIX = frozenset({"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"})


_MODULES = tuple(import_module(f"stdnum.{kind.module}") if kind.module else None for kind in _KINDS)
#: each kind's validator, by the kind's name
KINDS: dict[str, Callable[[str], bool]] = {
    kind.name: module.is_valid if module is not None else _nino
    for kind, module in zip(_KINDS, _MODULES, strict=True)
}
_VALIDATORS = tuple(KINDS.values())


@lru_cache(maxsize=8192)
def _valid(index: int, number: str) -> bool:
    """Whether ``number`` passes kind ``index``'s check (a check costs 4-22 µs; a log or a
    table repeats its numbers)."""
    return _VALIDATORS[index](number)


# the kinds whose numbers encode the holder's birth date (stdnum reads it) and that are
# found beside it, by index
_BIRTH_DATE: dict[int, Callable[[str], datetime.date]] = {
    index: module.get_birth_date
    for index, (kind, module) in enumerate(zip(_KINDS, _MODULES, strict=True))
    if kind.born_on and module is not None and hasattr(module, "get_birth_date")
}
#: the same, by the kind's name
BIRTH_DATES = {_KINDS[index].name: born for index, born in _BIRTH_DATE.items()}


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _around(
    runs: list[tuple[int, int]], size: int, before: int, after: int
) -> list[tuple[int, int]]:
    """The stretches of a text of ``size`` characters from ``before`` characters before each
    of the ``runs`` (of digits) to ``after`` characters after it, merged: the costly
    scans run there only."""
    return _merged([(max(0, start - before), min(size, end + after)) for start, end in runs])


def find_national_ids(text: str, *, read: bool = False) -> list[Finding]:
    """National identity numbers whose check digits hold, named by a word or alone
    (module docstring); ``detail`` is the kind (``es_dni``, ``pl_pesel`` …).

    ``read``: the text was read from an image, whose OCR may run a name into the next word
    and misread a character as its look-alike: a number is also looked for as each kind's
    layout would repair it (``_repairs``), where the text as read holds none."""
    found = _numbers_in(text, read)
    if read:
        for repaired in _repairs(text):
            for finding in _numbers_in(repaired, read):
                if not any(finding.start < f.end and f.start < finding.end for f in found):
                    found.append(finding)
        found.sort(key=lambda finding: finding.start)
    return found


# OCR's look-alikes: a letter where a digit belongs, a digit where a letter belongs
_AS_DIGIT = dict(zip("OoQDIl|SsBZzG", "0001111558226", strict=True))
_AS_LETTER = dict(zip("015826", "OISBZG", strict=True))
# the mixed kinds' layouts, letter (L) or digit (D) by position; "." either
_LAYOUTS = (
    "LLLLLLDDLDDLDDDL",  # a codice fiscale
    "LLLLDDDDDDLLLLLL.D",  # a CURP
    "LLLLLDDDDL",  # a PAN
    "LLDDDDDDL",  # a NINO
    "DDDDDDDDL",  # a DNI
    "LDDDDDDDL",  # an NIE
)
_TOKEN = re.compile(r"[0-9A-Za-z|]+")
_DIGIT = re.compile(r"\d")


def _repairs(text: str) -> Iterator[str]:
    """``text`` with its tokens that hold a digit read as a number would be: each mixed
    layout applied to the tokens of its length, and the look-alike letters of mostly-digit
    tokens made digits. One character for one, so that spans stay where they were."""
    tokens = [match.span() for match in _TOKEN.finditer(text) if _DIGIT.search(match.group())]

    def rewritten(fix: Callable[[str], str | None]) -> str | None:
        pieces, last, changed = [], 0, False
        for start, end in tokens:
            new = fix(text[start:end])
            if new is not None and new != text[start:end]:
                pieces += [text[last:start], new]
                last, changed = end, True
        return "".join([*pieces, text[last:]]) if changed else None

    def digits(token: str) -> str | None:
        if 2 * sum(char.isdigit() for char in token) < len(token):
            return None
        return "".join(_AS_DIGIT.get(char, char) for char in token)

    for layout in _LAYOUTS:

        def laid_out(token: str, layout: str = layout) -> str | None:
            if len(token) != len(layout):
                return None
            return "".join(
                _AS_DIGIT.get(char, char) if place == "D" else
                _AS_LETTER.get(char, char) if place == "L" else char
                for char, place in zip(token.upper(), layout, strict=True)
            )  # fmt: skip

        if (repaired := rewritten(laid_out)) is not None:
            yield repaired
    if (repaired := rewritten(digits)) is not None:
        yield repaired


def _numbers_in(text: str, read: bool) -> list[Finding]:
    """``find_national_ids`` on ``text`` as it stands."""
    runs = [
        run.span()
        for run in _DIGIT_RUNS.finditer(text)
        if run.lastgroup is None or _LETTERED.search(text, max(0, run.start() - 8), run.end() + 8)
    ]
    if not runs:
        return []
    found: dict[tuple[int, int], Finding] = {}

    def keep(start: int, end: int, index: int, confidence: float) -> None:
        known = found.get((start, end))
        if known is None or known.confidence < confidence:
            found[start, end] = Finding(
                FindingType.NATIONAL_ID, start, end, confidence, _KINDS[index].name
            )

    for lo, hi in _around(runs, len(text), _AROUND, _AROUND):
        for match in _ALONE.finditer(text, lo, hi):
            index = int(str(match.lastgroup)[1:])
            if _valid(index, match.group()):
                keep(match.start(), match.end(), index, ALONE)
    # a word that names a number starts at most ``_AFTER`` characters (and the word's
    # length) before its run of digits, or ends at most ``_BEFORE`` after them
    for lo, hi in _around(runs, len(text), _LABEL_REACH, _BEFORE + _AROUND):
        for label in (_READ_LABELS if read else _LABELS).finditer(text, lo, hi):
            if label.lastgroup == "general":
                if _OTHER_IDENTIFIER.search(
                    text, max(0, label.start() - 24), label.start()
                ) or _OF_OTHER_IDENTIFIER.match(text, label.end()):
                    continue
                kinds: range | list[int] = range(len(_KINDS))
            else:  # a kind's own word, or a word several kinds share ("personnummer")
                word = label.group()
                kinds = [i for i, named in enumerate(_NAMED_BY) if named.fullmatch(word)]
            for chosen in _named_number(text, label, kinds):
                keep(*chosen, LABELLED)
    for start, end, index in _born_on(text, runs):
        if not any(start < known_end and known_start < end for known_start, known_end in found):
            keep(start, end, index, BORN_ON)
    return sorted(found.values(), key=lambda finding: finding.start)


def _born_on(text: str, runs: list[tuple[int, int]]) -> Iterator[tuple[int, int, int]]:
    """(start, end, kind) of each valid number that encodes a birth date written within
    ``_BORN_NEAR`` characters of it: a form's or a spreadsheet's row ("Anna Nowak,
    14.02.1990, 90021412345"), where nothing names the number. A number of ten or eleven
    digits passes one kind's check one time in 50 to 800 and its date is one of some 45,000
    days: a coincidence is one in millions. The text's dates are read once, and only when
    it holds a valid number of such a kind."""
    dates: list[tuple[int, int, frozenset[datetime.date]]] | None = None
    for lo, hi in _around(runs, len(text), _AROUND, _AROUND):
        for index, born in _BIRTH_DATE.items():
            if _KINDS[index].alone is not None:
                continue  # (found alone already)
            for match in _SHAPES[index].finditer(text, lo, hi):
                number = match.group()
                if not _valid(index, number):
                    continue
                if dates is None:
                    dates = list(written_dates(text))
                if not dates:
                    return
                birth = born(number)
                if any(
                    birth in days
                    and match.start() - _BORN_NEAR <= date_end
                    and date_start <= match.end() + _BORN_NEAR
                    for date_start, date_end, days in dates
                ):
                    yield match.start(), match.end(), index


def _named_number(
    text: str, label: re.Match[str], kinds: Sequence[int]
) -> Iterator[tuple[int, int, int]]:
    """(start, end, kind) of the valid number ``label`` names: after it, the nearest one
    that starts within ``_AFTER`` characters (searched on past them: a number the window
    would cut is not the number); before it, the one that ends nearest, within
    ``_BEFORE``."""
    after = (label.end(), min(len(text), label.end() + 2 * _AFTER), label.end() + _AFTER)
    before = (max(0, label.start() - _BEFORE), label.start(), label.start())
    for lo, hi, last_start in (after, before):
        hits = [
            (match.start(), match.end(), index)
            for index in kinds
            for match in _SHAPES[index].finditer(text, lo, hi)
            if match.start() < last_start and _valid(index, match.group())
        ]
        if hits:
            yield min(hits) if lo == label.end() else max(hits, key=_end)


def _end(hit: tuple[int, int, int]) -> int:
    return hit[1]


__all__ = ["KINDS", "find_national_ids"]
