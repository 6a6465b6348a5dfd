"""Which names are public figures' (``runtime.figures``), on a bank written here."""

from __future__ import annotations

from pathlib import Path

from vsr_extproc.runtime.figures import PublicFigures, folded, load_figures, read_bank

_FIGURES = [
    ("Newton", "Isaac Newton", "Sir Isaac Newton"),
    ("Armstrong", "Louis Armstrong", "Satchmo"),
    ("Armstrong", "Neil Armstrong"),
    ("Smith", "John Smith"),
    ("Smith", "Adam Smith"),
    ("Shakespeare", "William Shakespeare"),
    ("Oliver",),
    ("Dvořák", "Antonin Dvorak"),
    ("Racine", "Jean Racine"),
]


def _figures() -> PublicFigures:
    return PublicFigures.from_figures(
        _FIGURES,
        listed_names=["Oliver", "Newton", "John", "Adam", "Armstrong", "Racine"],
        common_given=["John", "William"],
        common_surnames=["Smith", "Brown"],
    )


def test_a_figures_full_name_is_theirs_in_any_case_and_with_any_accents() -> None:
    figures = _figures()
    assert figures.named("Isaac Newton")
    assert figures.named("SIR  ISAAC NEWTON")
    assert figures.named("Neil Armstrong")
    assert figures.named("Dvorak")
    assert figures.named("Antonín Dvořák")
    assert folded("Dvořák") == "dvorak"


def test_a_common_given_name_with_a_common_surname_is_anyones() -> None:
    figures = _figures()
    assert not figures.named("John Smith")
    assert figures.named("Adam Smith")  # "Adam" is a given name, not among the commonest
    assert figures.named("William Shakespeare")  # a common given name, a rare surname


def test_one_word_counts_only_when_one_figure_bears_it_and_no_one_else_is_given_it() -> None:
    figures = _figures()
    assert figures.named("Shakespeare")
    assert not figures.named("Armstrong")  # two figures: which one is meant is unknown
    assert not figures.named("Smith")  # two figures, and the commonest surname
    assert not figures.named("Newton")  # a given name in a name list
    assert not figures.named("Racine")  # a surname in a name list
    assert figures.named("Jean Racine")
    assert not figures.named("Oliver")
    assert not figures.named("Isaac")  # no figure's name by itself


def test_the_bank_is_read_as_written_and_a_missing_bank_means_no_figures(tmp_path: Path) -> None:
    text = "# a notice\n#\nNewton|Isaac Newton\n\nMacbeth\n"
    assert read_bank(text) == [("Newton", "Isaac Newton"), ("Macbeth",)]
    assert load_figures((), tmp_path / "missing.txt") is None
    bank = tmp_path / "figures.txt"
    bank.write_text(text, encoding="utf-8")
    loaded = load_figures((), bank)
    assert loaded is not None
    assert loaded.named("Macbeth")
    assert loaded.named("isaac newton")


def test_a_name_found_inside_a_figures_longer_name_is_the_figures() -> None:
    figures = PublicFigures.from_figures(
        [("Napoleon", "Napoleon Bonaparte"), ("Sherlock Holmes",)], listed_names=["Napoleon"]
    )

    def judged(text: str, name: str) -> bool:
        at = text.index(name)
        return figures.named_at(text, at, at + len(name))

    assert judged("Compare Napoleon Bonaparte and Caesar.", "Napoleon")
    assert judged("A scene where Sherlock Holmes meets Macbeth.", "Holmes")
    assert not judged("Ask Napoleon about the invoice.", "Napoleon")
    assert not judged("Napoleon, Bonaparte and Ney", "Napoleon")  # not one run of words
