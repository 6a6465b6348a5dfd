"""``domain``: what the request is about, by similarity to banks of example requests.

    signals:
      domain:
        - name: medical              # examples default to the shipped bank's "medical"
          threshold: 0.35
        - name: tax_law
          examples: ["How is a gift to my niece taxed?", "…"]
          aggregate: max              # or mean_top_k (default), the mean of the top_k
          top_k: 3
          exclusive: true             # only when it is also the best-scoring domain

Every domain of the config is scored in one pass per request: the prompt's chunks are
embedded once, compared with every domain's examples (embedded once at compile), and each
domain's score is its aggregated similarity in its best chunk. The shipped bank
(``vsr_extproc/banks/domains.yaml``) covers medical, legal, finance, software,
math_science and general.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np
import yaml
from pydantic import Field, model_validator

from vsr_extproc.core.reading import ReadingBudget
from vsr_extproc.core.signals import AsyncSignal, Evaluation, Outcome
from vsr_extproc.signals.base import AsyncSignalEntry, Resources, SignalFamily
from vsr_extproc.signals.texts import (
    TextScope,
    embed_texts,
    meaning_reading,
    reading_budget,
    shared_embedder,
)

if TYPE_CHECKING:
    from vsr_extproc.runtime.embedding import Embedder, FloatArray, TextEncoder

BANK = Path(__file__).resolve().parent.parent / "banks" / "domains.yaml"


@cache
def default_bank() -> dict[str, tuple[str, ...]]:
    """The shipped domain bank: domain → example requests."""
    document = yaml.safe_load(BANK.read_text())
    return {name: tuple(spec["examples"]) for name, spec in document["domains"].items()}


class DomainEntry(AsyncSignalEntry):
    examples: tuple[str, ...] = Field(
        default=(), description="example requests; empty = the shipped bank's domain of this name"
    )
    threshold: float = Field(
        default=0.3, ge=-1, le=1, description="the aggregated cosine similarity needed"
    )
    aggregate: Literal["max", "mean_top_k"] = Field(
        default="mean_top_k",
        description="how example similarities combine into the domain's score",
    )
    top_k: int = Field(default=3, ge=1, description="examples averaged by mean_top_k")
    exclusive: bool = Field(
        default=True, description="match only when this is the best-scoring configured domain"
    )
    scope: TextScope = Field(default="prompt", description="which messages are read")

    @model_validator(mode="after")
    def _has_examples(self) -> DomainEntry:
        if not self.examples and self.name not in default_bank():
            raise ValueError(
                f"domain {self.name!r} is not in the shipped bank "
                f"({', '.join(default_bank())}); give its examples"
            )
        return self


@dataclass(frozen=True)
class DomainBank:
    """Every configured domain's example embeddings and aggregation, built once."""

    names: tuple[str, ...]
    examples: tuple[FloatArray, ...]
    aggregates: tuple[str, ...]
    top_ks: tuple[int, ...]

    @classmethod
    def build(cls, encoder: TextEncoder, entries: list[DomainEntry]) -> DomainBank:
        return cls(
            tuple(entry.name for entry in entries),
            tuple(encoder.embed(entry.examples or default_bank()[entry.name]) for entry in entries),
            tuple(entry.aggregate for entry in entries),
            tuple(entry.top_k for entry in entries),
        )

    def score(self, chunks: FloatArray) -> dict[str, float]:
        """Each domain's score for a text's chunk embeddings: its best chunk's aggregate."""
        scores = {}
        for name, examples, aggregate, top_k in zip(
            self.names, self.examples, self.aggregates, self.top_ks, strict=True
        ):
            similarities = chunks @ examples.T  # chunks × examples
            if aggregate == "max":
                per_chunk = similarities.max(axis=1)
            else:
                k = min(top_k, similarities.shape[1])
                per_chunk = np.sort(similarities, axis=1)[:, -k:].mean(axis=1)
            scores[name] = float(per_chunk.max())
        return scores

    def classify(self, encoder: TextEncoder, texts: list[str], window: int) -> list[str]:
        """The best domain of each text (for offline evaluation)."""
        labels = []
        for text in texts:
            pieces = encoder.chunk(text, window)
            scores = self.score(encoder.forward([piece.token_ids for piece in pieces]))
            labels.append(max(scores, key=scores.__getitem__))
        return labels


class DomainSignal(AsyncSignal):
    family: ClassVar[str] = "domain"

    def __init__(
        self, entry: DomainEntry, embedder: Embedder, bank: DomainBank, budget: ReadingBudget
    ) -> None:
        self.name = entry.name
        self.budget = budget
        self.timeout_s = entry.timeout_ms / 1000
        self.threshold = entry.threshold
        self.exclusive = entry.exclusive
        self.scope: TextScope = entry.scope
        self.embedder = embedder
        self.bank = bank

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        reading = meaning_reading(evaluation, self.scope, self.budget, self.embedder)
        texts = reading.texts
        if not texts:
            return Outcome(False, 0.0, {"chunks": 0})

        async def compute() -> tuple[dict[str, float], int]:
            embedded = await embed_texts(evaluation, self.embedder, texts)
            chunks = np.concatenate([e.vectors for e in embedded])
            return self.bank.score(chunks), len(chunks)

        scores, chunks = await evaluation.once(("domain", id(self.bank), self.scope), compute)
        score = scores[self.name]
        best = max(scores, key=scores.__getitem__)
        matched = score >= self.threshold and (not self.exclusive or best == self.name)
        value = {"score": round(score, 4), "best": best, "chunks": chunks, **reading.report}
        return Outcome(matched, min(max(score, 0.0), 1.0), value)


def build(entry: DomainEntry, resources: Resources) -> DomainSignal:
    embedder = shared_embedder(resources)
    entries: list[DomainEntry] = list(resources.config.signals.domain)
    key = ("domain-bank", id(embedder), tuple(entries))
    bank: DomainBank = resources.get(key, lambda: DomainBank.build(embedder.encoder, entries))
    return DomainSignal(entry, embedder, bank, reading_budget(resources))


FAMILY = SignalFamily(
    "domain", DomainEntry, build, "what the request is about, by similarity to example banks"
)
