"""What text signals read, and the one shared embedding pass over it.

Texts are taken per message, so the embedding cache works per message: a chat client that
resends the whole history pays a forward pass only for the newest message. Within one
request, every signal that embeds the same text awaits the same computation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from vsr_extproc.core.request import NormalizedRequest, Role
from vsr_extproc.core.signals import Evaluation
from vsr_extproc.signals.base import Resources

if TYPE_CHECKING:
    from vsr_extproc.runtime.embedding import ChunkEmbeddings, Embedder

TextScope = Literal["prompt", "user", "conversation", "all"]


def scoped_texts(request: NormalizedRequest, scope: TextScope) -> list[str]:
    """The texts a signal reads, one per message.

    ``prompt``: the newest user message. ``user``: every user message. ``conversation``:
    user messages and tool results (where indirect injection arrives). ``all``: every
    message, the system prompt and assistant turns included.
    """
    if scope == "prompt":
        message = request.last_user_message
        texts = [message.text] if message is not None else []
    elif scope == "user":
        texts = [m.text for m in request.messages_with(Role.USER)]
    elif scope == "conversation":
        texts = [m.text for m in request.messages_with(Role.USER, Role.TOOL)]
    else:
        texts = [m.text for m in request.messages]
    return [text for text in texts if text.strip()]


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
    """Chunk embeddings of each text, computed once per request whoever asks."""
    results = []
    for text in texts:

        async def compute(text: str = text) -> ChunkEmbeddings:
            return await embedder.chunks(text)

        results.append(evaluation.once(("embedding", id(embedder), text), compute))
    return list(await asyncio.gather(*results))
