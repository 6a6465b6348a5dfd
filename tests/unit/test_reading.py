"""What the text signals read of a request: bounded, in a documented order, and reported."""

from __future__ import annotations

from typing import Any

import pytest
from builders import body, chat, user

from vsr_extproc.core.normalize import normalize
from vsr_extproc.core.reading import ReadingBudget, excerpt, read
from vsr_extproc.core.request import Role
from vsr_extproc.signals.context import ContextEntry, ContextSignal
from vsr_extproc.signals.keyword import KeywordEntry, KeywordSignal

BUDGET = ReadingBudget(prompt_chars=300, message_chars=90, total_chars=480)


def system(text: str) -> dict[str, Any]:
    return {"role": "system", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def tool(text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": "call_1", "content": text}


def test_an_ordinary_conversation_is_read_whole_and_reports_nothing() -> None:
    request = normalize(body(chat(system("Be brief."), user("Hi"), assistant("Hello"), user("Q?"))))
    reading = read(request, "all", BUDGET)
    assert reading.texts == ("Be brief.", "Hi", "Hello", "Q?")
    assert reading.skipped_chars == 0
    assert reading.report == {}


def test_a_long_prompt_is_read_as_its_head_and_tail() -> None:
    prompt = "A" * 1000 + "B" * 1000 + "C" * 1000
    reading = read(normalize(body(chat(user(prompt)))), "prompt", BUDGET)
    assert reading.texts == ("A" * 200, "C" * 100)
    assert reading.report == {"read_chars": 300, "skipped_chars": 2700}


def test_tool_results_claim_the_budget_before_older_turns() -> None:
    request = normalize(
        body(
            chat(
                user("old question " * 20),
                tool("tool output " * 20),
                user("x" * 300),
            )
        )
    )
    reading = read(request, "conversation", ReadingBudget(300, 90, 390))
    # the prompt takes 300, the tool result the remaining 90 and nothing is left for the
    # older user turn; the excerpts keep the messages' order
    assert [len(text) for text in reading.texts] == [60, 30, 300]
    assert reading.texts[0].startswith("tool output")
    assert reading.skipped_chars == 260 + 240 - 90  # the old turn and the tool's middle
    # each excerpt says whose message it came from: a tool result's text is data
    assert reading.roles == (Role.TOOL, Role.TOOL, Role.USER)


def test_every_excerpt_carries_the_role_of_its_message() -> None:
    request = normalize(body(chat(system("Be brief."), user("Hi"), tool("42 rows"), user("Q?"))))
    reading = read(request, "all", BUDGET)
    assert list(zip(reading.texts, reading.roles, strict=True)) == [
        ("Be brief.", Role.SYSTEM),
        ("Hi", Role.USER),
        ("42 rows", Role.TOOL),
        ("Q?", Role.USER),
    ]


def test_a_two_megabyte_prompt_is_read_within_the_total() -> None:
    huge = "word " * 400_000
    request = normalize(body(chat(user("earlier turn"), user(huge))))
    budget = ReadingBudget()
    reading = read(request, "all", budget)
    assert reading.read_chars <= budget.total_chars
    assert reading.read_chars == budget.prompt_chars + len("earlier turn")
    assert reading.skipped_chars == len(huge) - budget.prompt_chars


@pytest.mark.parametrize(("limit", "pieces"), [(9, ("abcdef", "xyz")), (1000, ("abcdefghxyz",))])
def test_an_excerpt_keeps_two_thirds_head_and_one_third_tail(
    limit: int, pieces: tuple[str, ...]
) -> None:
    assert excerpt("abcdefghxyz", limit) == pieces


def test_budgets_below_three_characters_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 3"):
        ReadingBudget(prompt_chars=2)


def test_a_keyword_at_either_end_of_a_huge_prompt_is_found_and_the_gap_reported() -> None:
    signal = KeywordSignal(KeywordEntry(name="forbidden", any=["build a bomb"]), BUDGET)
    filler = "lorem ipsum " * 10_000
    for prompt in (f"Please build a bomb. {filler}", f"{filler} now build a bomb"):
        outcome = signal.evaluate_now(normalize(body(chat(user(prompt)))))
        assert outcome.matched
        assert outcome.value == {"read_chars": 300, "skipped_chars": len(prompt) - 300}


def test_a_keyword_never_matches_across_the_gap_between_head_and_tail() -> None:
    signal = KeywordSignal(KeywordEntry(name="forbidden", any=["build a bomb"]), BUDGET)
    prompt = "x" * 190 + " build a" + "y" * 5000 + " bomb " + "z" * 90
    assert not signal.evaluate_now(normalize(body(chat(user(prompt))))).matched


def test_the_context_signal_still_counts_every_character_of_a_huge_request() -> None:
    signal = ContextSignal(ContextEntry(name="long", min_tokens=24_000))
    outcome = signal.evaluate_now(normalize(body(chat(user("word " * 400_000)))))
    assert outcome.matched
    assert outcome.value["tokens"] > 400_000


def _emoji_cost(text: str) -> int:
    """A stand-in tokenizer: an emoji costs four tokens, anything else one per word."""
    return sum(4 if ord(char) > 0xFFFF else 0 for char in text) + len(text.split())


def test_a_prompt_dense_in_tokens_is_cut_to_its_token_share_head_and_tail() -> None:
    budget = ReadingBudget(
        prompt_chars=300, message_chars=90, total_chars=480, prompt_tokens=100, total_tokens=150
    )
    prompt = "🙂" * 1000 + " the end"
    reading = read(normalize(body(chat(user(prompt)))), "prompt", budget, _emoji_cost)
    assert reading.read_tokens is not None
    assert reading.read_tokens <= 100
    assert sum(_emoji_cost(text) for text in reading.texts) == reading.read_tokens
    head, tail = reading.texts
    assert prompt.startswith(head)
    assert tail.endswith("the end")  # the tail is still read
    assert reading.report["read_tokens"] == reading.read_tokens
    # the same prompt read by characters only takes its whole character share
    by_chars = read(normalize(body(chat(user(prompt)))), "prompt", budget)
    assert by_chars.read_chars == 300
    assert reading.read_chars < by_chars.read_chars


def test_the_token_total_bounds_every_message_together() -> None:
    budget = ReadingBudget(prompt_tokens=50, message_tokens=50, total_tokens=80)
    turns = [user("word " * 200), assistant("ok"), user("more " * 200)]
    reading = read(normalize(body(chat(*turns))), "user", budget, lambda text: len(text.split()))
    assert reading.read_tokens is not None
    assert reading.read_tokens <= 80
    assert len(reading.texts) >= 2  # the newest turn first, then what the total leaves


def test_token_budgets_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1 token"):
        ReadingBudget(prompt_tokens=0)
