"""``safety``: requests for harmful content, by hazard category.

    signals:
      safety:
        - name: severe
          categories: [child_sexual_exploitation, sex_crimes, weapons, violent_crimes]
          threshold: 0.5
        - name: mild
          categories: [sexual_content, harassment, hate, drugs, non_violent_crimes]
          thresholds: {hate: 0.6}     # a category's own threshold, else ``threshold``

The categories follow the hazard taxonomy of MLCommons AILuminate v1.0 as Llama Guard 3
uses it (``CATEGORIES`` names each one's code), with harassment, weapons and drugs as
categories of their own. A chunk's probability of a category is ``P(unsafe) ·
P(category | unsafe)``: one logistic model tells harmful requests from benign text (benign
look-alikes included: medical, security and history questions asked in good faith,
fiction, "kill the process"), a second one tells the categories apart. Both read the
chunk's wording (word n-grams), its sentence embedding (shared with the other text
signals: no extra forward pass) and how near it lies to each category's exemplars and to
the benign ones. A chunk is scored whole and sentence by sentence, and the request takes
its riskiest; a text of a few words is trusted less, as in ``jailbreak``.

A chunk in another language is also read by the multilingual sentence model the jailbreak
signal reads it with (``CrossLingualSafety``; ``other_languages``), and the riskier
reading wins.

A category is found when its probability reaches its threshold; an entry matches when one
of its categories is found, when its categories together reach ``threshold``, or when the
text is unsafe and its likeliest category is the entry's (a request torn between hate and
harassment, or between two entries, is still unsafe). The trace lists each category found
with its probability, and every category at least ``REPORTED`` likely.

Where a guard model is served beside the router (``text.guard``: Llama Guard behind an
OpenAI-compatible endpoint, ``runtime.guard``), its verdict on the text read replaces the
fitted model's: ``P(unsafe)`` shared among the categories of the hazard codes it names.
The fitted model still reads the text meanwhile, and judges when the guard gives no
verdict in time (``on_failure: local``); the trace says which judged and why.

Fitted when the policy compiles, on ``banks/safety.yaml`` (written for this project) and
public sources that never measure it (``banks/safety_public.jsonl``: AdvBench,
Do-Not-Answer's advice questions, IFEval and five red-team tools' probes); measured on
other public corpora (``vsr-extproc eval safety``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
import orjson
import yaml
from pydantic import Field, model_validator

from vsr_extproc.core.reading import ReadingBudget
from vsr_extproc.core.signals import AsyncSignal, Evaluation, Outcome
from vsr_extproc.errors import GuardUnavailable, SignalError
from vsr_extproc.runtime.fitted import kept_model
from vsr_extproc.runtime.guard import GuardClient, GuardVerdict
from vsr_extproc.signals.base import AsyncSignalEntry, Resources, SignalFamily, run_cpu
from vsr_extproc.signals.crosslingual import (
    foreign_readings,
    margin_probability,
    multilingual_reading,
    ordinary_requests,
    top_mean,
)
from vsr_extproc.signals.texts import (
    MIN_SENTENCE,
    TextScope,
    embed_texts,
    evidence,
    meaning_reading,
    own_meanings,
    reading_budget,
    sentence_spans,
    shared_embedder,
)

if TYPE_CHECKING:
    from vsr_extproc.runtime.embedding import Embedder, FloatArray, TextEncoder
    from vsr_extproc.runtime.multilingual import MultilingualEncoder

BANK = Path(__file__).resolve().parent.parent / "banks" / "safety.yaml"
PUBLIC = BANK.with_name("safety_public.jsonl")

Category = Literal[
    "violent_crimes",
    "non_violent_crimes",
    "sex_crimes",
    "child_sexual_exploitation",
    "weapons",
    "drugs",
    "self_harm",
    "hate",
    "harassment",
    "sexual_content",
]
#: each category and its code in the AILuminate / Llama Guard 3 taxonomy
CATEGORIES: dict[str, str] = {
    "violent_crimes": "S1",
    "non_violent_crimes": "S2",
    "sex_crimes": "S3",
    "child_sexual_exploitation": "S4",
    "weapons": "S9",
    "drugs": "S2",
    "self_harm": "S11",
    "hate": "S10",
    "harassment": "S10",
    "sexual_content": "S12",
}
#: the hazard codes of Llama Guard 3 and 4 that are categories here, for a guard model
#: served beside the router (``text.guard``); drugs and harassment have no code of their
#: own there (the guard names them S2 and S10 or S1)
GUARD_CATEGORIES: dict[str, Category] = {
    "S1": "violent_crimes",
    "S2": "non_violent_crimes",
    "S3": "sex_crimes",
    "S4": "child_sexual_exploitation",
    "S9": "weapons",
    "S10": "hate",
    "S11": "self_harm",
    "S12": "sexual_content",
}
EVIDENCE_WORDS = 6
NEAREST = (1, 5)
SIMILARITY_SCALE = 2.0
REGULARISATION = 1.0  # C of both logistic models, chosen on the public corpora's dev split
SILENT = -4.0  # the logit of a text with no words: P(unsafe) 0.018
REPORTED = 0.1  # categories at least this likely are listed in the trace
# a sentence this unsafe with its chunk's meaning is scored with its own meaning too
CLOSER_LOOK = 0.15
CLOSER_LOOKS = 16  # at most, the riskiest first


@dataclass(frozen=True)
class ChunkProbabilities:
    """``P(category)`` of each chunk (rows: chunks), and the risky sentences' neighbourhoods
    (the sentence with the one before and after) worth scoring with their own embedding,
    with their chunks (``SafetyModel.chunk_probabilities``)."""

    probabilities: npt.NDArray[np.float64]
    owners: list[int]
    neighbourhoods: list[str]


@dataclass(frozen=True)
class Bank:
    """A training set: exemplars by category, benign texts, harmful texts of no category."""

    exemplars: dict[str, tuple[str, ...]]
    benign: tuple[str, ...]
    uncategorised: tuple[str, ...] = ()


@cache
def default_bank() -> Bank:
    """The shipped training set.

    ``banks/safety.yaml`` (written for this project): exemplars by category and benign
    look-alikes. ``banks/safety_public.jsonl``: AdvBench's harmful requests,
    Do-Not-Answer's help-seeking and advice questions and IFEval's ordinary requests
    ("Write a poem about …", "Write a persuasive essay …": AdvBench's requests are written
    in that imperative, and without them the form alone reads as harm), and the harmful
    requests and ordinary ones that five red-team and safety tools ship as probes, written
    by hand in other words than AdvBench's: public sources that never measure the model
    (``eval.public.safety_training_rows``).
    Ordinary traffic as benign: the jailbreak bank's benign prompts, the domain bank's
    requests and the PII development set's messages, heavy with names, numbers and keys.
    """
    from vsr_extproc.signals.jailbreak import default_bank as jailbreak_bank

    document = yaml.safe_load(BANK.read_text())
    exemplars = {
        name: tuple(category["exemplars"]) for name, category in document["categories"].items()
    }
    public = [orjson.loads(line) for line in PUBLIC.read_bytes().splitlines() if line.strip()]
    _, ordinary = jailbreak_bank()
    for row in public:
        if row["label"] in exemplars:
            exemplars[row["label"]] += (row["text"],)
    benign = [*document["benign"], *(r["text"] for r in public if r["label"] == "benign")]
    return Bank(
        exemplars,
        tuple(dict.fromkeys([*benign, *ordinary])),
        tuple(r["text"] for r in public if r["label"] == "unsafe"),
    )


#: an entry's threshold unless it sets one: it flags 3.3 % of the public evaluation's
#: ``dev`` benign rows (28 of 856; 29 before the multilingual reading learnt ordinary
#: requests; the model fitted on the bank before the red-team tools' probes flagged 3.6 %
#: at 0.4, with less recall than this one at 0.5)
DEFAULT_THRESHOLD = 0.5
#: the multilingual reading's margin (the mean cosine to the nearest harmful exemplars
#: less that to the nearest benign ones) that flags 1 % of the public evaluation's ``dev``
#: translations of Django's messages reads as the default threshold; ``OTHER_SLOPE``
#: was set, not fitted, as the jailbreak signal's (a margin 0.05 higher reads 0.8)
OTHER_MARGIN_AT_THRESHOLD = 0.061
OTHER_SLOPE = 27.0
_AT_THRESHOLD = float(np.log(DEFAULT_THRESHOLD / (1 - DEFAULT_THRESHOLD)))


@dataclass(frozen=True)
class CrossLingualSafety:
    """Requests for harmful content written in other languages.

    The safety model reads wording and meaning through English ("如何在家里制作炸弹?", how
    to make a bomb at home, scored 0.001). A chunk written in another language
    (``crosslingual.other_language``) is also read by the multilingual sentence model, in
    whose space a sentence and its translation lie close: the chunk whole (and, in a chunk
    of ``ALONE_FROM`` sentences or more, each sentence alone) is unsafe by how much nearer
    it lies to the bank's harmful exemplars than to its benign ones, and of the category
    whose exemplars lie nearest. The request keeps the riskier of the two readings.
    """

    encoder: MultilingualEncoder
    unsafe: FloatArray
    benign: FloatArray
    #: each category's exemplars, in the safety model's order of ``categories``
    categories: tuple[FloatArray, ...]

    @classmethod
    def fit(
        cls, encoder: MultilingualEncoder, bank: Bank, categories: Sequence[str]
    ) -> CrossLingualSafety:
        by_category = tuple(encoder.embed_bank(bank.exemplars.get(c, ())) for c in categories)
        unsafe = np.concatenate([*by_category, encoder.embed_bank(bank.uncategorised)])
        return cls(encoder, unsafe, encoder.embed_bank(bank.benign), by_category)

    def chunk_probabilities(
        self, chunks: Sequence[str]
    ) -> tuple[list[int], npt.NDArray[np.float64]]:
        """The chunks written in another language (their indices), and each one's
        ``P(category)`` row: the riskiest of the chunk whole and its sentences alone."""
        chosen, texts, owners = foreign_readings(chunks)
        rows = np.zeros((len(chosen), len(self.categories)))
        if not texts:
            return chosen, rows
        vectors = self.encoder.encode(texts)
        margin = top_mean(vectors @ self.unsafe.T) - top_mean(vectors @ self.benign.T)
        unsafe = margin_probability(margin, OTHER_MARGIN_AT_THRESHOLD, OTHER_SLOPE, _AT_THRESHOLD)
        nearest = np.stack(
            [
                top_mean(vectors @ exemplars.T) if len(exemplars) else np.full(len(texts), -np.inf)
                for exemplars in self.categories
            ],
            axis=1,
        )
        for text, owner in enumerate(owners):
            if unsafe[text] > rows[owner].sum():
                rows[owner] = 0.0
                rows[owner, int(np.argmax(nearest[text]))] = unsafe[text]
        return chosen, rows


@dataclass(frozen=True)
class SafetyModel:
    """``P(unsafe)`` and ``P(category | unsafe)`` from one feature matrix.

    A row's features are its word unigrams and bigrams (TF-IDF), its embedding, and the
    mean cosine to its 1 and 5 nearest exemplars of each category and of the benign
    texts. The harm logit of a text of few words is drawn towards ``SILENT`` by its
    ``evidence``: "Shoot me an email" says too little to be scored on. Similarity
    saturates where a raw embedding extrapolates: a key, a hash or a log line lies near
    no exemplar, so it is not scored as harm.
    """

    words: Any  # TfidfVectorizer
    harm: Any  # LogisticRegression: unsafe vs benign
    kind: Any  # LogisticRegression: which category, among unsafe rows
    categories: tuple[str, ...]
    exemplars: FloatArray  # every training text's embedding, in ``owners`` order
    #: each exemplar's category index; ``len(categories)``: benign, one more: uncategorised
    owners: npt.NDArray[np.int64]

    @classmethod
    def fit(cls, encoder: TextEncoder, bank: Bank) -> SafetyModel:
        """Fit on exemplars by category, benign texts, and harmful requests of no known
        category (they teach harm from benign, not which category)."""
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        categories = tuple(bank.exemplars)
        groups = [
            *(bank.exemplars[name] for name in categories),
            bank.benign,
            bank.uncategorised,
        ]
        texts = [text for group in groups for text in group]
        owners = np.asarray(
            [index for index, group in enumerate(groups) for _ in group], dtype=np.int64
        )
        words = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit(texts)
        vectors = encoder.embed(texts)
        model = cls(
            words,
            LogisticRegression(C=REGULARISATION, max_iter=4000),
            LogisticRegression(C=REGULARISATION, max_iter=4000),
            categories,
            vectors,
            owners,
        )
        # each exemplar's similarity leaves itself out, as a new text's would
        design = model.design(texts, vectors, exclude=np.arange(len(texts)))
        model.harm.fit(design, (owners != len(categories)).astype(np.int64))
        named = owners < len(categories)
        model.kind.fit(design[named], owners[named])
        return model

    @classmethod
    def kept(cls, encoder: TextEncoder, bank: Bank) -> SafetyModel:
        """``fit``, read back from disk where a process fitted the same bank with the same
        encoder and code before (``runtime.fitted``)."""
        return kept_model(
            cls,
            "safety",
            encoder.fingerprint,
            (bank.exemplars, bank.benign, bank.uncategorised),
            lambda: cls.fit(encoder, bank),
        )

    def similarity(
        self, vectors: FloatArray, exclude: npt.NDArray[np.int64] | None = None
    ) -> npt.NDArray[np.float64]:
        cosines = vectors @ self.exemplars.T
        if exclude is not None:
            cosines[np.arange(len(cosines)), exclude] = -1.0
        columns = []
        for owner in np.unique(self.owners):
            mine = cosines[:, self.owners == owner]
            for nearest in NEAREST:
                k = min(nearest, mine.shape[1])
                columns.append(np.partition(mine, mine.shape[1] - k, axis=1)[:, -k:].mean(axis=1))
        return SIMILARITY_SCALE * np.stack(columns, axis=1).astype(np.float64)

    def features(
        self,
        texts: list[str],
        vectors: FloatArray,
        exclude: npt.NDArray[np.int64] | None = None,
    ) -> tuple[Any, npt.NDArray[np.float64]]:
        """The one feature path, fitting and scoring alike: the words' sparse TF-IDF block,
        then the dense block of embedding and similarity columns."""
        dense = np.hstack([vectors.astype(np.float64), self.similarity(vectors, exclude)])
        return self.words.transform(texts), dense

    def design(
        self,
        texts: list[str],
        vectors: FloatArray,
        exclude: npt.NDArray[np.int64] | None = None,
    ) -> Any:
        """``features`` stacked into the matrix the models are fitted on."""
        from scipy.sparse import csr_matrix, hstack

        words, dense = self.features(texts, vectors, exclude)
        return hstack([words, csr_matrix(dense)]).tocsr()

    def chunk_probabilities(self, chunks: list[str], vectors: FloatArray) -> ChunkProbabilities:
        """``P(category)`` of each chunk: its own, or its riskiest sentence's; and the
        sentences worth a closer look.

        A chunk of several sentences is scored whole and sentence by sentence (each
        sentence with its own wording and the chunk's embedding), so a harmful request
        that shares its chunk with harmless chatter is not diluted into a pass. A sentence
        that scores ``CLOSER_LOOK`` or more so is worth scoring with its own embedding
        too (``riskier``): with the chatter's, its meaning is the chatter's.
        """
        texts: list[str] = []
        owners: list[int] = []
        contexts: list[str | None] = []  # a sentence's neighbourhood, when a small part
        for index, chunk in enumerate(chunks):
            spans = sentence_spans(chunk)
            scored = [k for k, (s, e) in enumerate(spans) if e - s >= MIN_SENTENCE]
            texts.append(chunk)
            owners.append(index)
            contexts.append(None)
            for k in scored if len(scored) > 1 else []:
                start, end = spans[max(0, k - 1)][0], spans[min(len(spans) - 1, k + 1)][1]
                texts.append(chunk[spans[k][0] : spans[k][1]])
                owners.append(index)
                contexts.append(chunk[start:end] if end - start <= len(chunk) / 2 else None)
        rows = self.probabilities(texts, vectors[owners])
        result = self.riskier(np.zeros((len(chunks), len(self.categories))), owners, rows)
        unsafe = rows.sum(axis=1)
        closer = [
            i
            for i in np.argsort(-unsafe, kind="stable")
            if unsafe[i] >= CLOSER_LOOK and contexts[i] is not None
        ][:CLOSER_LOOKS]
        return ChunkProbabilities(
            result, [owners[i] for i in closer], [str(contexts[i]) for i in closer]
        )

    @staticmethod
    def riskier(
        result: npt.NDArray[np.float64], owners: Sequence[int], rows: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """``result`` (chunks × categories) with each owner's row replaced by the riskier
        (by P(unsafe)) of it and each of its ``rows``."""
        result = result.copy()
        for row, owner in zip(rows, owners, strict=True):
            if row.sum() > result[owner].sum():
                result[owner] = row
        return result

    def probabilities(self, texts: list[str], vectors: FloatArray) -> npt.NDArray[np.float64]:
        """``P(category)`` of each text: rows are texts, columns ``categories``.

        The models' logits are taken block by block (the words' sparse matrix, then the
        dense embedding and similarity columns), as ``design`` stacks them for fitting.
        """
        words, dense = self.features(texts, vectors)
        width = words.shape[1]

        def logits(model: Any) -> npt.NDArray[np.float64]:
            coef = model.coef_
            result: npt.NDArray[np.float64] = (
                words @ coef[:, :width].T + dense @ coef[:, width:].T + model.intercept_
            )
            return result

        weight = evidence(texts, EVIDENCE_WORDS)  # "Shoot me an email" says too little
        harm = weight * logits(self.harm)[:, 0] + (1 - weight) * SILENT
        unsafe = 1.0 / (1.0 + np.exp(-harm))
        kind = logits(self.kind)
        kind = np.exp(kind - kind.max(axis=1, keepdims=True))
        kinds = np.zeros((len(texts), len(self.categories)))
        kinds[:, self.kind.classes_] = kind / kind.sum(axis=1, keepdims=True)
        result: npt.NDArray[np.float64] = unsafe[:, None] * kinds
        return result


def guard_row(
    verdict: GuardVerdict,
    local: npt.NDArray[np.float64],
    categories: Sequence[str],
    codes: Mapping[str, str],
) -> npt.NDArray[np.float64]:
    """``P(category)`` of a text as a guard model judged it (``verdict``).

    ``P(unsafe)`` is shared evenly among the categories of the codes it named (``codes``
    maps a code to its category); where it named no code, it is shared as the fitted
    model shares its own (``local``: the riskiest chunk's row); where it named only codes
    that count as no category here, the text is none of them.
    """
    row = np.zeros(len(categories))
    named = [codes[code] for code in verdict.codes if codes.get(code) in categories]
    for category in named:
        row[categories.index(category)] += verdict.unsafe / len(named)
    if not verdict.codes:
        total = float(local.sum())
        share = local / total if total > 0 else np.full(len(categories), 1 / len(categories))
        row = verdict.unsafe * share
    return row


@dataclass(frozen=True)
class Guard:
    """A guard model the safety signal asks (``text.guard``), with how its codes count."""

    client: GuardClient
    codes: Mapping[str, str]
    on_failure: Literal["local", "error"]

    async def judge(
        self,
        asked: Awaitable[GuardVerdict],
        local: npt.NDArray[np.float64],
        categories: Sequence[str],
    ) -> tuple[npt.NDArray[np.float64] | None, dict[str, Any]]:
        """The guard's row once its verdict (``asked``) comes, and the trace's account of
        it; no row where it gave none and the fitted model judges (``on_failure: local``).
        ``local``: the fitted model's rows (chunks) for the same text."""
        try:
            verdict = await asked
        except GuardUnavailable as error:
            if self.on_failure == "error":
                raise SignalError(f"the guard model gave no verdict: {error}") from error
            return None, {"judged_by": "local", "guard": {"error": str(error)}}
        report = {
            "unsafe": round(verdict.unsafe, 4),
            "codes": list(verdict.codes),
            "calibrated": verdict.calibrated,
        }
        riskiest = local[int(np.argmax(local.sum(axis=1)))]
        row = guard_row(verdict, riskiest, categories, self.codes)
        return row, {"judged_by": "guard", "guard": report}

    async def close(self) -> None:
        await self.client.close()


class SafetyEntry(AsyncSignalEntry):
    categories: tuple[Category, ...] = Field(
        default=(), description="hazard categories that count; empty = every category"
    )
    threshold: float = Field(
        default=DEFAULT_THRESHOLD,
        ge=0,
        le=1,
        description="probability needed, per category and for the categories together "
        "(0.5 flags 3.4 % of the public benign dev rows)",
    )
    thresholds: dict[Category, float] = Field(
        default_factory=dict,
        description="a category's own threshold; such a category is judged by it alone",
    )
    likeliest: bool = Field(
        default=True,
        description="also match an unsafe text (every category together at `threshold`) "
        "whose likeliest category is one of these, though none of them reaches it; false: "
        "only the entry's own categories' probabilities count",
    )
    scope: TextScope = Field(
        default="prompt", description="prompt, or user / conversation to read earlier turns"
    )
    other_languages: bool = Field(
        default=True,
        description="also read text in other languages with a multilingual sentence model "
        "(CrossLingualSafety; needs requirements/multilingual.txt, else English only)",
    )

    @model_validator(mode="after")
    def _thresholds_in_range(self) -> SafetyEntry:
        for category, value in self.thresholds.items():
            if not 0 <= value <= 1:
                raise ValueError(f"threshold of {category} must lie in [0, 1], not {value}")
            if self.categories and category not in self.categories:
                raise ValueError(f"thresholds names {category}, which categories leaves out")
        return self


class SafetySignal(AsyncSignal):
    family: ClassVar[str] = "safety"

    def __init__(
        self,
        entry: SafetyEntry,
        embedder: Embedder,
        model: SafetyModel,
        budget: ReadingBudget,
        crosslingual: CrossLingualSafety | None = None,
        guard: Guard | None = None,
    ) -> None:
        self.name = entry.name
        self.crosslingual = crosslingual
        self.guard = guard
        self.budget = budget
        self.timeout_s = entry.timeout_ms / 1000
        self.scope: TextScope = entry.scope
        self.embedder = embedder
        self.model = model
        chosen: tuple[str, ...] = entry.categories or model.categories
        own: dict[str, float] = {str(c): value for c, value in entry.thresholds.items()}
        self.columns = np.asarray([model.categories.index(c) for c in chosen], dtype=np.int64)
        self.threshold = entry.threshold
        self.limits = np.asarray([own.get(c, entry.threshold) for c in chosen])
        #: the categories judged together (a category with its own threshold is judged alone)
        self.pooled = np.asarray([c not in own for c in chosen])
        self.likeliest = entry.likeliest

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        reading = meaning_reading(evaluation, self.scope, self.budget, self.embedder)
        texts = list(reading.texts)
        if not texts:
            return Outcome(False, 0.0, {"chunks": 0})

        async def score() -> tuple[npt.NDArray[np.float64], dict[str, Any]]:
            if self.guard is None:
                return await local()
            # the guard reads the text while the fitted model does, which judges without it
            guard = self.guard
            asked = asyncio.ensure_future(guard.client.verdict("\n\n".join(texts)))
            try:
                probabilities, report = await local()
                row, account = await guard.judge(asked, probabilities, self.model.categories)
            finally:
                if not asked.done():
                    asked.cancel()
                elif not asked.cancelled():
                    asked.exception()  # read, also where the fitted model failed first
            if row is None:
                return probabilities, {**report, **account}
            return row[None, :], {**report, **account}

        async def local() -> tuple[npt.NDArray[np.float64], dict[str, Any]]:
            embedded = await embed_texts(evaluation, self.embedder, texts)
            pieces = [
                text[start:end]
                for text, chunks in zip(texts, embedded, strict=True)
                for start, end in chunks.spans
            ]
            # chunks in another language, read again with the multilingual model meanwhile
            other = (
                asyncio.ensure_future(
                    run_cpu(self.crosslingual.chunk_probabilities, pieces, owner=evaluation)
                )
                if self.crosslingual is not None
                else None
            )
            vectors = np.concatenate([e.vectors for e in embedded])
            scored = await run_cpu(
                self.model.chunk_probabilities, pieces, vectors, owner=evaluation
            )
            probabilities = scored.probabilities
            if scored.neighbourhoods:
                own = await own_meanings(
                    evaluation, self.embedder, scored.owners, scored.neighbourhoods
                )
                again = await run_cpu(
                    self.model.chunk_probabilities, own.pieces, own.vectors, owner=evaluation
                )
                probabilities = self.model.riskier(probabilities, own.owners, again.probabilities)
            if other is None:
                return probabilities, {}
            chosen, rows = await other
            probabilities = self.model.riskier(probabilities, chosen, rows)
            return probabilities, {"other_language_chunks": len(chosen)}

        # every safety entry of the request reads the same probabilities
        key = ("safety", id(self.model), id(self.guard), self.scope, self.budget)
        probabilities, other = await evaluation.once(key, score)
        return self.outcome(probabilities, {**reading.report, **other})

    def outcome(self, probabilities: npt.NDArray[np.float64], report: dict[str, Any]) -> Outcome:
        """The riskiest chunk's verdict for this entry's categories.

        The entry matches when one of its categories reaches its threshold, when its
        categories together reach ``threshold``, or (with ``likeliest``) when the chunk is
        unsafe (all categories together reach ``threshold``) and its likeliest category is
        one of the entry's: a request torn between weapons and violent crimes is still
        unsafe. A category given a threshold of its own in ``thresholds`` is judged by it
        alone.
        """
        unsafe = probabilities.sum(axis=1)
        riskiest = int(np.argmax(unsafe))
        row = probabilities[riskiest]
        mine = row[self.columns]
        total = float(mine.sum())
        names = [self.model.categories[column] for column in self.columns]
        found = {names[i]: round(float(p), 4) for i, p in enumerate(mine) if p >= self.limits[i]}
        likeliest = int(np.argmax(row))
        pooled = self.columns[self.pooled]
        matched = (
            bool(found)
            or float(row[pooled].sum()) >= self.threshold
            or (
                self.likeliest and float(unsafe[riskiest]) >= self.threshold and likeliest in pooled
            )
        )
        if matched and not found:
            top = int(np.argmax(mine))
            found = {names[top]: round(float(mine[top]), 4)}
        value = {
            "score": round(total, 4),
            "unsafe": round(float(unsafe[riskiest]), 4),
            "categories": found if matched else {},
            "likely": {
                self.model.categories[i]: round(float(p), 4)
                for i, p in enumerate(row)
                if p >= REPORTED
            },
            "chunks": len(probabilities),
            "riskiest_chunk": riskiest,
            **report,
        }
        confidence = max(total, float(unsafe[riskiest])) if matched else total
        return Outcome(matched, min(1.0, confidence), value)


def build(entry: SafetyEntry, resources: Resources) -> SafetySignal:
    embedder = shared_embedder(resources)
    key = ("safety-model", id(embedder))
    model: SafetyModel = resources.get(
        key, lambda: SafetyModel.kept(embedder.encoder, default_bank())
    )
    crosslingual = crosslingual_safety(resources, model) if entry.other_languages else None
    budget = reading_budget(resources)
    return SafetySignal(entry, embedder, model, budget, crosslingual, shared_guard(resources))


def shared_guard(resources: Resources) -> Guard | None:
    """The guard model of ``text.guard`` (one client and one memory for every entry), or
    ``None`` where none is configured."""
    settings = resources.config.text.guard if resources.config is not None else None
    if settings is None:
        return None
    token = None
    if settings.api_key_env is not None:
        token = os.environ.get(settings.api_key_env)
        if not token:
            raise ValueError(f"text.guard.api_key_env: {settings.api_key_env} is not set")

    def make() -> Guard:
        client = GuardClient(
            settings.url,
            settings.model,
            timeout_s=settings.timeout_ms / 1000,
            api_key=token,
            ca_file=settings.ca_file,
            max_chars=settings.max_chars,
            cache_size=settings.cache_size,
        )
        return Guard(client, dict(settings.categories), settings.on_failure)

    guard: Guard = resources.get(("safety-guard", settings.model_dump_json(), token), make)
    return guard


def crosslingual_safety(resources: Resources, model: SafetyModel) -> CrossLingualSafety | None:
    """The multilingual reading of the shipped bank, its benign side with ordinary requests
    in English and Chinese too (``banks/ordinary_requests.jsonl``, as the jailbreak
    signal's multilingual reading has them), or ``None`` where the multilingual sentence
    model is not installed."""

    def fit(encoder: MultilingualEncoder) -> CrossLingualSafety:
        bank = default_bank()
        benign = tuple(dict.fromkeys([*bank.benign, *ordinary_requests()]))
        read = Bank(bank.exemplars, benign, bank.uncategorised)
        return CrossLingualSafety.fit(encoder, read, model.categories)

    return multilingual_reading(resources, ("safety-crosslingual", model.categories), fit)


FAMILY = SignalFamily(
    "safety", SafetyEntry, build, "requests for harmful content, by hazard category"
)
