"""The ``image`` signal: format, size, greyscale, GPS, animation and faces of request images.

PIL and OpenCV only (no OCR, no torch). Images come from tests/data/images (made by
make_images.py) or are built here.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import pytest
from builders import body, chat, data_url, encoded, image_part, png_declaring, text_part, user
from PIL import Image, ImageDraw, ImageOps

from vsr_extproc.config.compile import compile_policy, parse_config
from vsr_extproc.core.decision import RoutingDecision
from vsr_extproc.core.router import Router
from vsr_extproc.core.signals import SignalResult
from vsr_extproc.errors import ConfigError
from vsr_extproc.signals import image as image_signal
from vsr_extproc.signals.base import Resources
from vsr_extproc.signals.image import (
    FaceCounter,
    FacesUnavailable,
    is_grayscale,
    load_face_counter,
)

IMAGES = Path(__file__).resolve().parent.parent / "data" / "images"


def test_the_pinned_opencv_ships_the_face_cascade() -> None:
    assert not isinstance(load_face_counter(), FacesUnavailable)


def _file(name: str) -> bytes:
    if name == "short.png":
        return encoded(Image.new("RGB", (800, 300), "white"), "PNG")
    return (IMAGES / name).read_bytes()


def _animated_gif(frames: int = 3) -> bytes:
    images = [Image.new("RGB", (16, 16), (index * 80, 40, 200)) for index in range(frames)]
    buffer = io.BytesIO()
    images[0].save(buffer, "GIF", save_all=True, append_images=images[1:], duration=100)
    return buffer.getvalue()


def _router(**entries: dict[str, Any]) -> Router:
    config = {
        "models": [{"name": "m", "cluster": "c", "upstream_model": "up"}],
        "signals": {"image": [{"name": name, **entry} for name, entry in entries.items()]},
        "decisions": [
            {"name": name, "rules": f"image.{name}", "action": {"type": "route", "models": ["m"]}}
            for name in entries
        ],
        "default": {"action": {"type": "route", "models": ["m"]}},
    }
    return Router(compile_policy(parse_config(config), Resources()))


def _decide(router: Router, *images: bytes, media_type: str = "image/png") -> RoutingDecision:
    parts = [text_part("what is this?")]
    parts += [image_part(data_url(data, media_type)) for data in images]
    return asyncio.run(router.explain(body(chat(user(parts)))))


def _result(router: Router, name: str, *images: bytes) -> SignalResult:
    return _decide(router, *images).results[f"image.{name}"]


ROUTER = _router(
    gray={"grayscale": True},
    colour={"grayscale": False},
    geotagged={"gps": True},
    animated={"animated": True},
    big_png={"formats": ["png"], "min_width": 500, "min_height": 500},
    jpeg={"formats": ["jpeg"]},
    small={"max_pixels": 10_000},
    exactly_512={"min_pixels": 512 * 512, "max_pixels": 512 * 512},
    narrow={"max_width": 100},
)


@pytest.mark.parametrize(
    ("name", "image", "matched"),
    [
        ("gray", "xray.png", True),
        ("gray", "photo_car.jpg", False),
        ("colour", "photo_car.jpg", True),
        ("colour", "xray.png", False),
        ("geotagged", "gps.jpg", True),
        ("geotagged", "photo_car.jpg", False),
        ("big_png", "xray.png", True),
        ("big_png", "passport.png", True),  # 1000×700
        ("big_png", "short.png", False),  # 800×300
        ("big_png", "photo_car.jpg", False),
        ("jpeg", "photo_car.jpg", True),
        ("jpeg", "xray.png", False),
        ("small", "gps.jpg", True),  # 96×64
        ("small", "xray.png", False),
        ("exactly_512", "xray.png", True),
        ("exactly_512", "photo_car.jpg", False),
        ("narrow", "gps.jpg", True),
        ("narrow", "passport.png", False),
    ],
)
def test_conditions_on_the_committed_images(name: str, image: str, matched: bool) -> None:
    result = _result(ROUTER, name, _file(image))
    assert result.error is None
    assert result.matched is matched
    assert result.confidence == (1.0 if matched else 0.0)


def test_the_value_describes_each_image_without_pixels_or_coordinates() -> None:
    result = _result(ROUTER, "geotagged", _file("gps.jpg"), _file("xray.png"))
    assert result.value == {
        "images": [
            {
                "image": 0,
                "format": "jpeg",
                "width": 96,
                "height": 64,
                "frames": 1,
                "gps": True,
                "grayscale": False,
                "matched": True,
            },
            {
                "image": 1,
                "format": "png",
                "width": 512,
                "height": 512,
                "frames": 1,
                "gps": False,
                "grayscale": True,
                "matched": False,
            },
        ]
    }


def test_any_inspected_image_is_enough() -> None:
    assert _result(ROUTER, "gray", _file("photo_car.jpg"), _file("xray.png")).matched


def test_grayscale_survives_jpeg_noise_and_a_marker_but_not_a_tint() -> None:
    xray = Image.open(IMAGES / "xray.png").convert("RGB")
    recompressed = encoded(xray, "JPEG", quality=60)
    assert is_grayscale(Image.open(io.BytesIO(recompressed)))
    assert _result(ROUTER, "gray", recompressed).matched
    marked = xray.copy()
    ImageDraw.Draw(marked).text((20, 20), "L", fill=(255, 0, 0))  # a radiographer's marker
    assert is_grayscale(marked)
    sepia = ImageOps.colorize(xray.convert("L"), black=(40, 26, 13), white=(255, 236, 200))
    assert not is_grayscale(sepia)


def test_an_animated_gif_is_animated_and_a_still_is_not() -> None:
    animated = _result(ROUTER, "animated", _animated_gif(3))
    assert animated.matched
    assert animated.value["images"][0]["frames"] == 3
    assert not _result(ROUTER, "animated", _file("xray.png")).matched


def test_a_request_without_images_does_not_match() -> None:
    decision = asyncio.run(ROUTER.explain(body(chat(user("no pictures here")))))
    result = decision.results["image.gray"]
    assert (result.matched, result.error, result.value) == (False, None, {"images": []})


def test_a_decompression_bomb_is_an_error_value_and_the_other_image_still_counts() -> None:
    result = _result(ROUTER, "gray", png_declaring(100_000, 100_000), _file("xray.png"))
    assert result.error is None
    assert result.matched
    bomb, xray = result.value["images"]
    assert bomb["image"] == 0
    assert "pixels" in bomb["error"]
    assert xray["grayscale"] is True


def test_when_every_image_fails_the_signal_fails_with_the_reasons() -> None:
    result = _result(ROUTER, "gray", png_declaring(100_000, 100_000), b"not an image")
    assert not result.matched
    assert result.error is not None
    assert "image 0:" in result.error
    assert "pixels" in result.error
    assert "image 1:" in result.error


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"min_width": 800, "max_width": 400}, "min_width (800) is above max_width (400)"),
        ({"min_pixels": 10, "max_pixels": 5}, "min_pixels (10) is above max_pixels (5)"),
        ({"faces": False, "min_faces": 2}, "faces: false contradicts min_faces"),
        ({"formats": ["svg"]}, "formats"),
        ({"grayscale": "maybe"}, "grayscale"),
    ],
)
def test_contradictory_or_invalid_entries_are_config_errors(
    entry: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        _router(bad=entry)


def test_a_car_photo_and_an_xray_have_no_faces() -> None:
    router = _router(faces={"faces": True}, no_faces={"faces": False})
    decision = _decide(router, _file("photo_car.jpg"), _file("xray.png"))
    faces, no_faces = decision.results["image.faces"], decision.results["image.no_faces"]
    assert not faces.matched
    assert no_faces.matched
    assert [image["faces"] for image in faces.value["images"]] == [0, 0]


def test_faces_are_only_counted_when_an_entry_asks() -> None:
    value = _result(ROUTER, "gray", _file("photo_car.jpg")).value
    assert "faces" not in value["images"][0]


class _FixedFaces(FaceCounter):
    """Stands in for the cascade: every image has ``count`` faces."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __call__(self, image: Image.Image) -> int:
        return self.count


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (0, {"faces": False, "two": False, "none": True}),
        (1, {"faces": True, "two": False, "none": False}),
        (2, {"faces": True, "two": True, "none": False}),
    ],
)
def test_face_conditions_use_the_count(
    monkeypatch: pytest.MonkeyPatch, count: int, expected: dict[str, bool]
) -> None:
    monkeypatch.setattr(image_signal, "load_face_counter", lambda: _FixedFaces(count))
    router = _router(faces={"faces": True}, two={"min_faces": 2}, none={"faces": False})
    decision = _decide(router, _file("photo_car.jpg"))
    assert {name: decision.results[f"image.{name}"].matched for name in expected} == expected
    assert decision.results["image.two"].value["images"][0]["faces"] == count
