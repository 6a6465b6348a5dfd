"""Generate the committed test images for the ``image`` and ``image_text`` signals.

Run from the repository root::

    .venv/bin/python tests/data/images/make_images.py

Deterministic (fixed seeds, PIL/numpy drawing only), so the files can be regenerated and
diffed. The outputs are committed because CI machines may lack the DejaVu fonts; without
them the generator falls back to PIL's built-in font and the OCR tests may read less.

All identities, numbers and keys are specimen data: the passport belongs to the ICAO
specimen state Utopia ("UTO") and the German specimen holder ERIKA MUSTERMANN; the AWS key
id has the right shape and belongs to nobody.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

HERE = Path(__file__).resolve().parent
SEED = 20250612
MONO = Path("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf")
SANS = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
SANS_BOLD = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf")

Font = ImageFont.FreeTypeFont | ImageFont.ImageFont


def _font(path: Path, size: int) -> Font:
    if path.exists():
        return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size=size)


def _rng(offset: int) -> np.random.Generator:
    return np.random.default_rng(SEED + offset)


# --- ICAO 9303 ------------------------------------------------------------------------------

_CHARSET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def check_digit(field: str) -> str:
    """ICAO 9303 check digit: weights 7, 3, 1 repeating; '<' = 0, A = 10 … Z = 35."""
    values = [0 if char == "<" else _CHARSET.index(char) for char in field]
    return str(sum(value * (7, 3, 1)[index % 3] for index, value in enumerate(values)) % 10)


def td3_mrz(
    *,
    country: str,
    surname: str,
    given_names: str,
    number: str,
    nationality: str,
    birth: str,
    sex: str,
    expiry: str,
    optional: str = "",
) -> tuple[str, str]:
    """The two 44-character lines of a passport (TD3) MRZ with every check digit."""
    name = f"{surname}<<{given_names.replace(' ', '<')}"
    line1 = f"P<{country}{name}".ljust(44, "<")[:44]
    number = number.ljust(9, "<")
    optional = optional.ljust(14, "<")
    optional_check = check_digit(optional) if optional.strip("<") else "<"
    body = (
        f"{number}{check_digit(number)}{nationality}{birth}{check_digit(birth)}{sex}"
        f"{expiry}{check_digit(expiry)}{optional}{optional_check}"
    )
    composite = body[0:10] + body[13:20] + body[21:43]
    line2 = body + check_digit(composite)
    assert len(line1) == len(line2) == 44, (line1, line2)
    return line1, line2


PASSPORT_MRZ = td3_mrz(
    country="UTO",
    surname="MUSTERMANN",
    given_names="ERIKA",
    number="C01X00T47",
    nationality="UTO",
    birth="640812",
    sex="F",
    expiry="340228",
)


# --- images ---------------------------------------------------------------------------------


def passport() -> Image.Image:
    """A passport data page, 1000×700: header, fields, a grey photo box, a TD3 MRZ."""
    width, height = 1000, 700
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    # a faint guilloche-like tint, as security printing has
    tint = 6 * np.sin(x / 23.0) * np.cos(y / 31.0)
    base = np.stack([232 + tint, 238 + tint, 228 + tint], axis=-1)
    page = Image.fromarray(np.clip(base, 0, 255).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(page)

    draw.text((40, 28), "UTOPIA", font=_font(SANS_BOLD, 34), fill=(40, 50, 110))
    draw.text(
        (300, 36), "PASSPORT / PASSEPORT / REISEPASS", font=_font(SANS, 24), fill=(40, 50, 110)
    )
    draw.text((820, 36), "SPECIMEN", font=_font(SANS_BOLD, 24), fill=(170, 40, 40))

    draw.rectangle((40, 110, 300, 440), fill=(168, 170, 168), outline=(90, 90, 90), width=2)
    draw.ellipse((110, 160, 230, 290), fill=(140, 142, 140))
    draw.ellipse((80, 300, 260, 460), fill=(140, 142, 140))
    draw.rectangle((40, 440, 300, 460), fill=(232, 238, 228))

    label, value = _font(SANS, 15), _font(SANS_BOLD, 22)
    fields = (
        ((340, 110), "Type / Type", "P"),
        ((480, 110), "Code / Code", "UTO"),
        ((640, 110), "Passport No. / No. du passeport", "C01X00T47"),
        ((340, 175), "Surname / Nom", "MUSTERMANN"),
        ((340, 240), "Given names / Prénoms", "ERIKA"),
        ((340, 305), "Nationality / Nationalité", "UTOPIAN"),
        ((340, 370), "Date of birth / Date de naissance", "12 AUG 1964"),
        ((700, 370), "Sex / Sexe", "F"),
        ((340, 435), "Date of issue / Date de délivrance", "01 MAR 2024"),
        ((700, 435), "Date of expiry / Date d'expiration", "28 FEB 2034"),
        ((340, 500), "Authority / Autorité", "CITY OF UTOPIA"),
    )
    for (left, top), name, text in fields:
        draw.text((left, top), name, font=label, fill=(70, 80, 120))
        draw.text((left, top + 20), text, font=value, fill=(20, 20, 30))

    mrz_font = _font(MONO, 34)
    line1, line2 = PASSPORT_MRZ
    draw.rectangle((0, 580, width, height), fill=(244, 246, 240))
    draw.text((48, 596), line1, font=mrz_font, fill=(10, 10, 10))
    draw.text((48, 642), line2, font=mrz_font, fill=(10, 10, 10))
    return page


def passport_photo(page: Image.Image) -> Image.Image:
    """The page photographed on a desk: rotated 1.5°, uneven light, blur, noise."""
    rng = _rng(2)
    canvas = Image.new("RGB", (1080, 780), (92, 74, 58))
    canvas.paste(page, (40, 40))
    rotated = canvas.rotate(1.5, resample=Image.Resampling.BICUBIC, fillcolor=(92, 74, 58))
    pixels = np.asarray(rotated, dtype=np.float32)
    height, width = pixels.shape[:2]
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    light = 0.88 + 0.12 * (x / width) * (1 - 0.5 * y / height)
    pixels = pixels * light[..., None] + rng.normal(0, 5, size=pixels.shape)
    photo = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")
    return photo.filter(ImageFilter.GaussianBlur(0.7))


CODE_CLEAN = '''\
import bisect
from dataclasses import dataclass


@dataclass
class Reading:
    timestamp: int
    value: float


def moving_average(readings, window):
    """Average of each run of `window` readings."""
    averages = []
    for start in range(len(readings) - window):
        chunk = readings[start : start + window]
        total = sum(reading.value for reading in chunk)
        averages.append(total / window)
    return averages


def find_first_after(readings, timestamp):
    times = [reading.timestamp for reading in readings]
    index = bisect.bisect_right(times, timestamp)
    if index == len(readings):
        return None
    return readings[index]


def load(path):
    readings = []
    with open(path) as handle:
        for line in handle:
            stamp, value = line.split(",")
            readings.append(Reading(int(stamp), float(value)))
    return readings


if __name__ == "__main__":
    data = load("sensor.csv")
    print(moving_average(data, 5))
'''

CODE_WITH_KEY = """\
# deploy/settings.py
import os
import boto3

REGION = os.environ.get("AWS_REGION", "eu-central-1")
BUCKET = "acme-invoices-prod"

AWS_ACCESS_KEY_ID = "AKIAQ7RZ3XLM2VKP6TWD"
db_password = "Tr0ub4dor-77x"


def make_client():
    session = boto3.session.Session(region_name=REGION)
    return session.client("s3", aws_access_key_id=AWS_ACCESS_KEY_ID)


def upload(path, key):
    client = make_client()
    with open(path, "rb") as handle:
        client.put_object(Bucket=BUCKET, Key=key, Body=handle)
    return f"s3://{BUCKET}/{key}"
"""


def code_screenshot(source: str, size: int = 16) -> Image.Image:
    """Source code rendered like an editor: a light theme, a tab bar, monospace text."""
    font = _font(MONO, size)
    lines = source.splitlines()
    line_height = round(size * 1.35)
    width = 40 + max(round(font.getlength(line)) for line in lines if line) + 40
    height = 44 + line_height * len(lines) + 24
    image = Image.new("RGB", (width, height), (250, 250, 248))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, width, 30), fill=(226, 228, 232))
    keywords = ("def ", "class ", "import ", "from ", "return", "for ", "if ", "with ")
    for row, line in enumerate(lines):
        stripped = line.lstrip()
        colour = (40, 40, 48)
        if stripped.startswith("#"):
            colour = (90, 120, 90)
        elif stripped.startswith(keywords):
            colour = (30, 50, 140)
        draw.text((40, 44 + row * line_height), line, font=font, fill=colour)
    return image


def photo_car() -> Image.Image:
    """A photo-like scene without text: sky and road gradients, a car silhouette, noise."""
    width, height = 640, 420
    rng = _rng(3)
    y = np.linspace(0, 1, height, dtype=np.float32)[:, None]
    sky = np.stack([120 + 80 * y, 160 + 60 * y, 230 - 20 * y], axis=-1)
    road = np.stack([70 + 30 * y, 70 + 30 * y, 75 + 30 * y], axis=-1)
    horizon = int(height * 0.55)
    pixels = np.empty((height, width, 3), dtype=np.float32)
    pixels[:horizon] = sky[:horizon]
    pixels[horizon:] = road[horizon:]
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, horizon - 30, width, horizon), fill=(70, 110, 60))  # hedge
    draw.polygon([(200, 300), (250, 250), (390, 245), (450, 290)], fill=(170, 30, 35))
    draw.rounded_rectangle((150, 285, 500, 345), radius=18, fill=(180, 32, 38))
    draw.polygon([(262, 256), (318, 254), (318, 288), (236, 288)], fill=(150, 190, 220))
    draw.polygon([(328, 254), (385, 252), (430, 288), (328, 288)], fill=(150, 190, 220))
    for centre in (220, 430):
        draw.ellipse((centre - 34, 312, centre + 34, 380), fill=(25, 25, 25))
        draw.ellipse((centre - 15, 331, centre + 15, 361), fill=(150, 150, 155))
    noisy = np.asarray(image, dtype=np.float32) + rng.normal(0, 7, size=(height, width, 3))
    return Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8), "RGB").filter(
        ImageFilter.GaussianBlur(0.8)
    )


def xray() -> Image.Image:
    """A chest-X-ray-like greyscale image: dark field, a bright spine, rib arcs, lungs."""
    width, height = 512, 512
    rng = _rng(4)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    body = np.exp(-(((x - 256) / 190) ** 2) - (((y - 280) / 260) ** 2)) * 90
    lungs = sum(
        np.exp(-(((x - cx) / 70) ** 2) - (((y - 250) / 130) ** 2)) * -45 for cx in (170, 342)
    )
    spine = np.exp(-(((x - 256) / 16) ** 2)) * 110 * (y > 60)
    field = 20 + body + lungs + spine
    image = Image.fromarray(np.clip(field, 0, 255).astype(np.uint8), "L")
    draw = ImageDraw.Draw(image)
    for rib in range(9):
        top = 120 + rib * 36
        draw.arc((70, top, 262, top + 100), 190, 330, fill=175, width=7)
        draw.arc((250, top, 442, top + 100), 210, 350, fill=175, width=7)
    pixels = np.asarray(image, dtype=np.float32) + rng.normal(0, 6, size=(height, width))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "L").filter(
        ImageFilter.GaussianBlur(1.5)
    )


def gps_jpeg() -> bytes:
    """A small JPEG whose EXIF holds a GPS position (a camera phone's geotag)."""
    image = Image.new("RGB", (96, 64), (120, 160, 200))
    ImageDraw.Draw(image).rectangle((10, 30, 86, 60), fill=(60, 120, 60))
    exif = Image.Exif()
    exif[0x010F] = "Specimen Camera"  # Make
    gps = exif.get_ifd(0x8825)  # GPSInfo
    gps[1] = "N"  # GPSLatitudeRef
    gps[2] = (52.0, 31.0, 12.0)  # GPSLatitude
    gps[3] = "E"  # GPSLongitudeRef
    gps[4] = (13.0, 24.0, 36.0)  # GPSLongitude
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=85, exif=exif)
    return buffer.getvalue()


def _jpeg(image: Image.Image, quality: int) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality, optimize=True)
    return buffer.getvalue()


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def main() -> None:
    if not MONO.exists():
        print(f"warning: {MONO} is missing; using PIL's default font", file=sys.stderr)
    page = passport()
    outputs = {
        "passport.png": _png(page),
        "passport_photo.jpg": _jpeg(passport_photo(page), 80),
        "code_clean.png": _png(code_screenshot(CODE_CLEAN)),
        "code_with_key.png": _png(code_screenshot(CODE_WITH_KEY)),
        "photo_car.jpg": _jpeg(photo_car(), 85),
        "xray.png": _png(xray()),
        "gps.jpg": gps_jpeg(),
    }
    for name, data in outputs.items():
        (HERE / name).write_bytes(data)
        print(f"{name}: {len(data):,} bytes")
    print(f"total: {sum(len(data) for data in outputs.values()):,} bytes")


if __name__ == "__main__":
    main()
