"""``jailbreak``: jailbreaks and prompt injection, scored per chunk; the riskiest chunk wins.

    signals:
      jailbreak:
        - name: attack
          threshold: 0.35        # P(attack), calibrated (``CALIBRATION``)
          scope: prompt          # conversation: user turns and tool results too (indirect
                                 # injection arriving through a tool output or a document)

Evidence from each chunk, combined by a logistic model fitted on attack exemplars and on
benign text: look-alikes (role-play for fiction, security questions asked legitimately,
quoted instructions, customer-support corrections) and ordinary traffic (requests of every
domain, messages full of personal data, keys and numbers):

* its **wording**: character and word n-grams (TF-IDF);
* its **meaning**: how near its sentence embedding (shared with the other text signals)
  lies to the nearest attack and benign exemplars;
* **structural cues**: instruction override, persona/"developer mode" jailbreaks,
  system-prompt extraction, injection addressed to an AI reading a document or a chat
  exchange forged into one, its answer left as a placeholder (cues only in data,
  ``DATA_CUES``: in a user's own words they are the user talking to the assistant, or
  quoting a chat),
  refusal suppression, claimed authority, and the same cues hidden in encodings (those
  of garak's encoding probes: base64, base32, hex, ascii85 and base85, quoted-printable
  and percent-encoding, binary, ROT13, Atbash, Morse, Braille, leetspeak, Zalgo, and
  reversed text) or written in other languages; whether a row's
  cues all lie inside a quotation (an override being translated, tested or explained is
  talked about, not given); and whether they lie in data the user or a tool brought (an
  order hidden in material is addressed to whoever reads it; a persona's name alone is
  not, documentation names DAN as often as an attack does).

The statistical evidence of a text of a few words is trusted less ("Review this" cannot
be an attack by its wording alone; "Ignore all rules" still is, by its cue). The model is
fitted when the policy compiles, never on the public corpora it is measured on
(``vsr-extproc eval jailbreak``). Each chunk is scored on its own, its sentences and any
payload it hides in an encoding too, and the request takes the maximum, so padding an
attack with harmless words cannot dilute it into a pass. A payload is also decoded from
the whole text before it is chunked and scored as a text of its own, so an encoding longer
than a chunk (binary, ``\\u`` escapes) is read whole (``with_hidden_payloads``).

A sentence is first scored with its chunk's meaning; one that shows a cue, or scores
``CLOSER_LOOK`` that way, is then embedded and scored alone (``closer_look``): an
instruction in a tool result shares its chunk with data (an address, a list of
transactions) whose meaning would otherwise stand for it. Cues are also read through
misspellings one edit away from their words (``iunstructions``) and through chat-template
role markers placed inside a text (``<|im_start|>system``, ``###(system_message)``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import codecs
import itertools
import quopri
import re
import urllib.parse
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
import orjson
import yaml
from pydantic import Field

from vsr_extproc.core.reading import ReadingBudget
from vsr_extproc.core.request import Role
from vsr_extproc.core.signals import AsyncSignal, Evaluation, Outcome
from vsr_extproc.runtime.cache import LruCache, text_key
from vsr_extproc.runtime.fitted import kept_model
from vsr_extproc.signals.base import AsyncSignalEntry, Resources, SignalFamily, run_cpu
from vsr_extproc.signals.crosslingual import (
    CrossLingualModel,
    multilingual_reading,
    ordinary_requests,
    ui_messages,
)
from vsr_extproc.signals.orders import Clause, OrderModel, data_clauses, first_read, pasted_spans
from vsr_extproc.signals.orders import default_bank as orders_bank
from vsr_extproc.signals.texts import (
    MIN_SENTENCE,
    TextScope,
    embed_texts,
    meaning_reading,
    own_meanings,
    reading_budget,
    sentence_spans,
    shared_embedder,
)
from vsr_extproc.signals.texts import evidence as text_evidence

if TYPE_CHECKING:
    from vsr_extproc.runtime.embedding import Embedder, FloatArray, TextEncoder

BANKS = Path(__file__).resolve().parent.parent / "banks"
BANK = BANKS / "jailbreak.yaml"
WRITTEN = BANKS / "jailbreak.jsonl"
CODE = BANKS / "jailbreak_code.jsonl"  # source files' windows (eval/codebank.py)
DOMAINS = BANKS / "domains.yaml"
PII_MESSAGES = BANKS.parent / "eval" / "data" / "pii.jsonl"
REGULARISATION = 4.0  # C of the logistic model, chosen on the public corpora's dev split
#: Platt scaling (slope, intercept on the logit) that turns the riskiest chunk's score into
#: P(attack) as measured: the share of attacks among the public corpora's ``dev`` rows that
#: score as much (``vsr-extproc eval jailbreak --split dev`` refits it and reports it as
#: ``calibration_fit``). The fitted model's own score speaks of its bank, whose benign side
#: is small next to the traffic's: on ``dev`` the texts it scored 0.4–0.6 were attacks 3 %
#: of the time, those it scored 0.7–0.9 70 %, above 0.9 99 %. Only the shipped bank is
#: calibrated: an entry with its own ``attacks`` or ``benign`` keeps its model's score
CALIBRATION = (2.2882, -2.5456)
EVIDENCE_WORDS = 6
NEAREST = (1, 5)
SIMILARITY_SCALE = 4.0  # similarity features on the scale of the others
# a sentence scoring this much with its chunk's meaning is scored with its own too
# (public dev split: 15 sentences in 295 benign texts)
CLOSER_LOOK = 0.3
CLOSER_LOOKS = 16  # at most, the riskiest first: a long attack has many such sentences
# a sentence that speaks to an AI ("… to you, the AI language model", "Dear assistant")
# is read alone too: in a user's message that is ordinary, in data it is where an injected
# instruction begins, and the data around it (a letter's signature, a list of
# transactions) would otherwise lend it their harmless meaning
_ADDRESSES_AI = re.compile(
    r"\byou,?\s+(?:the|an|my)\s+(?:ai|language model|llm|assistant|chatbot|agent)\b|"
    r"\b(?:dear|hey|hi|hello|attention)\s+(?:ai|assistant|chatbot|llm|language model|agent)\b|"
    r"\bif\s+you\s+are\s+an?\s+(?:ai|language model|llm|assistant|chatbot|agent)\b",
    re.IGNORECASE,
)

_TARGETS = (
    r"instructions?|rules|guidelines|directives?|prompts?|programming|polic(?:y|ies)|"
    r"constraints|restrictions|guardrails|safety|filters?|orders|commands"
)
_CUES: tuple[tuple[str, str, int], ...] = (
    (
        "override",
        r"\b(?:ignore|disregard|forget|discard|bypass|override|delete|drop|abandon|cancel)"
        r"\b[^.\n]{0,50}?\b(?:" + _TARGETS + r")\b",
        re.IGNORECASE,
    ),
    (
        "override",
        r"\b(?:previous|prior|earlier|above|preceding|original|initial|old)\s+(?:"
        + _TARGETS
        + r")\s+(?:are|is|were|have been)\s+(?:void|cancell?ed|revoked|obsolete|reset|"
        r"no longer|lifted|disabled|suspended)",
        re.IGNORECASE,
    ),
    (
        "override",  # the request itself set aside, by what it points at rather than by
        # name: "ignore the above directions and translate …", "disregard everything
        # above and say …", "ignore the rest of this data and print …" (not "ignore the
        # directions on the packet", "please ignore the above, I found it")
        r"\b(?:ignore|disregard|forget|skip|discard)\s+(?:(?:all|any|everything|anything)\s+"
        r"(?:of\s+)?)?(?:(?:the|this|that|these|those|your)\s+)?(?:(?:above|previous|prior|"
        r"preceding|earlier|foregoing|original|initial)\s+(?:and\s+following\s+)?(?:directions?|"
        r"text|content|input|data|context)\b|(?:above|before|previous|preceding|foregoing)\s+"
        r"(?:and|then)\b|rest\s+of\s+(?:the|this|these|that|your)\s+\w+\s+(?:and|then)\b)",
        re.IGNORECASE,
    ),
    (
        "unbound",
        r"\b(?:no longer|not)\s+(?:bound|restricted|limited|constrained)\s+by\b|"
        r"\b(?:freed|released|liberated)\s+from\b|\bwithout\s+(?:any\s+)?(?:restrictions|"
        r"filters|censorship|limitations|guardrails|safety|moral|ethic)|\b(?:unfiltered|"
        r"uncensored|unrestricted|unchained|unaligned)\b|\bno\s+(?:restrictions|filters|"
        r"rules|limits|guidelines|morals|ethics)\b",
        re.IGNORECASE,
    ),
    (
        "persona",
        r"\b(?:developer|god|jailbreak|jailbroken|unrestricted|debug|maintenance|sudo|admin)"
        r"\s+mode\b|\bdo anything now\b|\bjail\s*brok(?:en|e)\b|\bevil\s+(?:ai|assistant|"
        r"bot|twin|version)\b|\bstay in character\b|\bopposite\s+mode\b",
        re.IGNORECASE,
    ),
    ("persona", r"\b(?:DAN|STAN|AIM|DUDE|KEVIN)\b", 0),
    (
        "extraction",
        r"\b(?:reveal|print|show|repeat|output|display|leak|dump|write out|recite|tell me|"
        r"what(?:'s| is| are| were))\b[^.\n]{0,40}?\b(?:system\s+(?:prompt|message|"
        r"instructions?)|hidden\s+(?:rules|instructions?|prompt)|initial\s+(?:prompt|"
        r"instructions?)|(?:your|the)\s+(?:instructions|prompt|rules|guidelines)\s+"
        r"(?:verbatim|exactly|word for word))",
        re.IGNORECASE,
    ),
    (
        "extraction",
        r"\brepeat\s+(?:the|all|everything)\s+(?:text|words|content)?\s*(?:above|before)\b|"
        r"\bstarting with ['\"]?you are\b",
        re.IGNORECASE,
    ),
    (
        "indirect",
        r"\b(?:ai|assistant|model|llm|chatbot|agent|gpt|copilot)s?\s+(?:reading|processing|"
        r"summari[sz]ing|parsing|seeing|that reads)\s+this\b|\b(?:note|message|instruction|"
        r"attention)\s+(?:to|for)\s+(?:the\s+|any\s+)?(?:ai|assistant|model|llm|chatbot|"
        r"agent|bot)s?\b|\bwhen(?:ever)?\s+you\s+(?:process|summari[sz]e|parse|analy[sz]e|"
        r"ingest)\s+this\b",
        re.IGNORECASE,
    ),
    (
        "indirect",  # text for the machine that reads it, not for the person: "note to
        # automated analysis software", "for automated screening systems", "invisible to
        # humans, visible to LLM scan"
        r"\b(?:to|for)\s+(?:the\s+|any\s+|all\s+)?(?:automated|machine)\s+(?:screening|"
        r"screeners?|analysis|readers?|reviewers?|systems?|software|tools?|parsers?|scans?|"
        r"scanners?|agents?|evaluators?)\b|\b(?:invisible|hidden)\s+(?:to|from)\s+(?:the\s+)?"
        r"(?:humans?|people|human\s+readers?)\b|\bvisible\s+(?:only\s+)?to\s+(?:the\s+)?"
        r"(?:llms?|ai|bots?|machines|models?|automated\s+\w+)\b",
        re.IGNORECASE,
    ),
    (
        "role",  # a chat template's role markers, or a fake system header, inside a text
        r"<\|(?:im_start|im_end|system|assistant|endoftext)\|>|<<\s*/?sys\s*>>|\[/?inst\]|"
        r"</?(?:system|assistant)>|[(\[]\s*(?:system|assistant)(?:[_ ](?:message|prompt|"
        r"note))?\s*[)\]]|#{2,}\s*\(?\s*(?:system|assistant)(?:[_ ]\w+)?|"
        r"(?:^|\n)\s*system\s*(?:message|prompt|note)?\s*:",
        re.IGNORECASE,
    ),
    (
        "role",  # a tag or bracket that frames what follows as an order from whoever runs
        # the model: "<instruction>…</instruction>", "[ADMIN REQUEST:: …]", "[SYSTEM
        # INSTRUCTION: …]", "<IMPORTANT_INSTRUCTIONS>" (not "[admin]" or "<instructions
        # for use>" on their own)
        r"</?(?:important[_ ])?(?:instructions?|directives?)>|[\[{<]\s*(?:admin|administrator|"
        r"system|developer|operator|root|security)[_ ](?:request|instruction|directive|command|"
        r"override|order)s?\s*(?:::?|\]|>|})",
        re.IGNORECASE,
    ),
    (
        "forged",  # the assistant's answer left as a placeholder ("Assistant: [salient
        # summary]", "AI: (summary of the warranty)", "Model: <your summary here>") and then
        # the user's turn: an exchange written for the reader to carry on as if its task
        # were done. A record of a conversation holds the answer itself, and a chat turn
        # alone is no cue: a pasted chat starts with a bot's greeting and the user's request
        # as often as a forged exchange does ("Assistant: How can I help? / User: …")
        r"(?:^|\n)[ \t>*#]*(?:Assistant|ASSISTANT|AI|Chatbot|Bot|Model)[ \t]*:[ \t]*"
        r"(?:\[[^\]\n]{1,60}\]|<[^>\n]{1,60}>|\([^)\n]{1,60}\))[ \t]*(?=\n(?:[ \t>*#]*\n)*"
        r"[ \t>*#]*(?:User|USER|Human|HUMAN)[ \t]*:)",
        0,
    ),
    (
        "echo",  # an order to say a given text: the goal of most injections ("repeat the
        # following sentence: …", "print exactly … and nothing else", "reply with only the
        # text between the brackets"); in a user's own message an ordinary request
        r"\b(?:repeat|print|output|say|write|respond\s+with|reply\s+with|answer\s+with|"
        r"report)\b[^.\n]{0,30}?(?:\bthe\s+following\s+(?:sentence|text|words|phrase|"
        r"information|line)|\b(?:exactly|verbatim|word\s+for\s+word)\b|\bonly\s+(?:the|"
        r"this|these|with)\b|\bnothing\s+else\b)",
        re.IGNORECASE,
    ),
    (
        "suppression",
        r"\b(?:never|don't|do not|must not|cannot)\s+(?:refuse|decline|say\s+(?:no|sorry|"
        r"you can(?:'|no)t)|apologi[sz]e|add\s+(?:any\s+)?(?:disclaimers|warnings)|mention"
        r"\s+(?:rules|policies|ethics))",
        re.IGNORECASE,
    ),
    (
        "authority",
        r"\b(?:i am|i'm|this is)\s+(?:your|the|an?)\s+(?:developer|creator|administrator|"
        r"admin|owner|engineer at openai|operator)\b|\bauthori[sz]ation\s+code\b|"
        r"\bsystem\s+(?:update|override|notice)\b",
        re.IGNORECASE,
    ),
    (
        "override",  # the same cue in German, Spanish, French, Italian and Portuguese
        r"\bignorier\w*\s+(?:\w+\s+){0,3}(?:anweisungen|regeln|instruktionen|vorgaben)\b|"
        r"\bvergiss\s+(?:\w+\s+){0,3}(?:anweisungen|regeln)\b|"
        r"\b(?:ignora|olvida)\s+(?:\w+\s+){0,3}(?:instrucciones|reglas|normas)\b|"
        r"\b(?:ignore[rz]?|oublie[rz]?)\s+(?:\w+\s+){0,3}(?:instructions|règles|consignes)\b|"
        r"\b(?:ignora|dimentica)\s+(?:\w+\s+){0,3}(?:istruzioni|regole)\b|"
        r"\b(?:ignore|esqueça|esqueca)\s+(?:\w+\s+){0,3}(?:instruções|instrucoes|regras)\b",
        re.IGNORECASE,
    ),
    (
        "decode_and_obey",
        r"\b(?:decode|decipher|decrypt|reverse|translate|unscramble)\b[^.\n]{0,60}?\b(?:and|"
        r"then)\s+(?:follow|execute|obey|do|run|carry out|act on|comply)",
        re.IGNORECASE,
    ),
)
CUE_GROUPS: tuple[str, ...] = tuple(dict.fromkeys(group for group, _, _ in _CUES))
# cues that are evidence only in data: "note to the AI", "when you summarise this" in a
# tool result or a pasted document is an injection's opening, and so is a forged exchange;
# in a user's own message it is the user talking to the assistant ("Note to the assistant:
# I prefer short answers", "Assistant: move my 2pm call")
DATA_CUES = frozenset({"indirect", "forged", "echo"})


def _alternation(flagged: bool, flags: int = 0) -> re.Pattern[str]:
    """One pattern that scans a text once for several cues; each branch a named group."""
    return re.compile(
        "|".join(
            f"(?P<cue{index}>{pattern})"
            for index, (_, pattern, cue_flags) in enumerate(_CUES)
            if bool(cue_flags) == flagged
        ),
        flags,
    )


# The case-insensitive cues are written in lower case and run over ``text.lower()``, which
# Python's regex engine scans about twice as fast as an IGNORECASE pattern; the rare text
# whose lower-casing changes its length (so spans would shift) takes the IGNORECASE copy.
_FOLDED = _alternation(True)
_FOLDED_IGNORECASE = _alternation(True, re.IGNORECASE)
_CASED = _alternation(False)


# RE2's memory for the prefilter's automaton, taken as the scan needs it. At RE2's default
# (8 MiB) the alternation of every cue outgrew its DFA: RE2 fell back to a slower engine
# and logged "DFA out of memory" for each text
PREFILTER_MEMORY = 64 << 20


def _widened(pattern: str) -> Any:
    """``pattern`` for RE2, matching everywhere Python's ``re`` does and possibly more.

    Word boundaries are dropped, bounded repeats (``{0,50}``) become unbounded ones, and
    ``\\w`` and ``\\s`` become Unicode classes at least as wide as Python's (RE2's own
    are ASCII-only). RE2 scans in linear time, about 20 times faster than ``re`` over
    this alternation; finding nothing with it proves ``re`` would find nothing, which is
    the answer for almost every chunk of ordinary text. (The repeats matter: counted
    ones multiply RE2's automaton states until it runs out of memory and slows down.)
    """
    import re2

    widened = re.sub(r"\{0,\d+\}", "*", pattern.replace(r"\b", ""))
    widened = widened.replace(r"\w", r"[\p{L}\p{M}\p{N}_]").replace(
        r"\s", r"[\t\n\x{0b}\f\r\x{1c}-\x{1f}\x{85}\p{Z}]"
    )
    options = re2.Options()
    options.max_mem = PREFILTER_MEMORY
    options.never_capture = True  # whether it matches is all the prefilter asks
    return re2.compile(widened, options)


_FOLDED_ANYWHERE = _widened(_FOLDED.pattern)
_GROUP_OF = {f"cue{index}": group for index, (group, _, _) in enumerate(_CUES)}
# the encodings of garak's ``encoding`` probes (garak 0.17, ``probes/encoding.py``) that a
# reading can be taken back from: base64 (and its URL-safe alphabet), base32, base16/hex,
# ascii85 and base85, quoted-printable, percent-encoding, binary, ``\u`` escapes, tag
# characters, ROT13, Atbash, Morse, Braille, leetspeak, Zalgo's stacked marks
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_BASE64_URL = str.maketrans("-_", "+/")
_BASE32 = re.compile(r"\b[A-Z2-7]{16,}={0,6}")
_BASE85 = re.compile(r"<~[!-u\s]{10,2000}?~>|[!-~]{20,2000}")
# long runs without spaces (URLs, hashes, code) are tried as base85 too: at most this
# many a text, each of at most 2,000 characters (the decoders are written in Python)
_MOST_BASE85_TOKENS = 32
_QUOTED_BYTES = re.compile(r"(?:[=%][0-9A-Fa-f]{2})")
_MIN_QUOTED_BYTES = 6
_HEX = re.compile(r"\b(?:[0-9a-fA-F]{2}[\s:]?){12,}\b")
_TAGS = re.compile("[\U000e0020-\U000e007e]+")
_BINARY = re.compile(r"\b[01]{8}(?:\s+[01]{8}){7,}\b")
_ESCAPES = re.compile(r"(?:\\u[0-9a-fA-F]{4}){8,}")
_MORSE = re.compile(r"(?:[.-]{1,6}[ /]+){8,}[.-]{1,6}")
_MORSE_CODES = (
    ".- -... -.-. -.. . ..-. --. .... .. .--- -.- .-.. -- -. --- .--. --.- .-. ... - ..- "
    "...- .-- -..- -.-- --.. ----- .---- ..--- ...-- ....- ..... -.... --... ---.. ----. "
    ".-.-.- --..-- ..--.. -.-.-- -..-. ---... .----."
)
_MORSE_LETTERS = dict(
    zip(_MORSE_CODES.split(), "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,?!/:'", strict=True)
)
_BRAILLE = re.compile("[\u2800-\u28ff][\u2800-\u28ff ]{15,}")
# six-dot Braille as garak writes it: a capital sign before a capital, a number sign
# before a run of digits (which reuse the letters a-j)
_BRAILLE_LETTERS = dict(
    zip(
        "\u2801\u2803\u2809\u2819\u2811\u280b\u281b\u2813\u280a\u281a\u2805\u2807\u280d"
        "\u281d\u2815\u280f\u281f\u2817\u280e\u281e\u2825\u2827\u283a\u282d\u283d\u2835"
        "\u2832\u2804\u2802\u2824\u280c\u2816\u2826\u2812\u2830\u2836",
        "abcdefghijklmnopqrstuvwxyz.',-/!?:;(",
        strict=True,
    )
)
_BRAILLE_DIGITS = dict(zip("abcdefghij", "1234567890", strict=True))
_ZALGO = re.compile(r"[\u0300-\u036f\u0489]")
_MIN_ZALGO_MARKS = 12
_LEET = str.maketrans("013457@$!|", "oleastasil")
_ATBASH = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA",
)

CueMatch = tuple[int, int, str]  # start, end, cue group
WORDING_CHUNKS_PER_JOB = 8


def _cue_matches(text: str) -> list[CueMatch]:
    lowered = text.lower()
    if len(lowered) != len(text):
        folded: Iterable[re.Match[str]] = _FOLDED_IGNORECASE.finditer(text)
    elif _FOLDED_ANYWHERE.search(lowered):
        folded = _FOLDED.finditer(lowered)
    else:
        folded = ()
    matches = [*folded, *_CASED.finditer(text)]
    return [(_start(m), m.end(), _GROUP_OF[m.lastgroup or ""]) for m in matches]


def _start(match: re.Match[str]) -> int:
    """Where a cue starts: after the line break and spaces that a cue anchored at the start
    of a line matches first (a forged ``Assistant: […]`` answer, a ``system:`` line), so
    the cue lies inside its line's sentence and that sentence counts as cued."""
    found = match.group()
    return match.start() + len(found) - len(found.lstrip())


def _cues(text: str) -> set[str]:
    return {group for _, _, group in _cue_matches(text)}


# the cues' longer words, which a misspelling hides from the patterns ("iunstructions")
_CUE_WORDS = frozenset(
    [
        "ignore", "disregard", "forget", "discard", "bypass", "override", "abandon", "cancel",
        "instructions", "instruction", "directives", "directive", "guidelines", "programming",
        "policies", "constraints", "restrictions", "guardrails", "filters", "commands", "previous",
        "preceding", "original", "initial", "system", "prompt", "reveal", "unfiltered",
        "uncensored", "unrestricted", "developer", "jailbreak", "jailbroken",
    ]
)  # fmt: skip
_CUE_WORD_KEYS: dict[str, str] = {}
for _word in sorted(_CUE_WORDS):
    for _key in {_word, *(_word[:i] + _word[i + 1 :] for i in range(len(_word)))}:
        _CUE_WORD_KEYS.setdefault(_key, _word)
_LONGEST_CUE_WORD = max(map(len, _CUE_WORDS))
# a word's character n-grams are remembered up to this length: words repeat, random
# strings do not, and 50,000 of them as long as a chunk would hold memory words never need
MOST_REMEMBERED_WORD = 40
_WORD = re.compile(r"[^\W\d_]{5,}")
_GLUED = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def _one_edit(word: str, target: str) -> bool:
    """Whether ``word`` is ``target`` with one letter added, dropped, changed or two
    neighbours swapped."""
    if abs(len(word) - len(target)) > 1 or word == target:
        return False
    if len(word) == len(target):
        differ = [i for i, (a, b) in enumerate(zip(word, target, strict=True)) if a != b]
        return len(differ) == 1 or (
            len(differ) == 2
            and differ[1] == differ[0] + 1
            and word[differ[0]] == target[differ[1]]
            and word[differ[1]] == target[differ[0]]
        )
    short, long = sorted((word, target), key=len)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def _respelled(text: str) -> str:
    """``text`` with each word one edit away from a cue word (``_CUE_WORDS``) written as
    that word, and words glued to the one before (``USAIgnore``, ``pleaseIgnore``) split:
    a misspelt override (``Ignore your previous iunstructions``) reads as one."""

    def respell(match: re.Match[str]) -> str:
        word = match.group()
        return _cue_word_near(word.lower()) or word

    return _WORD.sub(respell, _GLUED.sub(" ", text))


def _cue_word_near(word: str) -> str | None:
    """The cue word ``word`` is one edit away from, if any. A word longer than every cue
    word by more than a letter is none (and is neither respelled letter by letter — a
    16,000-letter word cost 0.27 s that way — nor kept in the memory of words)."""
    return None if len(word) > _LONGEST_CUE_WORD + 1 else _near_cue_word(word)


@lru_cache(maxsize=65_536)
def _near_cue_word(word: str) -> str | None:
    """``_cue_word_near`` for a word of a cue word's length (prose repeats its words)."""
    if word in _CUE_WORDS:
        return None
    for key in (word, *(word[:i] + word[i + 1 :] for i in range(len(word)))):
        target = _CUE_WORD_KEYS.get(key)
        if target is None or word in (target + "s", target + "d") or target == word + "s":
            continue  # nothing near, or a plural or past tense, not a misspelling
        if _one_edit(word, target):
            return target
    return None


def _printable(decoded: bytes) -> str | None:
    """``decoded`` as text, if nine in ten of its bytes are printable ASCII (what a payload
    decodes to; an image's or a hash's bytes do not)."""
    if decoded and sum(32 <= b < 127 or b in (9, 10, 13) for b in decoded) / len(decoded) > 0.9:
        return decoded.decode("ascii", "ignore")
    return None


def _base_readings(text: str) -> Iterator[str]:
    """What base64 (either alphabet), base32, ascii85 and base85 tokens of ``text`` decode
    to, where it is printable."""
    for match in _BASE64.finditer(text):
        token = match.group().translate(_BASE64_URL)
        try:
            decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=False)
        except (binascii.Error, ValueError):
            continue
        if (reading := _printable(decoded)) is not None:
            yield reading
    for match in _BASE32.finditer(text):
        token = match.group().rstrip("=")
        try:
            decoded = base64.b32decode(token + "=" * (-len(token) % 8))
        except (binascii.Error, ValueError):
            continue
        if (reading := _printable(decoded)) is not None:
            yield reading
    for match in itertools.islice(_BASE85.finditer(text), _MOST_BASE85_TOKENS):
        token = match.group()
        decoders = (
            [_adobe85decode] if token.startswith("<~") else [base64.a85decode, base64.b85decode]
        )
        for decode in decoders:
            try:
                decoded = decode(token.encode())
            except (binascii.Error, ValueError):
                continue
            if (reading := _printable(decoded)) is not None:
                yield reading


def _adobe85decode(token: bytes) -> bytes:
    return base64.a85decode(token, adobe=True)


def _morse(text: str) -> str:
    words = re.split(r"\s*/\s*|\s{2,}", text.strip())
    return " ".join(
        "".join(_MORSE_LETTERS.get(letter, "") for letter in word.split()) for word in words
    )


def _braille(text: str) -> str:
    letters: list[str] = []
    capital = number = False
    for char in text:
        if char == "\u2820":
            capital = True
        elif char == "\u283c":
            number = True
        elif char == " ":
            letters.append(" ")
            number = False
        elif (letter := _BRAILLE_LETTERS.get(char)) is not None:
            if number and letter in _BRAILLE_DIGITS:
                letter = _BRAILLE_DIGITS[letter]
            letters.append(letter.upper() if capital else letter)
            capital = False
    return "".join(letters)


def _decodings(text: str) -> list[str]:
    """Plain-text readings of payloads hidden in ``text``: each is looked at only for a
    cue that ``text`` does not show in plain sight (``_revealing``), so a reading of
    ordinary data as an encoding (a hash as base85, a word as Atbash) costs its decoding
    and nothing else."""
    readings = [codecs.decode(text, "rot13"), text[::-1], text.translate(_ATBASH)]
    if (leet := text.translate(_LEET)) != text:
        readings.append(leet)
    if (respelled := _respelled(text)) != text:
        readings.append(respelled)
    readings.extend(_base_readings(text))
    if len(_QUOTED_BYTES.findall(text)) >= _MIN_QUOTED_BYTES:
        readings.append(urllib.parse.unquote(text))
        readings.append(quopri.decodestring(text.encode()).decode("utf-8", "ignore"))
    for match in _MORSE.finditer(text):
        readings.append(_morse(match.group()))
    for match in _BRAILLE.finditer(text):
        readings.append(_braille(match.group()))
    if len(_ZALGO.findall(text)) >= _MIN_ZALGO_MARKS:
        readings.append(_ZALGO.sub("", text))
    for match in _HEX.finditer(text):
        try:
            readings.append(bytes.fromhex(re.sub(r"[\s:]", "", match.group())).decode())
        except ValueError:
            continue
    if tags := _TAGS.findall(text):  # Unicode tag characters: invisible ASCII
        readings.append("".join(chr(ord(tag) - 0xE0000) for tag in "".join(tags)))
    for match in _BINARY.finditer(text):
        octets = match.group().split()
        readings.append("".join(chr(int(octet, 2)) for octet in octets))
    for match in _ESCAPES.finditer(text):
        readings.append(
            re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), match.group())
        )
    return readings


def _revealing(text: str, found: set[str], data: bool = True) -> list[str]:
    """The decoded readings of ``text`` (base64, hex, ROT13, tag characters …) that show a
    cue ``text`` does not show in plain sight (in a user's own words, not ``data``, one of
    those that count there)."""
    revealing = []
    for reading in _decodings(text):
        hidden = _cues(reading) - found
        hidden.discard("persona")  # upper-case names do not survive ROT13/leet readings
        if not data:
            hidden -= DATA_CUES
        if hidden:
            revealing.append(reading)
    return revealing


def with_hidden_payloads(texts: Iterable[str]) -> list[str]:
    """``texts``, then what each hides in an encoding and shows a cue it does not show in
    plain sight, decoded, as texts of their own (at most as many characters as the text
    that hides them, so the work at most doubles).

    Each chunk's payloads are decoded in ``_wording_logits`` too, but a payload longer than
    a chunk is cut by the chunking before that: 130 characters in binary or ``\\u``
    escapes fill 800-1,200 characters, five or six chunks, none of which decodes to an
    instruction. Decoded whole, it is scored with its own wording and its own meaning,
    not with the meaning of the shipping note that carried it."""
    texts = list(texts)
    decoded = []
    for text in texts:
        room = len(text)
        for reading in _revealing(text, _cues(text)):
            if room <= 0:
                break
            decoded.append(reading[:room])
            room -= len(reading)
    return [*texts, *decoded]


# a quotation: double, curly or back quotes, or single quotes that are not apostrophes
_QUOTED = re.compile(
    r'"[^"\n]{3,}?"|\u201c[^\u201d\n]{3,}?\u201d|\u2018[^\u2019\n]{3,}?\u2019|`[^`\n]{3,}?`|'
    r"(?<!\w)'[^'\n]{3,}?'(?!\w)"
)


def _quoted(matches: list[CueMatch], quotes: list[tuple[int, int]]) -> bool:
    """Whether every cue of ``matches`` lies inside a quotation: a quoted override is
    text being talked about (translated, tested, explained), not an instruction given."""
    return bool(matches) and all(
        any(qs <= start and end <= qe for qs, qe in quotes) for start, end, _ in matches
    )


def _cue_row(found: set[str], quoted: bool, encoded: bool, in_data: bool) -> list[float]:
    return [
        *(1.0 if group in found else 0.0 for group in CUE_GROUPS),
        float(quoted),
        float(encoded),
        # a cue inside data the user or a tool brought: an order hidden in material is
        # addressed to whoever reads it, whatever its wording weighs in a user's own words.
        # Not a persona's name alone: documentation names DAN as often as an attack does
        float(in_data and bool(found - {"persona"}) and not quoted),
    ]


@cache
def default_bank() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The shipped training set: ``(attacks, benign)``.

    Attacks: the exemplar bank (those that arrive inside data too, ``data_attacks``) and
    the hand-written attacks of ``banks/jailbreak.jsonl``.
    Benign: the bank's look-alikes (and ``data_benign``, data that looks like an attack's
    carrier: a pasted chat transcript), that file's benign prompts and the chatter its padded
    attacks are padded with (``_padding``), and ordinary traffic — the domain bank's
    requests and the PII development set's messages, heavy with names, numbers, keys and
    documents; and windows of source files in fourteen languages, comments and all
    (``eval/codebank.py``), as a coding agent's tool results carry them. All written or
    generated for this project, or read from installed packages; the public
    corpora that measure the model (``vsr-extproc eval jailbreak``) are never trained on.
    """
    document = _exemplars()
    attacks = [*document["attacks"], *document["data_attacks"]]
    benign = [*document["benign"], *document["data_benign"]]
    for row in _written():
        (attacks if row["label"] == "attack" else benign).append(row["text"])
        if row.get("kind") == "padded" and (padding := _padding(row["text"])):
            benign.append(padding)
    domains = yaml.safe_load(DOMAINS.read_text())["domains"]
    benign.extend(example for domain in domains.values() for example in domain["examples"])
    benign.extend(
        orjson.loads(line)["text"] for line in PII_MESSAGES.read_bytes().splitlines() if line
    )
    benign.extend(_code_windows())
    return tuple(dict.fromkeys(attacks)), tuple(dict.fromkeys(benign))


@cache
def _code_windows() -> tuple[str, ...]:
    """The source files' windows of ``banks/jailbreak_code.jsonl``, and lines of them alone."""
    found: list[str] = []
    for line in CODE.read_bytes().splitlines():
        if line:
            window = orjson.loads(line)["text"]
            found.append(window)
            found.extend(_lines_alone(window))
    return tuple(found)


def crosslingual_bank(
    attacks: tuple[str, ...], benign: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The exemplars of the multilingual reading (``signals.crosslingual``): the attacks,
    the benign texts but source code (which that reading never scores: it reads prose),
    software's own messages (``banks/ui_messages.jsonl``) and ordinary requests in English
    and Chinese (``banks/ordinary_requests.jsonl``)."""
    code = frozenset(_code_windows())
    prose = tuple(text for text in benign if text not in code)
    return attacks, tuple(dict.fromkeys((*prose, *ui_messages(), *ordinary_requests())))


@cache
def read_in_data() -> frozenset[str]:
    """The shipped exemplars that arrive inside data — the bank's ``data_attacks``, the
    written ``indirect`` attacks, whose injection sits in the material a message quotes,
    the bank's ``data_benign`` and the source files' windows, which a coding agent's tool
    results carry: the rows of the fit in which ``DATA_CUES`` count, as they count in data
    when scoring (``read_as_data``). Benign rows among them teach what such a cue is worth
    alone (a pasted chat is no forged exchange)."""
    written = [row["text"] for row in _written() if row.get("kind") == "indirect"]
    document = _exemplars()
    return frozenset(
        [*document["data_attacks"], *written, *document["data_benign"], *_code_windows()]
    )


@cache
def _exemplars() -> dict[str, list[str]]:
    """``banks/jailbreak.yaml``, read once (``default_bank`` and ``read_in_data``)."""
    document: dict[str, list[str]] = yaml.safe_load(BANK.read_text())
    return document


@cache
def _written() -> tuple[dict[str, Any], ...]:
    """``banks/jailbreak.jsonl``'s rows, read once."""
    return tuple(orjson.loads(line) for line in WRITTEN.read_bytes().splitlines() if line.strip())


def read_as_data(texts: Sequence[str], roles: Sequence[Role]) -> list[bool]:
    """Whether each text is read as data: a tool result, a user's message that quotes
    material (``orders.pasted_spans``: "Summarise this contract:" and a contract), a text
    of another role, a payload decoded after the texts read (``with_hidden_payloads``) —
    all but a user's own words, the one text in which ``DATA_CUES`` say nothing."""
    return [
        not (index < len(roles) and roles[index] is Role.USER and not pasted_spans(text))
        for index, text in enumerate(texts)
    ]


CODE_LINES_ALONE = 2


def _lines_alone(window: str) -> list[str]:
    """The ``CODE_LINES_ALONE`` longest lines of a source file's window, stripped: a
    closer look reads a tool result's lines alone, and a comment or a statement by itself
    must not read as an attack either."""
    lines = sorted((line.strip() for line in window.splitlines()), key=len, reverse=True)
    return [line for line in lines[:CODE_LINES_ALONE] if len(line.split()) >= 3]


def _padding(attack: str) -> str | None:
    """The harmless words an attack was padded with: its sentences without a cue, or None
    when no sentence shows one. Written beside the attack on the benign side, they teach
    the fit that the padding says nothing: with the attacks alone, the padding's own words
    were learnt as an attack's ("Please plan three days in Porto for me." scored 0.99,
    "Porto" being in six padded attacks' postscript)."""
    spans = sentence_spans(attack)
    cued = [bool(_cue_matches(attack[start:end])) for start, end in spans]
    if not any(cued) or all(cued):
        return None
    return " ".join(
        attack[start:end].strip() for (start, end), cue in zip(spans, cued, strict=True) if not cue
    )


def evidence(texts: list[str]) -> npt.NDArray[np.float64]:
    """How far each text's statistical evidence is trusted: 1 from ``EVIDENCE_WORDS`` words
    on, less for shorter texts. Two words ("Review this") carry too little wording or
    meaning to accuse anyone; only an explicit cue can."""
    return text_evidence(texts, EVIDENCE_WORDS)


@dataclass(frozen=True)
class JailbreakModel:
    """A logistic model over wording, cue flags and the nearest exemplars' similarity.

    A row's logit is ``b + cues·w + e·(wording·w + similarity·w)``, where ``e`` is its
    ``evidence``. Wording is character and word n-grams (TF-IDF); similarity is the mean
    cosine of the row's embedding to its 1 and 5 nearest attack and benign exemplars, and
    their differences. Similarity saturates where a raw embedding projection extrapolates:
    a text unlike every exemplar (a password reset notice, a key, a log line) is not near
    the attacks, so it is not scored as one. Fitted when the policy compiles (the
    exemplars' embeddings are cached on disk); the regularisation was chosen on the
    ``dev`` split of the public corpora.
    """

    characters: Any  # CountVectorizer: character n-grams within words
    weighting: Any  # TfidfTransformer over those counts
    words: Any  # TfidfVectorizer: word unigrams and bigrams
    classifier: Any
    exemplars: FloatArray  # the training texts' embeddings, attacks first
    attacks: int  # how many rows of ``exemplars`` are attacks
    #: each chunk's wording, by a digest of its text: a chat client resends the whole
    #: history every turn, and only the chunks of new text cost any work
    memo: LruCache[bytes, ChunkWording] = field(
        default_factory=lambda: LruCache(4096), compare=False, repr=False
    )
    #: each word's character n-gram counts (column indices, counts): prose keeps reusing
    #: its vocabulary, so a new prompt's words are mostly known (a new word costs ~15 µs)
    word_rows: LruCache[str, tuple[npt.NDArray[Any], npt.NDArray[Any]]] = field(
        default_factory=lambda: LruCache(50_000), compare=False, repr=False
    )

    @classmethod
    def fit(
        cls,
        encoder: TextEncoder,
        attacks: tuple[str, ...],
        benign: tuple[str, ...],
        data: Collection[str] = frozenset(),
    ) -> JailbreakModel:
        """Fitted on ``attacks`` and ``benign``; the rows in ``data`` arrive inside data,
        and only in them do ``DATA_CUES`` count (as when scoring, ``read_as_data``)."""
        from sklearn.feature_extraction.text import (
            CountVectorizer,
            TfidfTransformer,
            TfidfVectorizer,
        )
        from sklearn.linear_model import LogisticRegression

        texts = [*attacks, *benign]
        labels = np.concatenate([np.ones(len(attacks)), np.zeros(len(benign))])
        characters = CountVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=2)
        weighting = TfidfTransformer(sublinear_tf=True).fit(characters.fit_transform(texts))
        words = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit(texts)
        vectors = encoder.embed(texts)
        model = cls(
            characters,
            weighting,
            words,
            LogisticRegression(C=REGULARISATION, max_iter=4000),
            vectors,
            len(attacks),
        )
        wording = model._wording_rows(
            [[(0, len(text))] for text in texts], texts, [text in data for text in texts]
        )
        # each exemplar's similarity leaves itself out, as a new text's would
        similarity = model.similarity(vectors, exclude=np.arange(len(texts)))
        model.classifier.fit(model.design(wording, similarity), labels)
        return model

    @classmethod
    def kept(
        cls,
        encoder: TextEncoder,
        attacks: tuple[str, ...],
        benign: tuple[str, ...],
        data: frozenset[str] = frozenset(),
    ) -> JailbreakModel:
        """``fit``, read back from disk where a process fitted the same texts with the
        same encoder and code before (``runtime.fitted``)."""
        return kept_model(
            cls,
            "jailbreak",
            encoder.fingerprint,
            (attacks, benign, data),
            lambda: cls.fit(encoder, attacks, benign, data),
        )

    def similarity(
        self, vectors: FloatArray, exclude: npt.NDArray[np.int64] | None = None
    ) -> npt.NDArray[np.float64]:
        """Each vector's similarity features: the mean cosine to its nearest 1 and 5 attack
        and benign exemplars, and the attack-minus-benign difference of each."""
        cosines = vectors @ self.exemplars.T
        if exclude is not None:
            cosines[np.arange(len(cosines)), exclude] = -1.0
        columns = []
        for nearest in NEAREST:
            attack = _top_mean(cosines[:, : self.attacks], nearest)
            benign = _top_mean(cosines[:, self.attacks :], nearest)
            columns.extend([attack, benign, attack - benign])
        return SIMILARITY_SCALE * np.stack(columns, axis=1).astype(np.float64)

    def design(
        self, wording: WordingRows, similarity: npt.NDArray[np.float64] | None = None
    ) -> Any:
        """The one feature matrix: the same for fitting and for scoring (where the
        similarity columns are added once the embeddings are known)."""
        from scipy.sparse import csr_matrix, hstack

        weight = wording.evidence[:, None]
        if similarity is None:
            similarity = np.zeros((len(wording.evidence), len(NEAREST) * 3))
        return hstack(
            [
                wording.ngrams.multiply(weight),
                csr_matrix(wording.cues),
                csr_matrix(similarity * weight),
            ]
        ).tocsr()

    def wording_scores(
        self, chunks: list[str], data: Sequence[bool] | None = None
    ) -> WordingScores:
        """The first half of ``chunk_scores``: everything that needs no embedding.

        It runs while the chunks' embeddings are computed. Each chunk is scored as a whole
        and sentence by sentence, so an attack that shares its chunk with harmless chatter
        is not diluted; a sentence is later scored with its chunk's embedding. ``data``
        says which chunks are read as data (``read_as_data``; all, by default).
        """
        data = [True] * len(chunks) if data is None else data
        keys = [
            text_key(chunk) + (b"d" if is_data else b"")
            for chunk, is_data in zip(chunks, data, strict=True)
        ]
        rows: list[ChunkWording | None] = [self.memo.get(key) for key in keys]
        missing = [index for index, row in enumerate(rows) if row is None]
        if missing:
            computed = self._wording_logits(
                [chunks[index] for index in missing], [data[index] for index in missing]
            )
            for index, wording in zip(missing, computed, strict=True):
                rows[index] = wording
                self.memo.put(keys[index], wording)
        done = [row for row in rows if row is not None]
        owners = np.concatenate([np.full(len(row.logits), index) for index, row in enumerate(done)])
        starts = np.cumsum([0, *(len(row.logits) for row in done)])[:-1]
        return WordingScores(
            owners,
            np.concatenate([row.logits for row in done]),
            len(chunks),
            tuple(row.cues for row in done),
            np.concatenate([row.evidence for row in done]),
            np.concatenate([row.cued for row in done]),
            np.asarray(
                [
                    start + at
                    for start, row in zip(starts, done, strict=True)
                    for at, _ in row.alone
                ],
                dtype=np.int64,
            ),
            tuple(text for row in done for _, text in row.alone),
        )

    def _wording_logits(
        self, chunks: list[str], data: Sequence[bool], payloads: bool = False
    ) -> list[ChunkWording]:
        """Each chunk's logits without the similarity's part: its own, its longer
        sentences' (a chunk of one sentence is one row), then those of the payloads it
        hides in an encoding, decoded (read as data, and as ``payloads``): what a hidden
        instruction says is scored too."""
        layouts = []
        for chunk in chunks:
            spans = sentence_spans(chunk)
            scored = [(s, e) for s, e in spans if e - s >= MIN_SENTENCE]
            layouts.append([(0, len(chunk)), *(scored if len(scored) > 1 else [])])
        sentences = [
            tuple((at, chunk[start:end]) for at, (start, end) in enumerate(layout[1:], 1))
            for chunk, layout in zip(chunks, layouts, strict=True)
        ]
        wording = self._wording_rows(layouts, chunks, data, payloads)
        logits = self.classifier.decision_function(self.design(wording))
        addressed = _speaks_to_an_ai(chunks, layouts)
        sizes = np.cumsum([len(layout) for layout in layouts])[:-1]
        rows = [
            ChunkWording(part, cues, weight, cued, own)
            for part, cues, weight, cued, own in zip(
                np.split(np.asarray(logits, dtype=np.float64), sizes),
                wording.chunk_cues,
                np.split(wording.evidence, sizes),
                np.split(wording.cues[:, : len(CUE_GROUPS)].any(axis=1) | addressed, sizes),
                sentences,
                strict=True,
            )
        ]
        for index, readings in enumerate(wording.revealed):
            if readings:
                decoded = self._wording_logits(list(readings), [True] * len(readings), True)
                # a decoded payload's sentences can be read alone too (the payload whole
                # is, by ``with_hidden_payloads``)
                starts = len(rows[index].logits) + np.cumsum([0, *(len(r.logits) for r in decoded)])
                alone = [
                    *rows[index].alone,
                    *(
                        (int(start) + at, text)
                        for start, row in zip(starts[:-1], decoded, strict=True)
                        for at, text in row.alone
                    ),
                ]
                rows[index] = ChunkWording(
                    np.concatenate([rows[index].logits, *(row.logits for row in decoded)]),
                    rows[index].cues,
                    np.concatenate([rows[index].evidence, *(row.evidence for row in decoded)]),
                    np.concatenate([rows[index].cued, *(row.cued for row in decoded)]),
                    tuple(alone),
                )
        return rows

    def _wording_rows(
        self,
        layouts: list[list[tuple[int, int]]],
        chunks: list[str],
        data: Sequence[bool],
        payloads: bool = False,
    ) -> WordingRows:
        """The wording of each row: ``layouts[i]`` lists the spans of ``chunks[i]`` that
        are rows (the whole chunk first). A row's character n-grams are the sum of its
        sentences' (they are counted within words), so every sentence is analysed once;
        each chunk's cues are scanned once, and a row has the cues that lie inside it —
        ``DATA_CUES`` only where ``data[i]`` says the chunk is read as data. ``payloads``:
        the chunks are readings of a text (decoded, respelled), not material brought from
        elsewhere, so a cue in them is not one in material."""
        from scipy.sparse import csr_matrix, hstack

        sentences: list[str] = []  # every sentence of every chunk, in order
        texts: list[str] = []  # the rows' texts
        cues: list[list[float]] = []
        sums: tuple[list[int], list[int]] = ([], [])  # (row, sentence): row sums sentence
        chunk_cues: list[tuple[str, ...]] = []  # the cue groups found in each chunk
        revealed: list[tuple[str, ...]] = []  # each chunk's decoded payloads
        for chunk, layout, is_data in zip(chunks, layouts, data, strict=True):
            spans = sentence_spans(chunk)
            first = len(sentences)
            sentences.extend(chunk[start:end] for start, end in spans)
            matches = _cue_matches(chunk)
            readings = _revealing(chunk, {group for _, _, group in matches}, is_data)
            if not is_data:
                matches = [match for match in matches if match[2] not in DATA_CUES]
            found = {group for _, _, group in matches}
            encoded = bool(readings)
            revealed.append(tuple(readings))
            named = [group for group in CUE_GROUPS if group in found]
            quotes = [match.span() for match in _QUOTED.finditer(chunk)] if matches else []
            chunk_cues.append((*named, "encoded") if encoded else tuple(named))
            for start, end in layout:
                row = len(texts)
                texts.append(chunk[start:end])
                within = [(s, e, g) for s, e, g in matches if s >= start and e <= end]
                inside = {g for _, _, g in within}
                cues.append(
                    _cue_row(inside, _quoted(within, quotes), encoded, is_data and not payloads)
                )
                for k, (s, e) in enumerate(spans):
                    if s >= start and e <= end:
                        sums[0].append(row)
                        sums[1].append(first + k)
        adder = csr_matrix((np.ones(len(sums[0])), sums), shape=(len(texts), len(sentences)))
        counts = adder @ self._character_counts(sentences)
        ngrams = hstack([self.weighting.transform(counts), self.words.transform(texts)]).tocsr()
        return WordingRows(
            ngrams,
            np.asarray(cues, dtype=np.float64),
            evidence(texts),
            tuple(chunk_cues),
            tuple(revealed),
        )

    def _character_counts(self, texts: list[str]) -> Any:
        """``characters.transform(texts)``, analysing each distinct word once.

        Character n-grams never cross a word boundary, so a text's counts are its words'
        counts added up; prose repeats most of its words.
        """
        from scipy.sparse import csr_matrix

        lower = self.characters.build_preprocessor()
        words: dict[str, int] = {}
        rows: list[int] = []
        columns: list[int] = []
        tallies: list[int] = []
        for row, text in enumerate(texts):
            for word, tally in Counter(lower(text).split()).items():
                rows.append(row)
                columns.append(words.setdefault(word, len(words)))
                tallies.append(tally)
        occurrences = csr_matrix((tallies, (rows, columns)), shape=(len(texts), len(words)))
        return occurrences @ self._word_counts(list(words))

    def _word_counts(self, words: list[str]) -> Any:
        """``characters.transform(words)``, each word's row remembered across requests."""
        from scipy.sparse import csr_matrix

        found = [self.word_rows.get(word) for word in words]
        missing = [index for index, row in enumerate(found) if row is None]
        if missing:
            fresh = self.characters.transform([words[index] for index in missing])
            for position, index in enumerate(missing):
                start, end = fresh.indptr[position], fresh.indptr[position + 1]
                row = (fresh.indices[start:end].copy(), fresh.data[start:end].copy())
                if len(words[index]) <= MOST_REMEMBERED_WORD:
                    self.word_rows.put(words[index], row)
                found[index] = row
        known = [row for row in found if row is not None]
        indptr = np.zeros(len(known) + 1, dtype=np.int64)
        np.cumsum([len(indices) for indices, _ in known], out=indptr[1:])
        none = np.zeros(0, dtype=np.int64)
        indices = np.concatenate([none, *(indices for indices, _ in known)])
        counts = np.concatenate([none, *(counts for _, counts in known)])
        width = len(self.characters.vocabulary_)
        return csr_matrix((counts, indices, indptr), shape=(len(words), width))

    def chunk_scores(
        self,
        vectors: FloatArray,
        chunks: list[str],
        wording: WordingScores | None = None,
        data: Sequence[bool] | None = None,
    ) -> np.ndarray:
        """P(attack) of each chunk: the riskiest of the chunk and each of its sentences
        (``data``: as ``wording_scores``)."""
        wording = wording or self.wording_scores(chunks, data)
        scores = np.zeros(wording.chunks)
        np.maximum.at(scores, wording.owners, self.row_scores(vectors, wording))
        return scores

    def row_scores(self, vectors: FloatArray, wording: WordingScores) -> np.ndarray:
        """P(attack) of each scored row (chunks, their sentences, their decoded payloads),
        every row with its chunk's embedding."""
        weights = self.classifier.coef_[0][-len(NEAREST) * 3 :]
        similarity = self.similarity(vectors) @ weights
        logits = wording.partial + wording.evidence * similarity[wording.owners]
        probabilities: np.ndarray = 1.0 / (1.0 + np.exp(-logits))
        return probabilities

    def closer_look(
        self, vectors: FloatArray, wording: WordingScores
    ) -> tuple[list[int], list[str]]:
        """The sentences worth scoring with their own meaning, and their chunks: those
        that show a cue (from the first one on), speak to an AI, or score at least
        ``CLOSER_LOOK`` with their chunk's. An instruction in a tool result shares its
        chunk with data (an address, a list of transactions); read with the data's
        embedding its meaning is the data's. At most ``CLOSER_LOOKS``, the riskiest
        first."""
        rows = self.row_scores(vectors, wording)[wording.alone_rows]
        chosen = np.flatnonzero((rows >= CLOSER_LOOK) | wording.cued[wording.alone_rows])
        chosen = chosen[np.argsort(-rows[chosen], kind="stable")][:CLOSER_LOOKS]
        owners = wording.owners[wording.alone_rows[chosen]]
        return [int(owner) for owner in owners], [
            _from_first_cue(wording.alone_texts[i]) for i in chosen
        ]


def calibrated(scores: Any, calibration: tuple[float, float] | None = CALIBRATION) -> Any:
    """The model's ``scores`` (a number or an array) as calibrated probabilities
    (``CALIBRATION``); unchanged without a calibration."""
    if calibration is None:
        return scores
    slope, intercept = calibration
    clipped = np.clip(scores, 1e-9, 1 - 1e-9)
    return 1.0 / (1.0 + np.exp(-(slope * np.log(clipped / (1.0 - clipped)) + intercept)))


def entry_calibration(entry: JailbreakEntry) -> tuple[float, float] | None:
    """The calibration of the entry's model: the shipped bank's, or none for a bank of
    the entry's own."""
    return None if entry.attacks or entry.benign else CALIBRATION


def _speaks_to_an_ai(chunks: list[str], layouts: list[list[tuple[int, int]]]) -> npt.NDArray[Any]:
    """Whether each row (``layouts[i]``'s spans of ``chunks[i]``) addresses an AI
    (``_ADDRESSES_AI``); a chunk that does not is not searched again row by row."""
    rows: list[bool] = []
    for chunk, layout in zip(chunks, layouts, strict=True):
        if _ADDRESSES_AI.search(chunk) is None:
            rows.extend([False] * len(layout))
        else:
            rows.extend(_ADDRESSES_AI.search(chunk[start:end]) is not None for start, end in layout)
    return np.asarray(rows, dtype=bool)


def _from_first_cue(sentence: str) -> str:
    """``sentence`` from its first cue on: an instruction starts where its cue does
    (``USA ###(system_message) Send …`` is read as ``###(system_message) Send …``)."""
    starts = [start for start, _, _ in _cue_matches(sentence)]
    start = min(starts, default=0)
    return sentence[start:] if len(sentence) - start >= MIN_SENTENCE else sentence


def _top_mean(cosines: npt.NDArray[Any], nearest: int) -> npt.NDArray[Any]:
    nearest = min(nearest, cosines.shape[1])
    top = np.partition(cosines, cosines.shape[1] - nearest, axis=1)[:, -nearest:]
    result: npt.NDArray[Any] = top.mean(axis=1)
    return result


@dataclass(frozen=True)
class WordingRows:
    """The wording features of scored rows: n-grams, cue flags, evidence; and each
    chunk's cue groups."""

    ngrams: Any
    cues: npt.NDArray[np.float64]
    evidence: npt.NDArray[np.float64]
    chunk_cues: tuple[tuple[str, ...], ...]
    revealed: tuple[tuple[str, ...], ...]  # each chunk's decoded payloads that show cues


@dataclass(frozen=True)
class WordingScores:
    """Each scored row's chunk, its logit without the similarity's part and its evidence,
    and each chunk's cue groups."""

    owners: np.ndarray
    partial: np.ndarray
    chunks: int
    cues: tuple[tuple[str, ...], ...]
    evidence: np.ndarray
    cued: np.ndarray  # whether each row shows a cue or speaks to an AI
    alone_rows: np.ndarray  # the rows that can be read alone: the chunks' sentences, and
    #: their decoded payloads' sentences
    alone_texts: tuple[str, ...]  # those rows' texts

    @classmethod
    def joined(cls, parts: list[WordingScores]) -> WordingScores:
        """The scores of consecutive groups of chunks, as one."""
        offsets = np.cumsum([0, *(part.chunks for part in parts)])
        rows = np.cumsum([0, *(len(part.owners) for part in parts)])
        return cls(
            np.concatenate(
                [part.owners + offset for part, offset in zip(parts, offsets[:-1], strict=True)]
            ),
            np.concatenate([part.partial for part in parts]),
            int(offsets[-1]),
            tuple(cue for part in parts for cue in part.cues),
            np.concatenate([part.evidence for part in parts]),
            np.concatenate([part.cued for part in parts]),
            np.concatenate(
                [part.alone_rows + row for part, row in zip(parts, rows[:-1], strict=True)]
            ),
            tuple(sentence for part in parts for sentence in part.alone_texts),
        )


@dataclass(frozen=True)
class ChunkWording:
    """One chunk's rows (the chunk, then its sentences, then its decoded payloads):
    logits, evidence; its cue groups; the rows that can be read alone."""

    logits: np.ndarray
    cues: tuple[str, ...]
    evidence: np.ndarray
    #: whether each row shows a cue in plain sight or speaks to an AI (``_ADDRESSES_AI``)
    cued: np.ndarray
    #: the rows that can be read alone (``closer_look``), by row index, with their texts:
    #: its sentences and its decoded payloads' sentences
    alone: tuple[tuple[int, str], ...] = ()


class JailbreakEntry(AsyncSignalEntry):
    threshold: float = Field(
        default=0.35,
        ge=0,
        le=1,
        description="P(attack) needed, calibrated on the public corpora's dev rows; 0.35 "
        "(the fitted model's own 0.7) flags 1.6 % of the public benign test rows",
    )
    scope: TextScope = Field(
        default="prompt",
        description="prompt, or conversation to read earlier turns and tool results too",
    )
    attacks: tuple[str, ...] = Field(
        default=(), description="attack exemplars; empty = the shipped bank"
    )
    benign: tuple[str, ...] = Field(
        default=(), description="benign look-alikes; empty = the shipped bank"
    )
    orders_in_data: bool = Field(
        default=True,
        description="score the imperative clauses of tool results, and of material pasted "
        "into a user's message, as orders slipped to the agent (signals/orders.py)",
    )
    other_languages: bool = Field(
        default=True,
        description="also read text in other languages with a multilingual sentence model "
        "(signals/crosslingual.py; needs requirements/multilingual.txt, else English only)",
    )
    user_messages: Literal["own_words", "data"] = Field(
        default="own_words",
        description="own_words: a user's message is the user speaking (\"Note to the AI: "
        "…\" is no injection's opening there; what it quotes is data); data: user messages "
        "carry text from elsewhere (a ticket or an e-mail a pipeline puts there), read as "
        "data like tool results",
    )


class JailbreakSignal(AsyncSignal):
    family: ClassVar[str] = "jailbreak"

    def __init__(
        self,
        entry: JailbreakEntry,
        embedder: Embedder,
        model: JailbreakModel,
        budget: ReadingBudget,
        orders: OrderModel | None = None,
        crosslingual: CrossLingualModel | None = None,
    ) -> None:
        self.name = entry.name
        self.crosslingual = crosslingual
        self.budget = budget
        self.timeout_s = entry.timeout_ms / 1000
        self.threshold = entry.threshold
        self.calibration = entry_calibration(entry)
        self.scope: TextScope = entry.scope
        self.embedder = embedder
        self.model = model
        self.orders = orders
        self.users_are_data = entry.user_messages == "data"

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        reading = meaning_reading(evaluation, self.scope, self.budget, self.embedder)
        if not reading.texts:
            return Outcome(False, 0.0, {"chunks": 0})
        texts, data = await run_cpu(
            texts_read, reading.texts, reading.roles, self.users_are_data, owner=evaluation
        )
        # the wording half of the score runs while the embeddings are computed
        wording = asyncio.ensure_future(self._wording(texts, data, evaluation))
        embedded = await embed_texts(evaluation, self.embedder, texts)
        vectors = np.concatenate([e.vectors for e in embedded])
        # a tool result's clauses are embedded while the wording and the closer look run
        orders = asyncio.ensure_future(self._orders_in_data(evaluation, texts, data, reading.roles))
        pieces, in_data, partial = await wording
        # chunks in another language, read again with the multilingual model meanwhile
        other = (
            asyncio.ensure_future(run_cpu(self.crosslingual.chunk_scores, pieces, owner=evaluation))
            if self.crosslingual is not None
            else None
        )
        probabilities = self.model.chunk_scores(vectors, pieces, partial)
        owners, sentences = self.model.closer_look(vectors, partial)
        if sentences:
            own = await own_meanings(evaluation, self.embedder, owners, sentences)
            scores = await run_cpu(
                self.model.chunk_scores,
                own.vectors,
                own.pieces,
                None,
                [in_data[owner] for owner in own.owners],
                owner=evaluation,
            )
            np.maximum.at(probabilities, own.owners, scores)
        order_owners, order_scores, report = await orders
        np.maximum.at(probabilities, order_owners, order_scores)
        if other is not None:
            chosen, scores = await other
            np.maximum.at(probabilities, chosen, scores)
            if chosen:
                report["other_language_chunks"] = len(chosen)
        riskiest = int(np.argmax(probabilities))
        score = float(calibrated(probabilities[riskiest], self.calibration))
        value = {
            "score": round(score, 4),
            "model_score": round(float(probabilities[riskiest]), 4),
            "chunks": len(pieces),
            "sentences_read_alone": len(sentences),
            "riskiest_chunk": riskiest,
            "cues": list(partial.cues[riskiest]),
            "decoded_payloads": len(texts) - len(reading.texts),
            **report,
            **reading.report,
        }
        return Outcome(score >= self.threshold, score, value)

    async def _orders_in_data(
        self,
        evaluation: Evaluation,
        texts: list[str],
        data: list[bool],
        roles: tuple[Role, ...],
    ) -> tuple[list[int], np.ndarray, dict[str, Any]]:
        """The imperative clauses of the data the request carries — tool results, and what
        a user's message quotes — scored as orders (``signals.orders``): each one's chunk,
        its score, and the trace's account of what was read. ``data``: ``read_as_data``'s
        answer for each text (a user's message read as the user's words quotes nothing)."""
        quoting = any(
            role is Role.USER and is_data for role, is_data in zip(roles, data, strict=False)
        )
        if self.orders is None or not (quoting or Role.TOOL in roles):
            return [], np.zeros(0), {}
        # finding the clauses reads every character of the data: a CPU job of its own
        owners, read, report = await run_cpu(
            self._data_clauses, texts, data, roles, owner=evaluation
        )
        if not read:
            return [], np.zeros(0), report
        own = await own_meanings(evaluation, self.embedder, owners, read)
        found = self.orders.scores(own.vectors, own.pieces)
        best = int(np.argmax(found))
        order = float(calibrated(found[best], self.calibration))
        report["order_in_data"] = round(order, 4)
        if order >= self.threshold:
            report["order"] = own.pieces[best][:200]
        return own.owners, found, report

    def _data_clauses(
        self, texts: list[str], data: list[bool], roles: tuple[Role, ...]
    ) -> tuple[list[int], list[str], dict[str, Any]]:
        """The clauses to read as possible orders (``first_read``'s choice among those of
        the tool results and of what the user's messages quote), the chunk each stands
        in, and the trace's account of them."""
        owners: list[int] = []
        clauses: list[Clause] = []
        first = 0
        counts = dict.fromkeys((Role.TOOL, Role.USER), 0)
        for text, is_data, role in zip(texts, data, roles, strict=False):
            spans = self.embedder.spans(text)
            if role in counts and is_data:
                whole = role is Role.TOOL or self.users_are_data  # read as a tool result
                found = data_clauses(text, whole)
                for clause in found:
                    within = sum(1 for start, _ in spans[1:] if start <= clause.offset)
                    owners.append(first + within)
                    clauses.append(clause)
                counts[role] += len(found)
            first += len(spans)
        report: dict[str, Any] = {}
        if Role.TOOL in roles:
            report["tool_clauses"] = counts[Role.TOOL]
        if counts[Role.USER]:
            report["pasted_clauses"] = counts[Role.USER]
        chosen = first_read(clauses) if clauses else []
        if len(chosen) < len(clauses):
            report["clauses_skipped"] = len(clauses) - len(chosen)
        return [owners[i] for i in chosen], [clauses[i].text for i in chosen], report

    async def _wording(
        self, texts: list[str], data: list[bool], evaluation: Evaluation
    ) -> tuple[list[str], list[bool], WordingScores]:
        """The wording scores of every chunk, in CPU jobs of ``WORDING_CHUNKS_PER_JOB``
        chunks (a few milliseconds each), so that a long request interleaves fairly; and
        whether each chunk is read as data (its text's ``read_as_data``)."""
        pieces, in_data, first = await run_cpu(self._first_wording, texts, data, owner=evaluation)
        parts = [first]
        for start in range(WORDING_CHUNKS_PER_JOB, len(pieces), WORDING_CHUNKS_PER_JOB):
            end = start + WORDING_CHUNKS_PER_JOB
            parts.append(
                await run_cpu(
                    self.model.wording_scores,
                    pieces[start:end],
                    in_data[start:end],
                    owner=evaluation,
                )
            )
        return pieces, in_data, WordingScores.joined(parts)

    def _first_wording(
        self, texts: list[str], data: list[bool]
    ) -> tuple[list[str], list[bool], WordingScores]:
        pieces: list[str] = []
        in_data: list[bool] = []
        for text, is_data in zip(texts, data, strict=True):
            spans = self.embedder.spans(text)
            pieces.extend(text[start:end] for start, end in spans)
            in_data.extend([is_data] * len(spans))
        first = self.model.wording_scores(
            pieces[:WORDING_CHUNKS_PER_JOB], in_data[:WORDING_CHUNKS_PER_JOB]
        )
        return pieces, in_data, first


def texts_read(
    texts: Sequence[str], roles: Sequence[Role], users_are_data: bool
) -> tuple[list[str], list[bool]]:
    """The texts the signal scores (``with_hidden_payloads``) and whether each is read as
    data (``read_as_data``; every one, where user messages are data)."""
    scored = with_hidden_payloads(texts)
    return scored, [True] * len(scored) if users_are_data else read_as_data(scored, roles)


def build(entry: JailbreakEntry, resources: Resources) -> JailbreakSignal:
    embedder = shared_embedder(resources)
    attacks, benign = default_bank()
    attacks, benign = entry.attacks or attacks, entry.benign or benign
    key = ("jailbreak-model", id(embedder), attacks, benign)
    model: JailbreakModel = resources.get(
        key, lambda: JailbreakModel.kept(embedder.encoder, attacks, benign, read_in_data())
    )
    orders = None
    if entry.orders_in_data:
        orders = resources.get(
            ("order-model", id(embedder), orders_bank()),
            lambda: OrderModel.fit(embedder.encoder, *orders_bank()),
        )
    crosslingual = crosslingual_model(resources, attacks, benign) if entry.other_languages else None
    return JailbreakSignal(entry, embedder, model, reading_budget(resources), orders, crosslingual)


def crosslingual_model(
    resources: Resources, attacks: tuple[str, ...], benign: tuple[str, ...]
) -> CrossLingualModel | None:
    """The multilingual reading's model for this bank, or ``None`` where the multilingual
    sentence model is not installed."""
    return multilingual_reading(
        resources,
        ("crosslingual-model", attacks, benign),
        lambda encoder: CrossLingualModel.fit(encoder, *crosslingual_bank(attacks, benign)),
    )


FAMILY = SignalFamily(
    "jailbreak", JailbreakEntry, build, "jailbreaks and prompt injection, per chunk"
)
