"""Signal families. Adding one is a module plus a line in ``FAMILIES``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from vsr_extproc.core.signals import SignalResult
from vsr_extproc.signals import (
    code,
    context,
    conversation,
    domain,
    image,
    image_text,
    jailbreak,
    keyword,
    language,
    modality,
    output,
    pii,
    safety,
    tool_call,
    vision,
)
from vsr_extproc.signals.base import SignalFamily

FAMILIES: dict[str, SignalFamily[Any]] = {
    family.name: family
    for family in (
        keyword.FAMILY,
        code.FAMILY,
        modality.FAMILY,
        context.FAMILY,
        conversation.FAMILY,
        domain.FAMILY,
        pii.FAMILY,
        jailbreak.FAMILY,
        safety.FAMILY,
        language.FAMILY,
        vision.FAMILY,
        image.FAMILY,
        image_text.FAMILY,
        tool_call.FAMILY,
        output.FAMILY,
    )
}


def finding_counts(results: Iterable[SignalResult]) -> dict[str, int]:
    """Findings of one request by type, each counted once.

    A family that reports findings says how to read them from a result (``counts``).
    Two signals that count emails report the same email twice, so a type's count is the
    largest any signal reports.
    """
    counts: dict[str, int] = {}
    for result in results:
        family = FAMILIES.get(result.family)
        if family is None or family.counts is None:
            continue
        for kind, count in family.counts(result.value).items():
            counts[kind] = max(counts.get(kind, 0), count)
    return counts
