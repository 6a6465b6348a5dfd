"""Generate the SigLIP parity corpus: small images that exercise every preprocessing branch.

Run from the repository root::

    .venv/bin/python tests/data/parity/make_corpus.py

Deterministic (fixed seeds, PIL/numpy drawing only) so the committed files can be
regenerated and diffed. Each image targets a way a serving path can drift from the
reference: transparency (RGBA, LA, palette and colour-key), unusual modes (L, 1, I;16,
CMYK), tiny images that are upscaled, extreme aspect ratios, large downscales where resize
filters differ most, high-frequency content where antialiasing matters, EXIF orientation,
animation and every allowed container format.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

HERE = Path(__file__).resolve().parent
SEED = 20240917


def _rng(offset: int) -> np.random.Generator:
    return np.random.default_rng(SEED + offset)


def _gradient(width: int, height: int, offset: int) -> np.ndarray:
    """A smooth colour field with mild noise: reads as a photo to a resize filter."""
    rng = _rng(offset)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    red = 127 + 110 * np.sin(x / max(width, 1) * 3.1 + rng.uniform(0, 3))
    green = 127 + 110 * np.cos(y / max(height, 1) * 2.3 + rng.uniform(0, 3))
    blue = 127 + 100 * np.sin((x + y) / max(width + height, 1) * 5.0)
    image = np.stack([red, green, blue], axis=-1)
    image += rng.normal(0, 9, size=image.shape)
    pixels: np.ndarray = np.clip(image, 0, 255).astype(np.uint8)
    return pixels


def _shapes(draw: ImageDraw.ImageDraw, width: int, height: int, offset: int) -> None:
    rng = _rng(offset)
    for _ in range(12):
        x0, y0 = int(rng.integers(0, width - 8)), int(rng.integers(0, height - 8))
        x1 = min(width - 1, x0 + int(rng.integers(8, max(9, width // 3))))
        y1 = min(height - 1, y0 + int(rng.integers(8, max(9, height // 3))))
        colour = tuple(int(c) for c in rng.integers(0, 256, size=3))
        if rng.random() < 0.5:
            draw.ellipse((x0, y0, x1, y1), fill=colour)
        else:
            draw.rectangle((x0, y0, x1, y1), fill=colour)


def rgba_shapes() -> Image.Image:
    """RGBA with graded alpha; fully transparent pixels keep a loud colour underneath, so a
    path that drops alpha instead of compositing shows magenta where the reference is white."""
    width, height = 160, 120
    rgb = Image.fromarray(_gradient(width, height, 1))
    _shapes(ImageDraw.Draw(rgb), width, height, 2)
    alpha = np.zeros((height, width), dtype=np.uint8)
    alpha[:, : width // 3] = 0
    alpha[:, width // 3 : 2 * width // 3] = np.linspace(0, 255, height, dtype=np.uint8)[:, None]
    alpha[:, 2 * width // 3 :] = 255
    pixels = np.array(rgb)
    pixels[:, : width // 3] = (255, 0, 255)
    return Image.fromarray(np.dstack([pixels, alpha]), mode="RGBA")


def palette_transparency() -> Image.Image:
    """P mode with one transparent palette index covering a third of the image."""
    image = Image.new("P", (96, 72), 0)
    palette = [0, 200, 0] + [int(v) for v in _rng(3).integers(0, 256, size=255 * 3)]
    image.putpalette(palette)
    draw = ImageDraw.Draw(image)
    for index in range(1, 40):
        draw.rectangle((index * 2, index, index * 2 + 30, index + 20), fill=index * 5)
    draw.rectangle((0, 48, 95, 71), fill=0)
    image.info["transparency"] = 0
    return image


def la_gradient() -> Image.Image:
    """Greyscale plus alpha (LA)."""
    y, x = np.mgrid[0:64, 0:100]
    grey = ((x * 2 + y) % 256).astype(np.uint8)
    alpha = np.clip(255 - y * 4, 0, 255).astype(np.uint8)
    return Image.fromarray(np.dstack([grey, alpha]), mode="LA")


def grayscale() -> Image.Image:
    """Plain 8-bit greyscale (L)."""
    return Image.fromarray(_gradient(120, 90, 4)[:, :, 1])


def gray16() -> Image.Image:
    """16-bit greyscale; the reference's convert("RGB") clips it at 255."""
    y, x = np.mgrid[0:80, 0:120]
    values = (x * 500 + y * 20).astype(np.uint16)
    values[:20, :30] = np.arange(30, dtype=np.uint16) * 8
    return Image.fromarray(values)


def cmyk() -> Image.Image:
    """A CMYK image (saved as a CMYK JPEG)."""
    return Image.fromarray(_gradient(128, 96, 5)).convert("CMYK")


def tiny() -> Image.Image:
    """7×5 pixels: upscaled ~9× to the model size."""
    return Image.fromarray(_rng(6).integers(0, 256, size=(5, 7, 3), dtype=np.uint8))


def wide() -> Image.Image:
    """1000×20: extreme landscape aspect ratio."""
    return Image.fromarray(_gradient(1000, 20, 7))


def tall() -> Image.Image:
    """20×800: extreme portrait aspect ratio."""
    return Image.fromarray(_gradient(20, 800, 8))


def large_photo() -> Image.Image:
    """1600×1200 JPEG: a large downscale, where resize filters differ most."""
    image = Image.fromarray(_gradient(1600, 1200, 9))
    _shapes(ImageDraw.Draw(image), 1600, 1200, 10)
    return image


def _text_lines(seed: int, count: int) -> list[str]:
    words = [
        "def", "return", "self", "import", "async", "await", "class", "for", "while", "if",
        "else", "try", "except", "raise", "patient", "scan", "invoice", "passport", "total",
        "amount", "date", "signature", "section", "clause",
    ]  # fmt: skip
    rng = _rng(seed)
    return [" ".join(rng.choice(words, size=int(rng.integers(2, 8)))) for _ in range(count)]


def code_screenshot() -> Image.Image:
    """Dark editor with syntax-coloured lines of code and a gutter."""
    image = Image.new("RGB", (480, 300), (30, 30, 36))
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    colours = [(220, 220, 170), (86, 156, 214), (206, 145, 120), (106, 153, 85)]
    draw.rectangle((0, 0, 28, 299), fill=(40, 40, 48))
    for row, line in enumerate(_text_lines(11, 22)):
        draw.text((4, 4 + row * 13), f"{row + 1:>2}", fill=(120, 120, 120), font=font)
        draw.text((36 + (row % 4) * 12, 4 + row * 13), line, fill=colours[row % 4], font=font)
    return image


def document_page() -> Image.Image:
    """A white page with a title, paragraphs and a ruled table."""
    image = Image.new("RGB", (340, 440), (252, 252, 250))
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    draw.text((20, 16), "QUARTERLY REPORT - CONFIDENTIAL", fill=(0, 0, 0), font=font)
    for row, line in enumerate(_text_lines(12, 18)):
        draw.text((20, 44 + row * 12), line, fill=(40, 40, 40), font=font)
    for row in range(6):
        top = 280 + row * 22
        draw.line((20, top, 320, top), fill=(0, 0, 0))
        draw.text((26, top + 5), f"item {row}", fill=(0, 0, 0), font=font)
        draw.text((200, top + 5), f"{(row + 1) * 137.5:.2f}", fill=(0, 0, 0), font=font)
    return image


def noise_texture() -> Image.Image:
    """Blocky colour noise (saved as lossless WebP)."""
    noise = _rng(13).integers(0, 256, size=(36, 48, 3), dtype=np.uint8)
    return Image.fromarray(noise).resize((192, 144), Image.Resampling.NEAREST)


def checkerboard() -> Image.Image:
    """A 1-pixel checkerboard with a band of stripes: aliases badly without antialiasing."""
    y, x = np.mgrid[0:300, 0:400]
    board = (((x + y) % 2) * 255).astype(np.uint8)
    board[100:200] = ((x[100:200] // 3) % 2 * 255).astype(np.uint8)
    return Image.fromarray(np.dstack([board, 255 - board, board // 2]))


def exif_rotated() -> Image.Image:
    """A 320×200 JPEG whose EXIF says orientation 6 (rotate 90° clockwise to view)."""
    image = Image.fromarray(_gradient(320, 200, 14))
    draw = ImageDraw.Draw(image)
    draw.rectangle((10, 10, 120, 60), fill=(255, 0, 0))
    draw.text((140, 90), "TOP LEFT IS RED", fill=(0, 0, 0), font=ImageFont.load_default())
    return image


def animated_frames() -> list[Image.Image]:
    """Three distinct frames for an animated GIF; only the first should reach the model."""
    frames = []
    for index, colour in enumerate([(220, 40, 40), (40, 220, 40), (40, 40, 220)]):
        frame = Image.new("RGB", (80, 60), colour)
        ImageDraw.Draw(frame).ellipse((10 + index * 15, 10, 40 + index * 15, 50), fill="white")
        frames.append(frame.convert("P", palette=Image.Palette.ADAPTIVE, colors=16))
    return frames


def bilevel() -> Image.Image:
    """A 1-bit image (mode "1")."""
    return Image.fromarray(_gradient(100, 70, 15)[:, :, 0]).convert("1")


def rgb_colour_key() -> Image.Image:
    """RGB with a tRNS colour key: transparency without an alpha band."""
    image = Image.fromarray(_gradient(90, 60, 16))
    ImageDraw.Draw(image).rectangle((20, 15, 70, 45), fill=(1, 2, 3))
    image.info["transparency"] = (1, 2, 3)
    return image


def exact_size() -> Image.Image:
    """Exactly 64×64, the tiny test model's size: no resize happens."""
    return Image.fromarray(_gradient(64, 64, 17))


def webp_alpha() -> Image.Image:
    """RGBA WebP with a transparent hole."""
    pixels = _gradient(128, 128, 18)
    alpha = np.full((128, 128), 255, dtype=np.uint8)
    alpha[32:96, 32:96] = 0
    pixels[32:96, 32:96] = (0, 255, 255)
    return Image.fromarray(np.dstack([pixels, alpha]), mode="RGBA")


def jpeg_grayscale() -> Image.Image:
    """A greyscale JPEG (mode L)."""
    return Image.fromarray(_gradient(150, 100, 19)[:, :, 2])


def _save_exif_rotated(path: Path) -> None:
    exif = Image.Exif()
    exif[0x0112] = 6
    exif_rotated().save(path, quality=90, exif=exif.tobytes())


def _save_animated(path: Path) -> None:
    first, *rest = animated_frames()
    first.save(path, save_all=True, append_images=rest, duration=100, loop=0)


Writer = Callable[[Path], None]

CORPUS: dict[str, Writer] = {
    "rgba_shapes.png": lambda p: rgba_shapes().save(p),
    "palette_transparency.png": lambda p: palette_transparency().save(p, transparency=0),
    "la_gradient.png": lambda p: la_gradient().save(p),
    "grayscale.png": lambda p: grayscale().save(p),
    "gray16.png": lambda p: gray16().save(p),
    "cmyk.jpg": lambda p: cmyk().save(p, quality=90),
    "tiny_7x5.png": lambda p: tiny().save(p),
    "wide_1000x20.png": lambda p: wide().save(p),
    "tall_20x800.png": lambda p: tall().save(p),
    "large_1600x1200.jpg": lambda p: large_photo().save(p, quality=80),
    "code_screenshot.png": lambda p: code_screenshot().save(p),
    "document_page.png": lambda p: document_page().save(p),
    "gradient_photo.jpg": lambda p: Image.fromarray(_gradient(400, 300, 20)).save(p, quality=88),
    "noise_texture.webp": lambda p: noise_texture().save(p, lossless=True),
    "checkerboard.png": lambda p: checkerboard().save(p),
    "exif_rotated_6.jpg": _save_exif_rotated,
    "animated.gif": _save_animated,
    "bilevel_1bit.png": lambda p: bilevel().save(p),
    "rgb_colour_key.png": lambda p: rgb_colour_key().save(p, transparency=(1, 2, 3)),
    "exact_64x64.png": lambda p: exact_size().save(p),
    "alpha_hole.webp": lambda p: webp_alpha().save(p, lossless=True),
    "grayscale.jpg": lambda p: jpeg_grayscale().save(p, quality=90),
}


def main(out_dir: Path = HERE) -> int:
    """Write every corpus image into ``out_dir`` and print a summary line for each."""
    out_dir.mkdir(parents=True, exist_ok=True)
    total = 0
    for name, write in CORPUS.items():
        path = out_dir / name
        write(path)
        size = path.stat().st_size
        total += size
        with Image.open(path) as image:
            frames = getattr(image, "n_frames", 1)
            print(
                f"{name:28} {image.format:5} {image.mode:6} {image.size!s:14} "
                f"frames={frames} {size:>8} B"
            )
    print(f"{len(CORPUS)} images, {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE))
