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
of these the machine has (the report lists the lines each gave); and 26 languages the
machine has no sources of, from one upstream tarball each in the Debian archive, pinned by
SHA-256 (``ARCHIVE_SOURCES``: Ruby, Scala, Haskell, Kotlin, Rust, Java, C#, Erlang, OCaml,
Clojure, Elixir, Lua, R, TypeScript, Objective-C, Groovy, D, Nim, Common Lisp, Scheme,
fixed-form Fortran, assembly, Pascal, Verilog, Crystal, CoffeeScript; at most
``ARCHIVE_LINES`` lines each). Their licences vary (GPL, LGPL, Apache, MIT, EPL, BSD): the
code is read, never shipped. Pygments' example files, the image corpus's source of code
screenshots, are never read, nor are the Debian packages ``eval.codewindows`` measures on.

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
from vsr_extproc.eval import corpora

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


def _debian(path: str, sha256: str) -> corpora.Archive:
    return corpora.Archive(f"http://deb.debian.org/debian/pool/main/{path}", sha256)


#: code in languages the machine has no sources of: upstream tarballs from the Debian
#: archive, pinned by hash (``corpora.archive_members``); language: (archive, file endings)
ARCHIVE_SOURCES: dict[str, tuple[corpora.Archive, tuple[str, ...]]] = {
    "ruby": (
        _debian(
            "r/ruby-nokogiri/ruby-nokogiri_1.18.2+dfsg.orig.tar.xz",
            "3fb79bae406a5765602c683a64f983d517c0bad956dada7b3b5f98bb87809c4d",
        ),
        (".rb",),
    ),
    "scala": (
        _debian(
            "j/json4s/json4s_3.5.1+really3.2.10.orig.tar.xz",
            "7b0dd89a60bddd59152a90d8756f91afd89bd614e492f060c5910367354b4cc1",
        ),
        (".scala",),
    ),
    "haskell": (
        _debian(
            "h/haskell-megaparsec/haskell-megaparsec_9.5.0.orig.tar.gz",
            "687008d6ddcadfd6603c805067f005067f0e428856fc83eceed68d0c6fc3da52",
        ),
        (".hs",),
    ),
    "kotlin": (
        _debian(
            "k/kotlinx-coroutines/kotlinx-coroutines_1.0.1.orig.tar.xz",
            "361a1e02f2d223c0d8ee16f5cd3987202264f037a4eff5de0e29334c38d16782",
        ),
        (".kt",),
    ),
    "rust": (
        _debian(
            "r/rust-rand/rust-rand_0.8.5.orig.tar.gz",
            "34af8d1a0e25924bc5b7c43c079c942339d8f0a8b57c39049bef581b46327404",
        ),
        (".rs",),
    ),
    "java": (
        _debian(
            "libc/libcommons-cli-java/libcommons-cli-java_1.6.0.orig.tar.xz",
            "fc764c3dab50817d1c7440b904aa6fc7bbc0064117e42c8b99e28ecdcdd4ab0f",
        ),
        (".java",),
    ),
    "csharp": (
        _debian(
            "d/dbus-sharp/dbus-sharp_0.8.1.orig.tar.gz",
            "0866c001f2d6e01a6f1b4d080db08d25ba1422e34c7d03020e0e70f3de3a9859",
        ),
        (".cs",),
    ),
    "erlang": (
        _debian(
            "e/erlang-luerl/erlang-luerl_1.2.3.orig.tar.gz",
            "5a36b4562b5151d985e03415784fde2bb5577118ffaa496516b798322e58c80a",
        ),
        (".erl",),
    ),
    "ocaml": (
        _debian(
            "o/ocaml-re/ocaml-re_1.10.4.orig.tar.bz2",
            "83eb3e4300aa9b1dc7820749010f4362ea83524742130524d78c20ce99ca747c",
        ),
        (".ml",),
    ),
    "clojure": (
        _debian(
            "c/core-async-clojure/core-async-clojure_1.5.648.orig.tar.xz",
            "4ba28e871c01f7809cc6f843d5e6ce60462fcbf534b1cd047393e1f0c4bf0846",
        ),
        (".clj",),
    ),
    "elixir": (
        _debian(
            "e/elixir-ex-doc/elixir-ex-doc_0.35.1+dfsg.orig.tar.xz",
            "e3957b7ffb8e27718df8cdc6aa76edab70541c42411caef757a773b700a972ca",
        ),
        (".ex", ".exs"),
    ),
    "lua": (
        _debian(
            "l/lua-busted/lua-busted_2.2.0.orig.tar.gz",
            "befca10f573bb476fa1db2e3149150d65f802a71d34d1682679e640665f2dc2b",
        ),
        (".lua",),
    ),
    "r": (
        _debian(
            "r/r-cran-purrr/r-cran-purrr_1.0.4.orig.tar.gz",
            "6c013724651c5daae56a7b8e126baef958d30d4c01dd0dda3d17fc43409b8e54",
        ),
        (".R",),
    ),
    "typescript": (
        _debian(
            "n/node-ajv/node-ajv_8.12.0~ds+~2.1.1.orig.tar.xz",
            "1dc70255d4de2338826c06ba62875d898b7f96764b268ca2ba02b28ff0386acb",
        ),
        (".ts",),
    ),
    "objective-c": (
        _debian(
            "p/price.app/price.app_1.3.0.orig.tar.gz",
            "464bca113731023b43949992456cfa054f2d0fa3e1c5e7b5ca399f3f6f0af49b",
        ),
        (".m",),
    ),
    "groovy": (
        _debian(
            "g/gant/gant_1.9.11.orig.tar.xz",
            "f1cb6826a114fa491fded9a4b797d005bbe1c0b9bc0d1daa013478d9e5532976",
        ),
        (".groovy",),
    ),
    "d": (
        _debian(
            "a/appstream-generator/appstream-generator_0.9.1.orig.tar.gz",
            "b3f8ea7c7cbcce3328319fc655a83e6464e9d1ba57d27e037043ff7123f6930d",
        ),
        (".d",),
    ),
    "nim": (
        _debian(
            "n/nim-regex/nim-regex_0.26.3+ds.orig.tar.xz",
            "f62ad29b94068cb66ab323ae645634035c1cb77893e30cc9707d71311af90cc6",
        ),
        (".nim",),
    ),
    "common-lisp": (
        _debian(
            "c/cl-lparallel/cl-lparallel_20160825.orig.tar.gz",
            "213bc89e6bbabe07fc3bcb21be1021b31f6f2ab1b7a2abb358a01ab9bee69c73",
        ),
        (".lisp",),
    ),
    "scheme": (
        _debian(
            "g/guile-git/guile-git_0.9.0.orig.tar.xz",
            "434fc097db7605a440051b612c13aebadbf3bf05d180eedb6148dd9d63176369",
        ),
        (".scm",),
    ),
    "fortran": (
        _debian(
            "m/minpack/minpack_19961126+dfsg1.orig.tar.gz",
            "7d10509cc0faefcbe38a06453cb13a40aaecd2bebc1594fb7ee0943429d8f6d1",
        ),
        (".f",),
    ),
    "assembly": (
        _debian(
            "x/x264/x264_0.164.3108+git31e19f9.orig.tar.gz",
            "41606cb8e788a7f8c4514290646d4ba5c7bc68d9e1ccd1a73f446a90546913eb",
        ),
        (".asm", ".S"),
    ),
    "pascal": (
        _debian(
            "n/nbc/nbc_1.2.1.r4+dfsg.orig.tar.gz",
            "3c92d789865a04c1e72e9ad274635b50d34b4c010fcd11e55d03c5620c3363a8",
        ),
        (".pas", ".pp", ".lpr"),
    ),
    "verilog": (
        _debian(
            "i/iverilog/iverilog_12.0.orig.tar.gz",
            "a68cb1ef7c017ef090ebedb2bc3e39ef90ecc70a3400afb4aa94303bc3beaa7d",
        ),
        (".v",),
    ),
    "crystal": (
        _debian(
            "c/crystal/crystal_1.14.0+dfsg.orig.tar.xz",
            "4cf851b2ea0a6ba4049a4c82960cec132a113df3e457a1cca24a98afa07faacd",
        ),
        (".cr",),
    ),
    "coffeescript": (
        _debian(
            "c/coffeescript/coffeescript_2.7.0+dfsg1.orig.tar.xz",
            "895e74cbabb1140dfea10ce7b5965223cd1b6cea42becfaa80d570f3cc40cecd",
        ),
        (".coffee",),
    ),
}
#: files no one writes by hand (a parser's tables, bundled and minified code)
_GENERATED = re.compile(r"(?:\.min\.|[/_.-](?:generated|gen|vendor|dist|bundle)[/_.-])", re.I)
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
ARCHIVE_LINES = 1500  # a downloaded language's at most
PROSE_LINES = 6000
FORM_LINES = 5000
REGULARISATION = 2.0
MIN_SHAPES = 3  # an n-gram seen in fewer distinct shapes is not kept

_COMMENT = re.compile(r"^(?:#|//|/\*|\*|--|;|%|\"|!|REM\b|dnl\b|<!--|'|\{-|\(\*)")
_WORDS = re.compile(r"[^\W\d_]+")


def _sentence_like(line: str) -> bool:
    words = _WORDS.findall(line)
    return len(words) >= 4 and sum(w.lower() in FUNCTION_WORDS for w in words) >= 0.25 * len(words)


def _text_lines(text: str, rng: random.Random) -> list[str]:
    lines = [line.strip() for line in text[:200_000].splitlines() if line.strip()]
    if len(lines) > LINES_PER_FILE:
        start = rng.randrange(len(lines) - LINES_PER_FILE)
        lines = lines[start : start + LINES_PER_FILE]
    return lines


def _file_lines(path: str, rng: random.Random) -> list[str]:
    try:
        return _text_lines(Path(path).read_text(encoding="utf-8"), rng)
    except (OSError, UnicodeDecodeError):
        return []


def _sample(pattern: str, limit: int, rng: random.Random) -> list[str]:
    files = sorted(path for path in glob.glob(pattern, recursive=True) if "pygments" not in path)
    rng.shuffle(files)
    lines: list[str] = []
    for path in files:
        lines += _file_lines(path, rng)
        if len(lines) >= limit:
            break
    return lines[:limit]


def _archive_sample(
    archive: corpora.Archive, suffixes: tuple[str, ...], limit: int, rng: random.Random
) -> list[str]:
    """Up to ``limit`` lines of the archive's files in one language, a window of each file,
    files in a shuffled order (a test folder's fixtures are no more likely than code)."""
    files = [
        (name, data)
        for name, data in corpora.archive_members(archive, suffixes)
        if not _GENERATED.search(name)
    ]
    rng.shuffle(files)
    lines: list[str] = []
    for _, data in files:
        try:
            lines += _text_lines(data.decode("utf-8"), rng)
        except UnicodeDecodeError:
            continue
        if len(lines) >= limit:
            break
    return lines[:limit]


def code_lines(rng: random.Random) -> dict[str, list[str]]:
    sampled = {
        language: _sample(pattern, LINES_PER_SOURCE, rng)
        for language, pattern in CODE_SOURCES.items()
    }
    for language, (archive, suffixes) in ARCHIVE_SOURCES.items():
        # a random source of their own: the machine's sources draw as they always did
        own = random.Random(f"{language}/{archive.sha256}")
        sampled[language] = _archive_sample(archive, suffixes, ARCHIVE_LINES, own)
    return {
        language: [line for line in lines if not _COMMENT.match(line) and not _sentence_like(line)]
        for language, lines in sampled.items()
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


def catalogue_messages(path: str) -> dict[Any, Any]:
    """A compiled gettext catalogue's messages (source → translation); none where gettext
    cannot read it."""
    try:
        with open(path, "rb") as catalogue:
            return gettext.GNUTranslations(catalogue)._catalog  # type: ignore[attr-defined, no-any-return]
    except (OSError, ValueError, IndexError):  # a catalogue it cannot parse
        return {}


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
        lines = by_language.setdefault(language, [])
        for source, text in catalogue_messages(path).items():
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
