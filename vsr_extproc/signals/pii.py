"""``pii``: personal data and secrets in the request's text, found by validating detectors.

    signals:
      pii:
        - name: identity
          types: [passport, mrz, ssn, date_of_birth]
          min_confidence: 0.5
        - name: any_pii                 # every type
        - name: leaked_secret
          types: [secret]
        - name: names                   # person and organization: a named-entity model
          types: [person, organization, address]

Each finding carries its type, character span and confidence (cards pass Luhn and issuer
ranges, IBANs mod-97, MRZ lines their ICAO check digits, …). The signal's value counts
findings by type; it never carries a value. A route action can ``redact`` the types it
lists before the body is forwarded.

``person`` and ``organization`` come from a named-entity model (``text.entities``,
``runtime.entities``); they count only when an entry lists them, so the model runs only
for the requests of a policy that asks. Without the model they are never found and the
trace says ``names: unavailable``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from vsr_extproc.core.reading import ReadingBudget
from vsr_extproc.core.signals import AsyncSignal, Evaluation, Outcome
from vsr_extproc.detectors import ENTITY_TYPES, Finding, FindingType, resolve_overlaps
from vsr_extproc.detectors.pii import merge_phones, phones_at, pii_without_phones
from vsr_extproc.signals.base import AsyncSignalEntry, Resources, SignalFamily, run_cpu
from vsr_extproc.signals.texts import TextScope, reading_budget, scoped_reading, word_units

if TYPE_CHECKING:
    from vsr_extproc.runtime.entities import EntityModel


class PiiEntry(AsyncSignalEntry):
    types: tuple[FindingType, ...] = Field(
        default=(),
        description="finding types that count; empty = every type but person and "
        "organization, which need the named-entity model and count only when listed",
    )
    min_confidence: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="weaker findings are ignored (0.5: every type of `eval pii`'s labelled set "
        "measured at precision and recall >= 0.95 there)",
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


async def scan_names(
    texts: tuple[str, ...], entities: EntityModel, owner: Hashable
) -> tuple[list[Finding], int]:
    """The named-entity model over each text, a CPU job per piece (``entities.pieces``:
    at most ``PIECE_CHARS`` characters, about 10-40 ms): the names, and how many public
    figures' names were set aside (``runtime.figures``)."""
    from vsr_extproc.runtime.entities import pieces

    found: list[Finding] = []
    figures = 0
    for text in texts:
        for start, end in pieces(text):
            read = await run_cpu(entities.read, text[start:end], owner=owner)
            found += [
                Finding(f.type, f.start + start, f.end + start, f.confidence, f.detail)
                for f in read.found
            ]
            figures += len(read.figures)
    return found, figures


class PiiSignal(AsyncSignal):
    family: ClassVar[str] = "pii"

    def __init__(
        self, entry: PiiEntry, budget: ReadingBudget, entities: EntityModel | None = None
    ) -> None:
        self.name = entry.name
        self.budget = budget
        self.timeout_s = entry.timeout_ms / 1000
        self.types = frozenset(entry.types or set(FindingType) - ENTITY_TYPES)
        self.wants_names = bool(self.types & ENTITY_TYPES)
        self.entities = entities if self.wants_names else None
        self.min_confidence = entry.min_confidence
        self.min_findings = entry.min_findings
        self.scope: TextScope = entry.scope

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        # the named-entity model's cost grows with words and symbols, not characters
        measure = word_units if self.entities is not None else None
        reading = scoped_reading(evaluation, self.scope, self.budget, measure)

        async def compute() -> list[Finding]:
            # detection is CPU work: off the event loop, once per request and scope
            return await scan(reading.texts, evaluation)

        figures = 0
        if self.entities is None:
            findings = await evaluation.once(("pii", self.scope), compute)
        else:
            entities = self.entities

            async def names() -> tuple[list[Finding], int]:
                return await scan_names(reading.texts, entities, evaluation)

            # both queue at once: the model's job, the longest, is not left to join the
            # queue behind every other signal's
            findings, (found, figures) = await asyncio.gather(
                evaluation.once(("pii", self.scope), compute),
                evaluation.once(("names", self.scope, id(entities)), names),
            )
            findings = resolve_overlaps([*findings, *found])
        counted = [
            f for f in findings if f.type in self.types and f.confidence >= self.min_confidence
        ]
        counts = Counter(finding.type.value for finding in counted)
        matched = len(counted) >= self.min_findings
        confidence = max((f.confidence for f in counted), default=0.0)
        value: dict[str, Any] = {**dict(sorted(counts.items())), **reading.report}
        if self.wants_names and self.entities is None:
            value["names"] = "unavailable"
        elif self.wants_names and figures:
            value["public_figures"] = figures  # names read and set aside, not counted
        return Outcome(matched, confidence if matched else 0.0, value)


def entity_model(resources: Resources) -> EntityModel | None:
    """The configured named-entity model, loaded once per process (None when absent), with
    the language detector that keeps it to English text when ``text.languages`` lists
    English (``runtime.entities``)."""
    entities = resources.config.text.entities
    name = entities.model
    if not name:
        return None
    from vsr_extproc.runtime.entities import load_entity_model
    from vsr_extproc.signals.language import language_detector

    codes = tuple(resources.config.text.languages)

    def load() -> EntityModel | None:
        detector = language_detector(resources) if "en" in codes else None
        return load_entity_model(
            name, detector.detect if detector is not None else None, entities.public_figures
        )

    key = ("entities", name, codes, entities.public_figures)
    model: EntityModel | None = resources.get(key, load)
    return model


def build(entry: PiiEntry, resources: Resources) -> PiiSignal:
    wants_names = bool(set(entry.types) & ENTITY_TYPES)
    entities = entity_model(resources) if wants_names else None
    return PiiSignal(entry, reading_budget(resources), entities)


_FINDING_TYPES = frozenset(kind.value for kind in FindingType)


def finding_counts(value: Any) -> dict[str, int]:
    """The findings by type a ``pii`` result reports (its value's other keys say what was
    read, not what was found)."""
    if not isinstance(value, dict):
        return {}
    return {
        kind: count
        for kind, count in value.items()
        if kind in _FINDING_TYPES and isinstance(count, int)
    }


FAMILY = SignalFamily(
    "pii",
    PiiEntry,
    build,
    "personal data and secrets, found by validating detectors",
    counts=finding_counts,
)
