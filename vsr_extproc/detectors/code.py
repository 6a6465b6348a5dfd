"""Is this text source code? A cheap score for prompts and for OCR text of screenshots.

The score combines three cues, each robust to what OCR does to code (lost indentation,
lines broken mid-statement or merged, spaces inserted around punctuation):

* the share of lines that look like code: a statement shape (``def f(``, ``import x``,
  ``#include <``, ``func f(``), a line ending in ``{``, ``}`` or ``;``, an operator
  (``==``, ``=>``, ``:=``, ``->``), a call ``name(...)``, an assignment, a comment marker;
* the density of the punctuation code is made of (``{}()[];=<>``), rare in prose;
* language markers (``self.``, ``console.log``, ``fmt.``, ``System.out``, ``std::``).

What an editor, a terminal or a diff puts in front of each line is taken off first: a
line-number gutter (numbers that count up down the left edge, as editors show by
default), diff markers (``+``, ``-``), and prompts (``$ ``, ``>>> ``, ``In [3]:``). The
line cues are anchored at the start of the code, not of the screen line. A line that is a
file's name alone (an IDE's file tree, an editor's tab) is chrome and counts for neither
side. On a terminal (two commands or more after prompts: a program's name or a path first,
or a cue of code; not "$ 5 off"), a sentence no prompt precedes is what a program printed
("On branch main") and counts for neither side either.

Beside the cues, a line model that knows no language: each line becomes its *shape*
(``line_shape``: a word becomes ``w``, a capitalised one ``W``, a camelCase one ``m``, a
snake_case one ``_``, an English function word ``s``, a word with a letter outside ASCII
``n`` (identifiers are ASCII; other languages' words mostly are not), a number ``9``;
punctuation stays), and a logistic regression over the shape's character n-grams
(``banks/code_lines.json``, fitted by ``python -m vsr_extproc.eval.codelines`` on code of
some twenty languages against English prose, programs' messages in other languages,
forms, receipts and addresses) gives the probability that the line is code.
``x = foo(bar);`` and ``(defun foo (x) (car x))`` have shapes no sentence has, whatever the
language's keywords; a line the model is sure of counts as one cue.

Lines that read as sentences (many words, mostly letters of any script, no code shape; a
line mostly of Chinese or Japanese characters) pull the score down, so prose, recipes
("2 cups (250 g) flour") and poetry stay low. Comments are the program's prose and count
for neither side: line comments, block comments and block strings (docstrings) followed
across lines, also on a screen that begins inside one or whose closer OCR lost, the
starred lines of a ``/* */`` comment whose opener and closer OCR both lost, and comment
marks as OCR misreads them (``///`` as ``Ill``, ``//`` as ``I/``, ``%%`` as ``8%``). The
guessed language is given only when the text is code and one language's markers clearly
lead.
"""

from __future__ import annotations

import itertools
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import orjson


@dataclass(frozen=True, slots=True)
class CodeScore:
    """How much ``text`` looks like source code (0..1), the language if clear, the lines."""

    score: float
    language: str | None
    lines: int


_LINE_CUES = tuple(
    re.compile(pattern)
    for pattern in (
        r"^\s*(?:async\s+)?(?:def|class)\s+\w+\s*[(:]",
        r"^\s*(?:from\s+[\w.]+\s+)?import\s+[\w.*{\"']",
        r"^\s*#\s*(?:include|define|ifn?def|endif|pragma)\b",
        r"^\s*(?:public|private|protected|static|final|abstract|override)\b.*[({;=]",
        r"^\s*(?:export\s+)?(?:function\*?\s*\w*\s*\(|(?:const|let|var)\s+[\w{\[]+\s*=)",
        r"^\s*func\s*(?:\([^)]*\)\s*)?\w*\s*\(",
        r"^\s*package\s+[\w.]+\s*;?\s*$",
        r"^\s*(?:pub\s+)?(?:fn\s+\w+|impl\b|let\s+mut\b|use\s+\w+::)",
        r"^\s*(?:}\s*)?(?:if|for|while|switch|elif|else\s*if|catch|with|try|else)\b.*"
        r"(?:[{:]|\)|\bthen|\bdo)\s*$",
        r"^\s*(?:return|yield|throw|raise|break|continue|pass)\b[^.!?]*;?\s*$",
        r"^\s*(?:SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP)\s.*"
        r"\b(?:FROM|INTO|SET|TABLE|WHERE|VALUES)\b",
        r"^\s*(?:SELECT|FROM|WHERE|(?:LEFT |RIGHT |INNER |FULL |CROSS )?JOIN|GROUP BY|ORDER BY"
        r"|HAVING|LIMIT|VALUES|UNION)\s+[\w*(.'\"]",
        r"^\s*[}\])]+[;,)]*\s*$",
        r"[{\[(]\s*$",
        r";\s*$",
        r"^\s*(?://|/\*|\*/|#!|<!--)",
        r"\w\s*(?:==|!=|<=|>=|&&|\|\||\+=|-=|\*=|/=|=>|->|:=|::|\+\+|--)\s*[\w\"'(\[{-]",
        r"\b[A-Za-z_]\w*(?:\.\w+)*\([^()]*\)",
        r"^\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])?\s*=\s*[^=\s]",
        r"\b(?:self|this)\.\w|\bstd::|\bconsole\.\w|\bSystem\.\w|\bfmt\.\w",
        r"</?[a-z][a-z0-9]*(?:\s[^<>]*)?>",
        # diffs and tracebacks, which screenshots of code often are
        r"^\s*(?:export|set|setx|alias)\s+\w+=",
        # a line continued on the next: shell, C macros, Python
        r"\s\\$",
        # Ruby, Lua, Elixir, Scala, Perl and shell, whose blocks end in words, not braces
        r"^\s*(?:end|fi|done|esac|then|do|else)\s*$",
        r"^\s*(?:local\s+(?:function\b|[\w, ]+=)|(?:lazy\s+)?val\s+\w+\s*(?::[^=]+)?=)",
        r"^\s*(?:object|trait|case\s+class|sealed\s+trait|defmodule|defp|defmacro)\s+[\w.]+",
        r"^\s*def\s+[\w?!.]+(?:\s*\(.*\))?\s*(?:do|=.*|\{)?\s*$",
        r"^\s*(?:class|module)\s+[A-Z][\w:]*(?:\s*<\s*[\w:]+)?\s*$",
        r"\|>|\bdo\s*\|[\w, ]+\||^\s*(?:require(?:_relative)?|puts|echo|printf)(?:\s+\S|[\"'])",
        r"^\s*(?:my|our)\s+[$@%]\w+|^\s*sub\s+\w+\s*\{|^\s*use\s+[\w:]+.*;\s*$",
        r"^\s*(?:if|while|until|elif)\s+\[\[?\s|^\s*(?:for|select)\s+\w+\s+in\s",
        # names only code writes: camelCase, snake_case, :atoms, $variables, @fields;
        # Scala 3 and Lua block ends; Lisp, SQL, Haskell and Lua comments
        r"(?<![\w.\-/])(?:[a-z]+[A-Z][A-Za-z0-9]*|[A-Za-z]+_[A-Za-z0-9_]+|[:$@][a-z_]\w*)\b",
        # (``;;`` alone on its line: a shell ``case`` branch's end)
        r"^\s*end\b|^\s*(?:;;(?:\s|$)|--\s)",
        # a Go struct's field or a typed declaration: a name (or names) and a built-in or
        # package-qualified type alone on the line (``DisableTimestamp bool``,
        # ``Out io.Writer``), a tag or a comment after it
        r"^\s*(?!(?i:the|a|an|my|your|his|her|its|our|their|this|that|no|one|some)\s)"
        r"[A-Za-z_]\w*(?:,\s*\w+)*\s+(?:\*|\[\d*\]|map\[[\w.*]+\])*"
        r"(?:u?int(?:8|16|32|64)?|float(?:32|64)|string|bool|byte|rune|uintptr|any"
        r"|interface\{\}|chan\s+\w+|[a-z]\w*\.[A-Z]\w*)\s*(?:`[^`]*`)?\s*(?://.*)?$",
        # Lisps: Clojure, Scheme, Emacs Lisp
        r"^\s*\((?:defn-?|defmacro|defun|define|def|ns|let|fn|lambda|require|cond|when)\s",
        r"^(?:@@ -\d+(?:,\d+)? \+\d+|diff --git |index [0-9a-f]{7,}\.\.|--- a/|\+\+\+ b/)",
        # one literal and a comma: a row of a table of data in code (a number, a string,
        # a character, a tuple), a trailing comment allowed
        r"^\s*(?:[-+]?(?:0[xX][\da-fA-F_]+|\d[\d_]*(?:\.\d+)?)[a-zA-Z]{0,3}|\"(?:[^\"\\]|\\.)*\""
        r"|'(?:[^'\\]|\\.)*'|[\[({].*[\])}])\s*,\s*(?:(?://|#|--|%)\s.*)?$",
        r"^\s*(?:Traceback \(most recent call last\)|File \"[^\"]+\", line \d+"
        r"|at [\w.$<>]+\([\w.]*:?\d*\)|[\w.]*(?:Error|Exception)(?::|$))",
    )
)
# What a screen puts before the code on each line: a gutter number, with or without a
# separator; a diff marker; a prompt (shell, Python, IPython, PowerShell, user@host).
_GUTTER = re.compile(r"^\s*(\d{1,5})(?:\s*[|│¦:]\s?|\s+|$)")
# a line number OCR glued to the code after it (``3L0G0_PNG =``): counted as the gutter's
# only where the numbers around it count up
_GLUED_NUMBER = re.compile(r"^\s*(\d{1,5})(?=[^\W\d]|[#/@$\"'(\[{<*;-])")
# (not ``--``: a comment in Lua, SQL and Haskell, or a diff's ``---`` header)
_DIFF_MARKER = re.compile(r"^(?:\+(?![+\-]{2})|-(?!-))")
_PROMPT = re.compile(
    r"^\s*(?:>>>|\.\.\.|In \[\d*\]:|Out\[\d*\]:|[$%]|(?:PS )?[A-Za-z]:\\[^>]*>"
    r"|[\w.\-]+@[\w.\-]+(?::[^$#\s]*)?[$#])(?=\s|$)\s?"
)
_TERMINAL_PROMPTS = 2  # commands after a prompt that make a screen a terminal
_COMMAND_START = re.compile(r"[a-z][\w.+-]*(?:\s|$)|[./~]")
_MARGIN_SHARE = 0.5
_COUNTED_RUN = 5  # adjacent lines numbered n, n+1, …: a gutter, whatever else the screen shows
# a word of prose, in any script: not part of an identifier (snake_case, dotted.name, a
# call) nor a command's option (``-subfile``, ``--verbose``)
_WORD = re.compile(r"(?<![\w.])(?<!(?<!\S)-)(?<!(?<!\S)--)(?:[^\W\d_]|')+(?![\w(]|\.\w)")
# the characters of scripts written without spaces between words (Chinese, Japanese): a
# line of them is a sentence, whatever ends it; code keeps them in its strings and comments
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CODE_PUNCTUATION = frozenset("{}()[];=<>")
_SENTENCE_END = re.compile(r"[.!?:,\"')]\s*$")
# a string literal in double quotes, or in single quotes that no letter touches outside
# (an apostrophe, "don't", is not one)
_STRING_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"|(?<!\w)\'(?:[^\'\\]|\\.)*\'(?!\w)')
_GLUED_LITERAL = re.compile(r'(?<=[\w(=,])"(?:[^"\\]|\\.)*"')
# a comment after code on the same line (``//`` or ``#`` after a space, then a space)
_TRAILING_COMMENT = re.compile(r"(?<=\S)\s+(?://|#)(?:\s.*)?$")

_LANGUAGE_MARKERS: dict[str, re.Pattern[str]] = {
    language: re.compile(pattern, re.MULTILINE)
    for language, pattern in {
        "python": r"^\s*def\s+\w+\s*\(.*\)\s*(?:->\s*[\w\[\], .]+)?:|^\s*elif\b|\bself\.\w"
        r"|^\s*from\s+[\w.]+\s+import\b|\bprint\s*\(|\bNone\b|\bTrue\b|\bFalse\b"
        r"|^\s*class\s+\w+(?:\([\w., ]*\))?\s*:|\"\"\"|__\w+__|\bisinstance\("
        r"|^\s*(?:if|elif|else|for|while|with|try|except)\b[^{;]*:\s*$",
        "javascript": r"\bfunction\b|^\s*(?:const|let|var)\s+\w+\s*=|=>|\bconsole\.log\b|==="
        r"|\brequire\(|\bdocument\.|\bexport\s+default\b|\bundefined\b",
        "typescript": r"^\s*interface\s+\w+|:\s*(?:string|number|boolean)\b|^\s*type\s+\w+\s*="
        r"|\bimplements\b.*\{",
        "go": r"^\s*func\s|^\s*package\s+\w+\s*$|:=|\bfmt\.\w|\berr\s*!=\s*nil\b|\bchan\b"
        r"|\bgo\s+func\b",
        "java": r"\bpublic\s+(?:static\s+)?(?:class|void|final)\b|\bSystem\.out\b|@Override"
        r"|^\s*import\s+java\.|\bString\[\]\s*args\b|\bprivate\s+final\b|\bnew\s+\w+\(",
        "c": r"^\s*#\s*include\s*<\w+\.h>|\bprintf\s*\(|\bint\s+main\s*\(|\bmalloc\s*\(|\bNULL\b"
        r"|\bsizeof\s*\(|\bstruct\s+\w+\s*\{",
        "cpp": r"\bstd::|^\s*#\s*include\s*<(?:iostream|vector|string|map)>|\bcout\b|\btemplate\s*<"
        r"|\bnullptr\b|\bnamespace\s+\w+",
        "rust": r"^\s*(?:pub\s+)?fn\s+\w+|\blet\s+mut\b|\bimpl\b|\bprintln!|&mut\b|^\s*use\s+\w+::"
        r"|\bSome\(|\bOk\(|\bunwrap\(\)",
        "csharp": r"^\s*using\s+System|\bConsole\.Write|\bnamespace\s+[\w.]+"
        r"|\bpublic\s+async\s+Task|\bvar\s+\w+\s*=\s*new\b",
        "ruby": r"^\s*end\s*$|\bputs\b|^\s*require\s+['\"]|\bdo\s*\|\w+\||\.each\b"
        r"|^\s*def\s+\w+\s*$",
        "php": r"<\?php|\$\w+\s*=|\becho\b|\$this->|\bfunction\s+\w+\s*\(\$",
        "sql": r"\bSELECT\b.*\bFROM\b|\bINSERT\s+INTO\b|\bCREATE\s+TABLE\b|\bWHERE\b|\bJOIN\b",
        "shell": r"^#!/bin/(?:ba)?sh|^\s*\$\s+\w|\bsudo\s|\becho\s|^\s*export\s+\w+=|\|\s*grep\b"
        r"|^\s*(?:fi|done|esac)\s*$",
        "html": r"<(?:html|div|span|body|head|p|a|ul|li|script)\b[^>]*>|</\w+>",
    }.items()
}
# Markers two languages share (":=" in Go and Pascal, "def" in Python and Ruby) make the
# winner unclear; a language is named only with this many hits and this lead.
_MIN_MARKERS = 2
_LEAD = 1.5
_LANGUAGE_FLOOR = 0.5
# Fourteen marker patterns over a long text cost more than the score itself; the first
# few pages say the language as well as the whole.
_LANGUAGE_SAMPLE = 8_000


CODE_LINES_BANK = Path(__file__).resolve().parent.parent / "banks" / "code_lines.json"
#: a line the line model scores at least this likely to be code counts as one cue
LINE_MODEL_THRESHOLD = 0.9
_SHAPE_CHARS = 160  # of a line's shape: enough to tell code from prose, bounded cost
_MIN_SHAPE = 3
# a comment's opening mark, in the languages that have one of these: the line is prose
# inside code (a bullet "- " or "* " is not among them: lists are prose outside code too);
# Erlang's, LaTeX's and MATLAB's ``%%`` glued to its text (``%%%API``) too
_COMMENT = re.compile(
    # (behind a diff's ``+`` or ``-`` too, where too few lines carry one to strip them;
    # Fortran's ``!`` and ``!!$`` too; not a C preprocessor's directive, which a header
    # nesting them indents after its ``#``: ``# define OPENSSL_THREADS``, ``#  endif``)
    r"^[+\-]?\s*(?:#(?!\s*(?:include\s*[<\"]|(?:define|undef)\s+[A-Z_][A-Z0-9_]*\b|ifn?def\s+\w+\s*$"
    r"|endif\b|else\s*$|elif\s|if\s+(?:!?\s*defined\b|[A-Z_][A-Z0-9_]+\b)|pragma\s+\w))(?:\s|$)|!+\$?(?:\s|$)|//|/\*|--+\s|;+\s|%%|%\s|\(\*|\{-|<!--|REM\s|[rRbBuUfF]{0,2}(?:\"{3}|'{3})"
    # the same marks as OCR reads them: ``///`` as ``/ll`` or ``Ill``, ``//`` as ``I/``
    # (glued to the comment's first word too: ``I/does``), ``%%`` as ``8%``,
    # ``--`` as a dash (muting a line of prose that looks so costs nothing)
    r"|(?:/[lI1|]|[lI1|]/)[/lI1|]?\s|[lI1|]/(?=[A-Za-z\"']{2})|[lI|]{3}\s|8%\s|[—–]\s)"
)
# A line with two code cues or more is this far towards certain, whatever the lines around
# it say: five of them are code even below a licence header, inside a doc comment whose
# marks OCR lost, or in a README's example. (No look-alike image of the corpus's ``dev``
# split shows more than two; see ``code_score``.)
_CLEAR_LINE = 0.1
# on a screen where fewer lines than this say anything either way, no line shows a cue of
# code and code's punctuation is scarce (under half the density that saturates), the
# line model's word alone does not make lines code: an identity card's "PITCAIRN (ILES)"
# among its labels would otherwise make the card code (a screen of TEAL's "==" and "&&"
# lines, muted as too short, is code by its punctuation)
_MODEL_ALONE_NEEDS = 3
_MUTE = 0.5  # what the line model says of a line too short to tell
# a line that is a file's name alone: an IDE's file tree or an editor's tab, which OCR
# reads as lines of their own; chrome, not code or prose
_FILE_NAME = re.compile(
    r"^\s*[\w.-]*\w\.(?:py|pyi|ipynb|toml|cfg|ini|md|rst|txt|json|ya?ml|lock|xml|html?|css"
    r"|js|jsx|ts|tsx|mjs|java|kt|kts|scala|sbt|gradle|go|mod|rs|c|h|cc|cpp|hpp|cs|rb|lua|erl"
    r"|hrl|ex|exs|ml|mli|hs|clj|php|pl|pm|sh|bash|zsh|swift|sql|r|R|m|vue|dart)\s*$"
)
# block comments (opener, closer): a licence header's " * ..." lines are comment, not prose
_BLOCK_COMMENTS = (
    ("/*", "*/"),
    ("(*", "*)"),
    ("{-", "-}"),
    ("<!--", "-->"),
    ("--[[", "]]"),
    ("/-", "-/"),  # Lean
    ("#|", "|#"),  # Lisp, Scheme, Racket
)
# a block comment's continuation line: `` * text``, ``*text`` as OCR glues it, and the
# recogniser's ``米`` for a faint ``*`` (not ``*/``, ``**``, ``*)``, ``*=``)
_STARRED = re.compile(r"^\s*[*米](?![*/)=])")
_LONE_STAR = re.compile(r"^\s*[*米]\s*$")
_STARRED_TAG = re.compile(r"^\s*[*米]\s*@[a-z]+\b")
# after the star, a sentence that goes on from the line before: a lowercase word, then
# another word (``* nodes to be able to …``; ``*p = 0;`` is not one)
_STARRED_GOING_ON = re.compile(r"^\s*[*米]\s*[a-z]+,?\s+[A-Za-z]")
# Python's (and others') block strings: a docstring's lines read like prose
_BLOCK_STRINGS = ('"""', "'''")
_CLOSERS = frozenset([*(closer for _, closer in _BLOCK_COMMENTS), *_BLOCK_STRINGS])
_STRING_PREFIX = re.compile(r"\s*[rRbBuUfF]{0,2}")  # what may stand before a string's quotes
_TOKEN = re.compile(r"[^\W\d_]\w*|\d+|\s+|.")
# English function words: a line made of them is a sentence, in any layout
FUNCTION_WORDS = frozenset(
    re.findall(
        r"\w+",
        """a an the and or but of to in on at by for with from as is are was were be been being
        it its this that these those i you he she we they me him her us them my your his our
        their not no if then so than too very can will would should could may might must shall
        do does did have has had there here what which who whom whose when where why how all
        any both each few more most other some such only own same just also into over under
        about after before between through during without within upon""",
    )
)


def _token_class(token: str) -> str:
    first = token[0]
    if first.isspace():
        return " "
    if first.isdigit():
        return "9"
    if not (first.isalpha() or first == "_"):
        return token if token.isascii() else "?"
    if token.lower() in FUNCTION_WORDS:
        return "s"
    if not token.isascii():
        return "n"  # a word of another language: identifiers are written in ASCII
    if "_" in token:
        return "_"
    if any(char.isdigit() for char in token):
        return "x"
    if len(token) > 1 and token.isupper():
        return "C"
    inner_capital = any(char.isupper() for char in token[1:])
    if first.isupper():
        return "M" if inner_capital else "W"
    return "m" if inner_capital else "w"


def line_shape(line: str) -> str:
    """``line`` as a run of token classes: ``self.total += price(x);`` is ``w.w += w(w);``,
    ``Add the flour, then stir.`` is ``W s w, s w.``"""
    return "".join(_token_class(token) for token in _TOKEN.findall(line.strip()))[:_SHAPE_CHARS]


def shape_ngrams(shape: str) -> list[str]:
    """The distinct character 1- to 4-grams of ``shape`` between start and end marks: the
    line model's features, in fitting and in scoring."""
    padded = f"^{shape}$"
    return list(
        dict.fromkeys(padded[i : i + n] for n in range(1, 5) for i in range(len(padded) - n + 1))
    )


@cache
def _line_model() -> tuple[float, dict[str, float]]:
    model = orjson.loads(CODE_LINES_BANK.read_bytes())
    return float(model["intercept"]), model["weights"]


def line_code_probability(line: str) -> float:
    """How likely ``line`` (one screen line, without what the screen puts before it) is a
    line of code, whatever the language, by its shape. A line of fewer than three tokens
    (``app``, ``end``, ``x:``) says too little either way: 0.5."""
    shape = line_shape(line)
    if len(shape.replace(" ", "")) < _MIN_SHAPE:
        return _MUTE
    intercept, weights = _line_model()
    known = [weights[gram] for gram in shape_ngrams(shape) if gram in weights]
    logit = intercept + (sum(known) / math.sqrt(len(known)) if known else 0.0)
    return 1.0 / (1.0 + math.exp(-logit))


def _a_command(line: str) -> bool:
    """Whether ``line``, which followed a prompt, reads as a command: a program's name or a
    path first (``git status``, ``./run.sh``, ``python app.py``), or a cue of code; not a
    price ("$ 5 off") nor a quoted e-mail's sentence (">>> On Monday, Anna wrote:")."""
    return bool(_COMMAND_START.match(line)) or _line_cues(line) > 0


def _is_prose_line(line: str, cues: int) -> bool:
    """Many words, mostly letters (of any script), and at most one weak code cue: a
    sentence or verse. A line mostly of Chinese or Japanese characters, which are written
    without spaces between words, is one whatever ends it.

    What stands in a string literal or a trailing comment is the program's prose, not the
    line's: ``echo "Number is greater than 10"`` is a command, ``x.y  // Test comment`` an
    expression. A quotation is taken for a string literal on a line with a cue, or where
    it is glued to what precedes it (``echo"…"`` as OCR reads it, ``print("…")``), which
    prose never does; elsewhere quotes are as likely a sentence's."""
    if cues >= 2:
        return False
    line = _TRAILING_COMMENT.sub("", line)
    line = (_STRING_LITERAL if cues else _GLUED_LITERAL).sub('""', line)
    visible = sum(not char.isspace() for char in line)
    unspaced = len(_UNSPACED.findall(line))
    if unspaced >= 4 and unspaced >= 0.6 * visible:
        return True
    words = _WORD.findall(line)
    if len(words) < 5:
        return False
    # a letter's combining marks (Devanagari's vowel signs, Hebrew's points) are letters
    letters = sum(len(word) for word in words) + sum(
        unicodedata.category(char).startswith("M") for char in line if not char.isascii()
    )
    return letters >= 0.75 * visible and (cues == 0 or _SENTENCE_END.search(line) is not None)


def _line_cues(line: str) -> int:
    return sum(1 for cue in _LINE_CUES if cue.search(line))


def _language(text: str) -> str | None:
    hits = Counter(
        {language: len(pattern.findall(text)) for language, pattern in _LANGUAGE_MARKERS.items()}
    )
    ranked = hits.most_common(2)
    best, best_hits = ranked[0]
    runner_up_hits = ranked[1][1] if len(ranked) > 1 else 0
    if best_hits >= _MIN_MARKERS and best_hits >= _LEAD * runner_up_hits:
        return best
    return None


def _without_gutter(lines: list[str]) -> list[str]:
    """``lines`` without their line numbers, when most start with a number and the numbers
    mostly count up (a numbered list in prose is "1." or "1)", which is not a gutter); or,
    where they are fewer, on the runs of lines numbered one more each time (``164``,
    ``165``, ``166`` …): the rest of the screen is then an IDE's file tree, or a column
    of values OCR read apart from the code (``#define GLU_V_STEP    100207``)."""
    numbers = [_GUTTER.match(line) or _GLUED_NUMBER.match(line) for line in lines]
    found = [int(match.group(1)) for match in numbers if match]
    if len(found) < 3:
        return lines
    rising = sum(later > earlier for earlier, later in itertools.pairwise(found))
    if len(found) < _MARGIN_SHARE * len(lines) or rising < 0.7 * (len(found) - 1):
        numbers = _counted_runs(numbers)
    return [
        line[match.end() :] if match else line for line, match in zip(lines, numbers, strict=True)
    ]


def _counted_runs(numbers: list[re.Match[str] | None]) -> list[re.Match[str] | None]:
    """Of the lines' leading numbers, those in runs of ``_COUNTED_RUN`` or more adjacent
    lines that count up by one; the others are ``None``."""
    kept: list[re.Match[str] | None] = [None] * len(numbers)
    start = 0
    for index in range(1, len(numbers) + 1):
        here, before = (numbers[index] if index < len(numbers) else None), numbers[index - 1]
        if here and before and int(here.group(1)) == int(before.group(1)) + 1:
            continue
        if index - start >= _COUNTED_RUN:
            kept[start:index] = numbers[start:index]
        start = index
    return kept


def _without_markers(lines: list[str]) -> list[tuple[str, bool]]:
    """``lines`` without diff markers (when many lines carry one) and prompts, each with
    whether a prompt stood before it (what follows a prompt is a command: code)."""
    marked = sum(_DIFF_MARKER.match(line) is not None for line in lines)
    if marked >= 3 and marked >= 0.3 * len(lines):
        lines = [_DIFF_MARKER.sub("", line) for line in lines]
    stripped = []
    for line in lines:
        prompt = _PROMPT.match(line)
        stripped.append((line[prompt.end() :], True) if prompt else (line, False))
    return stripped


def _opened_block(line: str, previous: str) -> str | None:
    """The closer of the block comment or block string ``line`` opens and leaves open, if
    it does: a docstring's lines are the program's prose, as a comment's are."""
    stripped = line.strip()
    for opener, closer in _BLOCK_COMMENTS:
        if stripped.startswith(opener) and closer not in stripped[len(opener) :]:
            return closer
    for quotes in _BLOCK_STRINGS:
        if line.count(quotes) % 2 and not _closes_string(line, quotes, previous):
            return quotes
    return None


def _closes_string(line: str, quotes: str, previous: str) -> bool:
    """Whether the odd run of ``quotes`` on ``line`` ends a block string rather than opens
    one: it follows text (``…binary data.'''``, not ``x = '''`` or ``f('''``), or stands
    alone on a line that does not follow a header (a docstring opens right after one)."""
    before = line[: line.rindex(quotes)].rstrip()
    if _STRING_PREFIX.fullmatch(before):
        return not previous.rstrip().endswith(":")
    return before[-1] not in "=([{,:+%" and not before.endswith(("return", "yield"))


def _open_at_start(lines: list[str]) -> str | None:
    """The closer of a block the first of ``lines`` are inside: a screen scrolled into a
    licence header, a doc comment or a docstring shows its closer (``*/``, ``'''``) before
    any opener. (The other closers, ``]]``, ``*)`` and ``-->``, are also code's.)"""
    previous = ""
    for line in lines:
        if "/*" in line:
            return None
        if "*/" in line:
            return "*/"
        for quotes in _BLOCK_STRINGS:
            if line.count(quotes) % 2:
                return quotes if _closes_string(line, quotes, previous) else None
        previous = line
    return None


def screen_lines(text: str) -> list[tuple[str, bool]]:
    """The non-blank lines of ``text`` with what a screen adds in front of code removed,
    each with whether it followed a prompt."""
    lines = [line for line in text.splitlines() if line.strip()]
    return [
        (line, prompted)
        for line, prompted in _without_markers(_without_gutter(lines))
        if line.strip()
    ]


def _continued_stars(lines: list[str]) -> bool:
    """Whether ``lines`` show the inside of a ``/* */`` comment whose opener and closer
    OCR lost (a lone ``/**`` is a small box, often dropped): three or more lines start
    with a star, and the stars go on where a list's bullets would not — a star alone on
    its line, a doc tag (``* @param``), or a sentence that wraps from one starred line to
    the next after a word no sentence ends on (``* … when you want other`` / ``* nodes
    to be able …``). A list puts its bullet before each item, not before the lines an
    item wraps onto, and an item ends where a sentence may."""
    starred = [bool(_STARRED.match(line)) for line in lines]
    if sum(starred) < 3:
        return False
    for index, line in enumerate(lines):
        if not starred[index]:
            continue
        if _LONE_STAR.match(line) or _STARRED_TAG.match(line):
            return True
        words = _WORD.findall(lines[index - 1]) if index and starred[index - 1] else []
        if (
            len(words) >= 4
            and words[-1].lower() in FUNCTION_WORDS
            and _STARRED_GOING_ON.match(line)
        ):
            return True
    return False


def _cues_and_likelihood(line: str, prompted: bool = False) -> tuple[int, float]:
    """``line``'s code cues (a prompt before it, and the line model's verdict when it is
    sure, each counting as one) and the line model's probability."""
    likely = line_code_probability(line)
    return _line_cues(line) + prompted + (likely >= LINE_MODEL_THRESHOLD), likely


def _weigh(
    screen: list[tuple[str, bool]], *, follow_blocks: bool, end_at_code: bool = False
) -> tuple[float, bool, bool]:
    """``code_score``'s weighted sum over the screen's lines, whether a block comment
    opened on the screen was still open at its end, and whether any line was inside one.
    Without ``follow_blocks`` only a block the screen begins inside is followed; an opener
    mutes its own line alone. With ``end_at_code`` a block whose closer ends no later line
    ends before a line with two code cues or more: OCR drops a docstring's closing quotes
    alone on their line, and the next docstring's opening quotes then closed the block
    instead, muting the code between them."""
    lines = [line for line, _ in screen]
    code_lines = strong_lines = prose_lines = mute_lines = model_alone = 0
    # the end of the block comment the lines are in; a screen may begin inside one
    closer: str | None = _open_at_start(lines)
    uncommented: list[str] = []  # the code's own lines: punctuation is counted on them
    # where a line of the screen opens or closes a ``/* */`` comment, a line that starts
    # with ``*`` is one's continuation, even when OCR lost the mark around it
    starred = any(
        line.lstrip().startswith("/*") or line.rstrip().endswith("*/") for line in lines
    ) or _continued_stars(lines)
    previous = ""
    inside = False
    # a terminal: its commands follow prompts, and what they print is the programs', not
    # anyone's prose ("On branch main", "Changes not staged for commit:")
    terminal = sum(prompted and _a_command(line) for line, prompted in screen) >= _TERMINAL_PROMPTS
    # the last line each closer ends (looked up, not searched for from every line: a
    # screen of commented-out code would cost the square of its lines)
    last_end = {
        mark: index
        for index, line in enumerate(lines)
        for mark in _CLOSERS
        if end_at_code and line.rstrip().endswith(mark)
    }
    for index, (line, prompted) in enumerate(screen):
        if closer is not None and not (
            end_at_code
            and not (starred and _STARRED.match(line))
            and last_end.get(closer, -1) < index
            and _cues_and_likelihood(line)[0] >= 2
        ):
            mute_lines += 1
            inside = True
            closer = None if closer in line else closer
            continue
        opened = _opened_block(line, previous)
        closer = opened if follow_blocks else None
        previous = line
        if opened is not None or _COMMENT.match(line) or (starred and _STARRED.match(line)):
            mute_lines += 1  # a comment is prose in code: it says nothing either way
            continue
        if _FILE_NAME.match(line):
            mute_lines += 1  # an IDE's tab or file tree: chrome, whatever cues its name holds
            continue
        uncommented.append(line)
        cues, likely = _cues_and_likelihood(line, prompted)
        if _is_prose_line(line, cues):
            if terminal and not prompted:
                mute_lines += 1  # a program's output
                continue
            prose_lines += 1
        elif cues:
            code_lines += 1
            strong_lines += cues >= 2
            model_alone += cues == 1 and likely >= LINE_MODEL_THRESHOLD and not prompted
        elif likely == _MUTE:
            mute_lines += 1
    code = "\n".join(uncommented) if uncommented else "\n".join(lines)
    visible = sum(not char.isspace() for char in code) or 1
    punctuation = sum(char in _CODE_PUNCTUATION for char in code) / visible
    counted = max(1, len(lines) - mute_lines)
    if counted < _MODEL_ALONE_NEEDS and code_lines == model_alone and punctuation < 0.03:
        code_lines = 0
    score = (
        0.6 * code_lines / counted
        + 0.25 * min(1.0, punctuation / 0.06)
        + 0.15 * strong_lines / counted
        - 0.4 * prose_lines / counted
    )
    return max(score, _CLEAR_LINE * strong_lines), closer is not None, inside


def code_score(text: str) -> CodeScore:
    """Score ``text`` in [0, 1] for being source code; >= 0.5 reads as code.

    Weighted: 0.6 share of code-like lines, 0.25 code punctuation density (saturating at
    6% of visible characters), 0.15 share of lines with several cues; minus 0.4 times the
    share of sentence-like lines. The shares are of the lines that say something either
    way: comment lines (a block comment's or a block string's on every line up to its end),
    a file's name alone, and lines too short for the line model without a cue, are left
    out. However much prose surrounds them, lines with several cues score at least a tenth
    each: five of them make a screen code. A block that opens on the screen and never
    closes is also weighed as closed at once, and a screen with a block also as if each
    block whose closer ends no later line ended before its first line of clear code; the
    highest of the scores is kept.
    """
    screen = screen_lines(text)
    if not screen:
        return CodeScore(0.0, None, 0)
    lines = [line for line, _ in screen]
    score, unclosed, inside = _weigh(screen, follow_blocks=True)
    if unclosed:
        # a block opened on the screen never closed: OCR often drops a closer (``*)``
        # read as ``*``), and the code after it then counted for nothing
        score = max(score, _weigh(screen, follow_blocks=False)[0])
    if inside:
        # or it closed only where the next block opened, the code between them muted
        score = max(score, _weigh(screen, follow_blocks=True, end_at_code=True)[0])
    body = "\n".join(lines)
    score = round(min(1.0, max(0.0, score)), 3)
    language = _language(body[:_LANGUAGE_SAMPLE]) if score >= _LANGUAGE_FLOOR else None
    return CodeScore(score, language, len(lines))
