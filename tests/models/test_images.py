"""Decoding untrusted image bytes: bombs refused before decoding, every failure an ImageError.

Pure PIL — no torch — so these run in the fast tier too.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from builders import encoded, png_declaring
from PIL import ExifTags, Image, ImageFile

from vsr_extproc.errors import ImageError
from vsr_extproc.runtime.images import DecodedImage, ImageLimits, decode_image, sniff_format

CORPUS = Path(__file__).resolve().parent.parent / "data" / "parity"


@pytest.fixture
def no_pixel_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if anything decodes pixel data."""

    def refuse(self: ImageFile.ImageFile) -> None:
        raise AssertionError(f"pixels of a {self.size} image were decoded")

    monkeypatch.setattr(ImageFile.ImageFile, "load", refuse)


def test_a_plain_png_decodes_with_its_facts() -> None:
    decoded = decode_image(encoded(Image.new("RGB", (30, 20), (1, 2, 3)), "PNG"))
    assert isinstance(decoded, DecodedImage)
    assert (decoded.format, decoded.mode, decoded.width, decoded.height) == ("png", "RGB", 30, 20)
    assert (decoded.frames, decoded.has_alpha, decoded.exif_orientation) == (1, False, 1)
    assert decoded.has_gps is False
    assert decoded.image.getpixel((0, 0)) == (1, 2, 3)


@pytest.mark.usefixtures("no_pixel_decoding")
def test_a_bomb_over_our_limit_is_refused_from_its_header() -> None:
    with pytest.raises(ImageError, match=r"10000x6000 = 60000000 pixels, over the limit"):
        decode_image(png_declaring(10_000, 6_000))


@pytest.mark.usefixtures("no_pixel_decoding")
@pytest.mark.parametrize("side", [10_000, 30_000])
def test_a_bomb_over_pils_own_guard_is_an_image_error(side: int) -> None:
    # 100 Mpx sits where PIL would only *warn*; 900 Mpx where it raises. Both are refused.
    limits = ImageLimits(max_pixels=50_000_000)
    with pytest.raises(ImageError, match=r"decompression bomb|over the limit"):
        decode_image(png_declaring(side, side), limits)


def test_a_configured_pixel_limit_applies() -> None:
    data = encoded(Image.new("RGB", (20, 20)), "PNG")
    assert decode_image(data, ImageLimits(max_pixels=400)).width == 20
    with pytest.raises(ImageError, match="over the limit of 399 pixels"):
        decode_image(data, ImageLimits(max_pixels=399))


def test_the_byte_cap_applies_before_parsing() -> None:
    noise = np.random.default_rng(0).integers(0, 256, size=(32, 32, 3), dtype=np.uint8)
    data = encoded(Image.fromarray(noise), "PNG")
    assert decode_image(data, ImageLimits(max_bytes=len(data))).width == 32
    with pytest.raises(ImageError, match=rf"{len(data)} bytes, over the limit of 100 bytes"):
        decode_image(data, ImageLimits(max_bytes=100))


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty"),
        (b"this is not an image, just text", "not a recognised image"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "corrupt"),
        (b"\xff\xd8\xff" + bytes(range(256)) * 2, "corrupt"),
    ],
    ids=["empty", "text", "png-garbage", "jpeg-garbage"],
)
def test_corrupt_data_is_an_image_error(data: bytes, reason: str) -> None:
    with pytest.raises(ImageError, match=reason):
        decode_image(data)


@pytest.mark.parametrize("name", ["large_1600x1200.jpg", "gradient_photo.jpg", "grayscale.png"])
def test_truncated_data_is_an_image_error(name: str) -> None:
    data = (CORPUS / name).read_bytes()
    with pytest.raises(ImageError, match="corrupt or truncated"):
        decode_image(data[: len(data) // 2])


def test_a_zero_size_image_is_an_image_error() -> None:
    with pytest.raises(ImageError, match=r"zero size|corrupt"):
        decode_image(png_declaring(0, 10))


@pytest.mark.parametrize(("fmt", "name"), [("BMP", "bmp"), ("TIFF", "tiff"), ("ICO", "ico")])
def test_a_format_not_allowed_is_refused_by_name(fmt: str, name: str) -> None:
    data = encoded(Image.new("RGB", (16, 16)), fmt)
    with pytest.raises(ImageError, match=rf"format {name} is not allowed \(allowed: gif, jpeg"):
        decode_image(data)


def test_allowed_formats_are_configurable() -> None:
    jpeg = encoded(Image.new("RGB", (16, 16)), "JPEG")
    bmp = encoded(Image.new("RGB", (16, 16)), "BMP")
    with pytest.raises(ImageError, match="format jpeg is not allowed"):
        decode_image(jpeg, ImageLimits(allowed_formats=frozenset({"png"})))
    assert decode_image(bmp, ImageLimits(allowed_formats=frozenset({"bmp"}))).format == "bmp"
    assert ImageLimits(allowed_formats=frozenset({"JPG"})).allowed_formats == {"jpeg"}
    with pytest.raises(ValueError, match="cannot open"):
        ImageLimits(allowed_formats=frozenset({"no-such-format"}))


def test_only_the_first_frame_of_an_animated_gif_is_decoded() -> None:
    decoded = decode_image((CORPUS / "animated.gif").read_bytes())
    assert decoded.format == "gif"
    assert decoded.frames == 3
    assert decoded.image.tell() == 0
    red, green, blue = decoded.image.convert("RGB").getpixel((2, 2))  # type: ignore[misc]
    assert red > 200
    assert green < 60
    assert blue < 60


def test_an_animated_webp_reports_its_frames() -> None:
    frames = [Image.new("RGB", (20, 20), colour) for colour in ("red", "lime", "blue")]
    buffer = io.BytesIO()
    frames[0].save(buffer, "WEBP", save_all=True, append_images=frames[1:], lossless=True)
    decoded = decode_image(buffer.getvalue())
    assert decoded.format == "webp"
    assert decoded.frames == 3
    assert decoded.image.convert("RGB").getpixel((10, 10)) == (255, 0, 0)


@pytest.mark.parametrize(
    ("name", "mode", "has_alpha"),
    [
        ("cmyk.jpg", "CMYK", False),
        ("gray16.png", "I;16", False),
        ("la_gradient.png", "LA", True),
        ("palette_transparency.png", "P", True),
        ("rgb_colour_key.png", "RGB", True),
        ("rgba_shapes.png", "RGBA", True),
        ("alpha_hole.webp", "RGBA", True),
        ("bilevel_1bit.png", "1", False),
        ("grayscale.jpg", "L", False),
    ],
)
def test_unusual_modes_decode_and_report_transparency(
    name: str, mode: str, has_alpha: bool
) -> None:
    decoded = decode_image((CORPUS / name).read_bytes())
    assert (decoded.mode, decoded.has_alpha) == (mode, has_alpha)
    rgb = np.asarray(decoded.image.convert("RGB"))
    assert rgb.shape == (decoded.height, decoded.width, 3)


def test_exif_orientation_and_gps_are_reported_not_applied() -> None:
    exif = Image.Exif()
    exif[ExifTags.Base.Orientation] = 6
    gps = exif.get_ifd(ExifTags.IFD.GPSInfo)
    gps[ExifTags.GPS.GPSLatitudeRef] = "N"
    gps[ExifTags.GPS.GPSLatitude] = (52.0, 22.0, 8.0)
    with_gps = encoded(Image.new("RGB", (40, 30)), "JPEG", exif=exif.tobytes())
    decoded = decode_image(with_gps)
    assert (decoded.exif_orientation, decoded.has_gps) == (6, True)
    assert (decoded.width, decoded.height) == (40, 30)  # stored orientation, untouched

    rotated_only = decode_image((CORPUS / "exif_rotated_6.jpg").read_bytes())
    assert (rotated_only.exif_orientation, rotated_only.has_gps) == (6, False)


# PIL warns about the broken block it skips; that warning is the expected path here.
@pytest.mark.filterwarnings("ignore:Corrupt EXIF data:UserWarning")
def test_a_malformed_exif_block_is_ignored_not_fatal() -> None:
    data = encoded(Image.new("RGB", (8, 8)), "JPEG", exif=b"Exif\x00\x00MM\x00*garbage")
    decoded = decode_image(data)
    assert (decoded.exif_orientation, decoded.has_gps) == (1, False)


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [("PNG", "png"), ("JPEG", "jpeg"), ("GIF", "gif"), ("WEBP", "webp"), ("BMP", "bmp")],
)
def test_sniff_format_names_common_formats(fmt: str, expected: str) -> None:
    assert sniff_format(encoded(Image.new("RGB", (4, 4)), fmt)) == expected
    assert sniff_format(b"hello") is None
