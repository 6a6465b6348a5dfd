"""Is this text source code? A cheap score for prompts and for OCR text of screenshots.

The score combines three cues, each robust to what OCR does to code (lost indentation,
lines broken mid-statement or merged, spaces inserted around punctuation):

* the share of lines that look like code: a statement shape (``def f(``, ``import x``,
  ``#include <``, ``func f(``), a line ending in ``{``, ``}`` or ``;``, an operator
  (``==``, ``=>``, ``:=``, ``->``), a call ``name(...)``, an assignment, a comment marker;
* the density of the punctuation code is made of (``{}()[];=<>``), rare in prose;
* language markers (``self.``, ``console.log``, ``fmt.``, ``System.out``, ``std::``).

Lines that read as sentences (many words, mostly letters, no code shape) pull the score
down, so prose, recipes ("2 cups (250 g) flour") and poetry stay low. The guessed language
is given only when the text is code and one language's markers clearly lead.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass


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
    )
)
_WORD = re.compile(r"[A-Za-z\u00c0-\u024f']+")
_CODE_PUNCTUATION = frozenset("{}()[];=<>")
_SENTENCE_END = re.compile(r"[.!?:,\"')]\s*$")

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


def _is_prose_line(line: str, cues: int) -> bool:
    """Many words, mostly letters, and at most one weak code cue: a sentence or verse."""
    words = _WORD.findall(line)
    if cues >= 2 or len(words) < 5:
        return False
    letters = sum(len(word) for word in words)
    visible = sum(not char.isspace() for char in line)
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


def code_score(text: str) -> CodeScore:
    """Score ``text`` in [0, 1] for being source code; >= 0.5 reads as code.

    Weighted: 0.6 share of code-like lines, 0.25 code punctuation density (saturating at
    6% of visible characters), 0.15 share of lines with several cues; minus 0.4 times the
    share of sentence-like lines.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return CodeScore(0.0, None, 0)
    code_lines = strong_lines = prose_lines = 0
    for line in lines:
        cues = _line_cues(line)
        if _is_prose_line(line, cues):
            prose_lines += 1
        elif cues:
            code_lines += 1
            strong_lines += cues >= 2
    visible = sum(not char.isspace() for char in text) or 1
    punctuation = sum(char in _CODE_PUNCTUATION for char in text) / visible
    score = (
        0.6 * code_lines / len(lines)
        + 0.25 * min(1.0, punctuation / 0.06)
        + 0.15 * strong_lines / len(lines)
        - 0.4 * prose_lines / len(lines)
    )
    score = round(min(1.0, max(0.0, score)), 3)
    language = _language(text[:_LANGUAGE_SAMPLE]) if score >= _LANGUAGE_FLOOR else None
    return CodeScore(score, language, len(lines))
