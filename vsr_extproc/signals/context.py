"""``context``: the request's estimated size in tokens falls in a range.

signals:
  context:
    - name: long_context
      min_tokens: 8000
      max_tokens: null
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, model_validator

from vsr_extproc.core.policy import estimate_tokens
from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.core.signals import InlineSignal, Outcome
from vsr_extproc.signals.base import Resources, SignalEntry, SignalFamily


class ContextEntry(SignalEntry):
    min_tokens: int = Field(default=0, ge=0, description="at least this many (estimated)")
    max_tokens: int | None = Field(default=None, ge=0, description="at most this many")

    @model_validator(mode="after")
    def _range(self) -> ContextEntry:
        if self.max_tokens is not None and self.max_tokens < self.min_tokens:
            raise ValueError("max_tokens must be at least min_tokens")
        if self.min_tokens == 0 and self.max_tokens is None:
            raise ValueError("give min_tokens or max_tokens")
        return self


class ContextSignal(InlineSignal):
    family: ClassVar[str] = "context"

    def __init__(self, entry: ContextEntry) -> None:
        self.name = entry.name
        self.minimum = entry.min_tokens
        self.maximum = entry.max_tokens

    def evaluate_now(self, request: NormalizedRequest) -> Outcome:
        tokens = estimate_tokens(request.text_chars, len(request.images))
        matched = tokens >= self.minimum and (self.maximum is None or tokens <= self.maximum)
        return Outcome.of(matched, {"tokens": tokens})


def build(entry: ContextEntry, resources: Resources) -> ContextSignal:
    return ContextSignal(entry)


FAMILY = SignalFamily("context", ContextEntry, build, "estimated tokens within a range")
