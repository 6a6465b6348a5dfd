"""The ``code`` signal: source code in the request's text, read block by block, and prose
that only uses code's words left alone."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from builders import body, chat, user

from vsr_extproc.config.compile import compile_policy, parse_config
from vsr_extproc.core.router import Router
from vsr_extproc.core.signals import SignalResult
from vsr_extproc.signals.base import Resources
from vsr_extproc.signals.code import blocks

CONFIG: dict[str, Any] = {
    "models": [{"name": "m", "cluster": "c", "upstream_model": "up"}],
    "signals": {"code": [{"name": "in_prompt"}, {"name": "one_line", "min_lines": 1}]},
    "decisions": [
        {"name": "coding", "rules": "code.in_prompt", "action": {"type": "route", "models": ["m"]}},
        {"name": "line", "rules": "code.one_line", "action": {"type": "route", "models": ["m"]}},
    ],
    "default": {"action": {"type": "route", "models": ["m"]}},
}  # fmt: skip


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(compile_policy(parse_config(CONFIG), Resources()))


def result(router: Router, prompt: str, name: str = "in_prompt") -> SignalResult:
    decision = asyncio.run(router.explain(body(chat(user(prompt)))))
    return decision.results[f"code.{name}"]


@pytest.mark.parametrize(
    ("prompt", "language"),
    [
        ("Why does this throw?\n\nconst total = items.reduce((a, b) => a + b.price);\n"
         "console.log(total.toFixed(2));", "javascript"),
        ("What's wrong here?\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n\nprint(mean([]))",
         None),  # two lines: too few for a language's markers to be clear
        ("can u fix\n```py\nfor k, v in d.items:\n    print(k, v)\n```\nthanks", "python"),
        ("This segfaults, any idea?\n\nint main() {\n  char *p = NULL;\n  strcpy(p, \"hi\");\n"
         "  return 0;\n}", None),
    ],
)  # fmt: skip
def test_a_snippet_with_a_question_around_it_is_code(
    router: Router, prompt: str, language: str | None
) -> None:
    found = result(router, prompt)
    assert found.matched, found.value
    assert found.confidence >= 0.7
    if language is not None:
        assert found.value["language"] == language


@pytest.mark.parametrize(
    "prompt",
    [
        "Explain the causes of the Rwandan genocide for a history class.",
        "What is the function of the liver, with the exception of detox?",
        "Summarise this.\n<document>\nHi Emma,\n\nThe edits look good to me.\n\nBest,\n"
        "David\n</document>",  # a prompt's wrapper tags are no code
        "The corner of Main St. and 5th Ave. (near the park) = our meeting point; 10am.",
        "Which of these is a redox reaction?\nA. NaCl(aq) + AgNO3(aq)\nB. Zn(s) + Cu2+(aq)",
    ],
)
def test_prose_that_uses_codes_words_or_marks_is_not_code(router: Router, prompt: str) -> None:
    found = result(router, prompt)
    assert not found.matched, found.value


def test_prose_without_a_mark_of_code_is_not_scored(router: Router) -> None:
    found = result(router, "Explain closures in JavaScript with an example, please.")
    assert found.value["blocks"] == 0
    assert found.confidence == 0.0


def test_one_line_of_code_counts_only_where_an_entry_reads_single_lines(router: Router) -> None:
    assert not result(router, "x = foo(bar);").matched
    assert result(router, "x = foo(bar);", "one_line").matched


def test_blocks_are_fences_and_runs_between_blank_lines_without_wrapper_tags() -> None:
    text = "Look:\n\n<context>\nx = 1;\ny = 2;\n</context>\n\n```\nz = x + y;\n```\n\nok?"
    assert blocks(text) == ["x = 1;\ny = 2;\n", "z = x + y;\n"]
