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
banks (requests and questions), and lines of forms, receipts, labels, tables and addresses
generated from Faker with templates written here (not the image corpus's templates), with
maths exercises, machine-readable zones and hashtags.
"""

from __future__ import annotations

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
    """A line of a maths exercise: sums, comparisons, equations, blanks to fill."""
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


def training_shapes(seed: int = 20261202) -> tuple[Counter[str], Counter[str], dict[str, int]]:
    """Shape counts of code lines and of other lines, and how many lines each source gave."""
    rng = random.Random(seed)
    code = code_lines(rng)
    prose = {name: _sample(pattern, PROSE_LINES, rng) for name, pattern in PROSE_SOURCES.items()}
    prose["bank_prose"] = bank_prose()
    prose["forms"] = form_lines(rng, FORM_LINES)
    sources = {name: len(lines) for name, lines in {**code, **prose}.items()}
    positive = Counter(line_shape(line) for lines in code.values() for line in lines)
    negative = Counter(line_shape(line) for lines in prose.values() for line in lines)
    return positive, negative, sources


def fit(positive: Counter[str], negative: Counter[str]) -> dict[str, Any]:
    """Logistic regression over each shape's n-grams, weighted by how often it occurs and
    with both classes weighing the same in all."""
    import numpy as np
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import normalize

    shapes = [*positive, *negative]
    labels = np.array([1] * len(positive) + [0] * len(negative))
    counts = np.array([*positive.values(), *negative.values()], dtype=float)
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
    positive, negative, sources = training_shapes()
    model = fit(positive, negative)
    model["sources"] = sources
    CODE_LINES_BANK.write_bytes(orjson.dumps(model, option=orjson.OPT_SORT_KEYS))
    print(f"{CODE_LINES_BANK}: {len(model['weights'])} n-grams from", file=sys.stderr)
    for name, count in sources.items():
        print(f"  {name:<14}{count:>6} lines", file=sys.stderr)


if __name__ == "__main__":
    main()
