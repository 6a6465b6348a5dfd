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

Characters are not what a model pays for: 12,000 characters of English are about 2,700
of the embedding model's tokens, of ``lol lol lol`` 6,000, of emoji or Chinese up to
12,000. A signal whose cost grows with tokens passes its own ``measure`` (the embedding
model's tokenizer, or words and symbols for the named-entity model), and its shares are
then also bounded in tokens (``prompt_tokens``, ``message_tokens``, ``total_tokens``):
an excerpt over its token share is cut down, head and tail alike, until it fits.
"""

from __future__ import annotations

from collections.abc import Callable
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

    prompt_chars: int = 12_000  # about 2,700 tokens of English
    message_chars: int = 4_000
    total_chars: int = 16_000  # about 36 chunks of the embedding model
    prompt_tokens: int = 2_000
    message_tokens: int = 800
    total_tokens: int = 3_000

    def __post_init__(self) -> None:
        if min(self.prompt_chars, self.message_chars, self.total_chars) < 3:
            raise ValueError("reading budgets must be at least 3 characters")
        if min(self.prompt_tokens, self.message_tokens, self.total_tokens) < 1:
            raise ValueError("token budgets must be at least 1 token")


UNBOUNDED = ReadingBudget(2**62, 2**62, 2**62, 2**62, 2**62, 2**62)

#: what reading a text costs a signal, in its model's tokens
Measure = Callable[[str], int]
_FIT_ROUNDS = 3


@dataclass(frozen=True, slots=True)
class Reading:
    """The excerpts read of one scope, in the messages' order, and what was left out."""

    texts: tuple[str, ...]
    read_chars: int
    skipped_chars: int
    #: the tokens read, by the signal's measure (None: read by characters only)
    read_tokens: int | None = None
    #: the role of the message each text was read from (a tool result's text is data that
    #: arrived in the conversation, not what anyone in it said)
    roles: tuple[Role, ...] = ()

    @property
    def report(self) -> dict[str, int]:
        """The trace's account of what was skipped: empty when everything was read."""
        if not self.skipped_chars:
            return {}
        report = {"read_chars": self.read_chars, "skipped_chars": self.skipped_chars}
        if self.read_tokens is not None:
            report["read_tokens"] = self.read_tokens
        return report


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


def _fit(
    text: str, parts: tuple[str, ...], limit: int, measure: Measure
) -> tuple[tuple[str, ...], int]:
    """``parts`` of ``text`` cut down, head and tail alike, until ``measure`` says they fit
    ``limit`` tokens (a few rounds in proportion; the last may leave them a little over)."""
    tokens = sum(measure(part) for part in parts)
    for _ in range(_FIT_ROUNDS):
        if tokens <= limit:
            break
        chars = sum(len(part) for part in parts)
        parts = excerpt(text, max(3, chars * limit * 95 // (tokens * 100)))
        tokens = sum(measure(part) for part in parts)
    return parts, tokens


def read(
    request: NormalizedRequest,
    scope: TextScope,
    budget: ReadingBudget,
    measure: Measure | None = None,
) -> Reading:
    """The excerpts of ``scope`` that ``budget`` allows (see the module doc); with
    ``measure``, its token shares bound them as well."""
    newest = request.last_user_message
    left = budget.total_chars
    left_tokens = budget.total_tokens
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
        if measure is not None:
            token_share = budget.prompt_tokens if message is newest else budget.message_tokens
            token_limit = min(token_share, left_tokens)
            if token_limit < 1:
                continue
            parts, tokens = _fit(text, parts, token_limit, measure)
            left_tokens -= tokens
        taken[message.index] = parts
        left -= sum(len(part) for part in parts)
    texts = tuple(part for index in sorted(taken) for part in taken[index])
    role = {message.index: message.role for message in request.messages}
    roles = tuple(role[index] for index in sorted(taken) for _ in taken[index])
    read_chars = sum(len(text) for text in texts)
    read_tokens = budget.total_tokens - left_tokens if measure is not None else None
    return Reading(texts, read_chars, total - read_chars, read_tokens, roles)
