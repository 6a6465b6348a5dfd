"""Attacks written in other languages: the jailbreak signal's multilingual reading.

The jailbreak model reads wording and meaning through English: its n-grams and the shared
embedding model (all-MiniLM-L6-v2) were learnt on English, and an instruction override in
Turkish, Arabic or Chinese scores like any sentence it does not know (0.03–0.4 on
garak-multilingual's payloads). A chunk written in another language (``other_language``)
is therefore also read by a multilingual sentence model (``runtime.multilingual``), in
whose space a sentence and its translation lie close: the chunk (and, in a chunk of
``ALONE_FROM`` sentences or more, each sentence alone: one order among friendly sentences
is lost in their meaning; lines of code are no sentences) is scored by how much nearer it
lies to the bank's attack exemplars than to its benign ones (the mean cosine of the
``NEAREST`` nearest of each), and the request keeps the higher of the two readings.

The exemplars are the jailbreak bank's own, in English (its attacks; its benign
look-alikes, requests and messages heavy with personal data, without the source-code
windows, which the gate keeps out), the English messages of Django's catalogues whose
translations lie in the public evaluation's ``dev`` split (``banks/ui_messages.jsonl``):
software's own text about passwords, permissions and deleting, which a model that knows
only attacks and chat takes for an attack in any language; and ordinary requests in
English and Chinese (``banks/ordinary_requests.jsonl``: WritingBench's writing tasks and
IFEval's prompts), without which a request to write rhyming lyrics, a fan novel or a rap
in another language lay nearer the attacks' rules for an answer than to anything benign.
``MARGIN_AT_THRESHOLD`` and ``SLOPE`` put the margin on the jailbreak score's scale: the
margin that flags 1 % of ``dev``'s Django translations of messages the model never saw
(half of ``dev``'s messages held out) reads as 0.7, the fitted model's score at the
signal's default threshold (0.35 once calibrated, ``signals.jailbreak.CALIBRATION``),
chosen with garak-multilingual's ``dev`` payloads in view; ``SLOPE`` was set, not fitted
(a margin 0.05 higher reads 0.9).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import numpy.typing as npt
import orjson

from vsr_extproc.detectors.code import code_score
from vsr_extproc.signals.base import Resources
from vsr_extproc.signals.language import LanguageDetector

if TYPE_CHECKING:
    from vsr_extproc.runtime.multilingual import MultilingualEncoder

_Reading = TypeVar("_Reading")
BANKS = Path(__file__).resolve().parent.parent / "banks"
UI_MESSAGES = BANKS / "ui_messages.jsonl"
ORDINARY_REQUESTS = BANKS / "ordinary_requests.jsonl"
NEAREST = 5
MARGIN_AT_THRESHOLD = 0.045  # the margin scored 0.7
SLOPE = 27.0  # logit per unit of margin: 0.05 above the threshold's margin scores 0.9
_AT_THRESHOLD = float(np.log(0.7 / 0.3))
SENTENCES = 16  # of a chunk, at most, read alone besides the chunk
ALONE_FROM = 3  # sentences: a chunk of fewer is read whole only
MIN_SENTENCE = 8  # characters; CJK sentences are short in characters

# letters outside the Latin script: a text mostly of them is not English
_NON_LATIN = re.compile(r"[^\W\d_A-Za-z\u00c0-\u024f\u1e00-\u1eff]")
_TOKEN = re.compile(r"[\w'’-]+")
_LETTERS_ONLY = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_CAPITALS = 4  # a run of capitals longer than this is no word of prose (a code, a key)
# English's commonest words: a sentence of English has several, other languages that share
# the alphabet almost none ("in" and "a" are German and Spanish too)
ENGLISH = frozenset(
    re.findall(
        r"\w+",
        """the a an and or but of to in on at by for with from as is are was were be been it
        its this that these those i you he she we they me my your our their not no if so can
        will would should could do does did have has had what which who how when where why
        all any please there here about into just also than then""",
    )
)
MIN_WORDS = 4
ENGLISH_SHARE = 0.15  # below this share of English words, a Latin-script text is another
PROSE_SHARE = 0.6  # of a text's visible characters in words: prose, not code or data
CODE = 0.3  # a text the code detector scores this high is not read as prose
#: the multilingual model's languages written in the Latin script, English among them
LATIN_LANGUAGES = ("en", "de", "es", "fr", "it", "nl", "pl", "pt", "tr")
DETECTED = 0.5  # lingua's confidence that a Latin-script text is one of the others
_DETECTED = 2000  # characters read by the detector: enough to tell, bounded cost
# a sentence ends at a stop and a space, or at a stop of a script written without spaces
_SENTENCE_BREAK = re.compile(r"(?<=[.!?؟])\s+|(?<=[。！？])\s*|\n+")


@lru_cache(maxsize=1024)
def other_language(text: str) -> bool:
    """Whether ``text`` is prose in a language other than English: mostly letters of
    another script, or words of the Latin script among which English's commonest words
    are rare. Code, logs and lists of tokens are not prose, and are left out. (Remembered:
    the jailbreak and safety signals ask it of the same chunks.)"""
    visible = sum(not char.isspace() for char in text)
    if not visible:
        return False
    words = _words(text)
    letters = sum(map(len, words))
    if letters < PROSE_SHARE * visible:
        return False
    foreign = len(_NON_LATIN.findall(text))
    latin = foreign < 6 or foreign < 0.4 * letters
    if latin:
        if len(words) < MIN_WORDS:
            return False
        english = sum(word.lower() in ENGLISH for word in words)
        if english >= ENGLISH_SHARE * len(words):
            return False
    # identifiers and keywords are words too: a file of code is no language's prose
    if code_score(text).score >= CODE:
        return False
    # lists, templates and data in English have few of its common words too: a text in
    # the Latin script must be recognised as one of the model's other languages
    if latin:
        language, confidence = _latin_languages().detect(text[:_DETECTED])
        return language not in (None, "en") and confidence >= DETECTED
    return True


def multilingual_reading(
    resources: Resources, key: Hashable, fit: Callable[[MultilingualEncoder], _Reading]
) -> _Reading | None:
    """A signal's multilingual reading, made by ``fit`` once a process (under ``key``), or
    ``None`` where the multilingual sentence model is not installed. The language detector
    ``other_language`` asks is loaded with it (lingua's models, about a second here), so
    that the first request in another language does not wait for it past its signal's
    timeout."""
    from vsr_extproc.runtime.multilingual import multilingual_encoder

    encoder = multilingual_encoder()
    if encoder is None:
        return None
    _latin_languages()
    reading: _Reading = resources.get(
        key, lambda: fit(encoder), runtime=("embedding", "use-multilingual-v3")
    )
    return reading


@cache
def _latin_languages() -> LanguageDetector:
    return LanguageDetector(LATIN_LANGUAGES)


def _words(text: str) -> list[str]:
    """``text``'s words: its tokens made of letters alone (an apostrophe or a hyphen
    inside), not a key, a code or a long run of Latin capitals (``JVSWK5DJ…``,
    ``AKIA…``, ``QWERTYUIOP``)."""
    found = []
    for token in _TOKEN.findall(text):
        core = token.strip("'’-_")
        if not _LETTERS_ONLY.fullmatch(core):
            continue
        if core.isascii() and core.isupper() and len(core) > _CAPITALS:
            continue
        found.append(core)
    return found


@lru_cache(maxsize=1024)
def sentences_of(text: str) -> tuple[str, ...]:
    """``text``'s sentences of ``MIN_SENTENCE`` characters or more, the first ``SENTENCES``,
    without its lines of code: the reading reads prose, and a request around a script is
    its request's sentences (the script's lines once made a two-sentence request in
    Russian a chunk of many, whose first sentence, read alone, lay nearer an "admin
    override code" attack than anything benign). Remembered: the jailbreak and safety
    readings ask it of the same chunks."""
    found = [piece.strip() for piece in _SENTENCE_BREAK.split(text)]
    prose = (
        piece for piece in found if len(piece) >= MIN_SENTENCE and code_score(piece).score < CODE
    )
    return tuple(itertools.islice(prose, SENTENCES))


def ui_messages() -> tuple[str, ...]:
    """``banks/ui_messages.jsonl``'s texts (written by ``python -m vsr_extproc.eval.public``)."""
    return _bank_texts(UI_MESSAGES)


def ordinary_requests() -> tuple[str, ...]:
    """``banks/ordinary_requests.jsonl``'s texts (the same generator writes them)."""
    return _bank_texts(ORDINARY_REQUESTS)


@cache
def _bank_texts(path: Path) -> tuple[str, ...]:
    """A bank's texts, read once a process: the jailbreak and safety readings both fit
    on the ordinary requests."""
    lines = path.read_bytes().splitlines()
    return tuple(orjson.loads(line)["text"] for line in lines if line.strip())


@dataclass(frozen=True)
class CrossLingualModel:
    """The bank's attack and benign exemplars in the multilingual model's space."""

    encoder: MultilingualEncoder
    attacks: npt.NDArray[np.float32]
    benign: npt.NDArray[np.float32]

    @classmethod
    def fit(
        cls, encoder: MultilingualEncoder, attacks: Sequence[str], benign: Sequence[str]
    ) -> CrossLingualModel:
        return cls(encoder, encoder.embed_bank(attacks), encoder.embed_bank(benign))

    def probabilities(self, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        """P(attack) of each text, from its margin (``MARGIN_AT_THRESHOLD``, ``SLOPE``)."""
        vectors = self.encoder.encode(texts)
        margin = top_mean(vectors @ self.attacks.T) - top_mean(vectors @ self.benign.T)
        return margin_probability(margin, MARGIN_AT_THRESHOLD, SLOPE, _AT_THRESHOLD)

    def chunk_scores(self, chunks: Sequence[str]) -> tuple[list[int], npt.NDArray[np.float64]]:
        """The chunks written in another language (their indices), and each one's score:
        the riskiest of the chunk whole and of its sentences read alone."""
        chosen, texts, owners = foreign_readings(chunks)
        scores = np.zeros(len(chosen))
        if texts:
            np.maximum.at(scores, owners, self.probabilities(texts))
        return chosen, scores


def foreign_readings(chunks: Sequence[str]) -> tuple[list[int], list[str], list[int]]:
    """What a multilingual reading reads of ``chunks``: the indices of those written in
    another language (``other_language``), and the texts read of them — each chunk whole
    and, in a chunk of ``ALONE_FROM`` sentences or more, each sentence alone — with the
    place in those indices of the chunk each text belongs to."""
    chosen = [index for index, chunk in enumerate(chunks) if other_language(chunk)]
    texts: list[str] = []
    owners: list[int] = []
    for place, index in enumerate(chosen):
        sentences = sentences_of(chunks[index])
        pieces = dict.fromkeys(
            [chunks[index], *(sentences if len(sentences) >= ALONE_FROM else ())]
        )
        texts.extend(pieces)
        owners.extend([place] * len(pieces))
    return chosen, texts, owners


def margin_probability(
    margin: npt.NDArray[np.float32], at_threshold: float, slope: float, threshold_logit: float
) -> npt.NDArray[np.float64]:
    """A margin read as a probability: ``at_threshold`` reads as the threshold (whose logit
    is ``threshold_logit``), each unit more adds ``slope`` to the logit."""
    logits = threshold_logit + slope * (margin.astype(np.float64) - at_threshold)
    return np.asarray(1.0 / (1.0 + np.exp(-logits)), dtype=np.float64)


def top_mean(cosines: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Each row's mean of its ``NEAREST`` highest cosines."""
    nearest = min(NEAREST, cosines.shape[1])
    return np.asarray(np.sort(cosines, axis=1)[:, -nearest:].mean(axis=1), dtype=np.float32)
