"""The one result shape every text detector returns, and how overlapping results are settled.

A ``Finding`` names a span of the scanned text and what it is; it never holds the matched
value, so findings can be logged, traced and counted freely. ``detail`` carries only a
non-sensitive sub-kind ("visa", "DE", "td3", "aws_access_key").

Several detectors can claim the same characters: a card number also parses as a phone
number in some region, an MRZ contains a passport number and dates, a URL's password looks
like an email's local part. ``resolve_overlaps`` keeps one finding per region of text,
preferring MRZs and secrets, then checksum- or format-validated types, then contextual
ones; within a tier the longer span, then the more confident one.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class FindingType(StrEnum):
    """The kinds of sensitive text the detectors find."""

    EMAIL = "email"
    PHONE = "phone"
    CARD = "card"
    IBAN = "iban"
    SSN = "ssn"
    NATIONAL_ID = "national_id"  # a national identity number of another country
    PASSPORT = "passport"
    MRZ = "mrz"
    IP_ADDRESS = "ip_address"
    DATE_OF_BIRTH = "date_of_birth"
    SECRET = "secret"
    ADDRESS = "address"
    PERSON = "person"  # found by a named-entity model (``runtime.entities``)
    ORGANIZATION = "organization"  # likewise


#: the types only a named-entity model finds; the regular detectors never return them
ENTITY_TYPES = frozenset({FindingType.PERSON, FindingType.ORGANIZATION})


@dataclass(frozen=True, slots=True)
class Finding:
    """A span ``[start, end)`` of the scanned text that holds a value of ``type``.

    ``confidence`` is in [0, 1]. ``detail`` is a non-sensitive sub-kind, never the value.
    """

    type: FindingType
    start: int
    end: int
    confidence: float
    detail: str = ""

    def __post_init__(self) -> None:
        if not 0 <= self.start < self.end:
            raise ValueError(f"a finding needs 0 <= start < end, got [{self.start}, {self.end})")
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence must be in [0, 1], got {self.confidence}")

    @property
    def length(self) -> int:
        return self.end - self.start

    def overlaps(self, other: Finding) -> bool:
        return self.start < other.end and other.start < self.end


class Detector(Protocol):
    """A pure function from text to findings; it may return overlapping findings."""

    def __call__(self, text: str) -> list[Finding]: ...


# Tiers of evidence. A finding that overlaps one of a higher tier is a misreading of it:
# 4111 1111 1111 1111 is a card, not a phone (checksum over phone metadata); the
# "ghp_...@github.com" in "https://user:ghp_...@github.com" is a token in a URL, not an
# email (a secret's format or context over an email's shape). MRZs hold dates and
# document numbers, so they rank with secrets.
_TIERS = {
    FindingType.MRZ: 2,
    FindingType.SECRET: 2,
    FindingType.CARD: 1,
    FindingType.IBAN: 1,
    FindingType.SSN: 1,
    FindingType.NATIONAL_ID: 1,
    FindingType.EMAIL: 1,
    FindingType.PASSPORT: 0,
    FindingType.DATE_OF_BIRTH: 0,
    FindingType.IP_ADDRESS: 0,
    FindingType.PHONE: 0,
    FindingType.ADDRESS: 0,
    FindingType.PERSON: -1,
    FindingType.ORGANIZATION: -1,
}

# Tie-break between types for spans of equal length and confidence: the more specific
# reading wins, so the outcome never depends on the order detectors ran in.
_PRECEDENCE = {
    kind: rank
    for rank, kind in enumerate(
        reversed(
            (
                FindingType.MRZ,
                FindingType.SECRET,
                FindingType.CARD,
                FindingType.IBAN,
                FindingType.SSN,
                FindingType.NATIONAL_ID,
                FindingType.EMAIL,
                FindingType.PASSPORT,
                FindingType.DATE_OF_BIRTH,
                FindingType.IP_ADDRESS,
                FindingType.PHONE,
                FindingType.ADDRESS,
                FindingType.PERSON,
                FindingType.ORGANIZATION,
            )
        )
    )
}


def _strength(finding: Finding) -> tuple[int, int, float, int, int]:
    return (
        _TIERS[finding.type],
        finding.length,
        finding.confidence,
        _PRECEDENCE[finding.type],
        -finding.start,
    )


def resolve_overlaps(findings: Iterable[Finding]) -> list[Finding]:
    """Keep the strongest finding of every group of overlapping ones, sorted by start.

    Strength is, in order: the tier of the type (MRZ and secrets; cards, IBANs, SSNs and
    emails; the contextual rest), the longer span, the higher confidence, the more specific
    type, the earlier start. The result is the same whatever order ``findings`` came in.
    """
    # kept spans never overlap, so ordered by start they are also ordered by end
    starts: list[int] = []
    kept: list[Finding] = []
    for candidate in sorted(set(findings), key=_strength, reverse=True):
        index = bisect.bisect_left(starts, candidate.start)
        if index > 0 and kept[index - 1].end > candidate.start:
            continue
        if index < len(kept) and kept[index].start < candidate.end:
            continue
        starts.insert(index, candidate.start)
        kept.insert(index, candidate)
    return kept
