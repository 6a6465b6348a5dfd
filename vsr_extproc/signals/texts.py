"""What text signals read, and the one shared embedding pass over it.

Texts are taken per message, so the embedding cache works per message: a chat client that
resends the whole history pays a forward pass only for the newest message. Within one
request, every signal that embeds the same text awaits the same computation. What is read
of a long request is bounded by the config's ``text.reading`` (``core.reading``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from vsr_extproc.core.reading import Reading, ReadingBudget, TextScope, read
from vsr_extproc.core.signals import Evaluation
from vsr_extproc.signals.base import Resources

if TYPE_CHECKING:
    from vsr_extproc.runtime.embedding import ChunkEmbeddings, Embedder

__all__ = [
    "MIN_SENTENCE",
    "TextScope",
    "embed_texts",
    "evidence",
    "reading_budget",
    "scoped_reading",
    "sentence_spans",
    "shared_embedder",
]

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
MIN_SENTENCE = 13  # characters; shorter sentences are scored only as part of their chunk


def evidence(texts: list[str], full_at: int) -> npt.NDArray[np.float64]:
    """How far each text's statistical evidence is trusted: 1 from ``full_at`` words on,
    proportionally less below. A text of two or three words says too little to accuse
    anyone by its wording or meaning alone."""
    return np.minimum(1.0, np.asarray([len(text.split()) for text in texts]) / full_at)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """The character spans of ``text``'s sentences and lines, short ones included."""
    spans, start = [], 0
    for match in _SENTENCE_BREAK.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return spans


def reading_budget(resources: Resources) -> ReadingBudget:
    """The configured ``text.reading`` budget, for a signal to keep from its build."""
    budget: ReadingBudget = resources.config.text.reading.budget()
    return budget


def scoped_reading(evaluation: Evaluation, scope: TextScope, budget: ReadingBudget) -> Reading:
    """What a signal reads of its scope, one excerpt list per request, scope and budget.

    ``prompt``: the newest user message. ``user``: every user message. ``conversation``:
    user messages and tool results (where indirect injection arrives). ``all``: every
    message, the system prompt and assistant turns included.
    """
    return evaluation.memo(
        ("reading", scope, budget), lambda: read(evaluation.request, scope, budget)
    )


def shared_embedder(resources: Resources) -> Embedder:
    """The process's embedder for the configured model (loaded once, reused by reloads)."""
    from vsr_extproc.runtime.embedding import Embedder, load_text_encoder

    settings = resources.config.text.embedding
    key = ("text-embedder", settings)

    def make() -> Embedder:
        return Embedder(
            load_text_encoder(
                settings.model, precision=settings.precision, runtime=settings.runtime
            ),
            max_batch=settings.max_batch,
            max_wait_ms=settings.max_wait_ms,
            cache_size=settings.cache_size,
            window_tokens=settings.window_tokens,
            overlap_tokens=settings.overlap_tokens,
        )

    embedder: Embedder = resources.get(key, make)
    return embedder


async def embed_texts(
    evaluation: Evaluation, embedder: Embedder, texts: Sequence[str]
) -> list[ChunkEmbeddings]:
    """Chunk embeddings of each text, computed once per request whoever asks.

    The request is the owner of the work it queues: the embedder serves the owner served
    least first, so a request with many chunks cannot hold up one with few.
    """
    results = []
    for text in texts:

        async def compute(text: str = text) -> ChunkEmbeddings:
            return await embedder.chunks(text, owner=evaluation)

        results.append(evaluation.once(("embedding", id(embedder), text), compute))
    return list(await asyncio.gather(*results))
