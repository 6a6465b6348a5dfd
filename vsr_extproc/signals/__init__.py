"""Signal families. Adding one is a module plus a line in ``FAMILIES``."""

from __future__ import annotations

from typing import Any

from vsr_extproc.signals import (
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
