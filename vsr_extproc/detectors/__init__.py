"""Pure-Python detectors of personal data, secrets and source code in text.

They read prompt text and OCR text of images; they import nothing heavier than the
``phonenumbers`` and ``python-stdnum`` libraries (no torch, no gRPC, nothing else of the
router), so the signals that use them stay testable in ``tests/unit``.

Types:

    FindingType   what was found: email, phone, card, iban, ssn, national_id, passport, mrz,
                  ip_address, date_of_birth, secret, address; person and organization
                  (found only by a named-entity model, ``runtime.entities``)
    Finding       one span of the scanned text: type, start, end, confidence, detail (a
                  non-sensitive sub-kind such as "visa" or "DE" — never the value)
    Detector      the protocol of a detector: text → list[Finding]
    MrzMatch      an ICAO 9303 machine-readable zone: layout, document type, issuing
                  country, check results; the holder's data only through ``fields()``
    CodeScore     how much a text looks like source code, and the language when clear
    Redactor      replaces findings by <EMAIL_1>-style placeholders, consistently within
                  one request

Entry points: ``find_pii`` (every type, overlaps resolved), ``find_secrets``, ``find_mrz``,
``code_score``, ``resolve_overlaps``.
"""

from vsr_extproc.detectors.code import CodeScore, code_score
from vsr_extproc.detectors.findings import (
    ENTITY_TYPES,
    Detector,
    Finding,
    FindingType,
    resolve_overlaps,
)
from vsr_extproc.detectors.mrz import MrzMatch, check_digit, find_mrz
from vsr_extproc.detectors.pii import DEFAULT_PHONE_REGIONS, find_pii
from vsr_extproc.detectors.redact import PLACEHOLDER_LABELS, Redactor
from vsr_extproc.detectors.secrets import find_secrets, find_secrets_in_read_text

__all__ = [
    "DEFAULT_PHONE_REGIONS",
    "ENTITY_TYPES",
    "PLACEHOLDER_LABELS",
    "CodeScore",
    "Detector",
    "Finding",
    "FindingType",
    "MrzMatch",
    "Redactor",
    "check_digit",
    "code_score",
    "find_mrz",
    "find_pii",
    "find_secrets",
    "find_secrets_in_read_text",
    "resolve_overlaps",
]
