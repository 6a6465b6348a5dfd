"""Credentials in text: cloud and SaaS tokens, private keys, JWTs and password assignments.

Two kinds of evidence, with different confidence:

* a token whose format is its proof (``AKIA`` + 16, ``ghp_`` + 36, ``AIza`` + 35, a PEM
  private key block, a JWT whose header decodes to JSON with ``"alg"``): 0.9 and up;
* a value assigned to a key that names a secret (``password = "..."``, ``api_key: ...``,
  ``"client_secret": "..."``, ``postgres://user:...@host``): the span is the value only, so
  a redacted text keeps the key and stays readable.

Assignments are where false positives come from, so the value must look like a secret:
at least 6 characters; not a placeholder (``<password>``, ``****``, ``changeme``,
``${DB_PASSWORD}``, ``your_password``, a type name like ``string``); quoted values hold no
whitespace (``"Enter your password"`` is a label); unquoted values are not code
(``os.environ``, ``settings.DB_PASSWORD``, ``get_password()``) and hold a digit or a symbol
(``Password: required`` is prose). Unquoted all-letter passphrases are therefore missed.

Every pattern begins with a literal or is gated by a substring test, so a prompt without
credentials costs a handful of C-speed scans.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from vsr_extproc.detectors.findings import Finding, FindingType, resolve_overlaps


@dataclass(frozen=True, slots=True)
class _TokenFormat:
    detail: str
    pattern: re.Pattern[str]
    confidence: float


def _token(
    detail: str, prefix: str, prefix_length: int, rest: str, confidence: float
) -> _TokenFormat:
    # The boundary check sits behind the literal prefix, so the regex engine can skip ahead
    # to the prefix instead of testing a lookbehind at every position.
    boundary = rf"(?<![A-Za-z0-9_\-].{{{prefix_length}}})"
    return _TokenFormat(detail, re.compile(prefix + boundary + rest), confidence)


_AFTER_TOKEN = r"(?![A-Za-z0-9_\-])"
_TOKEN_FORMATS = (
    _token(
        "aws_access_key",
        "(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)",
        4,
        r"[A-Z0-9]{16}" + _AFTER_TOKEN,
        0.95,
    ),
    _token("github_token", "gh[pousr]_", 4, r"[A-Za-z0-9]{36,251}" + _AFTER_TOKEN, 0.97),
    _token("github_token", "github_pat_", 11, r"[A-Za-z0-9_]{50,244}" + _AFTER_TOKEN, 0.97),
    _token("gitlab_token", "glpat-", 6, r"[A-Za-z0-9_\-]{20,}", 0.95),
    _token(
        "slack_token", "xox[abprs]-", 5, r"\d{6,}(?:-[A-Za-z0-9]{4,}){1,4}" + _AFTER_TOKEN, 0.95
    ),
    _token("google_api_key", "AIza", 4, r"[0-9A-Za-z_\-]{35}" + _AFTER_TOKEN, 0.95),
    _token("stripe_key", "(?:sk|rk)_live_", 8, r"[0-9A-Za-z]{16,247}" + _AFTER_TOKEN, 0.97),
    _token("stripe_test_key", "sk_test_", 8, r"[0-9A-Za-z]{16,247}" + _AFTER_TOKEN, 0.7),
    _token("anthropic_key", "sk-ant-(?:api|admin)\\d\\d-", 14, r"[A-Za-z0-9_\-]{40,}", 0.97),
    _token("openai_key", "sk-(?:proj|svcacct|admin)-", 8, r"[A-Za-z0-9_\-]{20,}", 0.95),
    _token("openai_key", "sk-", 3, r"(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{32,}" + _AFTER_TOKEN, 0.9),
    _token("npm_token", "npm_", 4, r"[A-Za-z0-9]{36}" + _AFTER_TOKEN, 0.9),
    _token("huggingface_token", "hf_", 3, r"[A-Za-z]{34}" + _AFTER_TOKEN, 0.9),
    _token(
        "sendgrid_key", "SG\\.", 3, r"[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _AFTER_TOKEN, 0.95
    ),
)

# Secrets recognised by the key they are assigned to; the value is group "value".
_AWS_SECRET_KEY = re.compile(
    r"(?i:aws_?secret_?(?:access_?)?key|secret_?access_?key)[\"']?\s*(?::=|=>|[:=])\s*[\"']?"
    r"(?P<value>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
)
_BEARER = re.compile(r"(?i:\bbearer)\s+(?P<value>[A-Za-z0-9\-._~+/]{20,}=*)(?![A-Za-z0-9\-._~+/=])")
_URL_CREDENTIALS = re.compile(
    r"\b[A-Za-z][A-Za-z0-9+.\-]{1,15}://[^\s:/@]{1,64}:(?P<value>[^\s:/@]{1,128})@[A-Za-z0-9]"
)

_KEY_KINDS = (
    ("password", r"passwor[dt]|passwd|pwd|pass|passphrase|kennwort"),
    ("api_key", r"api[_\-]?key|apikey|api[_\-]?secret|access[_\-]?key|account[_\-]?key"),
    ("private_key", r"private[_\-]?key"),
    ("secret", r"client[_\-]?secret|secret[_\-]?key|secret"),
    ("token", r"(?:access|auth|api|refresh|bearer|session)?[_\-]?token"),
)
_KEY_HINTS = ("pass", "pwd", "kennwort", "key", "secret", "token")
_ASSIGNMENT_OPERATOR = re.compile(r":=|=>|[:=](?!=)")
# The key before an operator: dotted or underscored words ending in one that names a
# secret (DB_PASSWORD, spring.datasource.password, "client_secret"). Each word before the
# last needs a separator, so "compass" and "bypass" never match "pass".
_KEY = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?:[A-Za-z0-9]+[_.\-])*"
    r"(?i:" + "|".join(f"(?P<{kind}>{words})" for kind, words in _KEY_KINDS) + r")"
    r"[\"']?[ \t]*\Z"
)
_KEY_LOOKBEHIND = 64
# A bare value ends at whitespace or punctuation, or where a query string's next
# "&name=" begins ("pw=abc123&user=bob"), but may hold "&" itself ("Tr0ub4dor&3").
_VALUE = re.compile(
    r"[ \t]*(?:(?P<quote>[\"'`])(?P<quoted>[^\"'`\n]{1,200})(?P=quote)"
    r"|(?P<bare>[^\s\"'`,;()\[\]{}<>]{1,200}?)(?=[\s,;)\]}]|&[A-Za-z_]\w*=|\Z))"
)
# fmt: off
_PLACEHOLDERS = frozenset((
    "password", "passwd", "passwort", "pass", "secret", "token", "apikey", "api_key",
    "changeme", "change_me", "changeit", "example", "sample", "dummy", "placeholder",
    "redacted", "removed", "hidden", "masked", "none", "null", "nil", "undefined", "string",
    "str", "text", "integer", "number", "boolean", "required", "optional", "empty",
    "default", "value", "unknown", "your_password", "yourpassword", "your-password",
    "mypassword", "my_password", "your_api_key", "your_token", "your_secret", "notasecret",
))
# fmt: on
# a template's slot: ``${X}``, ``{{x}}``, ``%(x)s``, ``%s`` (not ``%sQ`` in a random password)
_TEMPLATE = re.compile(r"^\$|^%|\$\{|\{\{|%\(|%s(?![a-z0-9])|<[^>]*>|^\.\.\.|^your[_\-]|^my[_\-]")
_DOTTED_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_DIGIT_OR_SYMBOL = re.compile(r"[0-9]|[^A-Za-z0-9_.]")
_MIN_SECRET_LENGTH = 6


def is_placeholder(value: str) -> bool:
    """Whether a value is a placeholder, not a secret: a word such as ``password`` or
    ``changeme``, one character repeated, or a template slot."""
    lowered = value.lower()
    return (
        lowered in _PLACEHOLDERS
        or len(set(lowered)) == 1  # ******, xxxxxx, ......
        or _TEMPLATE.search(lowered) is not None
    )


def _assigned_secret_confidence(value: str, quoted: bool) -> float | None:
    """How likely an assigned value is a real secret; None when it is not one."""
    if len(value) < _MIN_SECRET_LENGTH or is_placeholder(value):
        return None
    has_digit_or_symbol = _DIGIT_OR_SYMBOL.search(value) is not None
    if quoted:
        if any(char.isspace() for char in value):
            return None
        return 0.9 if has_digit_or_symbol else 0.6
    if "." in value and _DOTTED_IDENTIFIER.fullmatch(value):
        return None  # code: os.environ, settings.DB_PASSWORD
    return 0.8 if has_digit_or_symbol else None


def _secret_keys(text: str) -> Iterator[tuple[re.Match[str], re.Match[str]]]:
    """(key, operator) of each assignment to a key that names a secret: found from each
    ":" or "=" backwards to the key, which is cheaper than matching keys everywhere."""
    lowered = text.lower()
    if not any(hint in lowered for hint in _KEY_HINTS):
        return
    for operator in _ASSIGNMENT_OPERATOR.finditer(text):
        key = _KEY.search(text, max(0, operator.start() - _KEY_LOOKBEHIND), operator.start())
        if key is not None:
            yield key, operator


def _assignments(text: str) -> Iterator[Finding]:
    """Values assigned to secret-named keys (``_secret_keys``), read forwards from the
    operator."""
    for key, operator in _secret_keys(text):
        value = _VALUE.match(text, operator.end())
        if value is None:
            continue
        quoted = value.group("quoted") is not None
        group = "quoted" if quoted else "bare"
        confidence = _assigned_secret_confidence(value.group(group), quoted)
        if confidence is not None:
            kind = next(kind for kind, _ in _KEY_KINDS if key.group(kind) is not None)
            yield Finding(FindingType.SECRET, *value.span(group), confidence, kind)


def _pattern_values(text: str) -> Iterator[Finding]:
    lowered = text.lower()
    if "secret" in lowered:
        for match in _AWS_SECRET_KEY.finditer(text):
            yield Finding(FindingType.SECRET, *match.span("value"), 0.9, "aws_secret_key")
    if "bearer" in lowered:
        for match in _BEARER.finditer(text):
            value = match.group("value")
            if _DIGIT_OR_SYMBOL.search(value) and any(char.isalpha() for char in value):
                yield Finding(FindingType.SECRET, *match.span("value"), 0.85, "bearer_token")
    if "://" in text:
        for match in _URL_CREDENTIALS.finditer(text):
            if not is_placeholder(match.group("value")):
                yield Finding(FindingType.SECRET, *match.span("value"), 0.85, "url_password")


def _token_formats(text: str) -> Iterator[Finding]:
    for token in _TOKEN_FORMATS:
        for match in token.pattern.finditer(text):
            yield Finding(FindingType.SECRET, *match.span(), token.confidence, token.detail)


# --- private keys ---------------------------------------------------------------------------

_PRIVATE_KEY_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?)-----")
_PEM_HEADER_LINE = re.compile(r"[A-Za-z\-]+: .*|")
_PEM_BODY_LINE = re.compile(r"[A-Za-z0-9+/=]+")


def _truncated_key_end(text: str, position: int) -> int | None:
    """The end of the base64 body that follows a BEGIN line with no END line; None when
    no body follows (the BEGIN line quoted in a question)."""
    end = None
    body_started = False
    for line in text[position:].splitlines(keepends=True):
        content = line.strip()
        if _PEM_BODY_LINE.fullmatch(content):
            body_started = True
            end = position + len(line.rstrip())
        elif body_started or not _PEM_HEADER_LINE.fullmatch(content):
            break
        position += len(line)
    return end


_MIN_KEY_BODY = 32


def _private_keys(text: str) -> Iterator[Finding]:
    """PEM/OpenSSH/PGP private key blocks with a base64 body, through their END line or,
    when the text was cut off, through the last line of the body."""
    if "PRIVATE KEY" not in text:
        return
    for match in _PRIVATE_KEY_BEGIN.finditer(text):
        end_marker = f"-----END {match.group(1)}-----"
        end = text.find(end_marker, match.end())
        if end != -1:
            body = _PEM_BODY_LINE.findall(text, match.end(), end)
            if sum(map(len, body)) >= _MIN_KEY_BODY:
                end += len(end_marker)
                yield Finding(FindingType.SECRET, match.start(), end, 0.99, "private_key")
            continue
        truncated_end = _truncated_key_end(text, match.end())
        if truncated_end is not None:
            yield Finding(FindingType.SECRET, match.start(), truncated_end, 0.9, "private_key")


# --- JWT ----------------------------------------------------------------------------------------

_JWT = re.compile(
    r"(eyJ(?<![A-Za-z0-9_\-.]...)[A-Za-z0-9_\-]{8,})\.([A-Za-z0-9_\-]{4,})\.([A-Za-z0-9_\-]*)"
    r"(?![A-Za-z0-9_\-]|\.[A-Za-z0-9_\-])"
)


def _decode_json_segment(segment: str) -> object:
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
        return json.loads(raw)
    # ValueError covers UnicodeDecodeError and JSONDecodeError; RecursionError is what
    # deeply nested JSON raises
    except (binascii.Error, ValueError, RecursionError):
        return None


def _jwts(text: str) -> Iterator[Finding]:
    for match in _JWT.finditer(text):
        header = _decode_json_segment(match.group(1))
        if not isinstance(header, dict) or "alg" not in header:
            continue
        payload = _decode_json_segment(match.group(2))
        confidence = 0.98 if isinstance(payload, dict) else 0.8
        yield Finding(FindingType.SECRET, *match.span(), confidence, "jwt")


# --- text read by OCR -------------------------------------------------------------------------

# A key before an assignment operator, on one line: where OCR's digit-for-letter confusions
# ("SLACK_B0T_T0KEN", "SESSI0N_TOKEN", "API_KEV") are undone.
_READ_KEY = re.compile(r"(?m)(?P<key>[A-Za-z0-9_.\-]{3,64})(?=[\"']?[ \t]*(?::=|=>|[:=](?!=)))")
_KEY_DIGITS = {"0": "o", "1": "l", "5": "s", "8": "b"}
_KEV = re.compile(r"(?i)(?<=ke)v(?![a-z])")
# Two pieces of one token that OCR read with a space between them ("AKIA7 BUG8FNC71FQ",
# "sk-proj -861Bc…"): each piece token-like (a digit, a symbol of tokens, or a capital
# after a small letter), one of them long. A password's symbols are a token's too.
_PIECE = re.compile(r"[^\s\"'`]+")
_TOKEN_LIKE = re.compile(r"\d|[_\-./+=!#$%&*@^~]|[a-z][A-Z]")
_LONG_PIECE = 8
# "…IDE2NjYyNTUzNzV9 . I20_y00Zv…": a JWT's dot read with spaces around it
_SPACED_DOT = re.compile(r"(?P<left>[A-Za-z0-9_\-]{8}) (?P<dot>[.]) (?=[A-Za-z0-9_\-]{8})")
# A quoted value that runs to the end of its line without its closing quote: the screen
# cut it off ("SESSION_TOKEN = \"eyJhbGciOi…" wider than the editor's window).
_CUT_VALUE = re.compile(r"(?m)(?P<open>[\"'`])(?P<value>[A-Za-z0-9_\-./+=:]{16,})[ \t]*$")
# A JWT as OCR reads it: its header's JSON may not decode (``dHlw`` read ``dHLw``) and the
# window may cut it off, but a header and a payload that both open like JSON (``eyJ``, the
# base64 of ``{"``), dot-joined, are a JWT's shape
_READ_JWT = re.compile(
    r"(?<![A-Za-z0-9_\-.])eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{4,}(?:\.[A-Za-z0-9_\-]*)?"
)
_DASHES = re.compile(
    r"-{2,6}(?P<marker>(?:BEGIN|END) (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?)-{2,6}"
)
_WRAPPED_SHARE = 0.85
_WRAPPED_LINE = 60  # terminals wrap at 80 columns or more; OCR may drop a few characters
_WRAP_END = re.compile(r"[A-Za-z0-9_\-./+=]{16}$")
_WRAP_START = re.compile(r"[A-Za-z0-9_\-./+=]{8}")
_STRING_WRAP_END = re.compile(r"[A-Za-z0-9_\-./+=;:]{8}$")
_SPACED_PIECES = 8
_SPACED_VALUE = 16
_SPACED_KEY = re.compile(
    r"(?m)(?<![A-Za-z0-9_.\-])(?P<first>[A-Za-z0-9_.\-]{1,32}) (?P<second>[A-Za-z0-9_.\-]{1,32})"
    r"(?=[\"']?[ \t]*(?::=|=>|[:=](?!=)))"
)
# An editor's line numbers at the start of the lines, glued to the text or not; a line
# without one between numbers n and n + 1 is line n wrapped by the editor
_LINE_NUMBER = re.compile(r"[ \t]*(\d{1,5})(?!\d)")
_MIN_NUMBERED = 3
_WRAPPED_ROW = 40
_ROW_END = re.compile(r"[A-Za-z0-9_\-./+=;:]$")
_ROW_START = re.compile(r"[A-Za-z0-9_\-./+=]")
# A line that starts with a key of its own (``APP_ENV=``, ``log_level:``, ``PORT=``) is
# not the line before going on, however long that one is (``tKey=`` and ``ountKey=`` are)
_OWN_KEY = re.compile(
    r"(?:export[ \t]+)?(?:[A-Za-z][A-Za-z0-9]*(?:[_.\-][A-Za-z0-9]+)+|[A-Z][A-Z0-9]{2,})"
    r"[\"']?[ \t]*(?::=|=>|[:=](?!=))"
)
_CONFUSED_PREFIXES = ((re.compile(r"\bx0x(?=[abprs]-)"), "xox"), (re.compile(r"\bAlza"), "AIza"))
# A URL's credentials as OCR reads them: spaces read into the scheme and around ``://``,
# around the user's colon and inside the password ("po stg re s : // app:Ye yCsghbp2@db")
_SPACED_SCHEME = re.compile(
    r"\b(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]{0,15}(?: [A-Za-z0-9+.\-]{1,15}){0,3}) ?: ?/ ?/ ?"
)
_SPACED_USERINFO = re.compile(
    r"(?<=://)(?P<user>[^\s:/@\"'`]{1,64}) ?: ?"
    r"(?P<password>[^\s:/@\"'`]+(?: [^\s:/@\"'`]+){0,3}) ?@"
)
_SCHEME_LENGTH = 15
# ... and its "@" read as "a": a user's colon followed by no port but by a password, an
# "a" and a dotted host ("root:AVLZgXDhj6RMa10.0.7.192/shop")
_AT_READ_AS_A = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]{1,15}://[^\s:/@]{1,64}:"
    r"(?=[^\s:/@]{0,127}[^\s:/@\d])[^\s:/@]{1,128}?)"
    r"a(?=[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){1,8}(?:[:/\"'`\s]|$))(?![^\s/]{0,256}@)"
)


def _scheme_joined(match: re.Match[str]) -> str:
    """A scheme's pieces joined: as many of the last ones before ``://`` as make at most
    15 characters, the longest scheme ``_URL_CREDENTIALS`` reads (a long word before the
    scheme stays apart)."""
    pieces = match.group("scheme").split(" ")
    joined = 1
    while joined < len(pieces) and len("".join(pieces[-joined - 1 :])) <= _SCHEME_LENGTH:
        joined += 1
    return " ".join([*pieces[:-joined], "".join(pieces[-joined:])]) + "://"


def _url_repaired(text: str) -> str:
    if "/" not in text:
        return text
    text = _SPACED_SCHEME.sub(_scheme_joined, text)
    text = _SPACED_USERINFO.sub(
        lambda match: f"{match.group('user')}:{match.group('password').replace(' ', '')}@", text
    )
    return _AT_READ_AS_A.sub(r"\g<head>@", text)


def _key_repaired(match: re.Match[str]) -> str:
    """A key's name with its digits read for letters undone; digits it starts with stay
    (an editor's line number glued to the line: ``5FEATURE_FLAGS``)."""
    whole = match.group("key")
    key = whole.lstrip("0123456789")
    number = whole[: len(whole) - len(key)]
    letters = sum(char.isalpha() for char in key)
    if letters < 0.6 * len(key):
        return whole  # a number, a version: not a key name misread
    upper = sum(char.isupper() for char in key) > letters / 2
    for digit, letter in _KEY_DIGITS.items():
        key = key.replace(digit, letter.upper() if upper else letter)
    return number + _KEV.sub("Y" if upper else "y", key)


def _token_piece(piece: str) -> bool:
    """Whether a piece of a line may be part of a token: token-like, and not a number."""
    return not piece.isdigit() and _TOKEN_LIKE.search(piece) is not None


def _joins(first: str, second: str) -> bool:
    """Whether two pieces read with one space between them may be one token's: neither
    after a key's operator or a list's comma, both token pieces with a letter or digit."""
    return (
        not first.endswith((":", "=", ",", ";"))
        and _token_piece(first)
        and _token_piece(second)
        and any(char.isalnum() for char in first)
        and any(char.isalnum() for char in second)
    )


def _joined_line(line: str) -> str:
    """``line`` with the spaces OCR read inside a token taken out: a run of pieces one
    space apart, each pair of which ``_joins``, and one of them long (``sk-proj -_Yhf
    jmtNpX-4Y3F…``: a short piece in the middle joins too)."""
    line = _SPACED_DOT.sub(r"\g<left>\g<dot>", line)
    pieces = [(match.start(), match.end()) for match in _PIECE.finditer(line)]
    runs: list[list[tuple[int, int]]] = []
    for piece in pieces:
        if runs:
            (start, end) = runs[-1][-1]
            if line[end : piece[0]] == " " and _joins(line[start:end], line[piece[0] : piece[1]]):
                runs[-1].append(piece)
                continue
        runs.append([piece])
    out = []
    last = 0
    for run in runs:
        if len(run) > 1 and max(end - start for start, end in run) >= _LONG_PIECE:
            for (_, end), (next_start, _) in itertools.pairwise(run):
                out.append(line[last:end])
                last = next_start
    out.append(line[last:])
    return "".join(out)


def _spaced_value(line: str) -> str:
    """``line`` with the value of a key that names a secret read whole: a quoted value
    that closes on the line, or an unquoted one to the line's end, whose pieces are
    token-like (half of them at least: ``"AI zaG H4mAFtu BVo YMZ-QoG YKNPP sMzT…"``,
    ``SG. aShMdx - IWCa0E. 42MVe…``), 16 characters or more. Words with spaces ("Enter
    your password") are a label and stay as they are."""
    found = next(_secret_keys(line), None)
    if found is None:
        return line
    _, operator = found
    start = operator.end() + len(line[operator.end() :]) - len(line[operator.end() :].lstrip())
    if start < len(line) and line[start] in "\"'`":
        end = line.find(line[start], start + 1)
        if end == -1:
            return line
        start += 1
    else:
        end = len(line.rstrip())
    pieces = line[start:end].split()
    if not 2 <= len(pieces) <= _SPACED_PIECES:
        return line
    joined = "".join(pieces)
    token_like = sum(_token_piece(piece) for piece in pieces)
    if len(joined) < _SPACED_VALUE or 2 * token_like < len(pieces):
        return line
    return line[:start] + joined + line[end:]


def _spaced_key(match: re.Match[str]) -> str:
    """A key name OCR read with a space inside (``db_pas sword``), joined when the two
    halves name a secret together and the second alone does not."""
    first, second = match.group("first"), match.group("second")
    if _KEY.search(first + second) and not _KEY.search(second):
        return first + second
    return match.group(0)


def _numbered_rows(lines: list[str]) -> tuple[set[int], set[int]]:
    """The lines an editor numbered, and those it wrapped onto: where three lines or more
    start with a number and most count up by one, a line without one between numbers n
    and n + 1 goes on with line n (``4AZURE_…;Accoun`` / ``tKey=…`` / ``5…``)."""
    starts = [
        (index, int(match.group(1)))
        for index, line in enumerate(lines)
        if (match := _LINE_NUMBER.match(line))
    ]
    # a number one from neither neighbour's is the line's own text (a wrapped token that
    # goes on with digits), not the editor's
    numbered = [
        (index, number)
        for position, (index, number) in enumerate(starts)
        if any(
            abs(number - other) == 1
            for _, other in starts[max(0, position - 1) : position]
            + starts[position + 1 : position + 2]
        )
    ]
    pairs = list(itertools.pairwise(numbered))
    counting = sum(after == before + 1 for (_, before), (_, after) in pairs)
    if len(numbered) < _MIN_NUMBERED or 5 * counting < 4 * len(pairs):
        return set(), set()
    wrapped = {
        index
        for (first, before), (last, after) in pairs
        if after == before + 1
        for index in range(first + 1, last)
    }
    return {index for index, _ in numbered}, wrapped


def _unwrapped(lines: list[str]) -> list[str]:
    """Lines a terminal or an editor wrapped joined again: a line about as long as the
    longest, ending in a long unbroken token, and a next line that goes on with one; a
    line that ends inside a string it opened, mid-token, and a next line that goes on with
    the token and closes the string (``"…;Acc`` and ``ountKey=…"``); or a line an editor
    numbered and a next line it did not (``_numbered_rows``; a numbered line never goes on
    with the one before). A next line that starts with a key of its own (``APP_ENV=``)
    does not go on with the longest line, and one that holds whole strings of its own
    (``CACHE_TTL = "446"``) does not go on with a string the line before left open: that
    string's closing quote was lost, or cut off by the window."""
    width = max((len(line) for line in lines), default=0)
    numbered, wrapped = _numbered_rows(lines)
    out: list[str] = []
    previous = ""
    for index, line in enumerate(lines):
        opened = previous.count('"') % 2 == 1
        if index not in numbered and (
            (
                len(previous) >= max(_WRAPPED_LINE, _WRAPPED_SHARE * width)
                and _WRAP_END.search(previous)
                and _WRAP_START.match(line)
                and not _OWN_KEY.match(line)
                and not (opened and line.count('"') and line.count('"') % 2 == 0)
            )
            or (
                len(previous) >= _WRAPPED_LINE
                and opened
                and line.count('"') % 2 == 1
                and _STRING_WRAP_END.search(previous)
                and _WRAP_START.match(line)
            )
            or (
                index in wrapped
                and len(out[-1]) >= _WRAPPED_ROW
                and _ROW_END.search(out[-1])
                and _ROW_START.match(line)
            )
        ):
            out[-1] += line
        else:
            out.append(line)
        previous = line
    return out


def repaired_read_text(text: str) -> str:
    """``text`` as OCR read it, with what OCR does to credentials undone: digits read for
    letters in key names, spaces read inside a key's name, a token, a secret's value or a
    URL's credentials, a URL's ``@`` read as ``a``, a token's prefix misread (``x0xb-``),
    a PEM marker's dashes miscounted, a quoted value cut off by the edge of the screen
    closed again, and a line a terminal wrapped joined again. Only for finding secrets: the
    repaired text is never shown or sent."""
    text = _READ_KEY.sub(_key_repaired, _SPACED_KEY.sub(_spaced_key, _url_repaired(text)))
    lines = [_spaced_value(_joined_line(line)) for line in text.split("\n")]
    text = "\n".join(_unwrapped(lines))
    for pattern, prefix in _CONFUSED_PREFIXES:
        text = pattern.sub(prefix, text)
    text = _DASHES.sub(r"-----\g<marker>-----", text)
    return _CUT_VALUE.sub(r"\g<open>\g<value>\g<open>", text)


def find_secrets_in_read_text(text: str) -> list[Finding]:
    """``find_secrets`` on text read from an image by OCR (``repaired_read_text``). The
    findings' spans are those of the repaired text: count them, do not cut with them. A
    JWT is also found by its shape (``_READ_JWT``), as OCR may garble the header's JSON."""
    repaired = repaired_read_text(text)
    shaped = [
        Finding(FindingType.SECRET, *match.span(), 0.8, "jwt")
        for match in _READ_JWT.finditer(repaired)
    ]
    return resolve_overlaps([*find_secrets(repaired), *shaped])


def find_secrets(text: str) -> list[Finding]:
    """Credentials in ``text``, without overlaps, sorted by start; ``detail`` says which kind."""
    findings = [
        *_token_formats(text),
        *_private_keys(text),
        *_jwts(text),
        *_pattern_values(text),
        *_assignments(text),
    ]
    return resolve_overlaps(findings)
