"""``output``: personal data and secrets in the text the model answers.

    signals:
      output:
        - name: leaked_secret
          finds: [secret]
        - name: leaked_identity
          finds: [passport, ssn, card, iban]
          min_confidence: 0.7

Only response decisions (``responses.decisions``) can use these signals: in the request
phase there is no answer yet. The same validating detectors as the ``pii`` family read
each choice's text; in a stream they read the text still held back plus the guard window
before it, and remember what they found, so each character is scanned about twice however
long the answer grows.
"""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

from pydantic import Field, field_validator

from vsr_extproc.core.answer import Answer
from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.core.signals import InlineSignal, Outcome
from vsr_extproc.detectors import ENTITY_TYPES, Finding, FindingType, find_pii
from vsr_extproc.signals.base import (
    Resources,
    SignalEntry,
    SignalFamily,
    answer_finding_types,
)


class OutputEntry(SignalEntry):
    finds: tuple[FindingType, ...] = Field(
        default=(), description="finding types that count; empty = every pattern-detected type"
    )
    min_confidence: float = Field(default=0.5, ge=0, le=1, description="weaker findings ignored")
    min_findings: int = Field(default=1, ge=1, description="how many findings make a match")

    @field_validator("finds")
    @classmethod
    def _detectable(cls, value: tuple[FindingType, ...]) -> tuple[FindingType, ...]:
        return answer_finding_types(value, "the answer")


class OutputSignal(InlineSignal):
    family: ClassVar[str] = "output"

    def __init__(self, entry: OutputEntry) -> None:
        self.name = entry.name
        self.entry = entry
        self.types = frozenset(entry.finds) or frozenset(FindingType) - ENTITY_TYPES
        self.sought = frozenset(kind.value for kind in self.types)

    def evaluate_now(self, request: NormalizedRequest) -> Outcome:
        raise TypeError("output signals read the model's answer; use them in responses")

    def findings(self, answer: Answer) -> dict[int, list[Finding]]:
        """Findings per choice, spans in that choice's text; remembered across the chunks
        of a stream, each new stretch of text scanned with the window before it."""
        memo: dict[int, dict[tuple[int, int, str], Finding]] = answer.memo.setdefault(
            f"output.{self.name}", {}
        )
        for choice, text in answer.texts.items():
            start = max(answer.scan_from.get(choice, 0), answer.dropped.get(choice, 0))
            local = start - answer.dropped.get(choice, 0)
            seen = memo.setdefault(choice, {})
            for finding in find_pii(text[local:], self.types):
                if finding.confidence < self.entry.min_confidence:
                    continue
                moved = Finding(
                    finding.type,
                    finding.start + start,
                    finding.end + start,
                    finding.confidence,
                    finding.detail,
                )
                seen[(moved.start, moved.end, moved.type.value)] = moved
        return {choice: sorted(found.values(), key=_position) for choice, found in memo.items()}

    def on_answer(self, answer: Answer, request: NormalizedRequest | None) -> Outcome:
        counts: Counter[str] = Counter(
            finding.type.value for found in self.findings(answer).values() for finding in found
        )
        total = sum(counts.values())
        return Outcome.of(total >= self.entry.min_findings, dict(counts) or None)


def _position(finding: Finding) -> tuple[int, int]:
    return finding.start, finding.end


def build(entry: OutputEntry, resources: Resources) -> OutputSignal:
    return OutputSignal(entry)


FAMILY = SignalFamily(
    "output",
    OutputEntry,
    build,
    "personal data and secrets in the model's answer (response decisions only)",
)
