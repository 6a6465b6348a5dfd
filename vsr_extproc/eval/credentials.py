"""Passwords and PINs written in messages (``vsr-extproc eval pii``, beside ``pii.jsonl``).

``data/credentials_messages.json`` holds, per split, messages with one ``{secret}`` slot
(a password or a PIN told in a sentence, in English and five other languages) and
messages about passwords that hold none; ``dev`` and ``test`` were written by different
writers from different briefs. Each slot is filled twice with a credential drawn by the
split's own generator: different shapes, word lists and seeds, so that no value shape of
``test`` was seen while the detector took form.
"""

from __future__ import annotations

import random
import string
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

MESSAGES = Path(__file__).resolve().parent / "data" / "credentials_messages.json"
FILLS = 2
_SEEDS = {"dev": 7, "test": 4099}
# the words people build passwords from, a list for each split
_WORDS = {
    "dev": ("summer", "monkey", "dragon", "sunshine", "football", "princess", "shadow",
            "master", "freedom", "tigger", "bella", "charlie", "rocket", "maple", "falcon"),
    "test": ("harbor", "winter", "pepper", "garden", "coffee", "silver", "panther", "violet",
             "august", "biscuit", "lemon", "thunder", "orchid", "canyon", "marble"),
}  # fmt: skip


def _password(split: str, chooser: random.Random) -> str:
    words = _WORDS[split]
    shape = chooser.randrange(4)
    if split == "dev":
        if shape == 0:
            alphabet = string.ascii_letters + string.digits + "!@#$%&*"
            return "".join(chooser.choice(alphabet) for _ in range(chooser.randint(8, 16)))
        if shape == 1:
            word = chooser.choice(words).capitalize()
            return f"{word}{chooser.randint(1970, 2025)}{chooser.choice('!#$*')}"
        if shape == 2:
            leet = chooser.choice(words).translate(str.maketrans("aeios", "43105"))
            return f"{leet}{chooser.randint(1, 99)}"
        return f"{chooser.choice(words)}{chooser.randint(100, 9999)}"
    if shape == 0:
        alphabet = string.ascii_letters + string.digits + "-_.+?%"
        return "".join(chooser.choice(alphabet) for _ in range(chooser.randint(10, 20)))
    if shape == 1:
        first, second = chooser.sample(words, 2)
        return f"{first}{chooser.randint(0, 9)}{second.capitalize()}{chooser.choice('!?+')}"
    if shape == 2:
        return (
            f"{chooser.choice(words).capitalize()}{chooser.randint(10, 99)}{chooser.choice('.%&')}"
        )
    return f"{chooser.choice(words)}{chooser.choice('@_#')}{chooser.randint(10, 9999)}"


def _pin(split: str, chooser: random.Random) -> str:
    length = chooser.choice((4, 4, 6) if split == "dev" else (4, 5, 6, 8))
    return "".join(chooser.choice(string.digits) for _ in range(length))


def credential_rows(split: str) -> list[dict[str, Any]]:
    """The split's messages, each slot filled ``FILLS`` times: ``{"text", "spans", "kind"}``
    (``spans`` empty for a message without a credential)."""
    messages = orjson.loads(MESSAGES.read_bytes())[split]
    chooser = random.Random(_SEEDS[split])
    rows = []
    for message in messages["with_secret"]:
        template, kind = message["text"], message["kind"]
        start = template.index("{secret}")
        for _ in range(FILLS):
            value = (_pin if kind == "pin" else _password)(split, chooser)
            text = template[:start] + value + template[start + len("{secret}") :]
            rows.append({
                "text": text, "spans": [(start, start + len(value))], "kind": kind,
                "named": message.get("named"), "writer": message.get("writer"),
            })  # fmt: skip
    for message in messages["without_secret"]:  # a text, or the text with its writer
        text, writer = (
            (message, None)
            if isinstance(message, str)
            else (message["text"], message.get("writer"))
        )
        rows.append({"text": text, "spans": [], "kind": "none", "writer": writer})
    return rows


def evaluate_credentials(split: str) -> dict[str, Any]:
    """Recall of the credentials by kind, the texts without one that are flagged, and the
    findings in a text with one that are not it, through ``find_pii``'s ``secret``."""
    from vsr_extproc.detectors import FindingType, find_pii

    tally: Counter[str] = Counter()
    errors = []
    for row in credential_rows(split):
        text = row["text"]
        found = [(f.start, f.end) for f in find_pii(text, {FindingType.SECRET})]
        if not row["spans"]:
            tally["without"] += 1
            tally["flagged"] += bool(found)
            if found:
                errors.append({"text": text, "flagged": [text[slice(*span)] for span in found]})
            continue
        (start, end) = row["spans"][0]
        hit = any(a < end and start < b for a, b in found)
        tally[f"{row['kind']}_total"] += 1
        tally[f"{row['kind']}_found"] += hit
        if row["named"] is False:
            tally["unnamed_total"] += 1
            tally["unnamed_found"] += hit
            tally[f"unnamed_total_{row['writer']}"] += 1
            tally[f"unnamed_found_{row['writer']}"] += hit
        tally["other_spans"] += sum(not (a < end and start < b) for a, b in found)
        if not hit:
            errors.append({"text": text, "missed": text[start:end]})
    return {
        "split": split,
        "passwords": {"found": tally["password_found"], "total": tally["password_total"]},
        "pins": {"found": tally["pin_found"], "total": tally["pin_total"]},
        # of those, the later writers' credentials that no word names (both kinds)
        "unnamed": {"found": tally["unnamed_found"], "total": tally["unnamed_total"]},
        "unnamed_by_writer": {
            key.removeprefix("unnamed_total_"): {
                "found": tally[key.replace("total", "found")],
                "total": total,
            }
            for key, total in sorted(tally.items())
            if key.startswith("unnamed_total_")
        },
        "texts_without_a_credential": {"flagged": tally["flagged"], "total": tally["without"]},
        "other_findings_in_texts_with_one": tally["other_spans"],
        "errors": errors,
    }
