"""Normalizing OpenAI chat requests, and the clear 400s for what is not one."""

from __future__ import annotations

import base64
import re

import pytest
from builders import PNG_1X1, body, chat, data_url, image_part, jpeg_bytes, text_part, user

from vsr_extproc.core.normalize import normalize
from vsr_extproc.core.request import ImageSource, Role
from vsr_extproc.errors import ImageError, InvalidRequest, RequestTooLarge


def test_roles_texts_tools_and_stream() -> None:
    request = normalize(
        body(
            chat(
                {"role": "system", "content": "be brief"},
                user([text_part("first"), text_part("second")]),
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "1",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "1", "content": "42"},
                user("thanks"),
                tools=[{"type": "function", "function": {"name": "f"}}],
                stream=True,
            )
        )
    )
    assert [m.role for m in request.messages] == [
        Role.SYSTEM,
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.USER,
    ]
    assert request.messages[1].text == "first\nsecond"
    assert request.messages[2].tool_calls == 1
    assert request.messages[3].tool_call_id == "1"
    assert request.tools == ("f",)
    assert request.stream is True
    assert request.prompt == "thanks"
    assert request.user_turns == 2


def test_images_are_numbered_across_messages_and_decoded_lazily() -> None:
    jpeg = jpeg_bytes()
    request = normalize(
        body(
            chat(
                user([text_part("a"), image_part(data_url(PNG_1X1))]),
                user(
                    [
                        image_part(data_url(jpeg, "image/jpeg")),
                        image_part("https://example.com/cat.webp"),
                    ]
                ),
            )
        )
    )
    images = request.images
    assert [image.index for image in images] == [0, 1, 2]
    assert [image.message_index for image in images] == [0, 1, 1]
    assert [image.format for image in images] == ["png", "jpeg", "webp"]
    assert images[2].source is ImageSource.REMOTE
    assert not images[2].available
    assert images[1].data() == jpeg
    assert images[1].data() is images[1].data()  # decoded once


def test_a_data_url_that_lies_about_its_type_is_sniffed() -> None:
    request = normalize(body(chat(user([image_part(data_url(PNG_1X1, "image/jpeg"))]))))
    image = request.images[0]
    assert image.declared_type == "image/jpeg"
    assert image.format == "png"


def test_bad_base64_is_an_image_error_not_a_request_error() -> None:
    request = normalize(body(chat(user([image_part("data:image/png;base64,@@@not-base64")]))))
    with pytest.raises(ImageError, match="invalid base64"):
        request.images[0].data()
    assert request.images[0].format is None


def test_unfetched_remote_image_has_no_bytes() -> None:
    request = normalize(body(chat(user([image_part("http://example.com/a.png")]))))
    with pytest.raises(ImageError, match="image 0: a remote URL that was not fetched"):
        request.images[0].data()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "empty"),
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe{}", "not valid JSON"),
        (b"[]", "must be a JSON object"),
        (b'{"messages": []}', "messages: expected a non-empty list"),
        (b'{"messages": "hi"}', "messages: expected a non-empty list"),
        (b'{"messages": [{"role": "wizard", "content": "x"}]}', "messages[0].role"),
        (b'{"messages": [{"role": "user", "content": 5}]}', "messages[0].content"),
        (
            b'{"messages": [{"role": "user", "content": [{"type": "video"}]}]}',
            "messages[0].content[0].type: unsupported content part 'video'",
        ),
        (
            b'{"messages": [{"role": "user", "content": [{"type": "text", "text": 1}]}]}',
            "messages[0].content[0].text",
        ),
        (
            b'{"messages": [{"role": "user", "content": [{"type": "image_url", '
            b'"image_url": {}}]}]}',
            "messages[0].content[0].image_url.url",
        ),
        (
            b'{"messages": [{"role": "user", "content": [{"type": "image_url", '
            b'"image_url": {"url": "file:///etc/passwd"}}]}]}',
            "expected a data: or http(s) URL",
        ),
        (b'{"model": 3, "messages": [{"role": "user", "content": "x"}]}', "model: expected"),
        (b'{"stream": "yes", "messages": [{"role": "user", "content": "x"}]}', "stream:"),
        (b'{"tools": {}, "messages": [{"role": "user", "content": "x"}]}', "tools: expected"),
        (b"[" * 5000 + b"]" * 5000, "not valid JSON"),
    ],
    ids=lambda value: value[:30] if isinstance(value, bytes) else None,
)
def test_not_a_chat_request(raw: bytes, message: str) -> None:
    with pytest.raises(InvalidRequest, match=re.escape(message)):
        normalize(raw)


def test_content_part_limit() -> None:
    parts = [text_part("x")] * 20
    with pytest.raises(RequestTooLarge, match="more than 10 content parts"):
        normalize(body(chat(user(parts))), max_parts=10)


def test_percent_encoded_data_url() -> None:
    raw = base64.b16encode(PNG_1X1[:4]).decode()
    encoded = "".join(f"%{raw[i : i + 2]}" for i in range(0, len(raw), 2))
    request = normalize(body(chat(user([image_part(f"data:image/png,{encoded}")]))))
    assert request.images[0].data() == PNG_1X1[:4]
