"""``pii``: personal data and secrets in the request's text, found by validating detectors.

    signals:
      pii:
        - name: identity
          types: [passport, mrz, ssn, date_of_birth]
          min_confidence: 0.5
        - name: any_pii                 # every type
        - name: leaked_secret
          types: [secret]

Each finding carries its type, character span and confidence (cards pass Luhn and issuer
ranges, IBANs mod-97, MRZ lines their ICAO check digits, …). The signal's value counts
findings by type; it never carries a value. A route action can ``redact`` the types it
lists before the body is forwarded.
"""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

from pydantic import Field

from vsr_extproc.core.signals import AsyncSignal, Evaluation, Outcome
from vsr_extproc.detectors import Finding, FindingType, find_pii
from vsr_extproc.signals.base import AsyncSignalEntry, Resources, SignalFamily, run_cpu
from vsr_extproc.signals.texts import TextScope, scoped_texts


class PiiEntry(AsyncSignalEntry):
    types: tuple[FindingType, ...] = Field(
        default=(), description="finding types that count; empty = every type"
    )
    min_confidence: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="weaker findings are ignored (0.5: every type measured at precision and "
        "recall >= 0.95)",
    )
    min_findings: int = Field(default=1, ge=1, description="how many findings make a match")
    scope: TextScope = Field(default="all", description="which messages are read")


def _scan(texts: list[str]) -> list[Finding]:
    return [finding for text in texts for finding in find_pii(text)]


class PiiSignal(AsyncSignal):
    family: ClassVar[str] = "pii"

    def __init__(self, entry: PiiEntry) -> None:
        self.name = entry.name
        self.timeout_s = entry.timeout_ms / 1000
        self.types = frozenset(entry.types or FindingType)
        self.min_confidence = entry.min_confidence
        self.min_findings = entry.min_findings
        self.scope: TextScope = entry.scope

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        texts = scoped_texts(evaluation.request, self.scope)

        async def compute() -> list[Finding]:
            # detection is CPU work: off the event loop, once per request and scope
            return await run_cpu(_scan, texts)

        findings = await evaluation.once(("pii", self.scope), compute)
        counted = [
            f for f in findings if f.type in self.types and f.confidence >= self.min_confidence
        ]
        counts = Counter(finding.type.value for finding in counted)
        matched = len(counted) >= self.min_findings
        confidence = max((f.confidence for f in counted), default=0.0)
        return Outcome(matched, confidence if matched else 0.0, dict(sorted(counts.items())))


def build(entry: PiiEntry, resources: Resources) -> PiiSignal:
    return PiiSignal(entry)


FAMILY = SignalFamily(
    "pii", PiiEntry, build, "personal data and secrets, found by validating detectors"
)
