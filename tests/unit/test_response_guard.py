"""The response guard on answers built here: JSON at once, streams event by event."""

from __future__ import annotations

import gzip
import random
from typing import Any

import orjson
import pytest

from vsr_extproc.config.compile import compile_policy, parse_config
from vsr_extproc.core.normalize import normalize
from vsr_extproc.core.responses import ResponsePolicy
from vsr_extproc.response.guard import ResponseExchange, event_data, take_events
from vsr_extproc.signals.base import Resources

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
REQUEST = normalize(orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
JSON_HEADERS = {":status": "200", "content-type": "application/json"}
SSE_HEADERS = {":status": "200", "content-type": "text/event-stream"}


def _policy(*decisions: dict[str, Any], window: int = 64) -> ResponsePolicy:
    document = {
        "models": [{"name": "m", "cluster": "c", "upstream_model": "u"}],
        "default": {"action": {"type": "route", "models": ["m"]}},
        "signals": {
            "tool_call": [
                {"name": "memory_pii", "tools": ["memory_write"], "finds": ["passport", "email"]},
                {"name": "any_call"},
            ],
            "output": [{"name": "secret", "finds": ["secret"]}],
        },
        "responses": {"enabled": True, "decisions": list(decisions), "guard_window_chars": window},
    }
    return compile_policy(parse_config(document), Resources()).responses


REDACT_SECRETS = {"name": "redact", "rules": "output.secret", "action": {"type": "redact"}}
BLOCK_MEMORY = {
    "name": "refuse_memory",
    "priority": 10,
    "rules": "tool_call.memory_pii",
    "action": {"type": "block", "message": "no personal data in memory"},
}
REDACT_MEMORY = {**BLOCK_MEMORY, "action": {"type": "redact", "types": ["passport", "email"]}}


def _event(delta: dict[str, Any], finish: str | None = None, index: int = 0) -> bytes:
    chunk = {"object": "chat.completion.chunk",
             "choices": [{"index": index, "delta": delta, "finish_reason": finish}]}  # fmt: skip
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def _stream(exchange: ResponseExchange, pieces: list[bytes]) -> tuple[bytes, list[bytes]]:
    """Feed ``pieces`` as Envoy's chunks (then the end); the bytes the client gets, and
    what left after each piece."""
    assert exchange.on_headers(SSE_HEADERS).mode == "sse"
    sent: list[bytes] = []
    for piece in [*pieces, b""]:
        plan = exchange.on_body(piece, piece == b"")
        assert plan.refuse is None
        sent.append(piece if plan.body is None else plan.body)
    return b"".join(sent), sent


def _text(body: bytes) -> str:
    text = ""
    for block in body.decode().strip().split("\n\n"):
        payload = block.removeprefix("data: ")
        if payload != "[DONE]":
            for choice in orjson.loads(payload).get("choices", ()):
                text += choice["delta"].get("content") or ""
    return text


def test_a_key_split_at_any_point_over_two_events_never_leaves() -> None:
    prefix, suffix = "Set aws_access_key_id=", " in ~/.aws/credentials and restart."
    text = prefix + AWS_KEY + suffix
    for cut in range(len(prefix) - 3, len(prefix) + len(AWS_KEY) + 3):
        exchange = ResponseExchange(_policy(REDACT_SECRETS), REQUEST)
        events = [_event({"content": text[:cut]}), _event({"content": text[cut:]}, "stop")]
        body, _ = _stream(exchange, [*events, b"data: [DONE]\n\n"])
        assert AWS_KEY not in body.decode(), cut
        assert _text(body) == prefix + "<SECRET_1>" + suffix, cut


def test_a_key_spread_over_many_events_and_chunk_boundaries_is_redacted() -> None:
    text = f"Here: {AWS_KEY}. " + "Then some ordinary prose follows for a while. " * 5
    events = b"".join(_event({"content": text[i : i + 3]}) for i in range(0, len(text), 3))
    raw = events + b"data: [DONE]\n\n"
    chunks = [raw[i : i + 50] for i in range(0, len(raw), 50)]  # cut mid-event too
    exchange = ResponseExchange(_policy(REDACT_SECRETS), REQUEST)
    body, _ = _stream(exchange, chunks)
    assert _text(body) == text.replace(AWS_KEY, "<SECRET_1>")
    assert body.endswith(b"data: [DONE]\n\n")


@pytest.mark.parametrize("seed", range(5))
def test_a_benign_stream_leaves_byte_for_byte_however_envoy_cuts_it(seed: int) -> None:
    rng = random.Random(seed)
    words = [
        "the",
        "model",
        "writes",
        "an",
        "ordinary",
        "answer",
        "about",
        "gardens",
        "and",
        "rivers",
    ]
    raw = b"".join(_event({"content": rng.choice(words) + " "}) for _ in range(120))
    raw += _event({}, "stop") + b"data: [DONE]\n\n"
    cuts = sorted(rng.sample(range(1, len(raw)), 40))
    chunks = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    for decisions in ((), (REDACT_SECRETS, BLOCK_MEMORY)):
        body, _ = _stream(ResponseExchange(_policy(*decisions), REQUEST), chunks)
        assert body == raw


@pytest.mark.parametrize("ending", [b"\r\n", b"\r"], ids=["crlf", "cr"])
def test_events_with_other_line_endings_are_read_and_guarded(ending: bytes) -> None:
    text = f"Here: {AWS_KEY}. " + "The rest is ordinary prose. " * 4
    events = [_event({"content": text[i : i + 7]}) for i in range(0, len(text), 7)]
    raw = b"".join(events) + b"data: [DONE]\n\n"
    raw = raw.replace(b"\n", ending)
    # cut in the middle of each blank line, where "\r\n\r\n" and "\r\r" are split
    chunks = raw.replace(ending * 2, ending + b"|" + ending).split(b"|")
    body, _ = _stream(ResponseExchange(_policy(REDACT_SECRETS), REQUEST), chunks)
    assert AWS_KEY not in body.decode()
    assert _text(body.replace(ending, b"\n")) == text.replace(AWS_KEY, "<SECRET_1>")
    plain = text.replace(AWS_KEY, "no key here at all!!")
    events = [_event({"content": plain[i : i + 7]}) for i in range(0, len(plain), 7)]
    benign = (b"".join(events) + b"data: [DONE]\n\n").replace(b"\n", ending)
    body, _ = _stream(ResponseExchange(_policy(REDACT_SECRETS), REQUEST), [benign])
    assert body == benign  # byte for byte, line endings kept


def test_a_chunk_of_many_events_releases_all_but_the_window_at_once() -> None:
    events = [_event({"content": "word" + " " * 6}) for _ in range(40)]  # 10 characters each
    exchange = ResponseExchange(_policy(REDACT_SECRETS, window=64), REQUEST)
    assert exchange.on_headers(SSE_HEADERS).mode == "sse"
    plan = exchange.on_body(b"".join(events), False)
    # the last 7 events are still within 64 characters of the end: held
    assert plan.body == b"".join(events[:33])
    assert exchange.on_body(b"", True).body == b"".join(events[33:])


def test_text_waits_only_for_the_window_and_not_at_all_without_a_text_guard() -> None:
    words = [_event({"content": "word" + " " * 6}) for _ in range(30)]  # 10 characters each
    _, guarded = _stream(ResponseExchange(_policy(REDACT_SECRETS, window=64), REQUEST), words)
    # an event leaves once 64 more characters have arrived: 7 events later
    assert [bool(sent) for sent in guarded[:8]] == [False] * 7 + [True]
    assert all(guarded[7:30])
    _, unguarded = _stream(ResponseExchange(_policy(BLOCK_MEMORY), REQUEST), words)
    assert all(unguarded[:30])


def _call_events(name: str, arguments: str, parts: int = 3) -> list[bytes]:
    size = -(-len(arguments) // parts)
    pieces = [arguments[i : i + size] for i in range(0, len(arguments), size)]
    events = []
    for position, piece in enumerate(pieces):
        function: dict[str, str] = {"arguments": piece}
        call: dict[str, Any] = {"index": 0, "function": function}
        if position == 0:
            function["name"] = name
            call.update(id="call_1", type="function")
        events.append(_event({"tool_calls": [call]}))
    return [*events, _event({}, "tool_calls"), b"data: [DONE]\n\n"]


def _streamed_arguments(body: bytes) -> str:
    arguments = ""
    for block in body.decode().strip().split("\n\n"):
        payload = block.removeprefix("data: ")
        if payload == "[DONE]":
            continue
        for choice in orjson.loads(payload).get("choices", ()):
            for call in choice["delta"].get("tool_calls") or ():
                arguments += call["function"].get("arguments", "")
    return arguments


MEMORY = orjson.dumps({"fact": "passport number C01X00T47, mail jane.doe@example.org"}).decode()


def test_a_streamed_tool_call_is_held_whole_then_blocked() -> None:
    exchange = ResponseExchange(_policy(BLOCK_MEMORY), REQUEST)
    body, sent = _stream(exchange, _call_events("save_memory", MEMORY))
    assert not any(sent[:3])  # the call's fragments wait for the whole call
    assert b"C01X00T47" not in body
    assert b'"decision":"refuse_memory"' in body
    assert body.endswith(b"data: [DONE]\n\n")
    assert exchange.outcome()["decisions"] == [{"decision": "refuse_memory", "action": "block"}]


def test_streamed_tool_arguments_are_redacted_and_stay_valid_json() -> None:
    exchange = ResponseExchange(_policy(REDACT_MEMORY), REQUEST)
    body, _ = _stream(exchange, _call_events("memory.add", MEMORY))
    assert orjson.loads(_streamed_arguments(body)) == {
        "fact": "passport number <PASSPORT_1>, mail <EMAIL_1>"
    }


def _completion(content: str | None, calls: list[tuple[str, str]] = (), **extra: Any) -> bytes:  # type: ignore[assignment]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ]
    return orjson.dumps({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                         **extra})  # fmt: skip


def test_json_answers_are_blocked_redacted_or_annotated() -> None:
    exchange = ResponseExchange(_policy(BLOCK_MEMORY), REQUEST)
    assert exchange.on_headers(JSON_HEADERS).buffered
    plan = exchange.on_body(_completion(None, [("remember", MEMORY)]), True)
    assert plan.refuse is not None
    assert plan.refuse[0] == 403
    assert orjson.loads(plan.refuse[1])["error"]["decision"] == "refuse_memory"

    exchange = ResponseExchange(_policy(REDACT_MEMORY, REDACT_SECRETS), REQUEST)
    exchange.on_headers(JSON_HEADERS)
    plan = exchange.on_body(_completion(f"key {AWS_KEY}", [("save_memory", MEMORY)]), True)
    assert plan.body is not None
    message = orjson.loads(plan.body)["choices"][0]["message"]
    assert orjson.loads(message["tool_calls"][0]["function"]["arguments"]) == {
        "fact": "passport number <PASSPORT_1>, mail <EMAIL_1>"
    }
    # both redactions apply, each with its own types
    assert message["content"] == "key <SECRET_1>"

    annotate = {"name": "note", "rules": "tool_call.any_call",
                "action": {"type": "annotate", "headers": {"x-agent-acted": "yes"}}}  # fmt: skip
    exchange = ResponseExchange(_policy(annotate), REQUEST)
    exchange.on_headers(JSON_HEADERS)
    plan = exchange.on_body(_completion(None, [("get_weather", "{}")]), True)
    assert plan.headers == (("x-agent-acted", "yes"),)


def test_a_json_answer_streamed_where_it_should_be_buffered_leaves_only_when_read() -> None:
    """An Envoy started before a reload added response decisions streams JSON answers in
    parts; none of them may leave before the guards have read the whole."""
    exchange = ResponseExchange(_policy(REDACT_SECRETS), REQUEST)
    assert exchange.on_headers(JSON_HEADERS).buffered
    body = _completion(f"the key is {AWS_KEY}, keep it safe")
    cut = body.index(AWS_KEY.encode()) + 6
    assert exchange.on_body(body[:cut], False).body == b""
    last = exchange.on_body(body[cut:], True).body
    assert last is not None
    assert orjson.loads(last)["choices"][0]["message"]["content"] == (
        "the key is <SECRET_1>, keep it safe"
    )


def test_usage_comes_from_the_answer_or_is_estimated_and_marked() -> None:
    exchange = ResponseExchange(_policy(), REQUEST)
    assert not exchange.on_headers(JSON_HEADERS).buffered  # only measured: streamed through
    usage = {"prompt_tokens": 12, "completion_tokens": 34}
    assert exchange.on_body(_completion("hello", usage=usage), True).body is None
    assert exchange.outcome()["usage"] == {"input_tokens": 12, "output_tokens": 34,
                                           "estimated": False}  # fmt: skip
    exchange = ResponseExchange(_policy(), REQUEST)
    exchange.on_headers(JSON_HEADERS)
    exchange.on_body(_completion("x" * 40), True)
    assert exchange.outcome()["usage"] == {"input_tokens": 1, "output_tokens": 10,
                                           "estimated": True}  # fmt: skip


def test_what_the_guards_cannot_read_is_refused_or_passed_as_configured() -> None:
    exchange = ResponseExchange(_policy(REDACT_SECRETS), REQUEST)
    exchange.on_headers(JSON_HEADERS)
    plan = exchange.on_body(b'{"choices": [', True)
    assert plan.refuse is not None
    assert plan.refuse[0] == 502
    # no decision reads answers: nothing to protect, so it passes unchanged
    exchange = ResponseExchange(_policy(), REQUEST)
    exchange.on_headers(JSON_HEADERS)
    assert exchange.on_body(b'{"choices": [', True) == type(plan)()
    assert exchange.outcome()["unreadable"] == "the answer is not valid JSON"
    # an encoding the router cannot decode
    exchange = ResponseExchange(_policy(REDACT_SECRETS), REQUEST)
    refused = exchange.on_headers({**JSON_HEADERS, "content-encoding": "br"}).refuse
    assert refused is not None
    assert b"content encoding 'br'" in refused[1]


def test_gzip_answers_are_decoded_for_the_guard_and_the_client() -> None:
    exchange = ResponseExchange(_policy(REDACT_SECRETS), REQUEST)
    plan = exchange.on_headers({**JSON_HEADERS, "content-encoding": "gzip"})
    assert "content-encoding" in plan.remove
    body = exchange.on_body(gzip.compress(_completion(f"key {AWS_KEY}")), True).body
    assert body is not None
    assert orjson.loads(body)["choices"][0]["message"]["content"] == "key <SECRET_1>"


def test_upstream_errors_are_not_read() -> None:
    exchange = ResponseExchange(_policy(REDACT_SECRETS), REQUEST)
    assert exchange.on_headers({":status": "500", "content-type": "application/json"}).mode == (
        "pass"
    )
    assert exchange.on_body(b"not json", True).body is None


def test_a_long_stream_keeps_only_what_the_guards_may_still_read() -> None:
    filler = "An ordinary sentence of a long answer. " * 5  # ~200 characters an event
    events = [_event({"content": filler}) for _ in range(2_000)]  # ~400,000 characters
    events.insert(1_900, _event({"content": f"Oh, and the key is {AWS_KEY[:9]}"}))
    events.insert(1_901, _event({"content": f"{AWS_KEY[9:]}. "}))
    exchange = ResponseExchange(_policy(REDACT_SECRETS), REQUEST)
    body, _ = _stream(exchange, [*events, b"data: [DONE]\n\n"])
    assert AWS_KEY not in body.decode()
    assert "the key is <SECRET_1>. " in _text(body)
    assert len(_text(body)) == 2_000 * len(filler) + len("Oh, and the key is <SECRET_1>. ")
    assert len(exchange.answer.texts[0]) < 70_000  # the rest was dropped as it left
    # estimated from every character that left, not only those kept
    assert exchange.outcome()["usage"]["output_tokens"] == (len(_text(body)) + 3) // 4


@pytest.mark.parametrize("seed", range(4))
def test_events_are_read_alike_whatever_the_line_ending_and_wherever_a_chunk_ends(
    seed: int,
) -> None:
    # events as servers write them: one data line, several, no space after the colon,
    # a comment, a named event, stray blank lines between events
    shapes = [
        b'data: {"n": 1}\n\n',
        b'data:{"n": 2}\n\n',
        b'data: {"n":\ndata: 3}\n\n',
        b": keep-alive\n\n",
        b'event: message\ndata: {"n": 4}\n\n',
        b"\n",
        b"data: [DONE]\n\n",
    ]
    rng = random.Random(seed)
    raw = b"".join(rng.choice(shapes) for _ in range(60))
    for ending in (b"\n", b"\r\n"):
        stream = raw.replace(b"\n", ending)
        cuts = sorted(rng.sample(range(1, len(stream)), 15))
        buffer, events = bytearray(), []
        for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True):
            buffer += stream[a:b]
            events += take_events(buffer)
        assert b"".join(events) + bytes(buffer) == stream  # nothing lost or repeated
        read = [event_data(event) for event in events]
        if ending == b"\n":
            expected = read
        else:
            assert read == expected
    assert b'{"n":\n3}' in expected  # two data lines joined
    assert b'{"n": 2}' in expected  # no space after the colon
    assert None in expected  # a comment has no data
