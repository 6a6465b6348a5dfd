"""Hostile input: every malformed, huge or lying input gets a clear answer, never a crash.

Property-based (hypothesis) for the request normalizer, the image decoder and the rule
evaluator, plus hand-made worst cases: deep nesting, huge strings, thousands of parts,
invalid UTF-8, truncated base64, data URLs that lie, decompression bombs, animations with
thousands of frames, zero-size, CMYK and 16-bit images, absurd EXIF.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import time
import zlib
from struct import pack
from typing import Any

import orjson
import pytest
from builders import encoded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from vsr_extproc.core.normalize import normalize
from vsr_extproc.core.request import ImagePart
from vsr_extproc.core.rules import AllOf, AnyOf, Leaf, Not, OnError, Rule, evaluate
from vsr_extproc.core.signals import SignalResult
from vsr_extproc.errors import ImageError, RequestError
from vsr_extproc.runtime.images import ImageLimits, decode_image

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=30,
)
PARTS = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image_url", "video", "input_audio", 7, None])},
    optional={
        "text": JSON,
        "image_url": st.one_of(
            JSON,
            st.fixed_dictionaries({"url": st.one_of(
                st.text(max_size=30),
                st.builds(lambda p: "data:image/png;base64," + p, st.text(max_size=30)),
                st.just("https://169.254.169.254/latest/meta-data"),
                st.just("file:///etc/passwd"),
            )}),
        ),
    },
)  # fmt: skip
MESSAGES = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "system", "assistant", "tool", "wizard", 3])},
    optional={
        "content": st.one_of(JSON, st.lists(PARTS, max_size=6)),
        "tool_calls": JSON,
        "name": JSON,
    },
)
REQUESTS = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {"messages": st.one_of(JSON, st.lists(MESSAGES, max_size=6))},
        optional={"model": JSON, "stream": JSON, "tools": JSON},
    ),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(REQUESTS)
def test_any_json_is_a_request_or_a_clear_400(document: Any) -> None:
    try:
        request = normalize(json.dumps(document).encode())
    except RequestError as exc:
        refused: RequestError | None = exc
    else:
        refused = None
    if refused is not None:
        assert refused.status in (400, 413)
        assert str(refused)
        return
    for image in request.images:  # lazily decoded bytes fail as ImageError only
        with contextlib.suppress(ImageError):
            image.data()
        assert image.format is None or isinstance(image.format, str)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_any_bytes_are_a_request_or_a_clear_400(raw: bytes) -> None:
    with pytest.raises(RequestError):
        normalize(raw if not raw.startswith(b"{") else raw + b"}")


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 100_000 + b"]" * 100_000,  # nesting far past any parser's limit
        b'{"messages": [{"role": "user", "content": "' + b"\xff\xfe" * 100 + b'"}]}',  # not UTF-8
        b'{"messages": [{"role": "user", "content": "x"}], "model": "\\ud800"}',  # lone surrogate
        b"\x00" * 10_000,
        b'{"messages": ' + b"1" * 1_000_000 + b"}",
    ],
    ids=["deep-nesting", "invalid-utf8", "lone-surrogate", "nul-bytes", "huge-number"],
)
def test_malformed_bodies_are_400s_quickly(raw: bytes) -> None:
    started = time.perf_counter()
    with pytest.raises(RequestError):
        normalize(raw)
    assert time.perf_counter() - started < 2.0


def test_a_huge_string_and_thousands_of_parts_are_bounded() -> None:
    huge = {"messages": [{"role": "user", "content": "x" * 20_000_000}]}
    assert len(normalize(orjson.dumps(huge)).prompt) == 20_000_000
    parts = [{"type": "text", "text": "hi"}] * 10_001
    with pytest.raises(RequestError, match="more than 10000 content parts"):
        normalize(orjson.dumps({"messages": [{"role": "user", "content": parts}]}))


def _image(url: str) -> ImagePart:
    request = normalize(orjson.dumps({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": url}}]}]}))  # fmt: skip
    return request.images[0]


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("data:image/png;base64,iVBORw0KGgo", "truncated"),  # a PNG signature, then nothing
        ("data:image/png;base64,!!!!", "base64"),
        ("data:image/png;base64,iVBORw0KG", "base64"),  # wrong padding
    ],
)
def test_bad_image_payloads_are_image_errors(url: str, reason: str) -> None:
    image = _image(url)
    with pytest.raises(ImageError):
        decode_image(image.data())


def test_a_data_url_lying_about_its_type_is_read_by_its_bytes() -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buffer, format="GIF")
    image = _image("data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode())
    assert image.format == "gif"
    assert decode_image(image.data()).format == "gif"


def _png_header(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return pack(">I", len(data)) + kind + data + pack(">I", zlib.crc32(kind + data))

    ihdr = pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b""))


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (_png_header(100_000, 100_000), "pixels"),  # a bomb: refused from the header
        (_png_header(0, 10), None),  # zero-size
        (b"BM" + b"\x00" * 60, "format"),  # BMP is not an allowed format
        (b"", None),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, None),
    ],
    ids=["bomb", "zero-size", "format-not-allowed", "empty", "corrupt"],
)
def test_dangerous_images_are_refused_before_decoding(data: bytes, reason: str | None) -> None:
    started = time.perf_counter()
    with pytest.raises(ImageError, match=reason):
        decode_image(data, ImageLimits())
    assert time.perf_counter() - started < 1.0


def test_awkward_but_valid_images_decode() -> None:
    cmyk = decode_image(encoded(Image.new("CMYK", (8, 8), (0, 255, 0, 0)), "JPEG"))
    assert cmyk.mode == "CMYK"
    sixteen = decode_image(encoded(Image.new("I;16", (8, 8), 40_000), "PNG"))
    assert sixteen.width == 8
    exif = Image.Exif()
    exif[0x0112] = 65_535  # orientation far outside 1-8
    exif[0x010F] = "x" * 60_000  # an absurdly long camera make
    odd = decode_image(encoded(Image.new("RGB", (8, 8)), "JPEG", exif=exif.tobytes()))
    assert odd.width == 8


def test_an_animation_with_thousands_of_frames_costs_its_first_frame() -> None:
    frames = []
    for index in range(3000):
        frame = Image.new("RGB", (4, 4))
        frame.putpixel((index % 4, index // 4 % 4), (index * 7 % 256, index * 13 % 256, 255))
        frames.append(frame)
    data = encoded(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=10,
                 optimize=False)  # fmt: skip
    started = time.perf_counter()
    decoded = decode_image(data)
    assert decoded.frames == 3000
    assert decoded.image.size == (4, 4)
    assert time.perf_counter() - started < 5.0


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4000))
def test_any_bytes_decode_or_fail_with_an_image_error(data: bytes) -> None:
    with contextlib.suppress(ImageError):
        decode_image(data)


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=3000), st.integers(min_value=8, max_value=60))
def test_corrupted_real_images_fail_cleanly(noise: bytes, cut: int) -> None:
    png = encoded(Image.new("RGB", (32, 32), (10, 200, 30)), "PNG")
    damaged = png[:cut] + noise + png[cut + len(noise) :]
    with contextlib.suppress(ImageError):  # anything else is a bug
        decode_image(damaged)


SIGNALS = [f"s.k{index}" for index in range(5)]


def _rules(depth: int = 3) -> st.SearchStrategy[Rule]:
    leaf = st.builds(
        Leaf,
        st.sampled_from(SIGNALS),
        st.just("p"),
        st.none() | st.floats(0, 1),
        st.sampled_from(list(OnError)),
    )
    return st.recursive(
        leaf,
        lambda children: st.builds(AllOf, st.lists(children, min_size=1, max_size=4).map(tuple),
                                   st.just("p"))
        | st.builds(AnyOf, st.lists(children, min_size=1, max_size=4).map(tuple), st.just("p"))
        | st.builds(Not, children, st.just("p")),
        max_leaves=12,
    )  # fmt: skip


RESULTS = st.fixed_dictionaries(
    {
        key: st.builds(
            SignalResult,
            st.just("s"),
            st.just(key.split(".")[1]),
            st.booleans(),
            st.floats(0, 1),
            st.none(),
            st.just(0.1),
            st.none() | st.just("boom"),
        )
        for key in SIGNALS
    }
)


def _expected(rule: Rule, results: dict[str, SignalResult]) -> bool:
    if isinstance(rule, Leaf):
        result = results[rule.signal]
        if result.error is not None:
            return rule.on_error is OnError.MATCH
        return result.matched and (rule.threshold is None or result.confidence >= rule.threshold)
    if isinstance(rule, Not):
        return not _expected(rule.child, results)
    verdicts = [_expected(child, results) for child in rule.children]
    return all(verdicts) if isinstance(rule, AllOf) else any(verdicts)


@settings(max_examples=500, deadline=None)
@given(_rules(), RESULTS)
def test_the_evaluator_is_boolean_logic_with_bounded_confidence(
    rule: Rule, results: dict[str, SignalResult]
) -> None:
    trace = evaluate(rule, results)
    assert trace.matched is _expected(rule, results)
    assert 0.0 <= trace.confidence <= 1.0
    assert evaluate(Not(Not(rule, "n"), "n"), results).matched is trace.matched
