"""Fit the code-line model of ``detectors.code`` and write ``banks/code_lines.json``.

``python -m vsr_extproc.eval.codelines`` reads source files and prose installed on the
machine it runs on, turns every line into its shape (``detectors.code.line_shape``: words,
numbers and identifiers become one letter each, punctuation stays), fits a logistic
regression on the shapes' character n-grams (``detectors.code.shape_ngrams``, the same
features the detector scores) and writes the weights. Only shapes reach the model, never
the source text, and only weights are shipped.

Code (one language per glob; comment lines and sentence-like lines are left out, since a
comment is prose): Python's standard library, C headers, PyTorch's C++ and CUDA headers,
Cython sources, Perl modules, Vim script, Tcl, CMake modules, PostgreSQL's extension SQL,
Fortran, npm's JavaScript, PHP, shell, CSS, Go, Emacs Lisp, awk and PowerShell — whatever
of these the machine has (the report lists the lines each gave). Pygments' example files,
the image corpus's source of code screenshots, are never read.

Not code: licence texts and Debian copyright files (prose), the prose of this project's
banks (requests and questions), the messages programs show in other languages (gettext
catalogues under ``/usr/share/locale``: sentences in dozens of languages and scripts, the
only prose here not in English; kept apart from the balance of code and the rest, see
``fit``), and lines of forms, receipts, labels, tables and addresses generated from Faker
with templates written here (not the image corpus's templates), with maths exercises (a
third as OCR reads them), machine-readable zones and hashtags.
"""

from __future__ import annotations

import gettext
import glob
import random
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import yaml

from vsr_extproc.detectors.code import (
    CODE_LINES_BANK,
    FUNCTION_WORDS,
    line_shape,
    shape_ngrams,
)

SITE = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
CODE_SOURCES = {
    "python": "/usr/lib/python3.11/**/*.py",
    "c": "/usr/include/**/*.h",
    "cpp": f"{SITE}/site-packages/torch/include/**/*.h",
    "cuda": f"{SITE}/site-packages/torch/include/**/*.cuh",
    "cython": f"{SITE}/site-packages/**/*.pyx",
    "perl": "/usr/share/perl/**/*.pm",
    "vim": "/usr/share/vim/**/*.vim",
    "tcl": "/usr/share/tcltk/**/*.tcl",
    "cmake": "/usr/share/cmake-*/Modules/*.cmake",
    "sql": "/usr/share/postgresql/*/extension/*.sql",
    "fortran": f"{SITE}/site-packages/**/*.f90",
    "javascript": "/usr/lib/node_modules/npm/**/*.js",
    "php": "/usr/lib/google-cloud-sdk/platform/google_appengine/php/**/*.php",
    "shell": "/usr/share/**/*.sh",
    "css": f"{SITE}/site-packages/**/*.css",
    "go": "/usr/share/doc/git/contrib/**/*.go",
    "elisp": "/usr/share/emacs/**/*.el",
    "awk": "/usr/share/doc/**/*.awk",
    "powershell": "/usr/lib/node_modules/**/*.ps1",
}
PROSE_SOURCES = {
    "licences": "/usr/share/common-licenses/*",
    "copyright": "/usr/share/doc/*/copyright",
    "licence_files": f"{SITE}/site-packages/*.dist-info/LICEN[CS]E*",
}
#: gettext catalogues: programs' messages translated into other languages
TRANSLATIONS = "/usr/share/locale/*/LC_MESSAGES/*.mo"
TRANSLATED_LINES = 50  # a language's at most
LINES_PER_FILE = 40
LINES_PER_SOURCE = 3000
PROSE_LINES = 6000
FORM_LINES = 5000
REGULARISATION = 2.0
MIN_SHAPES = 3  # an n-gram seen in fewer distinct shapes is not kept

_COMMENT = re.compile(r"^(?:#|//|/\*|\*|--|;|%|\"|!|REM\b|dnl\b|<!--|'|\{-|\(\*)")
_WORDS = re.compile(r"[^\W\d_]+")


def _sentence_like(line: str) -> bool:
    words = _WORDS.findall(line)
    return len(words) >= 4 and sum(w.lower() in FUNCTION_WORDS for w in words) >= 0.25 * len(words)


def _file_lines(path: str, rng: random.Random) -> list[str]:
    try:
        text = Path(path).read_text(encoding="utf-8")[:200_000]
    except (OSError, UnicodeDecodeError):
        return []
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > LINES_PER_FILE:
        start = rng.randrange(len(lines) - LINES_PER_FILE)
        lines = lines[start : start + LINES_PER_FILE]
    return lines


def _sample(pattern: str, limit: int, rng: random.Random) -> list[str]:
    files = sorted(path for path in glob.glob(pattern, recursive=True) if "pygments" not in path)
    rng.shuffle(files)
    lines: list[str] = []
    for path in files:
        lines += _file_lines(path, rng)
        if len(lines) >= limit:
            break
    return lines[:limit]


def code_lines(rng: random.Random) -> dict[str, list[str]]:
    return {
        language: [
            line
            for line in _sample(pattern, LINES_PER_SOURCE, rng)
            if not _COMMENT.match(line) and not _sentence_like(line)
        ]
        for language, pattern in CODE_SOURCES.items()
    }


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def bank_prose() -> list[str]:
    """Requests and questions of the project's text banks, one line per sentence run."""
    folder = CODE_LINES_BANK.parent
    texts: list[str] = []
    for name in ("domains.yaml", "safety.yaml"):
        texts += _strings(yaml.safe_load((folder / name).read_text(encoding="utf-8")))
    return [line.strip() for text in texts for line in text.splitlines() if len(line) > 20]


#: what marks a message as a template or a command line rather than a sentence; and
#: digits: a message's numbers ("2 copies") taught the model that an OCR'd maths exercise
#: (``1)15 _88212x5=``) is code
_NOT_A_SENTENCE = re.compile(
    r"[%{}()\[\]<>=/\\_|$@#\d]|(?:^|\s)--?\w|\b[A-Z]{2,}[A-Z.]*\b|\s{3,}|\.\.\.$"
)


def translated_lines(rng: random.Random) -> list[str]:
    """Sentences of programs' messages in every language but English, from their gettext
    catalogues, at most ``TRANSLATED_LINES`` lines a language. Templates and command
    lines (placeholders, options, paths) are left out: only text written for people; so
    are lines with brackets, whose use in prose the English sources teach (a message's
    "(w w w)" taught the model that Lisp's ``(map inc (filter odd? xs))`` is prose)."""
    by_language: dict[str, list[str]] = {}
    for path in sorted(glob.glob(TRANSLATIONS)):
        language = Path(path).parts[-3]
        if language.startswith("en"):
            continue
        try:
            with open(path, "rb") as catalogue:
                messages = gettext.GNUTranslations(catalogue)._catalog  # type: ignore[attr-defined]
        except (OSError, ValueError, IndexError):  # a catalogue it cannot parse
            continue
        lines = by_language.setdefault(language, [])
        for source, text in messages.items():
            if not source or not isinstance(text, str):
                continue
            for line in text.splitlines():
                line = line.strip()
                words = _WORDS.findall(line)
                foreign = sum(not word.isascii() for word in words)
                # a language's own words: plain ASCII ones read like code's identifiers,
                # and Haskell's or Lisp's lines are such words side by side
                if (
                    len(words) >= 3
                    and foreign >= len(words) / 3
                    and not _NOT_A_SENTENCE.search(line)
                ):
                    lines.append(line)
    chosen: list[str] = []
    for language in sorted(by_language):
        lines = sorted(set(by_language[language]))
        rng.shuffle(lines)
        chosen += lines[:TRANSLATED_LINES]
    return chosen


def form_lines(rng: random.Random, count: int) -> list[str]:
    """Lines of receipts, labels, tables, forms, addresses, maths exercises, travel
    documents and social posts, from Faker."""
    from faker import Faker

    fake = Faker(["en_US", "de_DE", "fr_FR", "en_GB", "es_ES", "it_IT"])
    fake.seed_instance(rng.randrange(2**31))
    labels = ["Name", "Customer", "Patient", "Date", "Order", "Invoice", "Account", "Ref",
              "Ship to", "From", "Total", "Subtotal", "Tax", "Phone", "Email", "Address",
              "Flight", "Gate", "Seat", "Class", "Dose", "Qty", "Item", "Balance"]  # fmt: skip
    units = ["g", "kg", "ml", "cups", "tbsp", "tsp", "lbs", "pcs", "x"]

    def price() -> str:
        return rng.choice(["$", "€", "£", ""]) + f"{rng.uniform(0.5, 900):,.2f}"

    makers: list[Callable[[], str]] = [
        fake.street_address,
        lambda: f"{fake.city()}, {fake.postcode()}",
        lambda: f"{fake.word().title()} {rng.randint(1, 9)} x {price()}  {price()}",
        lambda: f"{rng.choice(labels)}: {fake.date()}",
        fake.phone_number,
        lambda: f"{rng.choice(labels)}: {fake.name()}",
        lambda: f"{rng.choice(labels).upper()}: {fake.bothify('??-#####').upper()}",
        lambda: "  ".join(
            f"{rng.randint(0, 99999):,}" if rng.random() < 0.6 else f"{rng.random() * 100:.1f}%"
            for _ in range(rng.randint(2, 6))
        ),
        lambda: fake.catch_phrase().title(),
        lambda: f"{rng.choice(labels)} {fake.bothify('?#')}  {fake.time()[:5]}  {fake.city()}",
        fake.email,
        fake.company,
        lambda: f"{fake.job()} - {fake.name()}",
        lambda: fake.sentence(nb_words=rng.randint(3, 14)),
        lambda: f"{fake.word().capitalize()} {rng.randint(1, 500)} {rng.choice(units)}",
        lambda: f"{fake.month_name()} {rng.randint(1, 28)}, {rng.randint(1990, 2030)}",
        lambda: " | ".join(fake.word() for _ in range(rng.randint(2, 5))),
        lambda: f"{rng.randint(1, 20)}. {fake.sentence(nb_words=rng.randint(2, 8))}",
        lambda: f"- {fake.sentence(nb_words=rng.randint(2, 9))}",
        lambda: f"{fake.date()}  {fake.word()}  {price()}  {price()}",
        lambda: f"{fake.name().upper()}",
        lambda: fake.bothify("#### #### #### ####"),
        lambda: _machine_readable(fake, rng),
        lambda: _arithmetic(rng),
        lambda: " ".join(
            rng.choice([f"#{fake.word()}", f"@{fake.user_name()}", fake.word()])
            for _ in range(rng.randint(2, 6))
        ),
    ]
    return [rng.choice(makers)() for _ in range(count)]


def _arithmetic(rng: random.Random) -> str:
    """A line of a maths exercise: sums, comparisons, equations, blanks to fill; a third
    of them as OCR reads a printed sheet (``_ocr_read``)."""
    line = _exercise(rng)
    return _ocr_read(line, rng) if rng.random() < 1 / 3 else line


def _ocr_read(line: str, rng: random.Random) -> str:
    """``line`` as OCR returns printed maths: a blank to fill read as one underscore glued
    to what stands around it (``37 ____ 688`` as ``37_688``), and spaces lost around the
    operators and the parenthesis of a number."""
    line = re.sub(r"\s*_+\s*", "_", line)
    if rng.random() < 0.5:
        line = re.sub(r"\s*([=+×x*/)<>-])\s*", r"\1", line)
    return line


def _exercise(rng: random.Random) -> str:
    a, b, c = rng.randint(1, 99), rng.randint(1, 99), rng.randint(1, 12)
    op = rng.choice(["+", "-", "x", "×", "÷", "/", "*"])
    blank = rng.choice(["____", "__", "?", "...", "= ", ""])
    number = rng.choice(["", f"{rng.randint(1, 20)}) ", f"{rng.randint(1, 20)}. ", "a) ", "Q3 "])
    return rng.choice(
        [
            f"{number}{a} {op} {b} = {blank}",
            f"{number}{a} __ {b}     {c} {op} {b} = {blank}",
            f"{number}Solve: {c}x {op} {a} = {b}",
            f"{number}{c}/{a} + {b}/{c} = {blank}",
            f"{number}x² + {c}x - {a} = 0",
            f"{number}Compare: {a} {rng.choice('<>=')} {b}",
            f"{number}{a} cm + {b} cm = {blank} cm",
        ]
    )


def _machine_readable(fake: Any, rng: random.Random) -> str:
    """A line shaped like a travel document's machine-readable zone: names and numbers
    padded with ``<`` (any length, as OCR reads them)."""
    surname = fake.last_name().upper().replace(" ", "<")
    given = fake.first_name().upper()
    if rng.random() < 0.5:
        text = f"{rng.choice('PIAC')}<{fake.bothify('???').upper()}{surname}<<{given}"
    else:
        text = fake.bothify("?#######<#???######?#######<<<<<<#").upper()
    return (text + "<" * rng.randint(0, 20))[: rng.choice([30, 36, 44, 60])]


def training_shapes(
    seed: int = 20261202,
) -> tuple[Counter[str], Counter[str], Counter[str], dict[str, int]]:
    """Shape counts of code lines, of other lines, and of other languages' sentences (kept
    apart: see ``fit``), and how many lines each source gave."""
    rng = random.Random(seed)
    code = code_lines(rng)
    prose = {name: _sample(pattern, PROSE_LINES, rng) for name, pattern in PROSE_SOURCES.items()}
    prose["bank_prose"] = bank_prose()
    translations = translated_lines(rng)
    prose["forms"] = form_lines(rng, FORM_LINES)
    sources = {name: len(lines) for name, lines in {**code, **prose}.items()}
    sources["translations"] = len(translations)
    positive = Counter(line_shape(line) for lines in code.values() for line in lines)
    negative = Counter(line_shape(line) for lines in prose.values() for line in lines)
    return positive, negative, Counter(line_shape(line) for line in translations), sources


def fit(
    positive: Counter[str], negative: Counter[str], beside: Counter[str] | None = None
) -> dict[str, Any]:
    """Logistic regression over each shape's n-grams, weighted by how often it occurs and
    with code and ``negative`` weighing the same in all.

    ``beside`` (other languages' sentences) are more lines that are not code, which do not
    count in that balance: added to it, they made the code weigh more against everything
    else, and an OCR'd maths exercise (``1)15 _88212x5=``, shape ``9)9 _9x=``) crossed the
    cue threshold of 0.9: 0.911 in the balance, 0.891 apart (measured before the fit's
    maths exercises were also read as OCR reads them)."""
    import numpy as np
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import normalize

    others = negative + (beside or Counter())
    shapes = [*positive, *others]
    labels = np.array([1] * len(positive) + [0] * len(others))
    counts = np.array([*positive.values(), *others.values()], dtype=float)
    balance = np.where(labels == 1, sum(negative.values()) / sum(positive.values()), 1.0)
    vectorizer = CountVectorizer(
        analyzer=shape_ngrams, binary=True, min_df=MIN_SHAPES, dtype=np.float64
    )
    features = normalize(vectorizer.fit_transform(shapes))
    model = LogisticRegression(C=REGULARISATION, max_iter=4000)
    model.fit(features, labels, sample_weight=counts * balance)
    weights = {
        gram: round(float(model.coef_[0][column]), 4)
        for gram, column in sorted(vectorizer.vocabulary_.items())
    }
    return {"intercept": round(float(model.intercept_[0]), 4), "weights": weights}


def main() -> None:
    positive, negative, beside, sources = training_shapes()
    model = fit(positive, negative, beside)
    model["sources"] = sources
    CODE_LINES_BANK.write_bytes(orjson.dumps(model, option=orjson.OPT_SORT_KEYS))
    print(f"{CODE_LINES_BANK}: {len(model['weights'])} n-grams from", file=sys.stderr)
    for name, count in sources.items():
        print(f"  {name:<14}{count:>6} lines", file=sys.stderr)


if __name__ == "__main__":
    main()
