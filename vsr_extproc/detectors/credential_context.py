"""A learned reading of a value's surroundings: is this token a password or a PIN someone
is handing over?

The rules of ``prose`` find a credential by the words that name it or by where it stands
among words about getting in; their word lists come from the writers whose messages they
were built on, and a writer they never saw phrases it otherwise ("how strong is …?", "I
reused … on five sites", a verb of a language they do not list). This reading weighs the
same evidence as learned weights instead of lists: the characters and words either side
of a password- or PIN-shaped token (the token itself masked), the words of its message
around it, and the token's shape.

Candidates (``candidates``) are the tokens ``prose`` would accept as a password's shape,
words of four letters or more with a number ("Harbor76"), and runs of four to eight digits
that stand alone (not a group of a longer number).
Each becomes hashed features (``feature_indices``: CRC-32 of each feature's string into
``BUCKETS`` buckets), scored by a logistic regression whose weights ship in
``banks/credential_context.bin`` (float32, little-endian, ``BUCKETS`` of them and the
intercept). The fitting (``vsr_extproc.eval.credential_context``) calls the same
``feature_indices``: one feature path.

The score is the regression's, fitted with the negatives reweighted: a rank, not a
calibrated probability. Pure Python (``zlib``, ``array``): a candidate costs about 0.2 ms,
and a text's reading stops after ``MAX_CANDIDATES`` of them. Without the weights file the
reading finds nothing and the rules work alone.
"""

from __future__ import annotations

import math
import re
import sys
import zlib
from array import array
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from vsr_extproc.detectors import prose
from vsr_extproc.detectors.findings import Finding, FindingType

BUCKETS = 1 << 18
WEIGHTS = Path(__file__).resolve().parent.parent / "banks" / "credential_context.bin"
THRESHOLD = 0.9  # chosen on ``dev``, each writer held out in turn (docs/measurements.md)
MAX_CANDIDATES = 64  # a text's first candidates; code and logs hold hundreds, none told
LEFT, RIGHT = 40, 40  # characters read either side for character n-grams
AROUND = 300  # characters either side whose words make the message's topic

_TOKEN = re.compile(r"[^\s\"'`“”’‘«»„‚‹›()\[\]{}<>,;]+")
_WORD = re.compile(r"\w+|[^\w\s]")
_YEAR = re.compile(r"(?:19|20)\d\d")
_WORD_WITH_NUMBER = re.compile(r"[A-Za-z]{4,}\d{1,3}")
_DIGITS_BEFORE = re.compile(r"\d[ -]\Z")
_DIGITS_AFTER = re.compile(r"[ -]\d")


def candidates(text: str) -> Iterator[tuple[int, int]]:
    """Spans of the tokens of ``text`` shaped like a password or a PIN, in order."""
    for match in _TOKEN.finditer(text):
        token, start = match.group().rstrip(".:،؛。，、"), match.start()
        if token.isalpha():
            continue  # most tokens: a word (a password needs a digit or a symbol)
        if token.isdigit() and (
            _DIGITS_BEFORE.search(text, max(0, start - 2), start)
            or _DIGITS_AFTER.match(text, match.end())
        ):
            continue  # a group of a longer number: "07700 900461", "4012 8888 8888"
        stripped = token.lstrip("¿¡")
        start += len(token) - len(stripped)
        token = stripped
        if prose.WRITTEN_WITHOUT_SPACES.search(token):
            # "密码是Kq8#mLp2x": the Latin runs between the script's characters
            for run in prose.LATIN_RUN.finditer(token):
                value = run.group().rstrip(",;:.)")
                if _shaped(value):
                    yield start + run.start(), start + run.start() + len(value)
            continue
        joined = prose.USER_AND_SECRET.fullmatch(token)
        if joined and _shaped(joined.group(3)):
            yield start + joined.start(3), start + joined.end(3)  # "root:Tr0ub4dor"
        elif _shaped(token):
            yield start, start + len(token)


def _shaped(token: str) -> bool:
    if not 4 <= len(token) <= 32:
        return False
    if token.isdigit():
        return len(token) <= 8
    # a word with a number ("Harbor76"), which the rules leave out
    return (
        prose.password_shaped(token) or _WORD_WITH_NUMBER.fullmatch(token.rstrip("!?.")) is not None
    )


def _shape(value: str) -> list[str]:
    features = [f"len{min(len(value), 18) // 3}"]
    if value.isdigit():
        features += ["digits", f"digits{len(value)}"]
        if _YEAR.fullmatch(value):
            features.append("year")
    kinds = (
        ("upper", str.isupper), ("lower", str.islower), ("digit", str.isdigit),
        ("symbol", lambda char: not char.isalnum()),
    )  # fmt: skip
    features += [name for name, test in kinds if any(test(char) for char in value)]
    if value[0].isupper():
        features.append("capital")
    if prose.strong(value):
        features.append("strong")
    if prose.WORD_AND_NUMBER.fullmatch(value.rstrip("!?.")):
        features.append("word_number")
    return features


def features(text: str, start: int, end: int) -> list[str]:
    """The features of the token at ``text[start:end]``: its shape, the words and the
    character n-grams either side (lower-cased, the token itself left out), and the
    words of the message around it."""
    left = text[max(0, start - AROUND) : start].lower()
    right = text[end : end + AROUND].lower()
    found = _shape(text[start:end])
    before = _WORD.findall(left[-LEFT * 2 :])[-4:]
    after = _WORD.findall(right[: RIGHT * 2])[:3]
    for place, word in enumerate(reversed(before)):
        found += [f"L{place}:{word}", f"L:{word}"]
    for place, word in enumerate(after):
        found += [f"R{place}:{word}", f"R:{word}"]
    if before:
        found.append("L01:" + " ".join(before[-2:]))
    near_left, near_right = left[-LEFT:], right[:RIGHT]
    found += [f"before:{_kind(left[-1:])}", f"after:{_kind(right[:1])}"]
    for size in (3, 4, 5):
        found += [f"l{size}:{near_left[i : i + size]}" for i in range(len(near_left) - size + 1)]
        found += [f"r{size}:{near_right[i : i + size]}" for i in range(len(near_right) - size + 1)]
    found += [f"M:{word}" for word in set(_WORD.findall(left + " " + right)) if len(word) > 2]
    return found


def _kind(char: str) -> str:
    """A character's class: what the token is written against."""
    if not char:
        return "edge"
    if char.isspace():
        return "space"
    if char.isdigit():
        return "digit"
    if char.isalpha():
        return "latin" if char <= "\u024f" else "script"
    return char


def feature_indices(text: str, start: int, end: int) -> list[int]:
    """``features`` hashed into ``BUCKETS`` buckets (a feature may repeat: it counts so)."""
    return [
        zlib.crc32(feature.encode("utf-8", "surrogatepass")) % BUCKETS
        for feature in features(text, start, end)
    ]


@cache
def _weights() -> array[float] | None:
    """The shipped weights, the intercept last; None where the file is missing."""
    try:
        data = WEIGHTS.read_bytes()
    except OSError:
        return None
    weights = array("f")
    if len(data) != 4 * (BUCKETS + 1):
        return None  # a file of another model or a truncated one
    weights.frombytes(data)
    if sys.byteorder != "little":
        weights.byteswap()
    return weights


def score(text: str, start: int, end: int) -> float:
    """How much the token at ``text[start:end]`` reads as a credential being told (0-1)."""
    weights = _weights()
    if weights is None:
        return 0.0
    total = weights[BUCKETS] + sum(weights[index] for index in feature_indices(text, start, end))
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, total))))


def find_told_credentials(text: str) -> list[Finding]:
    """The candidates of ``text`` this reading takes for a credential (``THRESHOLD``), at
    confidence 0.6 like the rules' credentials that no word names."""
    return [
        Finding(
            FindingType.SECRET, start, end, 0.6, "pin" if text[start:end].isdigit() else "password"
        )
        for start, end, probability in scored(text)
        if probability >= THRESHOLD
    ]


def scored(text: str) -> Iterator[tuple[int, int, float]]:
    """Each of ``text``'s first ``MAX_CANDIDATES`` candidates and its score."""
    for count, (start, end) in enumerate(candidates(text)):
        if count >= MAX_CANDIDATES:
            return
        yield start, end, score(text, start, end)
