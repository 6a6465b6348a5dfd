"""Personal data in free text: emails, phones, payment cards, IBANs, US SSNs, national
identity and taxpayer numbers of 36 countries (``national_ids``), IP addresses, dates of
birth and passport numbers, plus the MRZ and secret detectors of this package.

Every detector is a pure function from text to ``Finding``s. Numbers that carry a checksum
(cards: Luhn, IBANs: mod 97, MRZ: ICAO 9303, national identity numbers: their own kind's)
are only reported when it holds; values without one (dates of birth, passport numbers, bare 9-digit
SSNs) are only reported next to words that say what they are. ``find_pii`` runs the requested
detectors and settles overlaps with ``resolve_overlaps``, so a card number is never also
reported as a phone number.

All patterns are compiled at import, have no ambiguous nested repetition (so no
catastrophic backtracking), and start with a literal or a digit or are gated by a substring
test, so a long prompt costs a few C-speed scans. The phone matcher, the one slow part,
only sees short windows around free-standing digit runs.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Collection, Iterator, Sequence

import phonenumbers

from vsr_extproc.detectors.credential_context import find_told_credentials
from vsr_extproc.detectors.dates import date_spans
from vsr_extproc.detectors.findings import Detector, Finding, FindingType, resolve_overlaps
from vsr_extproc.detectors.mrz import mrz_findings
from vsr_extproc.detectors.national_ids import find_national_ids
from vsr_extproc.detectors.prose import find_prose_secrets
from vsr_extproc.detectors.secrets import find_secrets

DEFAULT_PHONE_REGIONS: tuple[str, ...] = ("US", "GB", "DE", "FR", "IN")


def _context_before(pattern: re.Pattern[str], text: str, start: int, window: int) -> bool:
    return pattern.search(text, max(0, start - window), start) is not None


# Words that name a number as something else: "EAN 4006381333931", "order #2256269017".
_IDENTIFIER_WORDS = r"ean|isbn(?:-1[03])?|gtin|upc|imei|tracking|order|invoice|sku|serial"
_LABEL_TAIL = r"(?:\s*(?:no\.?|nr\.?|num(?:ber)?\.?|code|id))?\s*[#:]?\s*\Z"
_IDENTIFIER_BEFORE = re.compile(rf"(?i)\b(?:{_IDENTIFIER_WORDS}){_LABEL_TAIL}|#\Z")
_REFERENCE_BEFORE = re.compile(
    rf"(?i)\b(?:{_IDENTIFIER_WORDS}|part|model|ticket|case|ref|reference|transaction|account"
    rf"|customer|member|policy|patient|booking|confirmation){_LABEL_TAIL}|#\Z"
)
_LABEL_WINDOW = 32


def _labelled(pattern: re.Pattern[str], text: str, start: int) -> bool:
    """Whether the words right before ``start`` say the number is an identifier."""
    return pattern.search(text, max(0, start - _LABEL_WINDOW), start) is not None


# --- email ------------------------------------------------------------------------------

# Dot-separated atoms on both sides, so "a..b@x.com" and "x@y.com." (trailing dot) never
# match, and no two quantifiers compete for the same characters.
_EMAIL = re.compile(
    r"(?<![\w.%+\-])"
    r"[A-Za-z0-9_%+\-]+(?:\.[A-Za-z0-9_%+\-]+)*"
    r"@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+"
    r"(?:[A-Za-z]{2,24}|xn--[A-Za-z0-9\-]{2,59})"
    r"(?![\w\-]|\.[A-Za-z0-9])"
)


# RFC 5321 limits: 64 characters before the "@", 255 after. Scanning only around each
# "@" is what keeps email detection cheap on long prompts.
_EMAIL_BEFORE_AT = 64
_EMAIL_AFTER_AT = 260


def find_emails(text: str) -> list[Finding]:
    """Email addresses with a plausible domain and top-level domain."""
    found: list[Finding] = []
    at = text.find("@")
    while at != -1:
        next_from = at + 1
        window = (max(0, at - _EMAIL_BEFORE_AT), at + _EMAIL_AFTER_AT)
        for match in _EMAIL.finditer(text, *window):
            if match.start() < at < match.end():
                found.append(Finding(FindingType.EMAIL, match.start(), match.end(), 0.95))
                next_from = match.end()
                break
        at = text.find("@", next_from)
    return found


# --- phone ------------------------------------------------------------------------------

# Digit runs that could hold a phone number; only these windows go to phonenumbers, whose
# matcher costs tens of microseconds per call and region.
_PHONE_RUN = re.compile(r"\d[\d \t().\-/x]*\d")
_PHONE_MARGIN = 2  # room for a leading "+" or "(" and the letter test at each end
# "+44 (0)20 ..." writes the national trunk prefix inside an international number, which
# phonenumbers reads as a second number; the matcher sees the window without it.
_TRUNK_IN_INTERNATIONAL = re.compile(r"(?<=\+\d)\d{0,2}(\s?\(0\))")
_DIGIT = re.compile(r"\d")
_PHONE_CONTEXT = re.compile(
    r"(?i)\b(?:phone|tel|telephone|mobile|cell|call|fax|whatsapp|sms|text me|reach me|"
    r"contact|dial|ring|hotline|telefon|handy|mobil|rufnummer|tél|téléphone|portable|"
    r"appel(?:ez|er)?)\b"
)
# Strings that phonenumbers may accept in some region but that read as something else.
# Used with ``match``: a date may be followed by a time ("2021-02-19 18:30").
_DAY = r"(?:0?[1-9]|[12]\d|3[01])"
_NOT_A_PHONE = re.compile(
    rf"(?:\d{{4}}-(?:0?[1-9]|1[0-2])-{_DAY}|{_DAY}([./\-]){_DAY}\1(?:\d{{4}}|\d\d))"
    r"(?!\d|[./\-]\d)"  # a date
    r"|\d{3}([- ])\d{2}\2\d{4}\Z"  # an SSN
    r"|\d{1,3}(?:\.\d{1,3}){2,}\Z"  # an IP address or a version
    r"|\d+[.,]\d+\Z"  # a decimal number
)
_NUMBER_PUNCTUATION = frozenset(".,:/-")
# Formats that read as a phone number even when the number is not assigned (what people
# and test generators write): international, NANP with separators, national trunk prefix.
_PHONE_SHAPE = re.compile(
    r"\+\s?\d"
    r"|00\d"
    r"|\(?\d{3}\)?[ .\-]?\d{3}[ .\-]\d{4}"
    r"|\(?0\d{1,5}\)?[ /.\-]?\d{3}"
)


def _digit_count(text: str) -> int:
    return len(_DIGIT.findall(text))


def _stands_alone(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is not part of a longer token: a tracking code
    "1Z999AA10123456784", a UUID, a decimal "53.398037", a time "18:30:05.487492"."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    if before.isalnum() or before == "_" or after.isalnum() or after == "_":
        return False
    if before in _NUMBER_PUNCTUATION and start > 1 and text[start - 2].isdigit():
        return False
    return not (after in _NUMBER_PUNCTUATION and text[end + 1 : end + 2].isdigit())


def _reads_as_another_number(raw: str) -> bool:
    return _NOT_A_PHONE.match(raw) is not None


def _phone_runs(text: str) -> Iterator[tuple[int, int]]:
    """Spans of free-standing digit runs (with phone punctuation) of 7 to 20 digits."""
    for match in _PHONE_RUN.finditer(text):
        if 7 <= _digit_count(match.group()) <= 20 and _stands_alone(text, *match.span()):
            yield match.span()


def _without_trunk_prefix(window: str, offset: int) -> tuple[str, Callable[[int], int]]:
    """``window`` without "(0)" trunk prefixes after a country code, and a function from
    offsets in the result to offsets in the whole text."""
    removed: list[tuple[int, int]] = []  # (offset in the result, characters removed there)
    pieces: list[str] = []
    position = 0
    for match in _TRUNK_IN_INTERNATIONAL.finditer(window):
        pieces.append(window[position : match.start(1)])
        removed.append((sum(map(len, pieces)), len(match.group(1))))
        position = match.end(1)
    pieces.append(window[position:])

    def to_text(index: int) -> int:
        return offset + index + sum(size for at, size in removed if at < index)

    return "".join(pieces), to_text


def _covers(findings: Sequence[Finding], start: int, end: int) -> bool:
    return any(finding.start <= start and end <= finding.end for finding in findings)


def _phones_around(text: str, run: tuple[int, int], regions: Sequence[str]) -> list[Finding]:
    """Phone numbers in a window around one digit run: numbers valid in the first region
    that explains the whole run, else well-formed numbers with a phone's layout."""
    run_start, run_end = run
    window, to_text = _without_trunk_prefix(
        text[max(0, run_start - _PHONE_MARGIN) : run_end + _PHONE_MARGIN],
        max(0, run_start - _PHONE_MARGIN),
    )
    # an international number reads the same in every region
    if "+" in text[max(0, run_start - 2) : run_start]:
        regions = regions[:1]
    valid: list[Finding] = []
    for region in regions:
        for match in phonenumbers.PhoneNumberMatcher(window, region, phonenumbers.Leniency.VALID):
            bounds = (to_text(match.start), to_text(match.end))
            if _reads_as_another_number(match.raw_string) or not _stands_alone(text, *bounds):
                continue
            confidence = 0.95 if match.raw_string.startswith("+") else 0.85
            valid.append(Finding(FindingType.PHONE, *bounds, confidence))
        if _covers(valid, run_start, run_end):
            return valid
    possible: list[Finding] = []
    for region in regions:
        matcher = phonenumbers.PhoneNumberMatcher(window, region, phonenumbers.Leniency.POSSIBLE)
        for match in matcher:
            span = Finding(FindingType.PHONE, to_text(match.start), to_text(match.end), 0.5)
            raw = match.raw_string
            if any(span.overlaps(other) for other in valid) or _reads_as_another_number(raw):
                continue
            if not _stands_alone(text, span.start, span.end):
                continue
            in_context = _context_before(_PHONE_CONTEXT, text, span.start, 40)
            if _PHONE_SHAPE.match(raw):
                possible.append(_with_confidence(span, 0.6) if in_context else span)
            elif in_context:
                possible.append(span)
        if _covers(valid + possible, run_start, run_end):
            break
    return valid + possible


def find_phones(
    text: str,
    regions: Sequence[str] = DEFAULT_PHONE_REGIONS,
    *,
    explained: Sequence[tuple[int, int]] = (),
) -> list[Finding]:
    """Phone numbers that phonenumbers validates in one of ``regions``, or in international
    format anywhere.

    Numbers that are well formed but not assigned (``+1-692-581-4466``, ``+44 7700 900123``)
    are still reported, with confidence 0.5 (0.6 next to a word like "phone"), when their
    layout is unmistakably a phone number's; callers that only want assigned numbers
    filter on confidence >= 0.8. Digit runs inside an ``explained`` span (a card number
    found already) are skipped.
    """
    return resolve_overlaps(phones_at(text, phone_candidates(text, explained), regions))


def phone_candidates(text: str, explained: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """The digit runs of ``text`` that the phone matcher must look at (cheap to find)."""
    return [
        run
        for run in _phone_runs(text)
        if not _reads_as_another_number(text[run[0] : run[1]])
        and not _labelled(_REFERENCE_BEFORE, text, run[0])
        and not any(start <= run[0] and run[1] <= end for start, end in explained)
    ]


def phones_at(
    text: str,
    runs: Sequence[tuple[int, int]],
    regions: Sequence[str] = DEFAULT_PHONE_REGIONS,
) -> list[Finding]:
    """The phone numbers around each of ``runs`` (a few milliseconds a run: the costly
    part, which a caller may split into small jobs)."""
    return [finding for run in runs for finding in _phones_around(text, run, regions)]


def _with_confidence(finding: Finding, confidence: float) -> Finding:
    return Finding(finding.type, finding.start, finding.end, confidence, finding.detail)


# --- payment card -----------------------------------------------------------------------

# 12 to 19 digits, optionally in groups separated by single spaces or dashes.
_CARD = re.compile(r"\d(?<![\w.,+\-]\d)(?:[ \-]?\d){11,18}(?!\w|[.,\-]\d)")
_CARD_SEPARATOR = re.compile(r"[ \-]")
# a card's security code beside its label ("CVV 123", "CVC: 4821", "my card's security
# code is 307"): three or four digits that card-data rules forbid storing or passing on.
# Not CID, CSC or a bare "security code", which name other things too
_SECURITY_CODE = re.compile(
    r"(?i:\b(?:cvv2?|cvc2?|card(?:'s)? (?:security|verification) (?:code|value))\b"
    r"(?:\s+(?:code|number|no\.?))?(?:\s*[:=#]\s*|\s+(?:is|was)\s+|\s+))"
    r"(\d{3,4})(?![\w.,/\-]?\d)"
)


def luhn_valid(digits: str) -> bool:
    """The Luhn (mod 10) checksum used by payment card numbers."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card_issuer(digits: str) -> tuple[str, range] | None:
    """The card network by issuer identification number, and the lengths it issues."""
    two, three, four, six = (int(digits[:n]) for n in (2, 3, 4, 6))
    if digits[0] == "4":
        return "visa", range(13, 20, 3)
    if two in (34, 37):
        return "amex", range(15, 16)
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return "mastercard", range(16, 17)
    if 622126 <= six <= 622925:
        return "unionpay", range(16, 20)
    if four == 6011 or two == 65 or 644 <= three <= 649:
        return "discover", range(16, 20)
    if 3528 <= four <= 3589:
        return "jcb", range(16, 20)
    if four in (1800, 2131):
        return "jcb", range(15, 16)
    if 300 <= three <= 305 or four == 3095 or two in (36, 38, 39):
        return "diners", range(14, 20)
    if two == 62:
        return "unionpay", range(16, 20)
    if two == 50 or 56 <= two <= 58 or two == 67 or three == 639 or four == 6304:
        return "maestro", range(12, 20)
    return None


def _card_grouping_plausible(candidate: str) -> bool:
    """Separators, if any, are all the same and split the number like a printed card."""
    separators = set(_CARD_SEPARATOR.findall(candidate))
    if not separators:
        return True
    if len(separators) > 1:
        return False
    groups = [len(group) for group in _CARD_SEPARATOR.split(candidate)]
    if groups[0] != 4:
        return False
    return all(size in (4, 6) for size in groups[1:-1]) and 1 <= groups[-1] <= 6


def find_cards(text: str) -> list[Finding]:
    """Payment card numbers that pass Luhn (``detail``: the network or "unknown"), and a
    card's security code written beside its label (``detail``: "security_code")."""
    found: list[Finding] = []
    for match in _CARD.finditer(text):
        candidate = match.group()
        digits = _CARD_SEPARATOR.sub("", candidate)
        if len(set(digits)) == 1 or not _card_grouping_plausible(candidate):
            continue
        if not luhn_valid(digits) or _labelled(_IDENTIFIER_BEFORE, text, match.start()):
            continue
        issuer = _card_issuer(digits)
        if issuer is not None and len(digits) in issuer[1]:
            # 12-digit Maestro and 13-digit Visa numbers are rare now; EAN-13 codes are not
            confidence = 0.7 if len(digits) <= 13 else 0.95
            found.append(Finding(FindingType.CARD, *match.span(), confidence, issuer[0]))
        elif len(digits) >= 13:
            found.append(Finding(FindingType.CARD, *match.span(), 0.5, "unknown"))
    for match in _SECURITY_CODE.finditer(text):
        found.append(Finding(FindingType.CARD, *match.span(1), 0.9, "security_code"))
    return found


# --- IBAN -------------------------------------------------------------------------------

# Total IBAN length by country (SWIFT IBAN registry).
IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
    "BH": 22, "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24,
    "DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
    "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27,
    "GT": 28, "HN": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20,
    "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20,
    "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
    "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24,
    "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25,
    "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
    "YE": 30,
}  # fmt: skip

_IBAN = re.compile(r"[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}")
_ALPHANUMERIC = re.compile(r"[A-Za-z0-9]")


def iban_valid(iban: str) -> bool:
    """ISO 13616: the rearranged number, letters as 10..35, is 1 modulo 97."""
    rearranged = iban[4:] + iban[:4]
    remainder = 0
    for char in rearranged:
        value = int(char, 36)
        remainder = (remainder * (100 if value > 9 else 10) + value) % 97
    return remainder == 1


def _iban_end(text: str, start: int, stop: int, length: int) -> int | None:
    """Where the IBAN that starts at ``start`` ends after ``length`` characters, if the text
    holds that many before ``stop`` and the next character does not continue it."""
    seen = 0
    for index in range(start, stop):
        if text[index] != " ":
            seen += 1
            if seen == length:
                end = index + 1
                if end < len(text) and _ALPHANUMERIC.match(text[end]):
                    return None
                return end
    return None


def find_ibans(text: str) -> list[Finding]:
    """IBANs of a known country with its exact length and a valid mod-97 checksum."""
    found: list[Finding] = []
    position = 0
    while (match := _IBAN.search(text, position)) is not None:
        # a failed candidate may hide a real IBAN inside it: retry one character later
        position = match.start() + 1
        start = match.start()
        country = match.group()[:2]
        length = IBAN_LENGTHS.get(country)
        if length is None or (start and _ALPHANUMERIC.match(text[start - 1])):
            continue
        end = _iban_end(text, start, match.end(), length)
        if end is not None and iban_valid(text[start:end].replace(" ", "")):
            found.append(Finding(FindingType.IBAN, start, end, 0.97, country))
            position = end
    return found


# --- US social security number ------------------------------------------------------------

_SSN = re.compile(r"(\d(?<![\w\-]\d)\d\d)([\- ])(\d\d)\2(\d{4})(?![\w\-]|\.\d)")
_SSN_BARE = re.compile(r"(\d(?<![\w\-]\d)\d\d)(\d\d)(\d{4})(?![\w\-]|\.\d)")
_SSN_HINTS = ("ssn", "ss#", "ss no", "social security", "soc", "sozialversicherung")
_SSN_CONTEXT = re.compile(
    r"(?i)\b(?:ssn|ss#|ss no|social security(?: number| no\.?| #)?|soc\.? ?sec\.?|"
    r"sozialversicherungsnummer)(?![A-Za-z])"
)
# Numbers the SSA invalidated after they were printed in advertising.
_SSN_PUBLISHED = frozenset({"078051120", "219099999"})


def ssn_valid(area: str, group: str, serial: str) -> bool:
    """The SSA's structural rules: no area 000, 666 or 900-999, no group 00, no serial 0000."""
    if area in ("000", "666") or area[0] == "9" or group == "00" or serial == "0000":
        return False
    return area + group + serial not in _SSN_PUBLISHED


def find_ssns(text: str) -> list[Finding]:
    """US SSNs as ddd-dd-dddd or ddd dd dddd; as nine bare digits only next to "SSN"."""
    found: list[Finding] = []
    for match in _SSN.finditer(text):
        if not ssn_valid(match.group(1), match.group(3), match.group(4)):
            continue
        # "030 12 3456" may as well be a phone number; dashes are the SSN's own format
        confidence = 0.9 if match.group(2) == "-" else 0.6
        if _context_before(_SSN_CONTEXT, text, match.start(), 40):
            confidence = 0.98
        found.append(Finding(FindingType.SSN, *match.span(), confidence))
    lowered = text.lower()
    if not any(hint in lowered for hint in _SSN_HINTS):
        return found
    for match in _SSN_BARE.finditer(text):
        if not ssn_valid(*match.groups()):
            continue
        if _context_before(_SSN_CONTEXT, text, match.start(), 40):
            found.append(Finding(FindingType.SSN, *match.span(), 0.8, "bare"))
    return found


# --- IP address ---------------------------------------------------------------------------

_IPV4 = re.compile(r"\d(?<![\w.]\d)\d{0,2}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?!\w|\.\d)")
_VERSION_BEFORE = re.compile(r"(?i)(?:\bversion|\bver\.?|\brelease|\bv)\s*$")
# Colon-separated hex groups, optionally ending in a dotted IPv4; validated by ipaddress.
_IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?"
    r"(?![\w:]|\.\d)"
)


def _valid_ipv4(token: str) -> bool:
    # no leading zeros: "010" is octal to some parsers and a version part to most readers
    return all(
        int(octet) <= 255 and (octet == "0" or not octet.startswith("0"))
        for octet in token.split(".")
    )


def _plausible_ipv6(token: str) -> bool:
    try:
        ipaddress.IPv6Address(token)
    except ValueError:
        return False
    groups = [group for group in token.split(":") if group]
    # "::" alone and C++ scopes like "ab::cd" parse, but an address worth reporting has
    # digits and either several groups or a leading "::" (loopback, mapped IPv4)
    return _DIGIT.search(token) is not None and (len(groups) >= 2 or token.startswith("::"))


def find_ip_addresses(text: str) -> list[Finding]:
    """IPv4 addresses with valid octets (not version strings) and valid IPv6 addresses."""
    found: list[Finding] = []
    for match in _IPV4.finditer(text):
        if not _valid_ipv4(match.group()):
            continue
        if _VERSION_BEFORE.search(text, max(0, match.start() - 10), match.start()):
            continue
        found.append(Finding(FindingType.IP_ADDRESS, *match.span(), 0.9, "ipv4"))
    if "::" not in text and text.count(":") < 7:
        return found  # every IPv6 address has "::" or seven colons
    for match in _IPV6.finditer(text):
        if _plausible_ipv6(match.group()):
            found.append(Finding(FindingType.IP_ADDRESS, *match.span(), 0.9, "ipv6"))
    return found


# --- date of birth ------------------------------------------------------------------------

# OCR of a card or form often drops the spaces between words ("Date ofbirth"), so the
# labels match with or without them; and the space and dot after a card's field number
# ("3Dateofbirth" for "3. Date of birth"), so a digit may stand right before one
_DOB_CONTEXT = re.compile(
    r"(?i)(?<![A-Za-z_])(?:born|date\s*of\s*birth|birth\s*date|d\.?o\.?b|birthday|geboren|geburtsdatum|"
    r"geburtstag|geb|née?|date\s*de\s*naissance|fecha\s*de\s*nacimiento|data\s*di\s*nascita|"
    r"data\s*de\s*nascimento|geboortedatum|data\s*urodzenia|f[öo]delsedatum|syntym[äa]aika|"
    r"do[ğg]um\s*tarihi)(?![A-Za-z])"
)
_DOB_HINTS = (
    "born", "birth", "dob", "d.o.b", "geb", "née", "né ", "naissance", "nacimiento", "nascita",
    "nascimento", "urodzenia", "delsedatum", "syntym", "tarihi",
)  # fmt: skip
_DOB_AFTER_CONTEXT = 40
_DOB_BEFORE_CONTEXT = 25
_LONGEST_DATE = 32  # "22nd of September, 1985" and the like, with room to spare


def find_dates_of_birth(text: str) -> list[Finding]:
    """Plausible dates (1900..today) shortly after or before "born", "DOB", "geboren"..."""
    lowered = text.lower()
    if not any(hint in lowered for hint in _DOB_HINTS):
        return []
    spans: set[tuple[int, int]] = set()
    for keyword in _DOB_CONTEXT.finditer(text):
        window_start = max(0, keyword.start() - _DOB_BEFORE_CONTEXT - _LONGEST_DATE)
        window_end = min(len(text), keyword.end() + _DOB_AFTER_CONTEXT + _LONGEST_DATE)
        for start, end in date_spans(text, window_start, window_end):
            after = keyword.end() <= start <= keyword.end() + _DOB_AFTER_CONTEXT
            before = keyword.start() - _DOB_BEFORE_CONTEXT <= end <= keyword.start()
            if after or before:
                spans.add((start, end))
    return [Finding(FindingType.DATE_OF_BIRTH, start, end, 0.9) for start, end in sorted(spans)]


# --- passport number ----------------------------------------------------------------------

_PASSPORT_CONTEXT = re.compile(
    r"(?i)\b(?:passport|reisepass|passnummer|passeport|pasaporte|passaporto|paspoort)"
    r"(?:\s*(?:no\.?|number|num\.?|nr\.?|#|nummer|numéro|n°))?"
)
_PASSPORT_HINTS = (
    "passport",
    "reisepass",
    "passnummer",
    "passeport",
    "pasaporte",
    "passaporto",
    "paspoort",
)
_PASSPORT_TOKEN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{6,9}(?![A-Za-z0-9])")
# Passport number formats of common issuers, and how a text names the issuer.
_PASSPORT_FORMATS: dict[str, re.Pattern[str]] = {
    country: re.compile(pattern)
    for country, pattern in {
        "US": r"[A-Z]\d{8}|\d{9}",
        "GB": r"\d{9}",
        "DE": r"[CFGHJK][CFGHJKLMNPRTVWXYZ0-9]{8}",
        "FR": r"\d{2}[A-Z]{2}\d{5}",
        "IN": r"[A-Z]\d{7}",
        "CA": r"[A-Z]{2}\d{6}",
        "IT": r"[A-Z]{2}\d{7}",
        "ES": r"[A-Z]{3}\d{6}",
        "NL": r"[A-Z]{2}[A-Z0-9]{6}\d",
        "AU": r"[A-Z]{1,2}\d{7}",
        "CN": r"[EG]\d{8}",
    }.items()
}
_PASSPORT_COUNTRY: dict[str, re.Pattern[str]] = {
    country: re.compile(pattern)
    for country, pattern in {
        "US": r"\b(?:US|USA|U\.S\.A?\.?|United States|American)\b",
        "GB": r"\b(?:UK|U\.K\.|GB|British|United Kingdom)\b",
        "DE": r"(?i)\b(?:german|germany|deutsch(?:e[rnm]?)?|deutschland)\b",
        "FR": r"(?i)\b(?:french|france|français(?:e)?|francais(?:e)?)\b",
        "IN": r"(?i)\b(?:india|indian)\b",
        "CA": r"(?i)\b(?:canada|canadian)\b",
        "IT": r"(?i)\b(?:italy|italian|italiano|italia)\b",
        "ES": r"(?i)\b(?:spain|spanish|español|espanol|españa)\b",
        "NL": r"(?i)\b(?:dutch|netherlands|nederland(?:s|se)?)\b",
        "AU": r"(?i)\b(?:australia|australian)\b",
        "CN": r"(?i)\b(?:china|chinese)\b",
    }.items()
}
# Other issuers: up to three letters, then digits, perhaps one letter; not "600X600".
_GENERIC_PASSPORT = re.compile(r"[A-Z]{0,3}\d{5,9}[A-Z]?")
_PASSPORT_AFTER_CONTEXT = 40
_PASSPORT_BEFORE_CONTEXT = 25
_PASSPORT_COUNTRY_WINDOW = 60


def _passport_confidence(token: str, named: Collection[str]) -> float | None:
    token = token.upper()
    formats = {c for c, pattern in _PASSPORT_FORMATS.items() if pattern.fullmatch(token)}
    if formats & set(named):
        return 0.9
    if formats:
        return 0.75
    if _GENERIC_PASSPORT.fullmatch(token):
        return 0.5
    return None


def _named_countries(text: str, start: int, end: int) -> set[str]:
    window = text[
        max(0, start - _PASSPORT_COUNTRY_WINDOW) : min(len(text), end + _PASSPORT_COUNTRY_WINDOW)
    ]
    return {c for c, pattern in _PASSPORT_COUNTRY.items() if pattern.search(window)}


def find_passport_numbers(text: str) -> list[Finding]:
    """Passport-number-shaped tokens near "passport", "Reisepass", "passeport"...

    Confidence is 0.9 when the token has the format of a country named nearby, 0.75 when it
    has some common issuer's format, 0.5 for other letters-then-digits tokens of 6-9.
    """
    lowered = text.lower()
    if not any(hint in lowered for hint in _PASSPORT_HINTS):
        return []
    found: dict[tuple[int, int], Finding] = {}
    for keyword in _PASSPORT_CONTEXT.finditer(text):
        named = _named_countries(text, keyword.start(), keyword.end())
        after = _PASSPORT_TOKEN.finditer(
            text, keyword.end(), min(len(text), keyword.end() + _PASSPORT_AFTER_CONTEXT)
        )
        before = _PASSPORT_TOKEN.finditer(
            text, max(0, keyword.start() - _PASSPORT_BEFORE_CONTEXT), keyword.start()
        )
        for token in (*after, *before):
            if _DIGIT.search(token.group()) is None:
                continue
            confidence = _passport_confidence(token.group(), named)
            if confidence is None:
                continue
            previous = found.get(token.span())
            if previous is None or previous.confidence < confidence:
                found[token.span()] = Finding(FindingType.PASSPORT, *token.span(), confidence)
            if token.start() >= keyword.end():
                break  # the first number after the keyword is the one it names
    return list(found.values())


# --- postal addresses ---------------------------------------------------------------------

_NAME_WORD = r"[A-Z0-9][\w'’.-]*"
_STREET_SUFFIX = (
    r"(?i:street|st|road|rd|avenue|ave|boulevard|blvd|lane|ln|drive|dr|court|ct|place|pl|"
    r"way|terrace|parkway|pkwy|highway|hwy|square|sq|circle|cir|close|crescent|grove|"
    r"gardens|mews|trail|alley|plaza)"
)
_UNIT = (
    r"(?:,?\s+(?i:apt|apartment|suite|ste|unit|flat|floor|fl)\.?\s*#?\s*\w{1,5}"
    r"|\s+#\s?\w{1,5})?"
)
_CITY = rf"(?:,\s*{_NAME_WORD}(?:[ \t]+{_NAME_WORD}){{0,2}})?"
_POSTAL = (
    r"(?:,?\s+[A-Z]{2}[ \t]+\d{5}(?:-\d{4})?"  # US state and ZIP
    r"|,?\s+[A-Z]{1,2}\d[A-Z\d]?\s*\d[A-Z]{2}"  # UK postcode
    r"|,?\s+[A-Z]\d[A-Z]\s?\d[A-Z]\d)?"  # Canadian postcode
)
_ADDRESSES = (
    # 221B Baker Street, London NW1 6XE · 4592 Elm Drive, Apt 3, Springfield, IL 62704
    re.compile(
        rf"\b\d{{1,5}}[A-Za-z]?(?:-\d{{1,4}})?\s+(?:(?:{_NAME_WORD}\s+){{1,4}}?{_STREET_SUFFIX}"
        r"|(?i:broadway))\b\.?"
        rf"{_UNIT}{_CITY}{_POSTAL}"
    ),
    # Hauptstraße 12, 10115 Berlin · Am Bahnhofsweg 3a
    re.compile(
        r"\b[A-ZÄÖÜ][\wäöüß-]*(?i:straße|strasse|str\.|weg|gasse|platz|allee|ring|damm|ufer)"
        r"\s+\d{1,4}\s?[a-z]?\b(?:,\s*\d{4,5}\s+[A-ZÄÖÜ][\wäöüß-]+)?"
    ),
    # 12 rue de Rivoli, 75001 Paris · 5 bis avenue Foch
    re.compile(
        r"\b\d{1,4}(?:\s?(?:bis|ter))?,?\s+(?i:rue|avenue|boulevard|bd|place|chemin|allée|"
        r"impasse|quai|route)[ \t]+(?:(?:de la|de|du|des|la|le|l'|d')\s*)?[A-Z][\w'’-]*"
        r"(?:[ \t]+[A-Z][\w'’-]*){0,3}(?:,\s*\d{5}\s+[A-Z][\w'’-]+)?"
    ),
    # Calle Mayor 5 · Via Roma 10, 00184 Roma · Rua Augusta 274
    re.compile(
        r"\b(?i:calle|avenida|plaza|paseo|via|viale|piazza|corso|rua|largo)\s+"
        r"(?:(?:de la|del|de|la|dos|das|da|di)\s+)?[A-Z][\w'’-]*(?:[ \t]+[A-Z][\w'’-]*){0,3},?"
        r"\s+(?:n\.?\s?º?\s?)?\d{1,4}\b(?:,\s*\d{5}\s+[A-Z][\w'’-]+)?"
    ),
    re.compile(r"\b(?i:p\.?\s?o\.?\s?box)\s+\d{1,6}\b"),
)
# Any language's street, written as most of the world writes it: a street and its house
# number, a place, a postal code, separated by commas ("Sveltekrogen 55, København V, 1562",
# "65 rue Pierre, SAINT-DIÉ, 88100"). Without the known street words, only the whole shape
# counts.
_CAPITAL = "A-ZÀ-ÖØ-ÞĀ-ŽА-Я"
_PLACE = r"[^\W\d_][\w'’.()-]*(?:[ \t]+[^\W\d_][\w'’.()-]*){0,4}"
_STREET_NAME = rf"[{_CAPITAL}][\w'’.-]*(?:[ \t]+[^\W\d_][\w'’.-]*){{0,3}}"
_POSTCODE = r"(?:[A-Z]{1,2}-?)?\d{3,5}(?:[\s-]\d{2,4})?\b"
_ADDRESS_SHAPES = (
    re.compile(rf"\b{_STREET_NAME}[ \t]+\d{{1,5}}[a-z]?,\s*{_PLACE},\s*{_POSTCODE}"),
    re.compile(rf"\b\d{{1,5}}[a-z]?,?\s+{_PLACE},\s*{_PLACE},\s*{_POSTCODE}"),
)


def find_addresses(text: str) -> list[Finding]:
    """Postal addresses: a house number and a street name with its type (Street, Rd,
    -straße, rue, Via …), then a unit, a city and a postal code when they follow; a PO Box.

    Shape, not a gazetteer: "221B Baker Street, London NW1 6XE" and "Hauptstraße 12, 10115
    Berlin" are found, "the 3 Ways to win" is not (a street needs a capitalised name).
    """
    found = [
        Finding(FindingType.ADDRESS, match.start(), match.end(), 0.8, "street")
        for pattern in _ADDRESSES
        for match in pattern.finditer(text)
    ]
    found += [
        Finding(FindingType.ADDRESS, match.start(), match.end(), 0.7, "shape")
        for pattern in _ADDRESS_SHAPES
        for match in pattern.finditer(text)
    ]
    return resolve_overlaps(found)


# --- all of them --------------------------------------------------------------------------

_DETECTORS: dict[FindingType, Detector] = {
    FindingType.EMAIL: find_emails,
    FindingType.CARD: find_cards,
    FindingType.IBAN: find_ibans,
    FindingType.SSN: find_ssns,
    FindingType.NATIONAL_ID: find_national_ids,
    FindingType.PASSPORT: find_passport_numbers,
    FindingType.MRZ: mrz_findings,
    FindingType.IP_ADDRESS: find_ip_addresses,
    FindingType.DATE_OF_BIRTH: find_dates_of_birth,
    FindingType.SECRET: lambda text: resolve_overlaps(
        [*find_secrets(text), *find_prose_secrets(text), *find_told_credentials(text)]
    ),
    FindingType.ADDRESS: find_addresses,
}
# the same for text read from an image
_READ_DETECTORS = {
    **_DETECTORS,
    FindingType.NATIONAL_ID: lambda text: find_national_ids(text, read=True),
}


def _detectors(read: bool) -> dict[FindingType, Detector]:
    return _READ_DETECTORS if read else _DETECTORS


def find_pii(
    text: str,
    types: Collection[FindingType] | None = None,
    *,
    phone_regions: Sequence[str] = DEFAULT_PHONE_REGIONS,
    read: bool = False,
) -> list[Finding]:
    """Findings of the requested ``types`` (all when None), without overlaps, by start.

    Names of people and organisations need a named-entity model (``runtime.entities``);
    this never returns them. ``read``: the text was read from an image; OCR runs a
    card's words together and reads a character as its look-alike, which the national
    identity numbers then allow for (``find_national_ids``).

    When PHONE is requested the other detectors run too, so that a number better explained
    by another type (a card, an IBAN, a date of birth) is not reported as a phone; the
    phone matcher, the costly one, runs only then. Otherwise only the requested types'
    detectors run, and their findings may overlap.
    """
    wanted = frozenset(FindingType) if types is None else frozenset(types)
    if not wanted:
        return []
    if FindingType.PHONE not in wanted:
        # without phones nothing is weighed against another type: the wanted detectors
        # alone give the same findings (an address scan costs ~0.5 µs a character)
        return [
            finding
            for kind, detect in _detectors(read).items()
            if kind in wanted
            for finding in detect(text)
            if finding.type in wanted
        ]
    findings, candidates = pii_without_phones(text, read=read)
    if FindingType.PHONE in wanted:
        phones = phones_at(text, candidates, tuple(phone_regions))
        findings = merge_phones(findings, phones)
    return [finding for finding in findings if finding.type in wanted]


def pii_without_phones(
    text: str, *, read: bool = False
) -> tuple[list[Finding], list[tuple[int, int]]]:
    """Every cheap detector's findings (overlaps not yet resolved), and the digit runs left
    for the phone matcher.

    ``find_pii`` is this, then ``phones_at`` over the runs, then ``merge_phones``; a
    caller that must keep each piece of CPU work short runs ``phones_at`` in batches.
    """
    findings: list[Finding] = []
    for detect in _detectors(read).values():
        findings.extend(detect(text))
    explained = [(finding.start, finding.end) for finding in findings]
    return findings, phone_candidates(text, explained)


def merge_phones(findings: list[Finding], phones: list[Finding]) -> list[Finding]:
    return resolve_overlaps([*findings, *resolve_overlaps(phones)])


__all__ = [
    "DEFAULT_PHONE_REGIONS",
    "IBAN_LENGTHS",
    "find_addresses",
    "find_cards",
    "find_dates_of_birth",
    "find_emails",
    "find_ibans",
    "find_ip_addresses",
    "find_passport_numbers",
    "find_phones",
    "find_pii",
    "find_ssns",
    "iban_valid",
    "luhn_valid",
    "merge_phones",
    "phones_at",
    "pii_without_phones",
    "ssn_valid",
]
