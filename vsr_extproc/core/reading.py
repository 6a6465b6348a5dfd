"""What the text signals read of a request: bounded, whatever the request's size.

A model signal's cost grows with the text it reads, and the processor's models are shared
by every request in flight. So no request is read in full without limit: each scope is read
through a ``ReadingBudget``, in this order of claim:

1. the newest user message, whole up to ``prompt_chars``;
2. tool results, newest first (where indirect injection arrives), each up to
   ``message_chars``;
3. every other message in scope, newest first, each up to ``message_chars``;

until ``total_chars`` are taken. A message longer than its share is read as its head and
its tail (two thirds and one third of the share): instructions and attacks sit at the
start or the end of what people paste far more often than in the middle. What was left
out is counted, and every signal that read the scope reports it in the trace
(``skipped_chars``). The request's size itself is never hidden: the ``context`` signal
counts every character, so a long request stays routable to a long-context model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from vsr_extproc.core.request import Message, NormalizedRequest, Role

TextScope = Literal["prompt", "user", "conversation", "all"]

SCOPE_ROLES: dict[TextScope, tuple[Role, ...]] = {
    "prompt": (Role.USER,),
    "user": (Role.USER,),
    "conversation": (Role.USER, Role.TOOL),
    "all": tuple(Role),
}


@dataclass(frozen=True, slots=True)
class ReadingBudget:
    """How many characters of a request the text signals read (see the module doc)."""

    prompt_chars: int = 12_000  # about 3,000 tokens
    message_chars: int = 4_000
    total_chars: int = 16_000  # about 36 chunks of the embedding model

    def __post_init__(self) -> None:
        if min(self.prompt_chars, self.message_chars, self.total_chars) < 3:
            raise ValueError("reading budgets must be at least 3 characters")


UNBOUNDED = ReadingBudget(2**62, 2**62, 2**62)


@dataclass(frozen=True, slots=True)
class Reading:
    """The excerpts read of one scope, in the messages' order, and what was left out."""

    texts: tuple[str, ...]
    read_chars: int
    skipped_chars: int

    @property
    def report(self) -> dict[str, int]:
        """The trace's account of what was skipped: empty when everything was read."""
        if not self.skipped_chars:
            return {}
        return {"read_chars": self.read_chars, "skipped_chars": self.skipped_chars}


def excerpt(text: str, limit: int) -> tuple[str, ...]:
    """``text`` whole when it fits ``limit``, else its head and its tail (2:1)."""
    if len(text) <= limit:
        return (text,)
    head = (limit * 2) // 3
    tail = limit - head
    return (text[:head], text[len(text) - tail :]) if tail else (text[:head],)


def _claim_order(request: NormalizedRequest, scope: TextScope) -> list[Message]:
    """The messages of ``scope`` in the order they claim the budget."""
    newest = request.last_user_message
    if scope == "prompt":
        return [newest] if newest is not None else []
    roles = SCOPE_ROLES[scope]
    others = [m for m in reversed(request.messages) if m.role in roles and m is not newest]
    tools = [m for m in others if m.role is Role.TOOL]
    rest = [m for m in others if m.role is not Role.TOOL]
    return ([newest] if newest is not None else []) + tools + rest


def read(request: NormalizedRequest, scope: TextScope, budget: ReadingBudget) -> Reading:
    """The excerpts of ``scope`` that ``budget`` allows (see the module doc)."""
    newest = request.last_user_message
    left = budget.total_chars
    taken: dict[int, tuple[str, ...]] = {}
    total = 0
    for message in _claim_order(request, scope):
        text = message.text
        if not text.strip():
            continue
        total += len(text)
        share = budget.prompt_chars if message is newest else budget.message_chars
        limit = min(share, left)
        if limit < 3:
            continue
        parts = excerpt(text, limit)
        taken[message.index] = parts
        left -= sum(len(part) for part in parts)
    texts = tuple(part for index in sorted(taken) for part in taken[index])
    read_chars = sum(len(text) for text in texts)
    return Reading(texts, read_chars, total - read_chars)
