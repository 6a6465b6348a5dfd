"""Fit the credential reading of ``detectors.credential_context`` and measure it by writer.

    python -m vsr_extproc.eval.credential_context            # fit, write the weights
    python -m vsr_extproc.eval.credential_context --by-writer # leave one writer out

What it learns from (``dev`` only; ``test`` never):

- credentials: ``eval pii``'s ``dev`` messages with a ``{secret}`` slot (each filled twice
  by the ``dev`` generator), one group per writer; a candidate that is the credential is a
  positive, every other candidate of the message (a user's name, an order number) a
  negative;
- look-alikes: ``dev``'s messages without a credential, every candidate a negative (a
  group per writer too, held out with the writer's credentials);
- public text: the ``dev`` rows of the jailbreak and safety evaluations (prompts, tool
  results, code, token-heavy traffic);
- technical text on this machine, where password-shaped tokens abound: 2,000-character
  pieces of ``/usr/share/doc``, of the installed Python packages' sources and docs, and
  the messages of the system's gettext catalogues that hold a digit (not Django's: its
  translations are an evaluation set).

Public and technical texts are halved by a digest of the text (``_half``): one half is
fitted on, the other measures false findings.

A candidate of public or technical text that the rules find (a real temporary password in
a support thread) is left out rather than taught as a negative. Negatives are weighted so
that the look-alikes and public rows together weigh ``OTHER_WEIGHT`` times the positives
and the technical text ``TECHNICAL_WEIGHT`` times them (the technical candidates
outnumber the credentials more than ten to one). Weights ship in
``banks/credential_context.bin``; fitting on another machine reads another
``/usr/share/doc`` and gives other weights, so the file is the reference.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import random
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vsr_extproc.detectors import Finding, find_secrets
from vsr_extproc.detectors import credential_context as reader
from vsr_extproc.detectors.prose import find_prose_secrets

TECHNICAL_WEIGHT = 3.0
OTHER_WEIGHT = 0.5
C = 1.0
DOCS, SOURCES, CATALOGUE_MESSAGES = 2_500, 2_500, 60_000
PIECE = 2_000


@dataclass(frozen=True)
class Example:
    indices: list[int]
    label: bool
    group: str  # "writer N", "look-alike N" (its writer), "public", "technical"
    half: int  # 0: fitted on; 1: held out (public and technical text only)
    text: str
    start: int
    end: int


def _half(text: str) -> int:
    return zlib.crc32(text.encode("utf-8", "surrogatepass")) % 2


def _examples(
    text: str, spans: list[tuple[int, int]], group: str, half: int = 0
) -> Iterator[Example]:
    for start, end in reader.candidates(text):
        label = any(a < end and start < b for a, b in spans)
        indices = reader.feature_indices(text, start, end)
        yield Example(indices, label, group, half, text, start, end)


def _unlabelled(text: str, group: str) -> Iterator[Example]:
    """Candidates of text nobody labelled: negatives, but for what the rules find."""
    found = [(f.start, f.end) for f in rules(text)]
    half = _half(text)
    for example in _examples(text, [], group, half):
        if not any(a < example.end and example.start < b for a, b in found):
            yield example


def credential_examples() -> Iterator[Example]:
    from vsr_extproc.eval.credentials import credential_rows

    for row in credential_rows("dev"):
        if row["spans"]:
            yield from _examples(row["text"], row["spans"], f"writer {row.get('writer') or 1}")
        else:
            yield from _examples(row["text"], [], f"look-alike {row.get('writer') or 1}")


def public_examples() -> Iterator[Example]:
    from vsr_extproc.eval.public import jailbreak_rows, safety_rows

    seen: set[str] = set()
    for row in [*jailbreak_rows("dev"), *safety_rows("dev")]:
        if row["text"] not in seen:
            seen.add(row["text"])
            yield from _unlabelled(row["text"], "public")


def technical_texts(seed: int = 5) -> Iterator[str]:
    chooser = random.Random(seed)
    docs = sorted(glob.glob("/usr/share/doc/**/*", recursive=True))
    chooser.shuffle(docs)
    for path in docs[:DOCS]:
        try:
            data = Path(path).read_bytes()
            text = (gzip.decompress(data) if path.endswith(".gz") else data).decode("utf-8")
        except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile):
            continue
        for at in range(0, min(len(text), 4 * PIECE), PIECE):
            yield text[at : at + PIECE]
    import sysconfig

    packages = Path(sysconfig.get_paths()["purelib"])
    sources = sorted(str(p) for pattern in ("**/*.py", "**/*.md") for p in packages.glob(pattern))
    chooser.shuffle(sources)
    for path in sources[:SOURCES]:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        at = chooser.randrange(max(1, len(text) - PIECE))
        yield text[at : at + PIECE]
    from vsr_extproc.eval.codelines import TRANSLATIONS, catalogue_messages

    messages = [
        message
        for path in sorted(glob.glob(TRANSLATIONS))
        for message in catalogue_messages(path).values()
        if isinstance(message, str) and any(char.isdigit() for char in message)
    ]
    chooser.shuffle(messages)
    yield from messages[:CATALOGUE_MESSAGES]


def all_examples() -> list[Example]:
    examples = list(credential_examples())
    examples += public_examples()
    for text in technical_texts():
        examples += _unlabelled(text, "technical")
    return examples


def _weights_of(examples: list[Example]) -> list[float]:
    positives = sum(e.label for e in examples)
    counts = Counter(
        "technical" if e.group == "technical" else "other" for e in examples if not e.label
    )
    return [
        1.0 if e.label
        else TECHNICAL_WEIGHT * positives / counts["technical"] if e.group == "technical"
        else OTHER_WEIGHT * positives / counts["other"]
        for e in examples
    ]  # fmt: skip


def fit(examples: list[Example]) -> Any:
    """A logistic regression on the hashed features of ``examples``."""
    import numpy as np
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import LogisticRegression

    rows = [i for i, e in enumerate(examples) for _ in e.indices]
    columns = [index for e in examples for index in e.indices]
    matrix = csr_matrix(
        (np.ones(len(columns), dtype=np.float32), (rows, columns)),
        shape=(len(examples), reader.BUCKETS),
    )
    labels = np.array([e.label for e in examples])
    model = LogisticRegression(C=C, max_iter=5_000)
    return model.fit(matrix, labels, sample_weight=_weights_of(examples))


def write(model: Any, path: Path = reader.WEIGHTS) -> None:
    import numpy as np

    weights = np.concatenate([model.coef_[0], model.intercept_]).astype("<f4")
    path.write_bytes(weights.tobytes())


def by_writer(examples: list[Example]) -> dict[str, Any]:
    """Each writer held out in turn (and the held-out half of public and technical text):
    recall of the writer's credentials by the rules, and by the rules or the reading at
    each threshold; false findings among the held-out candidates."""
    import numpy as np

    writers = sorted({e.group for e in examples if e.group.startswith("writer")})
    report: dict[str, Any] = {}
    for writer in writers:
        own = {writer, writer.replace("writer", "look-alike")}
        fitted = [e for e in examples if e.group not in own and e.half == 0]
        held = [e for e in examples if e.group in own or e.half == 1]
        model = fit(fitted)
        coef, intercept = model.coef_[0], model.intercept_[0]
        scores = 1 / (1 + np.exp(-np.array([intercept + coef[e.indices].sum() for e in held])))
        positives = [i for i, e in enumerate(held) if e.label and e.group == writer]
        by_rules = {i for i in positives if _rules_find(held[i])}
        negatives = [i for i, e in enumerate(held) if not e.label]
        # the candidates of the writer's own messages that are no credential
        own_negatives = [i for i in negatives if held[i].group in own]

        def flagged(indices: list[int], threshold: float, scores: Any = scores) -> str:
            return f"{sum(scores[i] >= threshold for i in indices)}/{len(indices)}"

        report[writer] = {
            "credentials": len(positives),
            "rules": len(by_rules),
            **{
                f"at {t}": {
                    "rules or reading": len(by_rules | {i for i in positives if scores[i] >= t}),
                    "false findings": flagged(negatives, t),
                    "in the writer's messages": flagged(own_negatives, t),
                }
                for t in (0.5, 0.6, 0.7, 0.8, 0.9)
            },
        }
    return report


def rules(text: str) -> list[Finding]:
    """The credentials the rules find (``find_secrets``, ``find_prose_secrets``), without
    this reading."""
    return [*find_secrets(text), *find_prose_secrets(text)]


def _rules_find(example: Example) -> bool:
    return any(f.start < example.end and example.start < f.end for f in rules(example.text))


def main(argv: list[str] | None = None) -> None:
    import orjson

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--by-writer", action="store_true", help="leave one writer out")
    args = parser.parse_args(argv)
    examples = all_examples()
    print(Counter((e.group, e.label) for e in examples))
    if args.by_writer:
        print(orjson.dumps(by_writer(examples), option=orjson.OPT_INDENT_2).decode())
        return
    write(fit([e for e in examples if e.half == 0]))
    print(f"wrote {reader.WEIGHTS}")


if __name__ == "__main__":
    main()
