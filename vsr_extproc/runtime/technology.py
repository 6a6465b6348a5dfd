"""Names of software, programming languages and products, so that a question about Java,
Jenkins or Alexa is not read as naming a person.

An English named-entity model reads a capitalised word it cannot place as a person's name,
and the given-name lists hold many products' names (Julia, Ruby, Alexa, Siri, Mac). Two
public sources say what is a technology instead:

- the names of the languages Pygments highlights (BSD-2-Clause: Java, Ruby, Julia,
  Docker, Terraform …);
- the brand titles of Simple Icons (``simple-icons-pack``, CC0: about 3,500 software
  products, services and companies — Jenkins, Jupyter, Xcode, Spotify, Ruby on Rails);

and, for the products neither lists (Simple Icons removes brands at their owners' request:
Windows, Excel, Alexa, Siri, Cortana), the entity model's own word vectors: a linear model,
fitted when the pipeline loads, that tells the vector of a listed technology's name from
the vector of a given name. A word in a vector-less pipeline (spaCy's small models) is
judged by the lists alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import structlog

log = structlog.get_logger(__name__)

#: how sure the vector model must be that a word no name list holds names a technology.
#: Chosen on Faker's 778 English (US and UK) given names, which are among those it is
#: fitted on: 3 score 0.9 or more (Patty, Rose, Lynda), 7 score 0.85 (and Alexa, Melody,
#: Sherry, Bill); a word this sure is far more often a product than a name
VECTOR_CONFIDENCE = 0.9
#: how sure it must be of a word that is also a given name (Alexa scores 0.89, Siri 0.97):
#: leaning to a technology is enough, as another technology in its sentence must confirm it
GIVEN_NAME_CONFIDENCE = 0.5
_TITLE_WORD = re.compile(r"[A-Z][A-Za-z]+")
_WORD = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class Technology:
    """What the lists and the vectors say about single words and phrases."""

    #: one-word names ("Java", "Jenkins", "Xcode")
    words: frozenset[str]
    #: the names of more than one word, by each of their words ("Ruby" → "Ruby on Rails")
    phrases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: the pipeline's word vectors (a spaCy ``Vectors`` table) and string store, and the
    #: weights (bias last) of the linear model over them; None without vectors
    vectors: Any = field(default=None, compare=False, repr=False)
    strings: Any = field(default=None, compare=False, repr=False)
    weights: np.ndarray | None = field(default=None, compare=False, repr=False)
    #: the pipeline language's function words, which the vector model never saw and so
    #: cannot judge ("I" and "My" read as technologies by their vectors)
    function_words: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    @classmethod
    def load(cls, nlp: Any = None, given: Iterable[str] = ()) -> Technology:
        """The lists, and with ``nlp`` the vector model fitted on its vectors: the listed
        one-word names that are not given names against the given names (``given``) that
        are not listed."""
        words, phrases = _listed()
        technology = cls(words, phrases)
        vectors = getattr(getattr(nlp, "vocab", None), "vectors", None)
        if vectors is None or not getattr(vectors, "shape", (0, 0))[0]:
            return technology
        strings = nlp.vocab.strings
        named = frozenset(given)
        positive = _rows(vectors, strings, sorted(words - named))
        negative = _rows(vectors, strings, sorted(named - words))
        if len(positive) < 10 or len(negative) < 10:
            return technology
        features = np.vstack([positive, negative])
        labels = np.r_[np.ones(len(positive)), np.zeros(len(negative))]
        weights = fit_logistic(features, labels)
        function_words = frozenset(getattr(getattr(nlp, "Defaults", None), "stop_words", ()))
        log.info("technology words loaded", listed=len(words), phrases=len(phrases))
        return cls(words, phrases, vectors, strings, weights, function_words)

    def vector_confidence(self, word: str) -> float | None:
        """How sure the vector model is that ``word`` names a technology; None for a word
        without a vector of its own."""
        if self.weights is None or word not in self.strings:
            return None
        if word.lower() in self.function_words:
            return None
        key = self.strings[word]
        if key not in self.vectors:
            return None
        row = np.asarray(self.vectors[key], dtype=np.float64)
        return float(1.0 / (1.0 + np.exp(-(row @ self.weights[:-1] + self.weights[-1]))))

    def names(self, word: str, confidence: float = VECTOR_CONFIDENCE) -> bool:
        """Whether ``word`` names a technology: the lists hold it, or the vector model is
        ``confidence`` sure of it."""
        if word in self.words:
            return True
        judged = self.vector_confidence(word)
        return judged is not None and judged >= confidence

    def in_phrase(self, text: str, start: int, end: int) -> bool:
        """Whether ``text[start:end]`` lies inside a longer technology's name written in
        ``text`` ("Ruby" in "Is Ruby on Rails …", "Alexa" in "my Amazon Alexa")."""
        # each phrase looked for only where it would start at or before ``start`` and end
        # at or after ``end``
        return any(
            text.find(phrase, max(0, end - len(phrase)), start + len(phrase)) != -1
            for phrase in self.phrases.get(text[start:end], ())
        )

    def mentioned(self, sentence: str, besides: tuple[int, int], *people: frozenset[str]) -> bool:
        """Whether ``sentence`` names a technology outside ``besides`` (a span of it): a
        capitalised word, not the sentence's first, that the lists or the vectors take for
        one and none of the name lists (``people``) holds ("Spotify" in "Can Alexa play
        Spotify playlists?", "Command" in "… or Command on a Mac"), or a longer name
        ("GitHub Actions")."""
        first = True
        for match in _WORD.finditer(sentence):
            word = match.group()
            opening, first = first, False
            if besides[0] <= match.start() < besides[1] or opening:
                continue
            known = any(word in names for names in people)
            if word[0].isupper() and not known and self.names(word):
                return True
            if self.in_phrase(sentence, match.start(), match.end()):
                return True
        return False


def fit_logistic(
    features: np.ndarray, labels: np.ndarray, l2: float = 1.0, steps: int = 50
) -> np.ndarray:
    """Logistic regression by Newton's method with an L2 penalty (not on the bias), each
    class weighted to half the total: the weights, bias last."""
    rows = np.hstack([features, np.ones((len(features), 1))]).astype(np.float64)
    share = labels.mean()
    sample = np.where(labels == 1, 0.5 / share, 0.5 / (1 - share))
    penalty = np.full(rows.shape[1], l2)
    penalty[-1] = 0.0
    weights = np.zeros(rows.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(rows @ weights)))
        gradient = rows.T @ (sample * (p - labels)) + penalty * weights
        hessian = (rows * (sample * p * (1 - p))[:, None]).T @ rows + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if np.abs(step).max() < 1e-6:
            break
    return weights


def _rows(vectors: Any, strings: Any, words: list[str]) -> np.ndarray:
    keys = [strings[word] for word in words if word in strings]
    rows = [vectors[key] for key in keys if key in vectors]
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), -1)


def _listed() -> tuple[frozenset[str], dict[str, tuple[str, ...]]]:
    """Pygments' language names (split at "/" and "+": "JavaScript+Django/Jinja") and
    Simple Icons' titles, each either one capitalised word or a phrase of words."""
    titles: set[str] = set()
    try:
        from pygments.lexers import get_all_lexers

        for name, *_ in get_all_lexers():
            titles.update(re.split(r"[/+]", name))
    except ImportError:
        log.warning("technology names unavailable", source="pygments")
    try:
        import simple_icons_pack

        titles.update(
            getattr(simple_icons_pack, attribute).title
            for attribute in dir(simple_icons_pack)
            if attribute.startswith("SI_")
        )
    except ImportError:
        log.warning("technology names unavailable", source="simple-icons-pack")
    words: set[str] = set()
    phrases: dict[str, set[str]] = {}
    for title in titles:
        title = title.strip()
        if _TITLE_WORD.fullmatch(title):
            words.add(title)
        elif " " in title:
            for word in _WORD.findall(title):
                if word[0].isupper():
                    phrases.setdefault(word, set()).add(title)
    return frozenset(words), {word: tuple(sorted(found)) for word, found in phrases.items()}
