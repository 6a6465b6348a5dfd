"""Decision semantics as a table: request → expected decision, model and reason.

The policy below is small on purpose; each case names the rule it demonstrates.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from builders import PNG_1X1, body, chat, data_url, image_part, text_part, user

from vsr_extproc.config.compile import compile_policy, parse_config
from vsr_extproc.core.decision import RequestOutcome
from vsr_extproc.core.router import Router
from vsr_extproc.signals.base import Resources

CONFIG: dict[str, Any] = {
    "models": [
        {"name": "text_small", "cluster": "c1", "upstream_model": "small-7b"},
        {
            "name": "text_tools",
            "cluster": "c2",
            "upstream_model": "tools-7b",
            "capabilities": ["tools"],
        },
        {
            "name": "vlm",
            "cluster": "c3",
            "upstream_model": "vlm-7b",
            "modalities": ["text", "image"],
        },
        {"name": "tiny_window", "cluster": "c1", "upstream_model": "tiny", "context_window": 50},
    ],
    "signals": {
        "keyword": [
            {"name": "code", "any": ["bug", "stack trace"]},
            {"name": "urgent", "any": ["urgent"]},
            {"name": "secret_word", "all": ["open", "sesame"]},
            {"name": "also_code", "any": ["bug"]},
        ],
        "modality": [{"name": "image", "min_images": 1}],
        "context": [{"name": "short", "max_tokens": 400}],
        "conversation": [{"name": "tools", "tools_offered": True}],
    },
    "decisions": [
        {
            "name": "block_sesame",
            "priority": 900,
            "rules": "keyword.secret_word",
            "action": {"type": "block", "message": "no"},
        },
        {
            "name": "confirm_urgent",
            "priority": 500,
            "rules": "keyword.urgent",
            "action": {"type": "confirm", "question": "Really urgent?"},
        },
        {
            "name": "code_text_only",
            "priority": 100,
            "rules": "keyword.code",
            "action": {"type": "route", "models": ["text_small"]},
        },
        {
            "name": "code_again",
            "priority": 100,
            "rules": "keyword.also_code",
            "action": {"type": "route", "models": ["text_tools"]},
        },
        {
            "name": "images",
            "priority": 50,
            "rules": "modality.image",
            "action": {"type": "route", "models": ["vlm"]},
        },
        {
            "name": "short_not_image",
            "priority": 10,
            "rules": {"all": ["context.short", {"not": "modality.image"}]},
            "action": {"type": "route", "models": ["tiny_window", "text_small"]},
        },
    ],
    "default": {"name": "fallback", "action": {"type": "route", "models": ["text_tools", "vlm"]}},
}

IMAGE = image_part(data_url(PNG_1X1))
LONG = "word " * 400
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]

CASES = [
    # (case, request, decision, model or None, words the reason must contain)
    (
        "a block outranks everything",
        chat(user("open sesame, there is a bug")),
        "block_sesame",
        None,
        "priority 900 > 100",
    ),
    (
        "all: needs every pattern",
        chat(user(LONG + "open the door")),
        "fallback",
        "text_tools",
        "no decision matched",
    ),
    (
        "confirm is an answer",
        chat(user("urgent: fix")),
        "confirm_urgent",
        None,
        "priority 500 > 10",
    ),
    (
        "equal priority and confidence: declaration order",
        chat(user(LONG + "a bug")),
        "code_text_only",
        "text_small",
        "declared first",
    ),
    (
        "an image request never lands on a text-only model",
        chat(user([text_part("there is a bug in this screenshot"), IMAGE])),
        "images",
        "vlm",
        "matched first but none of their models",
    ),
    (
        "route list: the first model that fits is taken",
        chat(user("hello")),
        "short_not_image",
        "tiny_window",
        "only",
    ),
    (
        "route list: a model whose window is too small is skipped",
        chat(user("hello " * 45)),
        "short_not_image",
        "text_small",
        "only",
    ),
    (
        "not: an image request is not 'short_not_image'",
        chat(user([text_part("hi"), IMAGE])),
        "images",
        "vlm",
        "the only matching decision",
    ),
    (
        "the default takes the first model that fits: tools",
        chat(user(LONG), tools=TOOLS),
        "fallback",
        "text_tools",
        "no decision matched",
    ),
    (
        "the default takes the first model that fits: images skip text-only models",
        chat(user([text_part(LONG), IMAGE]), tools=None),
        "images",
        "vlm",
        "only",
    ),
]


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(compile_policy(parse_config(CONFIG), Resources()))


@pytest.mark.parametrize(
    ("request_doc", "decision", "model", "reason"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_decision_table(
    router: Router, request_doc: dict[str, Any], decision: str, model: str | None, reason: str
) -> None:
    result = asyncio.run(router.explain(body(request_doc)))
    assert result.name == decision
    assert (result.model.name if result.model else None) == model
    assert reason in result.reason


def test_skipped_models_say_why(router: Router) -> None:
    result = asyncio.run(router.explain(body(chat(user([text_part("a bug, see image"), IMAGE])))))
    reasons = {(s.decision, s.model): s.reason for s in result.skipped}
    assert reasons[("code_text_only", "text_small")].startswith("modality")
    assert reasons[("code_again", "text_tools")].startswith("modality")
    assert result.fallthrough == ("code_text_only", "code_again")


def test_unroutable_when_no_model_fits_even_the_default() -> None:
    config = {
        "models": [{"name": "t", "cluster": "c", "upstream_model": "m"}],
        "default": {"action": {"type": "route", "models": ["t"]}},
    }
    router = Router(compile_policy(parse_config(config), Resources()))
    result = asyncio.run(router.explain(body(chat(user([text_part("see"), IMAGE])))))
    assert result.outcome is RequestOutcome.UNROUTABLE
    assert "does not accept image input" in (result.problem or "")


def test_every_decision_is_evaluated_and_traced(router: Router) -> None:
    result = asyncio.run(router.explain(body(chat(user("open sesame")))))
    assert [trace.name for trace in result.traces] == [d["name"] for d in CONFIG["decisions"]]
    assert set(result.results) == {
        "keyword.secret_word",
        "keyword.urgent",
        "keyword.code",
        "keyword.also_code",
        "modality.image",
        "context.short",
    }


def test_a_body_over_the_policys_limit_is_refused_before_parsing() -> None:
    config = {**CONFIG, "limits": {"max_body_bytes": 100}}
    small = Router(compile_policy(parse_config(config), Resources()))
    from vsr_extproc.errors import RequestTooLarge

    with pytest.raises(RequestTooLarge, match="accepts at most 100"):
        asyncio.run(small.explain(body(chat(user("x" * 200)))))
