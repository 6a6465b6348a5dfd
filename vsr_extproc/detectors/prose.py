"""Passwords and PINs written in a sentence: "my password is Tr0ub4dor&3", "I reset the pw
to …", "enter … as the administrator password", "the door code is 4821".

``secrets`` finds a credential by its format or by the key it is assigned to
(``password = …``); people write theirs in sentences. A password here is a token of six
characters or more with letters and digits or symbols (or digits and symbols) that is no
date, time, version, amount, prefixed ID, address, link or path, no words joined
(``dois-je``, ``new_password``) and no code (brackets, ``=``). It counts when its sentence
names a password (``_PASSWORD_NOUN``, in nine languages), no user name stands nearer to
it, and either the sentence links the two ("is", ":", "to", "as", with at most five
words between: "the password I was given at onboarding was …") or the token is strong on
its own (eight characters or more of three kinds, and not a word with a short number such
as ``Windows10``). A PIN is four to eight digits after the words that name one ("PIN",
"passcode", "door code", "code for the gate") and "is", ":" or "to".

Measured by ``vsr-extproc eval pii`` on messages written for this project (``dev`` and
``test`` by different writers); a credential with no noun beside it ("use … to get in",
"the safe opens with …") is not found.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from vsr_extproc.detectors.findings import Finding, FindingType
from vsr_extproc.detectors.secrets import is_placeholder

_PASSWORD_WORDS = (
    r"pass(?:word|phrase|wort|code)s?|pw|pwd|passwd|kennwort|mot de passe|mdp|contraseña|"
    r"clave|senha|palavra-passe|wachtwoord|hasło|haslo|şifre|parola|wi-?fi (?:key|code)|"
    r"wlan-?schlüssel|credentials?"
)
_PIN_WORDS = (
    r"pin|pin-?code|code pin|geheimzahl|passcode|toegangscode|türcode|zugangscode|"
    r"code d'accès|(?:door|gate|alarm|garage|access|unlock|entry|lock|safe|voicemail|sim|"
    r"tablet|phone|security|keypad|key pad|building|house|locker)[ -]?code|"
    r"code (?:for|to|of) (?:the |my |your )?(?:door|gate|alarm|garage|safe|locker|phone|"
    r"tablet|unlock|building|house)\w*"
)
_PASSWORD_NOUN = re.compile(rf"(?i:\b(?:{_PASSWORD_WORDS})\b)")
_PIN_NOUN = re.compile(rf"(?i:\b(?:{_PIN_WORDS})\b)")
# either noun in lower-cased text: written in lower case, the words match it without
# "(?i)", which costs ``re`` about three times as much over a page
_NOUN_IN_LOWER_CASE = re.compile(rf"\b(?:{_PASSWORD_WORDS}|{_PIN_WORDS})\b")
# a user name's nouns: a token nearer to one of them is the user's name, not a password
_USER_NOUN = re.compile(
    r"(?i:\b(?:user(?:name| name| id)?|login(?: name)?|account name|e-?mail|benutzer(?:name)?|"
    r"nom d'utilisateur|identifiant|usuario|utilizador|gebruikersnaam)\b)"
)
_TOKEN = re.compile(r"[\"'`“‘«]?([^\s\"'`”’»]{4,64})[\"'`”’»]?")
_SENTENCE = re.compile(r"[^\n]+?(?:[.!?](?=\s)|(?=\n)|$)")
_WORDS = re.compile(r"\S+")
WINDOW = 8  # words between a password noun and its value, either side
_NOT_A_SECRET = re.compile(
    r"[\d./:-]+|[A-Z]{1,5}-[\d-]+|v?\d+(?:\.\d+)+\w*|[\w.+-]+@[\w-]+\.[\w.]+|\w+://\S+|#?\d+|"
    r"\d+(?:st|nd|rd|th|h|am|pm|min|mins|s|ms|gb|mb|kb|x)"
)
_JOINED_WORDS = re.compile(r"[^\W\d_]+(?:[-'’_./][^\W\d_]+)+")  # dois-je, etc/group
_CODE = re.compile(r"[()\[\]{}<>=]")
# between a password noun and its value: up to five words, then "is", ":" or "to", then at
# most two ("is now", "ist jetzt"); or the value straight after the noun ("my old password …")
_LINKED_AFTER = re.compile(
    r"(?:(?:\s+[^\s:=]+){0,5}?"
    r"(?:\s*[:=–—-]|'s|\s+(?:is|was|are|be|becomes|ist|lautet|war|est|c'est|es|era|é|è|naar|"
    r"to|auf|à|a|para|op|als|as))(?:\s+\w+){0,2}?)?\s*[\"'`“‘«]?\Z",
    re.IGNORECASE,
)
# ... or before the noun: "enter … as the administrator password"
_LINKED_BEFORE = re.compile(
    r"[\"'`”’»]?\s+(?:as|is|als|comme|como|come)\s+(?:\w+\s+){0,3}?\Z", re.IGNORECASE
)
_PIN_VALUE = re.compile(
    r"(?:\s+(?:\S+\s+){0,6}?(?:is|ist|est|es|é|è|lautet|to|auf|op|naar|para|a|à|as|als)"
    r"|\s*[:=–—-]?)\s*[\"'`]?(\d{4,8})\b(?![.,/:-]\d)",
    re.IGNORECASE,
)
_WORD_AND_NUMBER = re.compile(r"[A-Za-z]+\d{1,3}")  # Windows10, iPhone15, Python3


def _secret_like(token: str) -> bool:
    if len(token) < 6 or is_placeholder(token) or _NOT_A_SECRET.fullmatch(token):
        return False
    if _JOINED_WORDS.fullmatch(token) or _CODE.search(token):
        return False
    letters = any(char.isalpha() for char in token)
    digits = any(char.isdigit() for char in token)
    symbols = any(not char.isalnum() for char in token)
    return (letters and (digits or symbols)) or (digits and symbols)


def _strong(token: str) -> bool:
    """A token that reads as a password without a sentence saying so."""
    kinds = sum((
        any(char.islower() for char in token), any(char.isupper() for char in token),
        any(char.isdigit() for char in token), any(not char.isalnum() for char in token),
    ))  # fmt: skip
    return len(token) >= 8 and kinds >= 3 and not _WORD_AND_NUMBER.fullmatch(token)


def _passwords(sentence: str, at: int) -> Iterator[Finding]:
    nouns = list(_PASSWORD_NOUN.finditer(sentence))
    if not nouns:
        return
    starts = [word.start() for word in _WORDS.finditer(sentence)]

    def word_of(position: int) -> int:
        return sum(start <= position for start in starts) - 1

    owners = [(word_of(noun.start()), True) for noun in nouns]
    owners += [(word_of(noun.start()), False) for noun in _USER_NOUN.finditer(sentence)]
    for match in _TOKEN.finditer(sentence):
        # a comma or a sentence's full stop after it is the sentence's; "!" and "?" may be
        # the password's own, and staying in the span they are redacted with it
        token = match.group(1).rstrip(",;:)").lstrip("¿¡(")
        if token.endswith(".") and match.end(1) >= len(sentence.rstrip()):
            token = token.rstrip(".")
        start = match.start(1) + match.group(1).index(token) if token else match.start(1)
        end = start + len(token)
        if token.rstrip("!?").isalpha() or not _secret_like(token):
            continue  # a word and its question mark
        if _PASSWORD_NOUN.fullmatch(token):
            continue
        word = word_of(start)
        before = [owner for owner in owners if word - WINDOW <= owner[0] < word]
        after = [owner for owner in owners if word < owner[0] <= word + WINDOW]
        # the noun the token belongs to: the nearest before it, else the nearest after
        if not (max(before)[1] if before else min(after)[1] if after else False):
            continue
        linked = any(
            (noun.end() <= start and _LINKED_AFTER.match(sentence, noun.end(), start))
            or (noun.start() >= end and _LINKED_BEFORE.match(sentence, end, noun.start()))
            for noun in nouns
        )
        if linked or _strong(token):
            yield Finding(FindingType.SECRET, at + start, at + end, 0.7, "password")


def _pins(sentence: str, at: int) -> Iterator[Finding]:
    for noun in _PIN_NOUN.finditer(sentence):
        value = _PIN_VALUE.match(sentence, noun.end())
        if value is not None:
            yield Finding(FindingType.SECRET, at + value.start(1), at + value.end(1), 0.7, "pin")


def find_prose_secrets(text: str) -> list[Finding]:
    """Passwords and PINs that sentences of ``text`` name as such, by start. Only the
    sentences that hold a password's or a PIN's noun are read."""
    lowered = text.lower()
    if len(lowered) == len(text):  # no letter whose lower case is longer ("İ")
        nouns = [match.start() for match in _NOUN_IN_LOWER_CASE.finditer(lowered)]
    else:
        nouns = sorted(
            match.start() for noun in (_PASSWORD_NOUN, _PIN_NOUN) for match in noun.finditer(text)
        )
    findings: list[Finding] = []
    if not nouns:
        return findings
    for sentence in _SENTENCE.finditer(text):
        at = bisect.bisect_left(nouns, sentence.start())
        if at < len(nouns) and nouns[at] < sentence.end():
            findings += [
                *_passwords(sentence.group(), sentence.start()),
                *_pins(sentence.group(), sentence.start()),
            ]
    return sorted(findings, key=lambda finding: finding.start)
