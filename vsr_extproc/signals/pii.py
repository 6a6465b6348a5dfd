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
from collections.abc import Hashable
from typing import ClassVar

from pydantic import Field

from vsr_extproc.core.reading import ReadingBudget
from vsr_extproc.core.signals import AsyncSignal, Evaluation, Outcome
from vsr_extproc.detectors import Finding, FindingType
from vsr_extproc.detectors.pii import merge_phones, phones_at, pii_without_phones
from vsr_extproc.signals.base import AsyncSignalEntry, Resources, SignalFamily, run_cpu
from vsr_extproc.signals.texts import TextScope, reading_budget, scoped_reading


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


PHONE_RUNS_PER_JOB = 16  # the phone matcher costs 1-3 ms a digit run: jobs of ~20-40 ms

Run = tuple[int, tuple[int, int]]  # (which text, digit run)
Phone = tuple[int, Finding]  # (which text, phone number)


def _start(texts: tuple[str, ...]) -> tuple[list[list[Finding]], list[Run], list[Phone]]:
    """The cheap detectors over every text, the digit runs left for the phone matcher,
    and the phones of the first ``PHONE_RUNS_PER_JOB`` runs (all of them, usually)."""
    findings: list[list[Finding]] = []
    runs: list[Run] = []
    for index, text in enumerate(texts):
        found, candidates = pii_without_phones(text)
        findings.append(found)
        runs += [(index, run) for run in candidates]
    return findings, runs[PHONE_RUNS_PER_JOB:], _phones(texts, runs[:PHONE_RUNS_PER_JOB])


def _phones(texts: tuple[str, ...], runs: list[Run]) -> list[Phone]:
    return [(index, phone) for index, run in runs for phone in phones_at(texts[index], (run,))]


async def scan(texts: tuple[str, ...], owner: Hashable) -> list[Finding]:
    """``find_pii`` over each text, in CPU jobs short enough to interleave fairly.

    The cheap detectors and the first digit runs take one job; the phone matcher, whose
    cost grows with the number of digit runs (a log or a spreadsheet has hundreds), takes
    a further job per ``PHONE_RUNS_PER_JOB`` runs.
    """
    findings, runs, phones = await run_cpu(_start, texts, owner=owner)
    for start in range(0, len(runs), PHONE_RUNS_PER_JOB):
        batch = runs[start : start + PHONE_RUNS_PER_JOB]
        phones += await run_cpu(_phones, texts, batch, owner=owner)
    by_text: list[list[Finding]] = [[] for _ in texts]
    for index, phone in phones:
        by_text[index].append(phone)
    return [
        finding
        for found, own in zip(findings, by_text, strict=True)
        for finding in merge_phones(found, own)
    ]


class PiiSignal(AsyncSignal):
    family: ClassVar[str] = "pii"

    def __init__(self, entry: PiiEntry, budget: ReadingBudget) -> None:
        self.name = entry.name
        self.budget = budget
        self.timeout_s = entry.timeout_ms / 1000
        self.types = frozenset(entry.types or FindingType)
        self.min_confidence = entry.min_confidence
        self.min_findings = entry.min_findings
        self.scope: TextScope = entry.scope

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        reading = scoped_reading(evaluation, self.scope, self.budget)

        async def compute() -> list[Finding]:
            # detection is CPU work: off the event loop, once per request and scope
            return await scan(reading.texts, evaluation)

        findings = await evaluation.once(("pii", self.scope), compute)
        counted = [
            f for f in findings if f.type in self.types and f.confidence >= self.min_confidence
        ]
        counts = Counter(finding.type.value for finding in counted)
        matched = len(counted) >= self.min_findings
        confidence = max((f.confidence for f in counted), default=0.0)
        value: dict[str, int] = {**dict(sorted(counts.items())), **reading.report}
        return Outcome(matched, confidence if matched else 0.0, value)


def build(entry: PiiEntry, resources: Resources) -> PiiSignal:
    return PiiSignal(entry, reading_budget(resources))


FAMILY = SignalFamily(
    "pii", PiiEntry, build, "personal data and secrets, found by validating detectors"
)
