"""Request builders shared by the test tiers, and ``until``: how a test waits for an event."""

from __future__ import annotations

import asyncio
import base64
import inspect
import io
import struct
import time
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

import orjson


def chat(*messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"model": "auto", "messages": list(messages), **fields}


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def image_part(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


# a 1×1 PNG, the smallest image a request can carry
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def data_url(data: bytes, media_type: str = "image/png") -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


def body(document: dict[str, Any]) -> bytes:
    return orjson.dumps(document)


def jpeg_bytes(width: int = 8, height: int = 8) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buffer, format="JPEG")
    return buffer.getvalue()


def encoded(image: Any, fmt: str, **params: Any) -> bytes:
    """A PIL image saved as ``fmt`` (PNG, JPEG, …) with the given save options."""
    buffer = io.BytesIO()
    image.save(buffer, fmt, **params)
    return buffer.getvalue()


def png_declaring(width: int, height: int) -> bytes:
    """A real 4×4 PNG whose IHDR (with a valid CRC) claims another size: a tiny bomb."""
    from PIL import Image

    data = bytearray(encoded(Image.new("RGB", (4, 4), "red"), "PNG"))
    struct.pack_into(">II", data, 16, width, height)
    struct.pack_into(">I", data, 29, zlib.crc32(bytes(data[12:29])))
    return bytes(data)


async def until(
    condition: Callable[[], bool | Awaitable[bool]],
    what: str,
    *,
    seconds: float = 10.0,
    every: float = 0.05,
) -> None:
    """Return as soon as ``condition()`` (a function or a coroutine function) holds; fail,
    saying what was awaited, once ``seconds`` have passed without it.

    For events a test can only see by looking (a counter, a metric, Envoy's view of its
    hosts). A test never sleeps a fixed time instead: too short on a slow machine, too
    long on every other. Where there is an event or a future to await, await that.
    """
    deadline = time.monotonic() + seconds
    while True:
        held = condition()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {seconds:g} s waiting until {what}")
        await asyncio.sleep(every)
