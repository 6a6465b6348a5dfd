"""Replace sensitive values in the texts of one request by typed, numbered placeholders.

    "mail a@x.io or b@y.io, again a@x.io"  →  "mail <EMAIL_1> or <EMAIL_2>, again <EMAIL_1>"

A ``Redactor`` lives for one request: the same value gets the same placeholder in every
message of that request, so the model can still tell that two mentions are one person,
and numbering never leaks across requests. Values are compared in a normalised form (case
for emails, separators for numbers) and kept only as salted digests, so a Redactor holds
no PII.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Collection, Sequence

from vsr_extproc.detectors.findings import (
    ENTITY_TYPES,
    Detector,
    Finding,
    FindingType,
    resolve_overlaps,
)
from vsr_extproc.detectors.pii import find_pii

PLACEHOLDER_LABELS: dict[FindingType, str] = {
    FindingType.EMAIL: "EMAIL",
    FindingType.PHONE: "PHONE",
    FindingType.CARD: "CARD",
    FindingType.IBAN: "IBAN",
    FindingType.SSN: "SSN",
    FindingType.NATIONAL_ID: "NATIONAL_ID",
    FindingType.PASSPORT: "PASSPORT",
    FindingType.MRZ: "MRZ",
    FindingType.IP_ADDRESS: "IP",
    FindingType.DATE_OF_BIRTH: "DOB",
    FindingType.SECRET: "SECRET",
    FindingType.ADDRESS: "ADDRESS",
    FindingType.PERSON: "PERSON",
    FindingType.ORGANIZATION: "ORG",
}

_NOT_ALPHANUMERIC = re.compile(r"[^0-9A-Za-z]")
_WHITESPACE = re.compile(r"\s+")
# Types whose values people write with varying separators: "4111 1111 1111 1111" and
# "4111111111111111" are one card.
_SEPARATOR_FREE = frozenset(
    {
        FindingType.PHONE,
        FindingType.CARD,
        FindingType.IBAN,
        FindingType.SSN,
        FindingType.NATIONAL_ID,
        FindingType.PASSPORT,
    }
)


def _normalised(kind: FindingType, value: str) -> str:
    if kind in _SEPARATOR_FREE:
        return _NOT_ALPHANUMERIC.sub("", value).upper()
    if kind in (FindingType.EMAIL, FindingType.IP_ADDRESS):
        return value.lower()
    return _WHITESPACE.sub(" ", value.strip())


class Redactor:
    """Redacts findings of ``types`` from the texts of one request, consistently.

    ``min_confidence`` drops weaker findings (a phone number that is well formed but not
    assigned has 0.5) before anything is replaced.
    """

    def __init__(
        self,
        types: Collection[FindingType],
        *,
        min_confidence: float = 0.0,
        entities: Detector | None = None,
    ) -> None:
        self.types = frozenset(types)
        self.min_confidence = min_confidence
        #: finds person and organization names (a named-entity model); None: never found
        self.entities = entities if self.types & ENTITY_TYPES else None
        self._salt = os.urandom(16)
        self._placeholders: dict[bytes, str] = {}
        self._distinct: dict[FindingType, int] = dict.fromkeys(self.types, 0)
        self._counts: dict[FindingType, int] = dict.fromkeys(self.types, 0)

    @property
    def counts(self) -> dict[FindingType, int]:
        """Values replaced so far, per type, every occurrence counted."""
        return dict(self._counts)

    def redact(
        self, text: str, findings: Sequence[Finding] | None = None
    ) -> tuple[str, list[Finding]]:
        """``text`` with the findings of this Redactor's types replaced by placeholders.

        Detects with ``find_pii`` when ``findings`` is None. Returns the new text and the
        findings that were replaced, with their spans in the original ``text``.
        """
        if findings is None:
            findings = find_pii(text, self.types) if self.types else []
            if self.entities is not None:
                findings = [*findings, *self.entities(text)]
        chosen = resolve_overlaps(
            finding
            for finding in findings
            if finding.type in self.types
            and finding.confidence >= self.min_confidence
            and finding.end <= len(text)
        )
        pieces: list[str] = []
        position = 0
        for finding in chosen:
            pieces.append(text[position : finding.start])
            pieces.append(self._placeholder(finding.type, text[finding.start : finding.end]))
            position = finding.end
        pieces.append(text[position:])
        return "".join(pieces), chosen

    def placeholder(self, kind: FindingType, value: str) -> str:
        """The placeholder of one value (counted as one more replacement)."""
        return self._placeholder(kind, value)

    def _placeholder(self, kind: FindingType, value: str) -> str:
        key = hashlib.blake2b(
            f"{kind}\0{_normalised(kind, value)}".encode("utf-8", "surrogatepass"),
            key=self._salt,
            digest_size=16,
        ).digest()
        self._counts[kind] += 1
        placeholder = self._placeholders.get(key)
        if placeholder is None:
            self._distinct[kind] += 1
            placeholder = f"<{PLACEHOLDER_LABELS[kind]}_{self._distinct[kind]}>"
            self._placeholders[key] = placeholder
        return placeholder
