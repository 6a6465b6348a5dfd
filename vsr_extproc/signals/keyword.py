"""``keyword``: words, phrases or regular expressions in the request's text.

signals:
  keyword:
    - name: code_request
      any: ["bug", "stack trace", "refactor"]     # or all: [...]
      case_sensitive: false                        # default
      word_boundaries: true                        # default
      regex: false                                 # patterns are regular expressions
      scope: prompt                                # prompt | user | all

Like every text signal it reads what ``text.reading`` allows of a long request.
"""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from vsr_extproc.core.reading import ReadingBudget, read
from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.core.signals import InlineSignal, Outcome
from vsr_extproc.signals.base import Resources, SignalEntry, SignalFamily
from vsr_extproc.signals.texts import reading_budget

TextScope = Literal["prompt", "user", "all"]


class KeywordEntry(SignalEntry):
    any: tuple[str, ...] = Field(default=(), description="match when any pattern occurs")
    all: tuple[str, ...] = Field(default=(), description="match when every pattern occurs")
    case_sensitive: bool = Field(default=False, description="match letter case exactly")
    word_boundaries: bool = Field(
        default=True, description="patterns match whole words only ('bug' not in 'debug')"
    )
    regex: bool = Field(default=False, description="patterns are Python regular expressions")
    scope: TextScope = Field(
        default="prompt",
        description="prompt: the newest user message; user: every user message; all: every message",
    )

    @model_validator(mode="after")
    def _one_list(self) -> KeywordEntry:
        if bool(self.any) == bool(self.all):
            raise ValueError("give exactly one of 'any' or 'all', with at least one pattern")
        for pattern in self.any + self.all:
            if not pattern:
                raise ValueError("patterns must not be empty")
            if self.regex:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
        return self


class KeywordSignal(InlineSignal):
    family: ClassVar[str] = "keyword"

    def __init__(self, entry: KeywordEntry, budget: ReadingBudget) -> None:
        self.name = entry.name
        self.budget = budget
        self.scope: TextScope = entry.scope
        self.require_all = bool(entry.all)
        flags = 0 if entry.case_sensitive else re.IGNORECASE
        self.patterns = tuple(
            re.compile(_pattern(p, entry.regex, entry.word_boundaries), flags)
            for p in (entry.all or entry.any)
        )
        # one alternation answers "any" with a single scan of the text
        self.either = re.compile("|".join(f"(?:{p.pattern})" for p in self.patterns), flags)

    def evaluate_now(self, request: NormalizedRequest) -> Outcome:
        reading = read(request, self.scope, self.budget)
        # excerpts stay apart so that no phrase is made up across a gap
        if self.require_all:
            found = sum(1 for pattern in self.patterns if any(map(pattern.search, reading.texts)))
            value: dict[str, int] = {"matched": found, **reading.report}
            return Outcome.of(found == len(self.patterns), value)
        hit = any(map(self.either.search, reading.texts))
        return Outcome.of(hit, reading.report or None)


def _pattern(pattern: str, regex: bool, word_boundaries: bool) -> str:
    body = pattern if regex else re.escape(pattern)
    if not word_boundaries:
        return body
    # \b fails next to non-word characters ("C++", "#include"); look around instead
    return rf"(?<!\w)(?:{body})(?!\w)"


def build(entry: KeywordEntry, resources: Resources) -> KeywordSignal:
    return KeywordSignal(entry, reading_budget(resources))


FAMILY = SignalFamily(
    "keyword", KeywordEntry, build, "words, phrases or regular expressions in the request's text"
)
