"""Turn the bytes of an OpenAI chat completion request into a ``NormalizedRequest``.

The body is parsed once. Anything that is not a chat request raises ``InvalidRequest``
with the JSON path of the first problem, so the client's 400 says exactly what to fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote_to_bytes

import orjson

from vsr_extproc.core.request import (
    ImagePart,
    ImageSource,
    Message,
    NormalizedRequest,
    Role,
    TextPart,
    ToolCall,
)
from vsr_extproc.errors import InvalidRequest, RequestTooLarge

#: content part types that OpenAI defines and that carry nothing the router reads
_OPAQUE_PARTS = frozenset({"input_audio", "file", "refusal"})
_ROLES = {role.value: role for role in Role}


def parse_json(body: bytes) -> Any:
    """Parse a JSON body; invalid JSON or invalid UTF-8 is an ``InvalidRequest``."""
    if not body:
        raise InvalidRequest("the request body is empty; expected a JSON chat request")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"the request body is not valid JSON: {exc}") from None


def normalize(body: bytes, *, max_parts: int = 10_000) -> NormalizedRequest:
    """Parse and normalize a chat completion body."""
    document = parse_json(body)
    return normalize_document(document, raw_size=len(body), max_parts=max_parts)


def normalize_document(
    document: Any, *, raw_size: int = 0, max_parts: int = 10_000
) -> NormalizedRequest:
    """Normalize an already parsed chat completion request."""
    if not isinstance(document, dict):
        raise InvalidRequest("the request body must be a JSON object")
    raw_messages = document.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise InvalidRequest("messages: expected a non-empty list of chat messages")
    builder = _Builder(max_parts)
    messages = tuple(builder.message(index, raw) for index, raw in enumerate(raw_messages))
    model = document.get("model")
    if model is not None and not isinstance(model, str):
        raise InvalidRequest("model: expected a string")
    stream = document.get("stream", False)
    if not isinstance(stream, bool):
        raise InvalidRequest("stream: expected true or false")
    return NormalizedRequest(
        model=model,
        messages=messages,
        tools=_tool_names(document.get("tools")),
        stream=stream,
        body=document,
        raw_size=raw_size,
    )


def _tool_names(tools: Any) -> tuple[str, ...]:
    if tools is None:
        return ()
    if not isinstance(tools, list):
        raise InvalidRequest("tools: expected a list")
    names = []
    for position, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise InvalidRequest(f"tools[{position}]: expected an object")
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        names.append(name if isinstance(name, str) else f"tool_{position}")
    return tuple(names)


def _tool_call(raw: Any) -> ToolCall:
    """An assistant's tool call, leniently: what a client sent back is history, not ours
    to refuse; a malformed call becomes one with an empty name."""
    function = raw.get("function") if isinstance(raw, dict) else None
    function = function if isinstance(function, dict) else {}
    name = function.get("name")
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = "" if arguments is None else orjson.dumps(arguments).decode()
    identifier = raw.get("id") if isinstance(raw, dict) else None
    return ToolCall(
        name if isinstance(name, str) else "",
        arguments,
        identifier if isinstance(identifier, str) else None,
    )


class _Builder:
    """Numbers images across messages and bounds the number of content parts."""

    def __init__(self, max_parts: int) -> None:
        self.max_parts = max_parts
        self.parts = 0
        self.images = 0

    def message(self, index: int, raw: Any) -> Message:
        where = f"messages[{index}]"
        if not isinstance(raw, dict):
            raise InvalidRequest(f"{where}: expected an object")
        role = _ROLES.get(raw.get("role"))  # type: ignore[arg-type]
        if role is None:
            raise InvalidRequest(
                f"{where}.role: expected one of {', '.join(_ROLES)}, got {raw.get('role')!r}"
            )
        texts, images = self.content(where, index, raw.get("content"))
        tool_calls = raw.get("tool_calls")
        if tool_calls is not None and not isinstance(tool_calls, list):
            raise InvalidRequest(f"{where}.tool_calls: expected a list")
        name = raw.get("name")
        tool_call_id = raw.get("tool_call_id")
        return Message(
            index=index,
            role=role,
            texts=texts,
            images=images,
            name=name if isinstance(name, str) else None,
            tool_calls=len(tool_calls or ()),
            tool_call_id=tool_call_id if isinstance(tool_call_id, str) else None,
            calls=tuple(_tool_call(call) for call in tool_calls or ()),
        )

    def content(
        self, where: str, message_index: int, content: Any
    ) -> tuple[tuple[TextPart, ...], tuple[ImagePart, ...]]:
        if content is None:
            return (), ()
        if isinstance(content, str):
            return (TextPart(content, 0),), ()
        if not isinstance(content, list):
            raise InvalidRequest(f"{where}.content: expected a string or a list of parts")
        self.parts += len(content)
        if self.parts > self.max_parts:
            raise RequestTooLarge(
                f"{where}.content: more than {self.max_parts} content parts in the request"
            )
        texts: list[TextPart] = []
        images: list[ImagePart] = []
        for position, part in enumerate(content):
            part_where = f"{where}.content[{position}]"
            if not isinstance(part, dict):
                raise InvalidRequest(f"{part_where}: expected an object")
            kind = part.get("type")
            if kind == "text":
                text = part.get("text")
                if not isinstance(text, str):
                    raise InvalidRequest(f"{part_where}.text: expected a string")
                texts.append(TextPart(text, position))
            elif kind == "image_url":
                images.append(self.image(part_where, message_index, part.get("image_url")))
            elif kind not in _OPAQUE_PARTS:
                raise InvalidRequest(f"{part_where}.type: unsupported content part {kind!r}")
        return tuple(texts), tuple(images)

    def image(self, where: str, message_index: int, spec: Any) -> ImagePart:
        detail = None
        if isinstance(spec, Mapping):
            detail = spec.get("detail")
            spec = spec.get("url")
        if not isinstance(spec, str) or not spec:
            raise InvalidRequest(f"{where}.image_url.url: expected a URL string")
        index = self.images
        self.images += 1
        detail = detail if isinstance(detail, str) else None
        if spec.startswith("data:"):
            return _data_image(where, index, message_index, spec, detail)
        if spec.startswith(("http://", "https://")):
            return ImagePart(
                index=index,
                message_index=message_index,
                source=ImageSource.REMOTE,
                url=spec,
                detail=detail,
            )
        raise InvalidRequest(f"{where}.image_url.url: expected a data: or http(s) URL")


def _data_image(
    where: str, index: int, message_index: int, url: str, detail: str | None
) -> ImagePart:
    header, comma, payload = url.partition(",")
    if not comma:
        raise InvalidRequest(f"{where}.image_url.url: a data URL needs a ',' before its data")
    params = header[len("data:") :].split(";")
    media_type = params[0].strip().lower() or None
    image = ImagePart(
        index=index,
        message_index=message_index,
        source=ImageSource.DATA,
        declared_type=media_type,
        payload=payload if "base64" in params[1:] else None,
        detail=detail,
    )
    if "base64" not in params[1:]:
        image.set_data(unquote_to_bytes(payload))
    return image
