"""``code``: source code in the request's text ("Why does this throw?" and a snippet).

    signals:
      code:
        - name: in_prompt
          min_score: 0.7      # detectors.code_score of the most code-like block
          scope: prompt       # prompt | user | all

Words do not tell code: "a history class", "the function of the liver" and "with the
exception of" are prose, and a pasted snippet need not say "bug" or "function". The
signal scores the text itself with the code detector that reads screenshots
(``detectors.code``: statement shapes, code punctuation, language markers and a line
model that knows no language). A prompt is read block by block — a fenced block, or lines
between blank lines — so the question around a snippet does not dilute it; a block
without a character code is made of (``;``, ``{``, ``=``, ``(``…) is not scored, which
leaves almost every prose prompt at no cost. Only the head of each text is read
(``max_chars``): a paste is code from its first lines. The value gives the score, the
language where its markers are clear, and how many blocks were scored.
"""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field

from vsr_extproc.core.reading import ReadingBudget
from vsr_extproc.core.signals import AsyncSignal, Evaluation, Outcome
from vsr_extproc.detectors import CodeScore, code_score
from vsr_extproc.signals.base import AsyncSignalEntry, Resources, SignalFamily, run_cpu
from vsr_extproc.signals.texts import TextScope, reading_budget, scoped_reading

_FENCE = re.compile(r"^[ \t]*(?:```|~~~)[^\n]*\n(.*?)^[ \t]*(?:```|~~~)", re.MULTILINE | re.DOTALL)
_BLANK_LINES = re.compile(r"\n[ \t]*\n")
# a line that is one markup tag alone: a prompt's wrapper (<document>, </context>)
_TAG_LINE = re.compile(r"^[ \t]*</?[A-Za-z][\w:.-]*>[ \t]*\n?", re.MULTILINE)
# a character code is made of; a block without one is prose however it reads
_CODE_MARK = re.compile(r"[;{}=<>()\[\]]|->|::|^\s*(?:#|//|--|\$ |>>> )", re.MULTILINE)


class CodeEntry(AsyncSignalEntry):
    min_score: float = Field(
        default=0.7,
        ge=0,
        le=1,
        description="the code score (0-1) of a block that makes it match (0.7: chosen on "
        "public dev prompts; screens of code are read at 0.5, a prompt's blocks are shorter)",
    )
    min_lines: int = Field(default=2, ge=1, le=1000, description="lines a block needs to be scored")
    scope: TextScope = Field(default="prompt", description="which messages are read")
    max_chars: int = Field(
        default=4_000,
        ge=100,
        le=1_000_000,
        description="the head of each message that is read (the detector's time grows with it)",
    )


def blocks(text: str) -> list[str]:
    """``text``'s fenced blocks and, around them, its runs of lines between blank lines,
    those that hold a character of code only."""
    found = []
    at = 0
    for fence in _FENCE.finditer(text):
        found += _BLANK_LINES.split(text[at : fence.start()])
        found.append(fence.group(1))
        at = fence.end()
    found += _BLANK_LINES.split(text[at:])
    found = [_TAG_LINE.sub("", block) for block in found]
    return [block for block in found if block.strip() and _CODE_MARK.search(block)]


def most_code_like(
    texts: list[str], max_chars: int, min_lines: int = 2
) -> tuple[CodeScore | None, int]:
    """The highest-scoring block of the texts' heads of at least ``min_lines`` lines, and
    how many blocks were scored."""
    scored = [
        code_score(block)
        for text in texts
        for block in blocks(text[:max_chars])
        if block.strip().count("\n") + 1 >= min_lines
    ]
    return max(scored, key=lambda score: score.score, default=None), len(scored)


class CodeSignal(AsyncSignal):
    family: ClassVar[str] = "code"

    def __init__(self, entry: CodeEntry, budget: ReadingBudget) -> None:
        self.name = entry.name
        self.budget = budget
        self.timeout_s = entry.timeout_ms / 1000
        self.min_score = entry.min_score
        self.scope: TextScope = entry.scope
        self.max_chars = entry.max_chars
        self.min_lines = entry.min_lines

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        reading = scoped_reading(evaluation, self.scope, self.budget)
        texts = list(reading.texts)
        if not any(_CODE_MARK.search(text[: self.max_chars]) for text in texts):
            return Outcome(False, 0.0, {"score": 0.0, "blocks": 0, **reading.report})

        async def compute() -> tuple[CodeScore | None, int]:
            return await run_cpu(
                most_code_like, texts, self.max_chars, self.min_lines, owner=evaluation
            )

        key = ("code", self.scope, self.max_chars, self.min_lines)
        best, count = await evaluation.once(key, compute)
        score = best.score if best is not None else 0.0
        value = {
            "score": round(score, 3),
            "language": best.language if best is not None else None,
            "blocks": count,
            **reading.report,
        }
        return Outcome(score >= self.min_score, score, value)


def build(entry: CodeEntry, resources: Resources) -> CodeSignal:
    return CodeSignal(entry, reading_budget(resources))


FAMILY = SignalFamily("code", CodeEntry, build, "source code in the request's text")
