"""The one typed shape every signal reads: a normalized OpenAI chat request.

Images stay as they arrived (a base64 payload or a remote URL) until something asks for
their bytes; the payload is decoded at most once.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from vsr_extproc.errors import ImageError


class Role(StrEnum):
    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class ImageSource(StrEnum):
    DATA = "data"
    REMOTE = "remote"


_MAGIC: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "png"),
    (b"\xff\xd8\xff", 0, "jpeg"),
    (b"GIF87a", 0, "gif"),
    (b"GIF89a", 0, "gif"),
    (b"WEBP", 8, "webp"),
    (b"BM", 0, "bmp"),
    (b"II*\x00", 0, "tiff"),
    (b"MM\x00*", 0, "tiff"),
    # formats a client may plausibly send that the router does not decode, named so that
    # an error can say which one arrived
    (b"\x00\x00\x01\x00", 0, "ico"),
    (b"ftypavif", 4, "avif"),
    (b"ftypheic", 4, "heic"),
    (b"ftypmif1", 4, "heif"),
    (b"8BPS", 0, "psd"),
    (b"%!PS", 0, "eps"),
    (b"%PDF", 0, "pdf"),
    (b"<svg", 0, "svg"),
    (b"<?xml", 0, "svg or xml"),
)


_EXTENSIONS = {
    "png": "png",
    "jpg": "jpeg",
    "jpeg": "jpeg",
    "gif": "gif",
    "webp": "webp",
    "bmp": "bmp",
    "tif": "tiff",
    "tiff": "tiff",
}


def sniff_format(head: bytes) -> str | None:
    """The image format named by the leading magic bytes, or None if unknown."""
    for magic, offset, name in _MAGIC:
        if head[offset : offset + len(magic)] == magic:
            if name == "webp" and head[:4] != b"RIFF":
                continue
            return name
    return None


class ImagePart:
    """One image of the request, decoded lazily and at most once.

    ``index`` counts images across the whole request in order of appearance; signals and
    traces name images by it.
    """

    __slots__ = (
        "_data",
        "_payload",
        "_unavailable",
        "declared_type",
        "detail",
        "index",
        "message_index",
        "source",
        "url",
    )

    def __init__(
        self,
        *,
        index: int,
        message_index: int,
        source: ImageSource,
        declared_type: str | None = None,
        payload: str | None = None,
        url: str | None = None,
        detail: str | None = None,
    ) -> None:
        self.index = index
        self.message_index = message_index
        self.source = source
        self.declared_type = declared_type
        self.url = url
        self.detail = detail
        self._payload = payload
        self._data: bytes | None = None
        self._unavailable: str | None = None

    @property
    def is_remote(self) -> bool:
        return self.source is ImageSource.REMOTE

    @property
    def available(self) -> bool:
        """True when the image's bytes are at hand (inline, or fetched)."""
        return self._payload is not None or self._data is not None

    def data(self) -> bytes:
        """The image's bytes. Raises ``ImageError`` for bad base64 or an unfetched URL."""
        if self._data is None:
            if self._payload is None:
                reason = self._unavailable or "a remote URL that was not fetched"
                raise ImageError(f"image {self.index}: {reason}")
            try:
                self._data = base64.b64decode(self._payload, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise ImageError(f"image {self.index}: invalid base64 ({exc})") from None
            self._payload = None
        return self._data

    def set_data(self, data: bytes) -> None:
        """Attach bytes obtained elsewhere (the opt-in remote fetcher)."""
        self._data = data

    def set_unavailable(self, reason: str) -> None:
        """Record why a remote image's bytes could not be obtained (refused, too large…)."""
        self._unavailable = reason

    def head(self, size: int = 16) -> bytes:
        """The first bytes, decoding only as much base64 as needed."""
        if self._data is not None:
            return self._data[:size]
        if self._payload is None:
            return b""
        chunk = self._payload[: (size + 2) // 3 * 4]
        try:
            return base64.b64decode(chunk + "=" * (-len(chunk) % 4))[:size]
        except (binascii.Error, ValueError):
            return b""

    @property
    def format(self) -> str | None:
        """The sniffed format (png, jpeg, gif, webp, …).

        Bytes decide when there are any: a data URL that lies about its type is read by
        its content. An unfetched remote image is named by its URL's file extension.
        """
        if self.available:
            return sniff_format(self.head())
        path = urlsplit(self.url or "").path.lower()
        return _EXTENSIONS.get(path.rpartition(".")[2]) if "." in path else None

    def digest(self) -> str:
        """A content hash: of the bytes when available, else of the URL."""
        if self.available:
            return hashlib.sha256(self.data()).hexdigest()
        return hashlib.sha256((self.url or "").encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str
    #: position of this part within its message's content list
    position: int


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A function call an assistant made: in the request's history or in an answer."""

    name: str
    #: the arguments as the model wrote them (JSON text, not necessarily valid)
    arguments: str
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Message:
    index: int
    role: Role
    texts: tuple[TextPart, ...]
    images: tuple[ImagePart, ...] = ()
    name: str | None = None
    tool_calls: int = 0
    tool_call_id: str | None = None
    #: the assistant's tool calls (``tool_calls`` counts them)
    calls: tuple[ToolCall, ...] = ()

    @property
    def text(self) -> str:
        return "\n".join(part.text for part in self.texts)


@dataclass(frozen=True, slots=True)
class NormalizedRequest:
    """An OpenAI chat completion request, parsed once.

    ``body`` keeps the parsed JSON so an action can rewrite it without parsing again.
    """

    model: str | None
    messages: tuple[Message, ...]
    tools: tuple[str, ...] = ()
    stream: bool = False
    body: Mapping[str, Any] = field(default_factory=dict)
    raw_size: int = 0

    @property
    def images(self) -> tuple[ImagePart, ...]:
        return tuple(image for message in self.messages for image in message.images)

    def messages_with(self, *roles: Role) -> Iterator[Message]:
        return (message for message in self.messages if message.role in roles)

    @property
    def last_user_message(self) -> Message | None:
        for message in reversed(self.messages):
            if message.role is Role.USER:
                return message
        return None

    @property
    def prompt(self) -> str:
        """The text of the newest user message: what most signals classify."""
        message = self.last_user_message
        return message.text if message is not None else ""

    @property
    def text_chars(self) -> int:
        """Characters of text in every message (the size limits and estimates count these)."""
        return sum(len(part.text) for message in self.messages for part in message.texts)

    def text(self, *roles: Role) -> str:
        """All text of the messages with the given roles (every role if none given)."""
        chosen = self.messages if not roles else self.messages_with(*roles)
        return "\n".join(text for message in chosen if (text := message.text))

    @property
    def user_turns(self) -> int:
        return sum(1 for message in self.messages if message.role is Role.USER)
