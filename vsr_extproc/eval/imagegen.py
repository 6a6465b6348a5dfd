"""The image evaluation corpus, drawn deterministically at run time (nothing committed).

Five scenarios, each image labelled with the ``image_text`` detections it should and
should not produce:

* ``mrz``: passport pages (TD3), ID cards (TD1, the back with its three lines) and TD2
  cards; names from Faker in several locales (hyphens, several given names, very short and
  very long surnames), issuing states, dates and document numbers at random; the MRZ in a
  monospace font; then photographed: 600-2,400 px, JPEG quality 40-95, rotation up to
  ±10°, perspective, blur, glare, uneven light, the page small inside a larger photo, or
  the margins cropped close to the MRZ;
* ``document``: identity and personal documents without an MRZ (driving licences, ID card
  fronts, bank statements, medical forms);
* ``code``: screenshots of real source files (Pygments' example files, 20+ languages)
  highlighted by Pygments styles, with or without a line-number gutter, IDE chrome,
  terminals with prompts and tracebacks, diffs, notebooks, wrapped lines, 1× and 2×, 15-80
  lines; some with a credential in them;
* ``credential``: config files, ``.env`` files and terminals showing one of 20 credential
  shapes;
* ``lookalike``: what must not match: prose and licence pages, e-mails, receipts,
  spreadsheets, slides, chats, shipping labels and forms with ``<`` and ``>``, boarding
  passes, maths worksheets, recipes, poems, street signs, and code showing UUIDs, hashes
  and base64 data (code, but no credential).

``dev`` and ``test`` share no seed, font, Pygments style, Faker locale, issuing state,
source file or page layout, so a detector tuned on ``dev`` meets ``test`` as new data.
The MRZ check digits are computed here from ICAO 9303 (independently of the detector; a
unit test checks this code against the ICAO specimen).
"""

from __future__ import annotations

import base64
import datetime
import io
import json
import math
import random
import string
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from vsr_extproc.errors import RouterError
from vsr_extproc.eval import corpora

Font = ImageFont.FreeTypeFont
RGB = tuple[int, int, int]

# --- what differs between the splits ----------------------------------------------------------


@dataclass(frozen=True)
class SplitStyle:
    seed: int
    mono: tuple[tuple[str, str], ...]  # (package, member) of monospace fonts
    text: tuple[tuple[str, str], ...]  # proportional fonts
    locales: tuple[str, ...]
    countries: tuple[str, ...]
    pygments_styles: tuple[str, ...]
    photo_right: bool  # passport layout: the holder's photo on the right (test) or left
    credential_files: tuple[str, ...]


def _font_file(package: str, member: str) -> tuple[str, str]:
    return (f"fontpkg-{package}", f"fontpkg_{package.replace('-', '_')}/files/{member}")


STYLES = {
    "dev": SplitStyle(
        seed=1701,
        mono=(
            _font_file("jetbrains-mono", "JetBrainsMono[wght].ttf"),
            _font_file("ibm-plex-mono", "IBMPlexMono-Regular.ttf"),
            _font_file("space-mono", "SpaceMono-Regular.ttf"),
        ),
        text=(_font_file("inter", "Inter[opsz,wght].ttf"), _font_file("lora", "Lora[wght].ttf")),
        locales=("en_US", "de_DE", "fr_FR", "es_ES"),
        countries=("UTO", "D<<", "FRA", "ESP", "USA", "CAN", "IRL", "AUT", "BEL", "CHE"),
        pygments_styles=("default", "monokai", "friendly", "native"),
        photo_right=False,
        credential_files=("env", "yaml", "python"),
    ),
    "test": SplitStyle(
        seed=90210,
        mono=(
            _font_file("roboto-mono", "RobotoMono[wght].ttf"),
            _font_file("dm-mono", "DMMono-Regular.ttf"),
            _font_file("geist-mono", "GeistMono[wght].ttf"),
        ),
        text=(
            _font_file("noto-sans", "NotoSans[wdth,wght].ttf"),
            _font_file("source-serif-4", "SourceSerif4[opsz,wght].ttf"),
        ),
        locales=("en_GB", "it_IT", "nl_NL", "pl_PL", "sv_SE", "pt_BR", "tr_TR", "fi_FI"),
        countries=("GBR", "ITA", "NLD", "POL", "SWE", "BRA", "TUR", "FIN", "JPN", "NZL", "ZAF"),
        pygments_styles=("solarized-light", "github-dark", "vs", "one-dark", "xcode"),
        photo_right=True,
        credential_files=("json", "ini", "shell", "toml", "js"),
    ),
}

# images per scenario (and per kind within it) in each split
COUNTS = {
    "mrz": {"td3": 24, "td1": 12, "td2": 8},
    "document": {"driving_licence": 6, "id_card_front": 5, "bank_statement": 5, "medical_form": 4},
    "code": {"code": 56, "code_with_key": 8},
    "credential": {"config": 24},
    "lookalike": {
        "prose": 4, "email": 4, "receipt": 4, "spreadsheet": 4, "slide": 3, "chat": 3,
        "shipping_label": 4, "boarding_pass": 4, "worksheet": 3, "recipe": 3, "poem": 3,
        "street_sign": 3, "ids_in_code": 6,
    },
}  # fmt: skip

# which detections each scenario must produce (expected) and which it must not (absent);
# the rest are not scored for that scenario
EXPECTED: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "mrz": (frozenset({"mrz"}), frozenset({"code", "secrets"})),
    "document": (frozenset({"document"}), frozenset({"mrz", "code", "secrets"})),
    "code": (frozenset({"code"}), frozenset({"mrz"})),
    "code_elsewhere": (frozenset({"code"}), frozenset({"mrz"})),
    "credential": (frozenset({"secrets"}), frozenset({"mrz"})),
    "id_number_cards": (frozenset({"document"}), frozenset({"mrz", "code", "secrets"})),
    "lookalike": (frozenset(), frozenset({"mrz", "code", "secrets", "document"})),
}


@dataclass(frozen=True)
class Sample:
    """One corpus image: its encoded bytes, labels, and the text drawn on it (which the
    evaluation runs the detectors on to tell an OCR miss from a detector miss)."""

    name: str
    split: str
    scenario: str
    kind: str
    expected: frozenset[str]
    absent: frozenset[str]
    data: bytes = field(repr=False)
    truth: str = field(repr=False)
    size: tuple[int, int] = (0, 0)
    conditions: tuple[str, ...] = ()


# --- fonts --------------------------------------------------------------------------------------


@cache
def _font_bytes(package: str, member: str) -> bytes:
    return corpora.member_bytes(package, member)


def font(spec: tuple[str, str], size: int) -> Font:
    return ImageFont.truetype(io.BytesIO(_font_bytes(*spec)), size)


def _fit_font(spec: tuple[str, str], text: str, width: float) -> Font:
    """The largest size at which ``text`` fits ``width`` pixels."""
    size = 12
    while font(spec, size + 1).getlength(text) <= width:
        size += 1
    return font(spec, size)


# --- MRZ (ICAO 9303) ---------------------------------------------------------------------------

_MRZ_VALUES = {c: i for i, c in enumerate(string.digits + string.ascii_uppercase)} | {"<": 0}


def mrz_check(field_text: str) -> str:
    """ICAO 9303 check digit: weights 7, 3, 1 over the character values, modulo 10."""
    total = sum(_MRZ_VALUES[c] * (7, 3, 1)[i % 3] for i, c in enumerate(field_text))
    return str(total % 10)


def mrz_name(surname: str, given: str, width: int) -> str:
    """Primary and secondary identifiers transliterated to A-Z with ``<`` separators."""

    def clean(name: str) -> str:
        ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
        ascii_name = ascii_name.upper().replace("'", "").replace(".", "")
        return "<".join(
            "".join(c if c in string.ascii_uppercase else " " for c in ascii_name).split()
        )

    return (clean(surname) + "<<" + clean(given))[:width].ljust(width, "<")


@dataclass(frozen=True)
class Holder:
    surname: str
    given: str
    country: str
    number: str
    birth: str
    expiry: str
    sex: str
    personal: str


def td3_lines(holder: Holder) -> list[str]:
    first = "P<" + holder.country + mrz_name(holder.surname, holder.given, 39)
    optional = holder.personal.ljust(14, "<")
    optional_check = mrz_check(optional) if holder.personal else "<"
    number = holder.number.ljust(9, "<")
    second = (
        number + mrz_check(number) + holder.country + holder.birth + mrz_check(holder.birth)
        + holder.sex + holder.expiry + mrz_check(holder.expiry) + optional + optional_check
    )  # fmt: skip
    second += mrz_check(second[0:10] + second[13:20] + second[21:43])
    return [first, second]


def td2_lines(holder: Holder) -> list[str]:
    first = "I<" + holder.country + mrz_name(holder.surname, holder.given, 31)
    number = holder.number.ljust(9, "<")
    second = (
        number + mrz_check(number) + holder.country + holder.birth + mrz_check(holder.birth)
        + holder.sex + holder.expiry + mrz_check(holder.expiry)
    ).ljust(35, "<")  # fmt: skip
    second += mrz_check(second[0:10] + second[13:20] + second[21:35])
    return [first, second]


def td1_lines(holder: Holder, code: str = "I<") -> list[str]:
    number = holder.number.ljust(9, "<")
    first = (code + holder.country + number + mrz_check(number) + holder.personal).ljust(30, "<")
    first = first[:30]
    second = (
        holder.birth + mrz_check(holder.birth) + holder.sex + holder.expiry
        + mrz_check(holder.expiry) + holder.country
    ).ljust(29, "<")  # fmt: skip
    second += mrz_check(first[5:30] + second[0:7] + second[8:15] + second[18:29])
    return [first, second, mrz_name(holder.surname, holder.given, 30)]


_BORN_FROM, _BORN_TO = datetime.date(1936, 1, 1), datetime.date(2006, 12, 31)
_DAYS_FROM, _DAYS_TO = datetime.date(2024, 1, 1), datetime.date(2025, 12, 31)

# --- the generator -----------------------------------------------------------------------------


class Draw:
    """One split's random source and style."""

    def __init__(self, split: str, kind: str, index: int) -> None:
        try:
            from faker import Faker
        except ImportError as exc:
            raise RouterError(
                "the image corpus needs the dev extras: pip install -e '.[dev]'"
            ) from exc

        self.split = split
        self.style = STYLES[split]
        self.rng = random.Random(f"{self.style.seed}/{kind}/{index}")
        locale = self.rng.choice(self.style.locales)
        self.faker = Faker(locale)
        self.faker.seed_instance(self.rng.randrange(2**31))
        self.conditions: list[str] = []

    def mono(self, size: int) -> Font:
        return font(self.rng.choice(self.style.mono), size)

    def text_font(self, size: int) -> Font:
        return font(self.rng.choice(self.style.text), size)

    def day(self) -> str:
        """A day in 2024-2025 (fixed bounds: Faker's own dates end at today, which would
        change the corpus from one day to the next)."""
        return self.faker.date_between(_DAYS_FROM, _DAYS_TO).isoformat()

    def date(self, start_year: int, end_year: int) -> str:
        year = self.rng.randint(start_year, end_year)
        return f"{year % 100:02d}{self.rng.randint(1, 12):02d}{self.rng.randint(1, 28):02d}"

    def holder(self) -> Holder:
        surname = self.faker.last_name()
        roll = self.rng.random()
        if roll < 0.15:
            surname = f"{surname}-{self.faker.last_name()}"
        elif roll < 0.25:
            surname = self.rng.choice(["LI", "NG", "OH", "WU", "AN", "YE"])
        elif roll < 0.35:
            surname = " ".join(self.faker.last_name() for _ in range(3))
        given = " ".join(self.faker.first_name() for _ in range(self.rng.choice([1, 1, 2, 3])))
        letters = string.ascii_uppercase
        number = "".join(self.rng.choice(letters + string.digits) for _ in range(9))
        if self.rng.random() < 0.3:
            number = number[: self.rng.randint(6, 8)]
        personal = ""
        if self.rng.random() < 0.5:
            personal = "".join(
                self.rng.choice(string.digits) for _ in range(self.rng.randint(5, 11))
            )
        return Holder(
            surname=surname,
            given=given,
            country=self.rng.choice(self.style.countries),
            number=number,
            birth=self.date(1940, 2015),
            expiry=self.date(2026, 2036),
            sex=self.rng.choice("MFF<X"),
            personal=personal,
        )


def _canvas(size: tuple[int, int], colour: RGB) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    image = Image.new("RGB", size, colour)
    return image, ImageDraw.Draw(image)


def _pastel(rng: random.Random) -> RGB:
    return (rng.randint(215, 250), rng.randint(215, 250), rng.randint(205, 245))


def _guilloche(draw: ImageDraw.ImageDraw, size: tuple[int, int], rng: random.Random) -> None:
    colour = tuple(max(0, c - rng.randint(15, 35)) for c in _pastel(rng))
    for wave in range(rng.randint(4, 9)):
        phase, period = rng.random() * 6, rng.randint(80, 260)
        base = rng.randint(0, size[1])
        points = [
            (x, base + 18 * math.sin(phase + x / period * 2 * math.pi + wave))
            for x in range(0, size[0], 6)
        ]
        draw.line(points, fill=colour, width=1)


def _portrait(
    draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int], rng: random.Random
) -> None:
    x0, y0, x1, y1 = box
    draw.rectangle(box, fill=(rng.randint(150, 210),) * 3)
    cx, cy = (x0 + x1) // 2, y0 + (y1 - y0) * 2 // 5
    r = (x1 - x0) // 4
    skin = (rng.randint(120, 230), rng.randint(90, 190), rng.randint(70, 160))
    draw.ellipse((cx - r, cy - r * 1.3, cx + r, cy + r * 1.3), fill=skin)
    draw.ellipse((x0 + 8, cy + r * 1.4, x1 - 8, y1 + r), fill=(60, 60, 90))


def _fields(
    d: Draw, draw: ImageDraw.ImageDraw, x: int, y: int, pairs: list[tuple[str, str]], size: int
) -> None:
    label, value = d.text_font(max(10, size * 2 // 3)), d.text_font(size)
    for name, text in pairs:
        draw.text((x, y), name, fill=(70, 70, 110), font=label)
        draw.text((x, y + size * 0.8), text, fill=(20, 20, 30), font=value)
        y += int(size * 2.3)


def _human_date(d: Draw, yymmdd: str) -> str:
    year = int(yymmdd[:2])
    year += 2000 if year < 40 else 1900
    months = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
    return f"{yymmdd[4:]} {months[int(yymmdd[2:4]) - 1]} {year}"


def mrz_page(d: Draw, layout: str) -> tuple[Image.Image, str, tuple[int, int, int, int]]:
    """A document bearing an MRZ: the image, its text, and the MRZ band's box."""
    holder = d.holder()
    lines = {"td3": td3_lines, "td2": td2_lines, "td1": td1_lines}[layout](holder)
    size = {"td3": (1250, 880), "td2": (1050, 740), "td1": (1012, 638)}[layout]
    image, draw = _canvas(size, _pastel(d.rng))
    _guilloche(draw, size, d.rng)
    width, height = size
    mrz_font = _fit_font(d.rng.choice(d.style.mono), lines[0], width * d.rng.uniform(0.86, 0.93))
    line_height = int(mrz_font.size * 1.45)
    band_top = height - line_height * len(lines) - int(height * 0.05)
    header = d.text_font(int(height * 0.045))
    country = d.faker.country().upper()[:28]
    title = {"td3": "PASSPORT / PASSEPORT", "td2": "IDENTITY CARD", "td1": "IDENTITY CARD"}[layout]
    text_lines = [country, title]
    if d.style.photo_right:
        draw.text(
            (width // 2, int(height * 0.04)), title, fill=(40, 40, 90), font=header, anchor="ma"
        )
        draw.text(
            (width // 2, int(height * 0.1)), country, fill=(40, 40, 90), font=header, anchor="ma"
        )
        photo = (int(width * 0.68), int(height * 0.2), int(width * 0.95), int(height * 0.62))
        field_x = int(width * 0.05)
    else:
        draw.text((int(width * 0.04), int(height * 0.04)), country, fill=(30, 30, 80), font=header)
        draw.text((int(width * 0.55), int(height * 0.04)), title, fill=(30, 30, 80), font=header)
        photo = (int(width * 0.04), int(height * 0.16), int(width * 0.3), int(height * 0.6))
        field_x = int(width * 0.34)
    if layout == "td1":  # the back of a card: an address and an authority, no photo
        pairs = [
            ("Address / Adresse", d.faker.street_address()[:40]),
            ("Authority / Autorité", d.faker.city()[:30]),
        ]
    else:
        _portrait(draw, photo, d.rng)
        pairs = [
            ("Surname / Nom", holder.surname.upper()),
            ("Given names / Prénoms", holder.given.upper()),
            ("Date of birth / Date de naissance", _human_date(d, holder.birth)),
            ("Date of expiry / Date d'expiration", _human_date(d, holder.expiry)),
        ]
    _fields(d, draw, field_x, int(height * 0.17), pairs, int(height * 0.036))
    text_lines += [value for pair in pairs for value in pair]
    y = band_top
    for line in lines:
        draw.text((int(width * 0.04), y), line, fill=(15, 15, 15), font=mrz_font)
        y += line_height
    box = (0, band_top - 4, width, y + 4)
    return image, "\n".join([*text_lines, *lines]), box


def _photographed(
    d: Draw, image: Image.Image, mrz_box: tuple[int, int, int, int] | None
) -> Image.Image:
    """What a phone or scanner does to a page; each condition drawn at random."""
    import cv2

    rng = d.rng
    if mrz_box is not None and rng.random() < 0.2:
        x0, y0, x1, y1 = mrz_box
        image = image.crop(
            (x0, max(0, y0 - rng.randint(0, 40)), x1, min(image.height, y1 + rng.randint(0, 12)))
        )
        d.conditions.append("cropped-to-mrz")
    if rng.random() < 0.35:
        # the page small inside a larger photo of a table
        scale = rng.uniform(1.3, 2.2)
        table = Image.new(
            "RGB",
            (int(image.width * scale), int(image.height * scale)),
            (rng.randint(60, 140), rng.randint(45, 110), rng.randint(30, 80)),
        )
        noise = np.random.default_rng(rng.randrange(2**31)).integers(
            -18, 18, (table.height, table.width, 1)
        )
        table = Image.fromarray(
            np.clip(np.asarray(table, dtype=np.int16) + noise, 0, 255).astype(np.uint8)
        )
        table.paste(
            image,
            (
                rng.randint(0, table.width - image.width),
                rng.randint(0, table.height - image.height),
            ),
        )
        image = table
        d.conditions.append("inside-photo")
    pixels = np.asarray(image.convert("RGB"))
    height, width = pixels.shape[:2]
    if rng.random() < 0.35:
        jitter = 0.06
        source = np.array([[0, 0], [width, 0], [width, height], [0, height]], np.float32)
        target = np.array(
            [
                [
                    x + rng.uniform(-jitter, jitter) * width,
                    y + rng.uniform(-jitter, jitter) * height,
                ]
                for x, y in source.tolist()
            ],
            np.float32,
        )
        matrix = cv2.getPerspectiveTransform(source, target)
        pixels = cv2.warpPerspective(
            pixels, matrix, (width, height), borderMode=cv2.BORDER_REPLICATE
        )
        d.conditions.append("perspective")
    angle = rng.uniform(-10, 10) if rng.random() < 0.6 else 0.0
    if angle:
        matrix = cv2.getRotationMatrix2D((width / 2, height / 2), angle, 1.0)
        cos, sin = abs(matrix[0, 0]), abs(matrix[0, 1])
        new_w, new_h = int(height * sin + width * cos), int(height * cos + width * sin)
        matrix[0, 2] += new_w / 2 - width / 2
        matrix[1, 2] += new_h / 2 - height / 2
        pixels = cv2.warpAffine(pixels, matrix, (new_w, new_h), borderMode=cv2.BORDER_REPLICATE)
        d.conditions.append(f"rotated-{angle:+.0f}")
    array = pixels.astype(np.float32)
    if rng.random() < 0.4:
        # uneven light: a gradient across the page
        h, w = array.shape[:2]
        ramp = np.linspace(rng.uniform(0.55, 0.8), 1.0, w, dtype=np.float32)
        array *= (ramp if rng.random() < 0.5 else ramp[::-1])[None, :, None]
        d.conditions.append("uneven-light")
    if rng.random() < 0.3:
        h, w = array.shape[:2]
        cy, cx = rng.uniform(0.2, 0.8) * h, rng.uniform(0.2, 0.8) * w
        yy, xx = np.mgrid[0:h, 0:w]
        radius = rng.uniform(0.1, 0.25) * max(h, w)
        glare = np.exp(-(((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * radius**2))).astype(np.float32)
        array += (rng.uniform(60, 140) * glare)[:, :, None]
        d.conditions.append("glare")
    image = Image.fromarray(np.clip(array, 0, 255).astype(np.uint8))
    if rng.random() < 0.35:
        image = image.filter(ImageFilter.GaussianBlur(rng.uniform(0.6, 1.6)))
        d.conditions.append("blur")
    return image


def _resize_longest(image: Image.Image, longest: int) -> Image.Image:
    scale = longest / max(image.size)
    return image.resize(
        (max(1, round(image.width * scale)), max(1, round(image.height * scale))),
        Image.Resampling.LANCZOS,
    )


def _jpeg(image: Image.Image, quality: int) -> bytes:
    out = io.BytesIO()
    image.convert("RGB").save(out, "JPEG", quality=quality)
    return out.getvalue()


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG", optimize=False, compress_level=1)
    return out.getvalue()


def mrz_sample(d: Draw, kind: str) -> tuple[bytes, str, Image.Image]:
    page, truth, box = mrz_page(d, kind)
    photo = _photographed(d, page, box)
    photo = _resize_longest(photo, d.rng.randint(600, 2400))
    quality = d.rng.randint(40, 95)
    d.conditions.append(f"jpeg-{quality}")
    return _jpeg(photo, quality), truth, photo


# --- documents without an MRZ -------------------------------------------------------------------


def document_sample(d: Draw, kind: str) -> tuple[bytes, str, Image.Image]:
    f = d.faker
    name = f.name()
    birth = f.date_between(_BORN_FROM, _BORN_TO).strftime(
        d.rng.choice(["%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%Y-%m-%d"])
    )
    if kind in ("driving_licence", "id_card_front"):
        size = (1012, 638)
        image, draw = _canvas(size, _pastel(d.rng))
        _guilloche(draw, size, d.rng)
        title = "DRIVING LICENCE" if kind == "driving_licence" else "NATIONAL IDENTITY CARD"
        header = d.text_font(40)
        draw.text((30, 24), f.country().upper()[:24], fill=(30, 30, 90), font=header)
        draw.text((30, 74), title, fill=(140, 20, 20), font=d.text_font(30))
        _portrait(draw, (30, 140, 280, 470), d.rng)
        number = "".join(
            d.rng.choice(string.ascii_uppercase + string.digits)
            for _ in range(d.rng.randint(8, 12))
        )
        pairs = [
            ("1. Surname", name.split()[-1].upper()),
            ("2. Given names", " ".join(name.split()[:-1]).upper()),
            ("3. Date of birth", birth),
        ]
        if kind == "driving_licence":
            pairs += [
                ("4d. Licence No.", number),
                ("9. Categories", d.rng.choice(["B", "AM/A1/B", "B/BE/C1"])),
            ]
        else:
            pairs += [("Document No.", number), ("Sex", d.rng.choice("MF"))]
        _fields(d, draw, 320, 140, pairs, 28)
        truth = "\n".join([title, *[f"{k}\n{v}" for k, v in pairs]])  # as drawn
    elif kind == "bank_statement":
        size = (1240, 1600)
        image, draw = _canvas(size, (255, 255, 255))
        big, small = d.text_font(34), d.text_font(22)
        draw.text((60, 50), f.company()[:40], fill=(10, 40, 100), font=big)
        draw.text((60, 120), "Account statement", fill=(0, 0, 0), font=big)
        rows = [
            name,
            f.street_address(),
            f.city(),
            f"Account number: {f.iban()}",
            f"Date of birth: {birth}",
            f"Statement period: {d.day()} to {d.day()}",
        ]
        y = 200
        for row in rows:
            draw.text((60, y), row, fill=(0, 0, 0), font=small)
            y += 36
        y += 30
        for _ in range(d.rng.randint(10, 18)):
            row = f"{d.day()}   {f.company()[:28]:<30} {d.rng.uniform(-900, 900):>10.2f}"
            draw.text((60, y), row, fill=(30, 30, 30), font=small)
            y += 34
            rows.append(row)
        truth = "\n".join(["Account statement", *rows])
    else:  # medical_form
        size = (1240, 1600)
        image, draw = _canvas(size, (255, 255, 255))
        big, small = d.text_font(34), d.text_font(24)
        draw.text((60, 50), f"{f.city()} General Hospital"[:44], fill=(0, 80, 80), font=big)
        draw.text((60, 110), "Patient registration form", fill=(0, 0, 0), font=big)
        mrn = "".join(d.rng.choice(string.digits) for _ in range(8))
        rows = [
            f"Patient name: {name}",
            f"Date of birth: {birth}",
            f"Medical record no.: {mrn}",
            f"Address: {f.street_address()}, {f.city()}",
            f"Phone: {f.phone_number()}",
            f"Insurance ID: {f.bothify('??#######').upper()}",
            "Allergies: " + d.rng.choice(["none known", "penicillin", "latex, peanuts"]),
            "Current medication: " + d.rng.choice(["none", "metformin 500 mg", "lisinopril 10 mg"]),
        ]
        y = 200
        for row in rows:
            draw.text((60, y), row, fill=(0, 0, 0), font=small)
            draw.line((60, y + 34, 1180, y + 34), fill=(180, 180, 180))
            y += 60
        truth = "\n".join(rows)
    photo = _photographed(d, image, None) if d.rng.random() < 0.6 else image
    photo = _resize_longest(photo, d.rng.randint(700, 2000))
    return _jpeg(photo, d.rng.randint(50, 95)), truth, photo


def id_number_card(d: Draw, index: int) -> tuple[bytes, str, Image.Image]:
    """An identity card without an MRZ: a name, and the holder's national number (one of
    Faker's for the kind, ``index`` picking the kind in turn) under the name the card
    prints for it; photographed or not, 700-2,000 px, JPEG 50-95. No birth date is drawn:
    the number is the card's one piece of identifying evidence."""
    from vsr_extproc.eval.national_ids import draw_number

    kind = list(CARD_NAMES)[index % len(CARD_NAMES)]
    d.conditions.append(kind)
    size = (1012, 638)
    image, draw = _canvas(size, _pastel(d.rng))
    _guilloche(draw, size, d.rng)
    draw.text((30, 24), d.faker.country().upper()[:24], fill=(30, 30, 90), font=d.text_font(40))
    # half the cards' titles name an identity number in general ("identity card"), half do
    # not: the number's own name is then the evidence
    title = d.rng.choice(
        ["IDENTITY CARD", "NATIONAL IDENTITY CARD", "RESIDENCE PERMIT", "HEALTH INSURANCE CARD"]
    )
    draw.text((30, 74), title, fill=(140, 20, 20), font=d.text_font(30))
    _portrait(draw, (30, 140, 280, 470), d.rng)
    name = d.faker.name()
    pairs = [
        ("Surname", name.split()[-1].upper()),
        ("Given names", " ".join(name.split()[:-1]).upper()),
        (CARD_NAMES[kind], draw_number(kind, d.rng.randrange(2**31))),
    ]
    _fields(d, draw, 320, 140, pairs, 28)
    truth = "\n".join([title, *[f"{k}\n{v}" for k, v in pairs]])  # as drawn
    photo = _photographed(d, image, None) if d.rng.random() < 0.6 else image
    photo = _resize_longest(photo, d.rng.randint(700, 2000))
    return _jpeg(photo, d.rng.randint(50, 95)), truth, photo


# --- code ---------------------------------------------------------------------------------------

# Pygments example folders (its lexer names) per language shown
CODE_FOLDERS = (
    "python", "js", "ts", "go", "rust", "java", "c", "cpp", "csharp", "rb", "php", "kotlin",
    "swift", "scala", "postgresql", "bash", "lua", "haskell", "dart", "elixir", "sql+jinja",
    "tsx", "jsx", "clojure", "julia", "perl", "powershell", "ocaml", "erlang", "fsharp",
)  # fmt: skip


# Pygments example folders of programming languages the corpus never shows (``CODE_FOLDERS``
# are its languages): ``dev``'s stress set of unfamiliar code (``more("dev",
# "code_elsewhere", …)``); ``test`` never draws them
ELSEWHERE_FOLDERS = tuple(
    """ada agda ahk alloy apl applescript arduino as3 awk bbcbasic bc berry blitzbasic blitzmax
    boo ceylon chai chapel clay clean clojurescript cmake cobol coffee-script common-lisp coq cr
    croc cuda d delphi dg dylan earl-grey ec eiffel elm erl factor fan fancy felix fennel fish
    forth fortran fortranfixed foxpro futhark gap gdscript gleam glsl gnuplot golo gosu groovy
    hlsl hx hybris hylang icon idris inform6 ioke j jasmin juttle kal koka kuin lasso lean lean4
    limbo live-script logtalk lsl luau macaulay2 maple matlab mask modelica modula2 mojo monkey
    monte moocode moon mql nasm nemerle nesc newlisp newspeak nim nit nixos objective-c
    objective-j odin opa openedge parasail pawn perl6 phix pike pony portugol pov prolog promela
    purescript qbasic qml racket reason rebol red rexx rita rsl savi scheme scilab sed shen
    smalltalk sml snobol solidity sophia sp spice splus stan swig systemverilog tact tads3 tcsh
    tea teal thingsdb ucode unicon urbiscript vb.net vbscript vcl verilog vhdl vim vyper wren x10
    xquery xtend zephir zig""".split()  # noqa: SIM905 (a word list reads best as words)
)
# the scenarios ``more`` draws that the corpus does not hold, and the splits of each
STRESS_SETS = {"code_elsewhere": ("dev",), "id_number_cards": ("dev", "test")}
# the stress set of identity cards without an MRZ that carry the holder's national
# number under the name such cards print for it (in Latin letters: the corpus's fonts
# draw no Thai, Hebrew or Chinese); one card a kind of ``eval.national_ids``
CARD_NAMES = {
    "es_dni": "DNI NÚM",
    "es_nie": "N.I.E.",
    "it_cf": "CODICE FISCALE",
    "fr_nir": "N° DE SÉCURITÉ SOCIALE",
    "nl_bsn": "PERSOONSNUMMER / PERSONAL NO.",
    "pl_pesel": "NUMER PESEL / PERSONAL NUMBER",
    "se_pnr": "PERSONNUMMER / PERSONAL IDENTITY NO.",
    "br_cpf": "CPF",
    "fi_hetu": "HENKILÖTUNNUS / PERSONAL IDENTITY CODE",
    "no_fnr": "FØDSELSNUMMER / NATIONAL IDENTITY NUMBER",
    "tr_tckn": "T.C. KİMLİK NO / TR IDENTITY NO",
    "ro_cnp": "CNP",
    "ca_sin": "SOCIAL INSURANCE NUMBER",
    "il_id": "IDENTITY NO.",
    "ee_ik": "ISIKUKOOD / PERSONAL CODE",
    "hr_oib": "OIB",
    "be_nn": "RIJKSREGISTERNR. / NATIONAL REGISTER NO.",
    "ch_ahv": "AHV-NR. / NO AVS",
    "at_vnr": "VERSICHERUNGSNUMMER",
    "ar_cuit": "CUIL",
    "mx_curp": "CURP",
    "gr_amka": "A.M.K.A.",
    "th_pin": "IDENTIFICATION NUMBER",
    "cl_rut": "RUN",
    "us_itin": "ITIN",
    "ua_rntrc": "RNTRC",
    "in_aadhaar": "AADHAAR",
    "cn_ric": "CITIZEN ID NUMBER",
    "de_idnr": "STEUER-ID / TAX ID NO.",
    "dk_cpr": "CPR-NR.",
    "kr_rrn": "RESIDENT REGISTRATION NUMBER",
    "jp_in": "INDIVIDUAL NUMBER",
    "cz_rc": "RODNÉ ČÍSLO / PERSONAL NO.",
    "za_idnr": "IDENTITY NUMBER",
    "bg_egn": "EGN / PERSONAL NO.",
    "in_pan": "PERMANENT ACCOUNT NUMBER",
    "gb_nino": "NATIONAL INSURANCE NO.",
}


@cache
def _example_files(
    folders: tuple[str, ...] = CODE_FOLDERS,
) -> tuple[tuple[str, str, list[str]], ...]:
    """(member name, folder, lines) of every usable Pygments example file in ``folders``,
    read once."""
    prefix = "pygments-2.21.0/tests/examplefiles/"
    found = []
    for name, data in corpora.source_members("pygments", prefix):
        folder = name[len(prefix) :].split("/")[0]
        if folder not in folders or name.endswith(".output"):
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        lines = [line.expandtabs(4).rstrip() for line in text.splitlines()]
        useful = [line for line in lines if line.strip()]
        if len(useful) >= 15 and sum(not line.isascii() for line in lines) <= 2:
            found.append((name, folder, lines))
    return tuple(found)


@cache
def code_files(split: str) -> tuple[tuple[str, str, list[str]], ...]:
    """(folder, file name, lines) of Pygments' example files of this split."""
    return tuple(
        (folder, name.rsplit("/", 1)[-1], lines)
        for name, folder, lines in _example_files()
        if corpora.split_of("pygments", name) == split
    )


@cache
def elsewhere_files() -> tuple[tuple[str, str, list[str]], ...]:
    """(folder, file name, lines) of every Pygments example file in ``ELSEWHERE_FOLDERS``."""
    return tuple(
        (folder, name.rsplit("/", 1)[-1], lines)
        for name, folder, lines in _example_files(ELSEWHERE_FOLDERS)
    )


def _token_colour(style: type, token: object, default: RGB) -> RGB:
    while token not in style._styles and token.parent is not None:  # type: ignore[attr-defined]
        token = token.parent  # type: ignore[attr-defined]
    colour = style.style_for_token(token).get("color")  # type: ignore[attr-defined]
    if not colour:
        return default
    return (int(colour[0:2], 16), int(colour[2:4], 16), int(colour[4:6], 16))


def _hex(colour: str, fallback: RGB) -> RGB:
    colour = (colour or "").lstrip("#")
    if len(colour) == 3:
        colour = "".join(c * 2 for c in colour)
    if len(colour) != 6:
        return fallback
    return (int(colour[0:2], 16), int(colour[2:4], 16), int(colour[4:6], 16))


def _window(d: Draw, lines: list[str]) -> tuple[int, list[str]]:
    count = d.rng.randint(15, 80)
    if len(lines) <= count:
        return 0, lines
    start = d.rng.randint(0, len(lines) - count)
    return start, lines[start : start + count]


def code_screen(
    d: Draw, folder: str, filename: str, lines: list[str], first_line: int, variant: str
) -> Image.Image:
    """Highlighted ``lines`` as an editor, a terminal, a diff or a notebook shows them."""
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
    from pygments.styles import get_style_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_for_filename(filename)
    except ClassNotFound:
        try:
            lexer = get_lexer_by_name(folder)
        except ClassNotFound:
            lexer = get_lexer_by_name("text")
    style = get_style_by_name(d.rng.choice(d.style.pygments_styles))
    background = _hex(style.background_color, (255, 255, 255))
    dark = sum(background) < 384
    default: RGB = (220, 220, 220) if dark else (30, 30, 30)
    if variant == "terminal":
        background, default = (12, 12, 12), (210, 210, 210)
    scale = 2 if d.rng.random() < 0.25 else 1
    size = d.rng.randint(13, 17) * scale
    mono = d.mono(size)
    char_w = mono.getlength("M")
    line_h = int(size * 1.45)
    gutter = variant in ("editor", "ide") and d.rng.random() < 0.75
    wrap = d.rng.choice([None, None, 72, 90])
    # token lines: list of (text, colour)
    token_lines: list[list[tuple[str, RGB]]] = [[]]
    for token, text in lexer.get_tokens("\n".join(lines) + "\n"):
        for index, part in enumerate(text.split("\n")):
            if index:
                token_lines.append([])
            if part:
                token_lines[-1].append(
                    (
                        part,
                        _token_colour(style, token, default) if variant != "terminal" else default,
                    )
                )
    token_lines = token_lines[: len(lines)]
    rows: list[tuple[str, list[tuple[str, RGB]], RGB | None]] = []  # gutter text, tokens, row tint
    if variant == "terminal":
        prompt = d.rng.choice(
            ["$ ", f"{d.faker.user_name()}@{d.faker.domain_word()}:~/src$ ", "PS C:\\src> ", "% "]
        )
        rows.append(
            (
                "",
                [
                    (
                        prompt
                        + d.rng.choice(["cat ", "less ", "head -80 ", "bat --plain "])
                        + filename,
                        (120, 220, 120),
                    )
                ],
                None,
            )
        )
    for number, tokens in enumerate(token_lines, start=first_line + 1):
        marker_tint = None
        if variant == "diff":
            mark = d.rng.choices(" +-", weights=(6, 2, 1))[0]
            tokens = [(mark, default), *tokens]
            marker_tint = {"+": (200, 245, 200), "-": (250, 205, 205), " ": None}[mark]
            if dark and marker_tint:
                marker_tint = (30, 70, 30) if mark == "+" else (80, 30, 30)
        text = "".join(t for t, _ in tokens)
        if wrap and len(text) > wrap:
            head, rest = _split_tokens(tokens, wrap)
            rows.append((str(number) if gutter else "", head, marker_tint))
            rows.append(("", rest, marker_tint))
        else:
            rows.append((str(number) if gutter else "", tokens, marker_tint))
    if variant == "terminal" and folder == "python":
        rows += [
            ("", [(line, (230, 120, 120))], None)
            for line in (
                "Traceback (most recent call last):",
                f'  File "{filename}", line {first_line + 3}, in <module>',
                f"    {lines[min(2, len(lines) - 1)].strip()[:60]}",
                d.rng.choice(
                    [
                        "KeyError: 'user_id'",
                        "TypeError: unsupported operand type(s) for +: 'int' and 'str'",
                        "ValueError: invalid literal for int() with base 10: ''",
                    ]
                ),
            )
        ]
    if variant == "notebook":
        rows = [("", [(f"In [{d.rng.randint(1, 40)}]:", (40, 40, 160))], None), *rows]
    columns = max((len("".join(t for t, _ in tokens)) for _, tokens, _ in rows), default=40)
    gutter_w = int(char_w * (len(str(first_line + len(lines))) + 2)) if gutter else 0
    chrome_top = int(line_h * 2.2) if variant in ("ide", "notebook") else int(line_h * 0.6)
    sidebar = int(200 * scale) if variant == "ide" else 0
    width = int(sidebar + gutter_w + char_w * (min(columns, 140) + 4))
    height = chrome_top + line_h * (len(rows) + 1)
    image, draw = _canvas((max(width, 320), height), background)
    if variant in ("ide", "notebook"):
        chrome = (60, 63, 65) if dark else (236, 236, 236)
        draw.rectangle((0, 0, image.width, chrome_top - 6), fill=chrome)
        tab_font = d.text_font(int(size * 0.9))
        draw.text(
            (sidebar + 12, chrome_top // 4),
            filename if variant == "ide" else "Untitled.ipynb",
            fill=default,
            font=tab_font,
        )
        if sidebar:
            draw.rectangle((0, chrome_top - 6, sidebar, image.height), fill=chrome)
            for index, entry in enumerate(
                ["src", "  app", "  tests", "README.md", "pyproject.toml", filename]
            ):
                draw.text((10, chrome_top + index * line_h), entry, fill=default, font=tab_font)
    y = chrome_top
    for label, tokens, tint in rows:
        if tint:
            draw.rectangle((sidebar, y, image.width, y + line_h), fill=tint)
        if label:
            draw.text(
                (sidebar + gutter_w - char_w, y),
                label,
                fill=(130, 130, 130),
                font=mono,
                anchor="ra",
            )
        x = sidebar + gutter_w + char_w
        for text, colour in tokens:
            draw.text((x, y), text, fill=colour, font=mono)
            x += mono.getlength(text)
        y += line_h
    return image


def _split_tokens(
    tokens: list[tuple[str, RGB]], at: int
) -> tuple[list[tuple[str, RGB]], list[tuple[str, RGB]]]:
    head: list[tuple[str, RGB]] = []
    rest: list[tuple[str, RGB]] = []
    used = 0
    for text, colour in tokens:
        if used >= at:
            rest.append((text, colour))
        elif used + len(text) <= at:
            head.append((text, colour))
        else:
            head.append((text[: at - used], colour))
            rest.append((text[at - used :], colour))
        used += len(text)
    return head, rest


# --- credentials --------------------------------------------------------------------------------


def _chars(rng: random.Random, alphabet: str, count: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(count))


UPPER_DIGITS = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"


def _jwt(rng: random.Random) -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    header = part({"alg": rng.choice(["HS256", "RS256"]), "typ": "JWT"})
    payload = part(
        {"sub": str(rng.randint(10**6, 10**9)), "iat": rng.randint(1_600_000_000, 1_800_000_000)}
    )
    return f"{header}.{payload}.{_chars(rng, ALNUM + '-_', 43)}"


def _pem(rng: random.Random) -> str:
    kind = rng.choice(["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"])
    body = "\n".join(_chars(rng, B64, 64) for _ in range(rng.randint(4, 8)))
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----"


# name → (the variable it is usually kept in, a generator of its value)
CREDENTIALS: dict[str, tuple[str, Callable[[random.Random], str]]] = {
    "aws_access_key": ("AWS_ACCESS_KEY_ID", lambda r: "AKIA" + _chars(r, UPPER_DIGITS, 16)),
    "aws_secret_key": ("AWS_SECRET_ACCESS_KEY", lambda r: _chars(r, B64, 40)),
    "github_token": ("GITHUB_TOKEN", lambda r: "ghp_" + _chars(r, ALNUM, 36)),
    "github_fine_grained": (
        "GH_PAT",
        lambda r: "github_pat_" + _chars(r, ALNUM, 22) + "_" + _chars(r, ALNUM, 59),
    ),
    "gitlab_token": ("GITLAB_TOKEN", lambda r: "glpat-" + _chars(r, ALNUM + "-_", 20)),
    "slack_token": (
        "SLACK_BOT_TOKEN",
        lambda r: (
            f"xoxb-{r.randint(10**10, 10**11)}-{r.randint(10**10, 10**11)}-{_chars(r, ALNUM, 24)}"
        ),
    ),
    "stripe_key": ("STRIPE_SECRET_KEY", lambda r: "sk_live_" + _chars(r, ALNUM, 24)),
    "google_api_key": ("GOOGLE_API_KEY", lambda r: "AIza" + _chars(r, ALNUM + "-_", 35)),
    "azure_storage": (
        "AZURE_STORAGE_CONNECTION_STRING",
        lambda r: (
            "DefaultEndpointsProtocol=https;"
            f"AccountName={r.choice(['prodlogs', 'assets01'])};"
            f"AccountKey={_chars(r, B64, 86)}==;EndpointSuffix=core.windows.net"
        ),
    ),
    "openai_key": ("OPENAI_API_KEY", lambda r: "sk-proj-" + _chars(r, ALNUM + "-_", 48)),
    "anthropic_key": (
        "ANTHROPIC_API_KEY",
        lambda r: "sk-ant-api03-" + _chars(r, ALNUM + "-_", 93) + "AA",
    ),
    "jwt": ("SESSION_TOKEN", _jwt),
    "private_key": ("", _pem),
    "postgres_url": (
        "DATABASE_URL",
        lambda r: f"postgres://app:{_chars(r, ALNUM, 14)}@db.internal:5432/app",
    ),
    "mysql_url": (
        "DB_URL",
        lambda r: (
            f"mysql://root:{_chars(r, ALNUM + '!#', 12)}"
            f"@10.0.{r.randint(0, 9)}.{r.randint(2, 250)}/shop"
        ),
    ),
    "env_secret": ("SECRET_KEY", lambda r: _chars(r, ALNUM + "!@#%^*", 50)),
    "password": (
        "DB_PASSWORD",
        lambda r: _chars(r, ALNUM, 10) + r.choice("!#$%") + str(r.randint(10, 99)),
    ),
    "npm_token": ("NPM_TOKEN", lambda r: "npm_" + _chars(r, ALNUM, 36)),
    "huggingface_token": ("HF_TOKEN", lambda r: "hf_" + _chars(r, string.ascii_letters, 34)),
    "sendgrid_key": (
        "SENDGRID_API_KEY",
        lambda r: "SG." + _chars(r, ALNUM + "-_", 22) + "." + _chars(r, ALNUM + "-_", 43),
    ),
}


def credential_file(d: Draw, shape: str, fmt: str) -> list[str]:
    """A config file in ``fmt`` with ordinary settings and one credential."""
    variable, make = CREDENTIALS[shape]
    value = make(d.rng)
    settings = [
        ("APP_ENV", d.rng.choice(["production", "staging"])),
        ("LOG_LEVEL", "info"),
        ("PORT", str(d.rng.choice([8000, 8080, 3000]))),
        ("REGION", d.rng.choice(["eu-west-1", "us-east-2"])),
        ("CACHE_TTL", str(d.rng.randint(30, 900))),
        ("FEATURE_FLAGS", "search,beta-ui"),
    ]
    d.rng.shuffle(settings)
    if shape == "private_key":
        return ["# deploy key (do not commit)", *value.splitlines()]
    entries = [*settings[:3], (variable, value), *settings[3:]]
    if fmt == "env":
        return [f"{k}={v}" for k, v in entries]
    if fmt == "shell":
        return [*(f"$ export {k}={v}" for k, v in entries), "$ ./deploy.sh"]
    if fmt == "yaml":
        return ["service:", *[f"  {k.lower()}: {v}" for k, v in entries]]
    if fmt == "json":
        body = [f'  "{k.lower()}": "{v}",' for k, v in entries]
        return ["{", *body[:-1], body[-1].rstrip(","), "}"]
    if fmt == "ini":
        return ["[service]", *[f"{k.lower()} = {v}" for k, v in entries]]
    if fmt == "toml":
        return ["[service]", *[f'{k.lower()} = "{v}"' for k, v in entries]]
    if fmt == "js":
        return ["module.exports = {", *[f"  {k.lower()}: '{v}'," for k, v in entries], "};"]
    return ["import os", "", *[f'{k} = "{v}"' for k, v in entries]]  # python


# --- look-alikes ------------------------------------------------------------------------------


def _page(
    d: Draw,
    lines: list[str],
    size: int = 26,
    width: int = 1100,
    background: RGB = (255, 255, 255),
    colour: RGB = (20, 20, 20),
    mono: bool = False,
) -> Image.Image:
    text_font = d.mono(size) if mono else d.text_font(size)
    line_h = int(size * 1.5)
    image, draw = _canvas((width, 80 + line_h * len(lines)), background)
    for index, line in enumerate(lines):
        draw.text((50, 40 + index * line_h), line, fill=colour, font=text_font)
    return image


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width)


def lookalike_lines(d: Draw, kind: str) -> tuple[list[str], bool]:
    """The text of a look-alike and whether it is drawn in a monospace font."""
    f, rng = d.faker, d.rng
    if kind == "prose":
        licence = [line for line in _licence_text().splitlines() if line.strip()]
        if rng.random() < 0.5:
            return licence[: rng.randint(15, 30)], False
        return [
            line for _ in range(4) for line in [*_wrap(f.paragraph(nb_sentences=6), 80), ""]
        ], False
    if kind == "email":
        return [
            f"From: {f.name()} <{f.email()}>",
            f"To: {f.name()} <{f.email()}>",
            f"Subject: {f.sentence(nb_words=5)}",
            "",
            f"Hi {f.first_name()},",
            "",
            *_wrap(f.paragraph(nb_sentences=5), 75),
            "",
            "Best regards,",
            f.name(),
        ], False
    if kind == "receipt":
        items = [
            f"{f.word().title():<18} {rng.randint(1, 4)} x {rng.uniform(0.5, 20):6.2f}"
            for _ in range(rng.randint(5, 12))
        ]
        return [
            f.company(),
            f.street_address(),
            "-" * 32,
            *items,
            "-" * 32,
            f"TOTAL {rng.uniform(10, 200):>24.2f}",
            f"VISA **** {rng.randint(1000, 9999)}",
            f"{d.day()} {rng.randint(7, 22):02d}:{rng.randint(0, 59):02d}",
        ], True
    if kind == "spreadsheet":
        header = ["Region", "Q1", "Q2", "Q3", "Q4", "Total"]
        rows = [" | ".join(f"{c:>9}" for c in header)]
        for _ in range(rng.randint(8, 16)):
            quarters = [rng.randint(100, 9999) for _ in range(4)]
            cells = [f.city()[:9], *map(str, quarters), str(sum(quarters))]
            rows.append(" | ".join(f"{c:>9}" for c in cells))
        return rows, True
    if kind == "slide":
        return [
            f.catch_phrase(),
            "",
            *[f"• {f.bs().capitalize()}" for _ in range(rng.randint(3, 5))],
            "",
            f"{f.company()} — {rng.randint(2015, 2026)}",
        ], False
    if kind == "chat":
        return [
            line
            for _ in range(rng.randint(5, 9))
            for line in (
                f"{f.first_name()}  {rng.randint(7, 22):02d}:{rng.randint(0, 59):02d}",
                f.sentence(nb_words=rng.randint(4, 12)),
            )
        ], False
    if kind == "shipping_label":
        return [
            "SHIP TO >>>",
            f.name().upper(),
            f.street_address().upper(),
            f"{f.postcode()} {f.city().upper()}",
            "",
            "FROM <<<",
            f.company().upper(),
            f.address().upper().replace("\n", ", ")[:40],
            f"TRACKING <{_chars(rng, UPPER_DIGITS, 18)}>",
            f"WEIGHT {rng.uniform(0.2, 20):.1f} KG  >>> PRIORITY <<<",
        ], True
    if kind == "boarding_pass":
        surname, given = f.last_name().upper(), f.first_name().upper()
        return [
            "BOARDING PASS",
            f"NAME OF PASSENGER  {surname}/{given} {rng.choice(['MR', 'MS'])}",
            f"FROM {f.city().upper()[:14]}  TO {f.city().upper()[:14]}",
            f"FLIGHT {rng.choice(['LH', 'BA', 'AF', 'KL'])}{rng.randint(100, 9999)}"
            f"  DATE {rng.randint(1, 28):02d}{rng.choice(['MAR', 'JUN', 'NOV'])}"
            f"  SEAT {rng.randint(1, 40)}{rng.choice('ABCDEF')}",
            f"GATE {rng.choice('ABC')}{rng.randint(1, 60)}"
            f"  BOARDING {rng.randint(5, 22):02d}:{rng.choice(['05', '35', '50'])}",
            f"M1{surname}/{given}  E{_chars(rng, UPPER_DIGITS, 6)}"
            f" {_chars(rng, string.ascii_uppercase, 6)}{rng.randint(100, 999)}"
            f" 0{rng.randint(10, 99)}Y0{rng.randint(10, 40)}C",
        ], True
    if kind == "worksheet":
        return [
            "Maths practice — fill in < , > or =",
            *[
                f"{index}) {rng.randint(1, 99)} __ {rng.randint(1, 99)}"
                f"     {rng.randint(2, 12)} x {rng.randint(2, 12)} = ____"
                for index in range(1, rng.randint(8, 14))
            ],
            "Solve: 3x + 4 = 19,  x > 2",
        ], False
    if kind == "recipe":
        return [
            f"{f.last_name()}'s {rng.choice(['lemon cake', 'tomato soup', 'bread rolls'])}",
            "Ingredients:",
            *[f"- {rng.randint(1, 500)} g {f.word()}" for _ in range(rng.randint(4, 8))],
            "Method:",
            *[f"{n}. {f.sentence(nb_words=8)}" for n in range(1, rng.randint(4, 7))],
        ], False
    if kind == "poem":
        return [
            f.sentence(nb_words=rng.randint(3, 7)).rstrip(".") + rng.choice([",", "", ";"])
            for _ in range(rng.randint(8, 14))
        ], False
    if kind == "street_sign":
        return [f.street_name().upper(), f"{rng.randint(1, 99)}-{rng.randint(100, 200)}"], False
    # ids_in_code: identifiers that look random but are not credentials
    values = [
        f'REQUEST_ID = "{f.uuid4()}"',
        f'COMMIT = "{_chars(rng, "0123456789abcdef", 40)}"',
        f'CHECKSUM_SHA256 = "{_chars(rng, "0123456789abcdef", 64)}"',
        f'LOGO_PNG = "data:image/png;base64,{base64.b64encode(rng.randbytes(48)).decode()}"',
        f'ETAG = "W/{_chars(rng, "0123456789abcdef", 32)}"',
        f"TRACE_ID = {f.uuid4()!r}",
    ]
    rng.shuffle(values)
    return [
        "import hashlib",
        "",
        *values,
        "",
        "def verify(blob: bytes) -> bool:",
        "    return hashlib.sha256(blob).hexdigest() == CHECKSUM_SHA256",
    ], True


@cache
def _licence_text() -> str:
    members = corpora.source_members("pygments", "pygments-2.21.0/LICENSE")
    return members[0][1].decode("utf-8")


def lookalike_image(d: Draw, kind: str, lines: list[str], mono: bool) -> Image.Image:
    """``lines`` (from ``lookalike_lines``) drawn as the look-alike ``kind`` looks."""
    if kind == "street_sign":
        photo = Image.new(
            "RGB",
            (1200, 800),
            (d.rng.randint(80, 160), d.rng.randint(120, 180), d.rng.randint(150, 230)),
        )
        draw = ImageDraw.Draw(photo)
        draw.rectangle((0, 520, 1200, 800), fill=(90, 90, 90))
        sign = d.text_font(64)
        draw.rectangle((300, 200, 900, 360), fill=(20, 90, 40))
        draw.text((600, 230), lines[0][:18], fill=(255, 255, 255), font=sign, anchor="ma")
        draw.text((600, 300), lines[1], fill=(255, 255, 255), font=d.text_font(36), anchor="ma")
        return _photographed(d, photo, None)
    if kind == "ids_in_code":
        return code_screen(d, "python", "settings.py", lines, 0, d.rng.choice(["editor", "ide"]))
    dark = kind == "chat" and d.rng.random() < 0.5
    image = _page(
        d,
        lines,
        size=d.rng.randint(20, 30),
        mono=mono,
        background=(30, 30, 36) if dark else (255, 255, 255),
        colour=(230, 230, 230) if dark else (20, 20, 20),
    )
    return (
        _photographed(d, image, None)
        if kind in ("receipt", "boarding_pass", "shipping_label") and d.rng.random() < 0.6
        else image
    )


# --- the corpus ---------------------------------------------------------------------------------


def _code_sample(
    d: Draw, index: int, with_key: bool, files: tuple[tuple[str, str, list[str]], ...]
) -> tuple[Image.Image, str]:
    folder, filename, all_lines = files[(index * 7 + d.rng.randrange(len(files))) % len(files)]
    first, lines = _window(d, all_lines)
    if with_key:
        shape = d.rng.choice(sorted(CREDENTIALS))
        inserted = credential_file(d, shape, d.rng.choice(d.style.credential_files))
        at = d.rng.randint(0, min(10, len(lines)))
        lines = [*lines[:at], *inserted, *lines[at:]]
    variant = d.rng.choice(["editor", "editor", "ide", "terminal", "diff", "notebook"])
    d.conditions.append(f"{folder}/{variant}")
    return code_screen(d, folder, filename, lines, first, variant), "\n".join(lines)


def generate(split: str, limit_per_kind: int | None = None) -> Iterator[Sample]:
    """Every image of ``split``, in a fixed order (the same bytes on every run)."""
    if split not in STYLES:
        raise ValueError(f"split must be dev or test, not {split!r}")
    for scenario, kinds in COUNTS.items():
        for kind, count in kinds.items():
            for index in range(count if limit_per_kind is None else min(count, limit_per_kind)):
                yield _sample(split, scenario, kind, index)


def more(split: str, scenario: str, first: int, scale: int) -> Iterator[Sample]:
    """Images of ``scenario`` beyond the corpus: ``scale`` times the split's count of each
    kind, drawn from index ``first`` on (at least the kind's count, so none is the
    corpus's own), the same way the split draws its own (``dev/td3-263``: a 24th
    ``dev`` TD3 page and more). A stress set of the split's distribution, larger than the
    corpus's share of the scenario: tune on ``dev``'s, report ``test``'s.

    ``code_elsewhere`` (``dev`` only): screenshots of Pygments' example files in
    ``ELSEWHERE_FOLDERS``, languages the corpus never shows, ``scale`` times as many as
    there are such files. ``id_number_cards``: identity cards without an MRZ carrying a
    national number (``id_number_card``), ``scale`` times one a kind, in the split's fonts
    and people (``dev``'s drawn to tune on since ``test``'s was scored)."""
    if scenario in STRESS_SETS:
        if split not in STRESS_SETS[scenario]:
            raise ValueError(f"{scenario!r} is drawn for {' or '.join(STRESS_SETS[scenario])} only")
        size = len(elsewhere_files()) if scenario == "code_elsewhere" else len(CARD_NAMES)
        for index in range(first, first + scale * size):
            yield _sample(split, scenario, scenario, index)
        return
    if split not in STYLES or scenario not in COUNTS:
        raise ValueError(f"no scenario {scenario!r} in split {split!r}")
    for kind, count in COUNTS[scenario].items():
        if first < count:
            raise ValueError(f"first must be past the corpus's {count} {kind} images")
        for index in range(first, first + scale * count):
            yield _sample(split, scenario, kind, index)


def sample(name: str) -> Sample:
    """One image by its name (``dev/td1-008``), the same bytes as in ``generate``; an index
    past the corpus's count of its kind names one of the images ``more`` draws."""
    split, _, rest = name.partition("/")
    kind, _, number = rest.rpartition("-")
    scenarios = [scenario for scenario, kinds in COUNTS.items() if kind in kinds]
    scenarios += [scenario for scenario in STRESS_SETS if kind == scenario]
    if split not in STYLES or not scenarios or not number.isdigit():
        raise ValueError(f"no image {name!r} in the corpus")
    return _sample(split, scenarios[0], kind, int(number))


def _sample(split: str, scenario: str, kind: str, index: int) -> Sample:
    expected, absent = EXPECTED[scenario]
    d = Draw(split, kind, index)
    sample_expected = expected
    if scenario == "mrz":
        data, truth, image = mrz_sample(d, kind)
    elif scenario == "document":
        data, truth, image = document_sample(d, kind)
    elif scenario == "id_number_cards":
        data, truth, image = id_number_card(d, index)
    elif scenario in ("code", "code_elsewhere"):
        files = code_files(split) if scenario == "code" else elsewhere_files()
        image, truth = _code_sample(d, index, kind == "code_with_key", files)
        if kind == "code_with_key":
            sample_expected = expected | {"secrets"}
        data = _png(image)
    elif scenario == "credential":
        shape = sorted(CREDENTIALS)[index % len(CREDENTIALS)]
        fmt = d.rng.choice(d.style.credential_files)
        lines = credential_file(d, shape, fmt)
        d.conditions.append(f"{shape}/{fmt}")
        variant = "terminal" if fmt == "shell" else d.rng.choice(["editor", "ide"])
        image = code_screen(d, "text", f"config.{fmt}", lines, 0, variant)
        truth, data = "\n".join(lines), _png(image)
    else:
        if kind == "ids_in_code":
            sample_expected = frozenset({"code"})
        lines, mono = lookalike_lines(d, kind)
        image = lookalike_image(d, kind, lines, mono)
        truth = "\n".join(lines)
        data = _jpeg(image, 88) if kind in ("street_sign",) else _png(image)
    return Sample(
        name=f"{split}/{kind}-{index:03d}",
        split=split,
        scenario=scenario,
        kind=kind,
        expected=sample_expected,
        absent=absent - sample_expected,
        data=data,
        truth=truth,
        size=image.size,
        conditions=tuple(d.conditions),
    )
