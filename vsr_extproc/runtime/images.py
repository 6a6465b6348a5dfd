"""Safe decoding of untrusted image bytes with PIL.

Images arrive inside client requests, so every step that costs memory or CPU is bounded
before it is paid for:

1. the byte length is capped before PIL sees the data;
2. only the allowed formats' plugins are offered to PIL (``Image.open(formats=...)``), so a
   request cannot reach a rarely used (and rarely hardened) decoder;
3. width × height is read from the header and checked against ``ImageLimits.max_pixels``
   *before* any pixel data is decoded — a 50 KB PNG can declare 100 000 × 100 000 pixels;
4. only then is the first frame decoded; truncated or corrupt data fails loudly
   (``ImageFile.LOAD_TRUNCATED_IMAGES`` stays ``False``) instead of yielding grey pixels.

PIL's own decompression-bomb guard (``Image.MAX_IMAGE_PIXELS``, ~89 Mpx) stays on at its
default as a backstop behind our limit. PIL *warns* for 1-2x that size and raises above it;
a warning would let an oversized header through to our check only by luck of the warnings
filter, so importing this module turns ``DecompressionBombWarning`` into an error
process-wide. Either way the outcome is an ``ImageError`` before decoding.

Every failure raises ``vsr_extproc.errors.ImageError`` with a reason a client can act on.
The decoded image is returned as-is (mode, palette, alpha and EXIF untouched): turning it
into model input is the model runtime's job, because each model's reference preprocessing
decides how alpha, palettes and orientation are handled.
"""

from __future__ import annotations

import io
import struct
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field

from PIL import ExifTags, Image, ImageFile, UnidentifiedImageError

from vsr_extproc.core.request import sniff_format as sniff_magic
from vsr_extproc.errors import ImageError

warnings.filterwarnings("error", category=Image.DecompressionBombWarning)
ImageFile.LOAD_TRUNCATED_IMAGES = False

DEFAULT_FORMATS: frozenset[str] = frozenset({"png", "jpeg", "webp", "gif"})

# PIL's JPEG plugin reports a JPEG carrying an MPO index (most phone cameras) as "MPO".
_FORMAT_OF_PIL: dict[str, str] = {"MPO": "jpeg"}


@dataclass(frozen=True)
class ImageLimits:
    """What an image may cost before it is decoded.

    ``max_pixels`` bounds the decoded first frame (width × height); keep it below PIL's own
    ``MAX_IMAGE_PIXELS`` (~89 Mpx) so that our message, not PIL's, is what clients see.
    ``allowed_formats`` are lower-case format names (``png``, ``jpeg``, ``webp``, ``gif``,
    or any other format PIL can open, e.g. ``bmp``).
    """

    max_bytes: int = 20 * 1024 * 1024
    max_pixels: int = 50_000_000
    allowed_formats: frozenset[str] = field(default=DEFAULT_FORMATS)

    def __post_init__(self) -> None:
        if self.max_bytes <= 0 or self.max_pixels <= 0:
            raise ValueError("ImageLimits.max_bytes and max_pixels must be positive")
        if not self.allowed_formats:
            raise ValueError("ImageLimits.allowed_formats must name at least one format")
        formats = frozenset(
            "jpeg" if f.lower() == "jpg" else f.lower() for f in self.allowed_formats
        )
        Image.init()
        unknown = sorted(f for f in formats if f.upper() not in Image.OPEN)
        if unknown:
            raise ValueError(f"ImageLimits.allowed_formats: PIL cannot open {unknown}")
        object.__setattr__(self, "allowed_formats", formats)


@dataclass(frozen=True)
class DecodedImage:
    """A decoded first frame plus the facts signals ask about without touching pixels.

    ``image`` is the PIL image exactly as decoded (its mode may be P, LA, CMYK, I;16, 1, …).
    ``exif_orientation`` is the EXIF Orientation tag (1-8; 1 when absent); it is reported,
    not applied. ``has_gps`` says whether the EXIF block carries a non-empty GPS IFD — a
    privacy signal, never the coordinates themselves.
    """

    image: Image.Image
    format: str
    width: int
    height: int
    mode: str
    frames: int
    has_alpha: bool
    exif_orientation: int
    has_gps: bool


def decode_image(data: bytes, limits: ImageLimits | None = None) -> DecodedImage:
    """Decode the first frame of ``data`` within ``limits``; raise ``ImageError`` otherwise."""
    limits = limits or ImageLimits()
    _check_size(data, limits)
    image = _open_header(data, limits)
    _check_dimensions(image, limits)
    frames = _count_frames(image)
    _load_first_frame(image)
    orientation, has_gps = _read_exif(image)
    pil_format = image.format or ""
    return DecodedImage(
        image=image,
        format=_FORMAT_OF_PIL.get(pil_format, pil_format.lower()),
        width=image.width,
        height=image.height,
        mode=image.mode,
        frames=frames,
        has_alpha=has_alpha(image),
        exif_orientation=orientation,
        has_gps=has_gps,
    )


def has_alpha(image: Image.Image) -> bool:
    """Whether ``image`` carries transparency: an alpha band or a palette/colour-key entry.

    This is the same test transformers' ``convert_to_rgb`` uses to decide on compositing.
    """
    return "A" in image.getbands() or image.info.get("transparency") is not None


def sniff_format(data: bytes) -> str | None:
    """Name the format of ``data`` by its magic number, or ``None`` if unknown."""
    head = data[:32].lstrip() if data[:1] in (b" ", b"\n", b"\r", b"\t") else data[:32]
    return sniff_magic(head)


def _check_size(data: bytes, limits: ImageLimits) -> None:
    if not data:
        raise ImageError("image data is empty")
    if len(data) > limits.max_bytes:
        raise ImageError(f"image is {len(data)} bytes, over the limit of {limits.max_bytes} bytes")


def _pil_formats(allowed: Iterable[str]) -> list[str]:
    return [name.upper() for name in sorted(allowed)]


def _open_header(data: bytes, limits: ImageLimits) -> Image.Image:
    """Parse only the header, offering PIL just the allowed formats' plugins."""
    try:
        return Image.open(io.BytesIO(data), formats=_pil_formats(limits.allowed_formats))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageError(f"image refused as a decompression bomb: {exc}") from exc
    except UnidentifiedImageError as exc:
        sniffed = sniff_format(data)
        allowed = ", ".join(sorted(limits.allowed_formats))
        if sniffed is not None and sniffed not in limits.allowed_formats:
            raise ImageError(f"image format {sniffed} is not allowed (allowed: {allowed})") from exc
        what = f"a corrupt {sniffed} header" if sniffed else "not a recognised image"
        raise ImageError(f"image could not be decoded: {what} (allowed: {allowed})") from exc
    except (OSError, SyntaxError, ValueError, EOFError, struct.error) as exc:
        raise ImageError(f"image header is corrupt: {exc}") from exc


def _check_dimensions(image: Image.Image, limits: ImageLimits) -> None:
    width, height = image.size
    if width <= 0 or height <= 0:
        raise ImageError(f"image has zero size ({width}x{height})")
    if width * height > limits.max_pixels:
        raise ImageError(
            f"image is {width}x{height} = {width * height} pixels, over the limit of "
            f"{limits.max_pixels} pixels (refused before decoding)"
        )


def _count_frames(image: Image.Image) -> int:
    """Count frames from the container without decoding them, then rewind to the first."""
    try:
        frames = int(getattr(image, "n_frames", 1))
        if frames > 1:
            image.seek(0)
    except (OSError, SyntaxError, ValueError, EOFError, struct.error) as exc:
        raise ImageError(f"image frames are corrupt: {exc}") from exc
    return frames


def _load_first_frame(image: Image.Image) -> None:
    try:
        image.load()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageError(f"image refused as a decompression bomb: {exc}") from exc
    except (OSError, SyntaxError, ValueError, EOFError, struct.error, IndexError) as exc:
        raise ImageError(f"image data is corrupt or truncated: {exc}") from exc


def _read_exif(image: Image.Image) -> tuple[int, bool]:
    """Return (orientation, has_gps); a malformed EXIF block counts as absent, not fatal."""
    try:
        exif = image.getexif()
        orientation = exif.get(ExifTags.Base.Orientation, 1)
        gps = exif.get_ifd(ExifTags.IFD.GPSInfo)
    except (OSError, SyntaxError, ValueError, EOFError, struct.error, KeyError, TypeError):
        return 1, False
    if not isinstance(orientation, int) or not 1 <= orientation <= 8:
        orientation = 1
    return orientation, bool(gps)
