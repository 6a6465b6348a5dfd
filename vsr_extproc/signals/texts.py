"""What text signals read, and the one shared embedding pass over it.

Texts are taken per message, so the embedding cache works per message: a chat client that
resends the whole history pays a forward pass only for the newest message. Within one
request, every signal that embeds the same text awaits the same computation. What is read
of a long request is bounded by the config's ``text.reading`` (``core.reading``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import unicodedata
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from vsr_extproc.core.reading import Measure, Reading, ReadingBudget, TextScope, read
from vsr_extproc.core.signals import Evaluation
from vsr_extproc.signals.base import Resources

if TYPE_CHECKING:
    from vsr_extproc.runtime.embedding import ChunkEmbeddings, Embedder, FloatArray

__all__ = [
    "MIN_SENTENCE",
    "TextScope",
    "as_seen",
    "embed_texts",
    "evidence",
    "meaning_reading",
    "own_meanings",
    "reading_budget",
    "scoped_reading",
    "sentence_spans",
    "shared_embedder",
    "word_units",
]

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
MIN_SENTENCE = 13  # characters; shorter sentences are scored only as part of their chunk


_TWO_LETTERS = re.compile(r"[^\W\d_].*?[^\W\d_]")


def evidence(texts: list[str], full_at: int) -> npt.NDArray[np.float64]:
    """How far each text's statistical evidence is trusted: 1 from ``full_at`` words on,
    proportionally less below. A text of two or three words says too little to accuse
    anyone by its wording or meaning alone. A word has two letters or more: numbers and
    codes (``G1 F30.0 X12.99``, ``4471``) say nothing of intent."""
    words = [sum(1 for token in text.split() if _TWO_LETTERS.search(token)) for text in texts]
    return np.minimum(1.0, np.asarray(words, dtype=np.float64) / full_at)


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


def scoped_reading(
    evaluation: Evaluation,
    scope: TextScope,
    budget: ReadingBudget,
    measure: Measure | None = None,
    *,
    seen: bool = False,
) -> Reading:
    """What a signal reads of its scope, one excerpt list per request, scope, budget and
    measure (``core.reading``: what reading costs the signal's model, in its tokens);
    with ``seen``, each text as a reader sees it (``as_seen``).

    ``prompt``: the newest user message. ``user``: every user message. ``conversation``:
    user messages and tool results (where indirect injection arrives). ``all``: every
    message, the system prompt and assistant turns included.
    """

    def reading() -> Reading:
        taken = read(evaluation.request, scope, budget, measure)
        if not seen:
            return taken
        return dataclasses.replace(taken, texts=tuple(as_seen(text) for text in taken.texts))

    return evaluation.memo(("reading", scope, budget, measure, seen), reading)


# Characters that change nothing a reader sees: zero-width spaces and joiners, bidi
# embeddings, overrides and isolates, word joiners, the soft hyphen, the BOM. (Unicode tag
# characters are left in: the jailbreak signal reads what they spell.)
_INVISIBLE = dict.fromkeys(
    [
        0x00AD, 0x180E, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C,
        0x202D, 0x202E, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0x2066, 0x2067, 0x2068,
        0x2069, 0xFEFF,
    ]
)  # fmt: skip
# Blocks whose letters can pass for Latin ones: Latin extensions, IPA, Greek, Cyrillic,
# Armenian, Cherokee, phonetic small capitals, Cyrillic extensions.
_LOOK_ALIKE_BLOCKS = (
    (0x0180, 0x02B0), (0x0370, 0x0590), (0x13A0, 0x1400), (0x1D00, 0x1D80),
    (0xA640, 0xA6A0), (0xAB70, 0xABC0),
)  # fmt: skip
_LATIN = re.compile(r"[A-Za-z]")
_LETTER = re.compile(r"[^\W\d_]")


@cache
def _as_latin() -> dict[int, str]:
    """Each letter of ``_LOOK_ALIKE_BLOCKS`` that Unicode's confusables data (TR39, via
    ``confusable_homoglyphs``) says looks like an ASCII letter, with that letter."""
    from confusable_homoglyphs import confusables

    table = {}
    for start, end in _LOOK_ALIKE_BLOCKS:
        for code in range(start, end):
            found = confusables.is_confusable(chr(code), preferred_aliases=["latin"])
            for glyph in found[0]["homoglyphs"] if found else ():
                if glyph["c"].isascii() and glyph["c"].isalpha():
                    table[code] = glyph["c"]
                    break
    return table


def as_seen(text: str) -> str:
    """``text`` as a reader sees it, for the models that judge its meaning: compatibility
    forms folded (NFKC: fullwidth ``Ｉｇｎｏｒｅ`` is ``Ignore``), invisible characters
    dropped, and Cyrillic, Greek and other look-alike letters read as the Latin ones they
    pass for, word by word, as Unicode's security mechanisms (UTS #39) judge spoofing: a
    word that mixes them with Latin letters (``Ignоrе`` with two Cyrillic letters is
    ``Ignore``, in any text), and — in text that is mostly Latin then — a word made of
    look-alikes alone (``ассеѕѕ``). A word with a letter that passes for none is written
    in its own script, and keeps its letters: a Russian request around Python code, whose
    Latin letters outnumber its Cyrillic ones, is still Russian to the models."""
    text = unicodedata.normalize("NFKC", text).translate(_INVISIBLE)
    if text.isascii():
        return text
    table = _as_latin()
    text = _WORD.sub(lambda word: _folded(word[0], table, mixed=True), text)
    latin = len(_LATIN.findall(text))
    if latin and latin * 2 >= len(_LETTER.findall(text)):
        text = _WORD.sub(lambda word: _folded(word[0], table, mixed=False), text)
    return text


def _folded(word: str, table: dict[int, str], *, mixed: bool) -> str:
    """``word`` in Latin letters where it is spoofing them: with ``mixed``, where it mixes
    look-alikes with Latin letters; without, where every letter is Latin or a look-alike."""
    if word.isascii():
        return word
    if mixed:
        spoofed = _LATIN.search(word) is not None and any(ord(c) in table for c in word)
    else:
        spoofed = all(c.isascii() or ord(c) in table for c in word if c.isalpha())
    return word.translate(table) if spoofed else word


def meaning_reading(
    evaluation: Evaluation, scope: TextScope, budget: ReadingBudget, embedder: Embedder
) -> Reading:
    """What a signal that judges meaning with the embedding model reads (``domain``,
    ``jailbreak``, ``safety``): its shares bounded in that model's tokens, each text as
    a reader sees it (``as_seen``). One reading per request for all of them."""
    return scoped_reading(evaluation, scope, budget, embedder.count_tokens, seen=True)


_WORD = re.compile(r"\w+")
_SYMBOL = re.compile(r"[^\w\s]")
_WIDE_SYMBOL = re.compile(r"[^\w\s\x00-\x7f]")


def word_units(text: str) -> int:
    """What ``text`` costs the named-entity model: a unit per word and per symbol (its
    tokenizer splits on them), two per symbol outside ASCII (an emoji: measured at about
    twice a word's time)."""
    return sum(len(pattern.findall(text)) for pattern in (_WORD, _SYMBOL, _WIDE_SYMBOL))


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

    label = ("text_embedding", settings.model or "all-MiniLM-L6-v2")
    embedder: Embedder = resources.get(key, make, runtime=label)
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


@dataclasses.dataclass(frozen=True)
class OwnMeanings:
    """Sentences embedded on their own: their pieces (a sentence longer than a window is
    several), each piece's owner (the chunk its sentence came from) and embedding."""

    owners: list[int]
    pieces: list[str]
    vectors: FloatArray


async def own_meanings(
    evaluation: Evaluation, embedder: Embedder, owners: Sequence[int], sentences: Sequence[str]
) -> OwnMeanings:
    """Each of ``sentences`` embedded on its own, through the request's shared embedding
    pass (``embed_texts``): a signal's closer look at a sentence that scored high with the
    meaning of the chunk around it."""
    embedded = await embed_texts(evaluation, embedder, sentences)
    return OwnMeanings(
        [owner for owner, one in zip(owners, embedded, strict=True) for _ in one.spans],
        [text[a:b] for text, one in zip(sentences, embedded, strict=True) for a, b in one.spans],
        np.concatenate([one.vectors for one in embedded]),
    )
