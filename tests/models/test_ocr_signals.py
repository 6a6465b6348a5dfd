"""``image_text`` signals on the real PP-OCRv4 models (rapidocr) and the committed images.

The images are made by tests/data/images/make_images.py. One router (one OCR engine) serves
the module; each committed image is decided once and the result shared between tests.
"""

from __future__ import annotations

import asyncio
import functools
import io
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from builders import body, chat, data_url, image_part, text_part, user
from PIL import ExifTags, Image, ImageDraw, ImageFont

from vsr_extproc.config.compile import compile_policy, parse_config
from vsr_extproc.core.decision import RoutingDecision
from vsr_extproc.core.router import Router
from vsr_extproc.errors import ConfigError
from vsr_extproc.runtime.ocr import (
    OcrEngine,
    OcrLine,
    OcrResult,
    OcrSettings,
    OcrStopped,
    _looks_like_mrz,
    _without_line_numbers,
    mrz_band,
    normalise,
    number_column,
    prepare,
    reading_order,
    with_lost_marks,
)
from vsr_extproc.signals.base import Resources
from vsr_extproc.signals.image_text import ImageTextSignal

pytestmark = pytest.mark.models

IMAGES = Path(__file__).resolve().parent.parent / "data" / "images"
MONO = Path("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf")

SIGNALS: list[dict[str, Any]] = [
    {"name": "passport_mrz", "detect": "mrz", "require_valid": True},
    {"name": "secrets_in_screenshot", "detect": "secrets"},
    {"name": "code_screenshot", "detect": "code", "min_score": 0.5},
    {
        "name": "personal_data_in_image",
        "detect": "pii",
        "types": ["email", "phone", "card", "iban", "ssn", "date_of_birth"],
    },
]
KEYS = [f"image_text.{signal['name']}" for signal in SIGNALS]

# what must never appear in a signal's value: the holder's data, the MRZ, the secrets
SENSITIVE = ("MUSTERMANN", "ERIKA", "C01X00T47", "P<UTO", "<<", "AKIA", "Tr0ub4dor", "6408125")


def _config(**ocr: Any) -> dict[str, Any]:
    return {
        "models": [{"name": "m", "cluster": "c", "upstream_model": "up"}],
        "ocr": ocr,
        "signals": {"image_text": SIGNALS},
        "decisions": [
            {"name": signal["name"], "rules": key, "action": {"type": "route", "models": ["m"]}}
            for signal, key in zip(SIGNALS, KEYS, strict=True)
        ],
        "default": {"action": {"type": "route", "models": ["m"]}},
    }


Decider = Callable[[str], RoutingDecision]


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(compile_policy(parse_config(_config()), Resources()))


@pytest.fixture(scope="module")
def decided(router: Router) -> Decider:
    """Each committed image decided once for the module (OCR is the slow part)."""

    @functools.cache
    def decide(name: str) -> RoutingDecision:
        return _decide(router, (IMAGES / name).read_bytes())

    return decide


def _engine(router: Router) -> OcrEngine:
    signal = router.policy.signals[KEYS[0]]
    assert isinstance(signal, ImageTextSignal)
    return signal.reader.engine


def _request(*images: bytes) -> dict[str, Any]:
    parts = [text_part("Summarize this.")]
    parts += [image_part(data_url(data)) for data in images]
    return chat(user(parts))


def _decide(router: Router, *images: bytes) -> RoutingDecision:
    return asyncio.run(router.explain(body(_request(*images))))


def _image_report(decision: RoutingDecision, key: str) -> dict[str, Any]:
    result = decision.results[key]
    assert result.error is None, result.error
    (report,) = result.value["images"]
    assert isinstance(report, dict)
    return report


@pytest.fixture
def ocr_calls(router: Router, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count the engine's reads, recording the thread each ran on."""
    engine = _engine(router)
    calls: list[str] = []
    read = engine.read

    def counting(image: Image.Image, **options: Any) -> OcrResult:
        calls.append(threading.current_thread().name)
        return read(image, **options)

    monkeypatch.setattr(engine, "read", counting)
    return calls


def _fresh_png(name: str, tag: int) -> bytes:
    """A committed image with one pixel changed: new bytes, so no cached OCR applies."""
    image = Image.open(IMAGES / name).convert("RGB")
    image.putpixel((0, 0), (tag, tag, tag))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


@pytest.mark.parametrize("name", ["passport.png", "passport_photo.jpg"])
def test_a_passport_page_has_a_valid_mrz(decided: Decider, name: str) -> None:
    decision = decided(name)
    result = decision.results["image_text.passport_mrz"]
    assert result.matched
    assert result.confidence == 1.0
    report = _image_report(decision, "image_text.passport_mrz")
    assert report["mrz"] == [{"format": "td3", "valid": True}]
    assert not decision.results["image_text.code_screenshot"].matched
    assert not decision.results["image_text.secrets_in_screenshot"].matched


def test_a_code_screenshot_is_python_code_without_secrets(decided: Decider) -> None:
    decision = decided("code_clean.png")
    assert decision.results["image_text.code_screenshot"].matched
    code = _image_report(decision, "image_text.code_screenshot")["code"]
    assert code["score"] >= 0.5
    assert code["language"] == "python"
    assert not decision.results["image_text.secrets_in_screenshot"].matched
    assert not decision.results["image_text.passport_mrz"].matched


def test_a_config_screenshot_leaks_an_aws_key_and_is_code(decided: Decider) -> None:
    decision = decided("code_with_key.png")
    secrets = decision.results["image_text.secrets_in_screenshot"]
    assert secrets.matched
    assert secrets.confidence >= 0.9
    findings = _image_report(decision, "image_text.secrets_in_screenshot")["findings"]
    assert findings["aws_access_key"] == 1
    assert decision.results["image_text.code_screenshot"].matched


def test_a_photo_without_text_matches_nothing_and_is_read_fast(decided: Decider) -> None:
    decision = decided("photo_car.jpg")
    assert not any(decision.results[key].matched for key in KEYS)
    report = _image_report(decision, KEYS[0])
    assert report["lines"] == 0
    # ~40 ms measured on 2 cores; a text-heavy page takes ~0.5 s
    assert report["ocr_ms"] < 400


@pytest.mark.parametrize(
    "name", ["passport.png", "passport_photo.jpg", "code_clean.png", "code_with_key.png"]
)
def test_values_never_carry_the_text_the_data_or_the_secrets(decided: Decider, name: str) -> None:
    decision = decided(name)
    dumped = orjson.dumps([decision.results[key].value for key in KEYS]).decode()
    assert [value for value in SENSITIVE if value in dumped] == []


def test_each_image_is_read_once_per_request_off_the_event_loop(
    router: Router, ocr_calls: list[str]
) -> None:
    decision = _decide(router, _fresh_png("code_with_key.png", 1), _fresh_png("passport.png", 2))
    # four signals, two images: two reads, each on the OCR engine's own thread
    assert len(ocr_calls) == 2
    assert all(name.startswith("ocr") for name in ocr_calls)
    for key in KEYS:
        assert [report["image"] for report in decision.results[key].value["images"]] == [0, 1]
    assert decision.results["image_text.secrets_in_screenshot"].matched
    assert decision.results["image_text.passport_mrz"].matched


def test_an_image_seen_before_is_not_read_again(router: Router, ocr_calls: list[str]) -> None:
    image = _fresh_png("code_with_key.png", 3)
    first = _decide(router, image)
    second = _decide(router, image)
    assert len(ocr_calls) == 1
    report = _image_report(second, "image_text.secrets_in_screenshot")
    assert report["cached"] is True
    assert second.results["image_text.secrets_in_screenshot"].matched
    assert "cached" not in _image_report(first, "image_text.secrets_in_screenshot")


def test_a_request_without_images_runs_no_ocr(router: Router, ocr_calls: list[str]) -> None:
    decision = asyncio.run(router.explain(body(chat(user("Summarize this.")))))
    assert ocr_calls == []
    for key in KEYS:
        result = decision.results[key]
        assert (result.matched, result.error, result.value) == (False, None, {"images": []})


def test_a_corrupt_image_is_reported_and_the_others_still_count(
    router: Router, ocr_calls: list[str]
) -> None:
    corrupt = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
    decision = _decide(router, corrupt, (IMAGES / "code_with_key.png").read_bytes())
    result = decision.results["image_text.secrets_in_screenshot"]
    assert result.error is None
    assert result.matched
    broken, readable = result.value["images"]
    assert broken["image"] == 0
    assert "corrupt" in broken["error"]
    assert readable["findings"]["aws_access_key"] == 1
    assert len(ocr_calls) <= 1  # the corrupt image never reaches OCR


def test_when_every_image_is_corrupt_the_signal_fails_with_the_reason(
    router: Router, ocr_calls: list[str]
) -> None:
    decision = _decide(router, b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, b"GIF89a not really")
    for key in KEYS:
        result = decision.results[key]
        assert not result.matched
        assert result.error is not None
        assert "image 0:" in result.error
        assert "image 1:" in result.error
        assert "corrupt" in result.error
    assert ocr_calls == []


def test_the_detector_sees_at_most_its_cap_and_small_images_at_their_own_size() -> None:
    """``det_limit_side`` bounds the page the text detector reads (rapidocr's own "max"
    mode ignored it and picked 960, 1500 or 2000 px by the image's size)."""
    engine = OcrEngine(OcrSettings(det_limit_side=640))
    seen: list[tuple[int, ...]] = []
    session = engine._detector.infer.session

    class Watched:
        def run(self, outputs: Any, feed: dict[str, Any]) -> Any:
            seen.append(next(iter(feed.values())).shape)
            return session.run(outputs, feed)

        def __getattr__(self, name: str) -> Any:
            return getattr(session, name)

    engine._detector.infer.session = Watched()
    page = Image.open(IMAGES / "code_clean.png").convert("RGB")
    large = page.resize((page.width * 2, page.height * 2))
    engine.read(large)
    engine.read(page.resize((320, 240)))

    assert max(seen[0][2:]) <= 640  # the large page, downscaled to the cap
    assert seen[1][2:] == (256, 320)  # the small one at its own size (rounded to 32)


@pytest.mark.parametrize("image", ["code_clean.png", "passport.png"])
def test_the_detectors_input_is_rapidocrs_to_the_bit(router: Router, image: str) -> None:
    from rapidocr_onnxruntime.ch_ppocr_det.utils import DetPreProcess

    detector = _engine(router)._detector
    page = np.asarray(Image.open(IMAGES / image).convert("RGB"))[:, :, ::-1]
    for pixels in (page, np.ascontiguousarray(page[:, : page.shape[1] // 2])):
        ours = detector.get_preprocess(max(pixels.shape[:2]))(pixels)
        theirs = DetPreProcess(1280, "max", detector.mean, detector.std)(pixels)
        assert ours.dtype == theirs.dtype == np.float32
        assert ours.shape == theirs.shape
        assert np.array_equal(ours, theirs)


def test_ocr_stops_at_its_budget_and_says_so() -> None:
    impatient = Router(compile_policy(parse_config(_config(timeout_ms=1)), Resources()))
    decision = _decide(impatient, _fresh_png("code_clean.png", 4))
    result = decision.results["image_text.code_screenshot"]
    assert not result.matched
    assert result.error is not None
    assert "OCR stopped at its 1 ms budget" in result.error


def test_an_image_that_outlasts_the_signal_costs_only_its_own_findings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first image's secret stands when the second is still being read as the signal
    runs out of time: the signal answers at 95% of its timeout with what it has. (The
    timeout leaves the screenshot's own read room on a loaded machine: 2.5 s did not, once,
    with the suite's two workers reading models beside it.)"""
    timeout = 6000
    config = _config()
    config["signals"]["image_text"] = [{**signal, "timeout_ms": timeout} for signal in SIGNALS]
    router = Router(compile_policy(parse_config(config), Resources()))
    engine = _engine(router)
    read = engine.read
    with Image.open(IMAGES / "passport.png") as passport:
        slow = passport.size

    def stuck_on_the_passport(image: Image.Image, **options: Any) -> OcrResult:
        if image.size == slow:  # held until the request lets go of it (at most 10 s)
            options["stop"].wait(10)
        return read(image, **options)

    monkeypatch.setattr(engine, "read", stuck_on_the_passport)
    decision = _decide(router, _fresh_png("code_with_key.png", 7), _fresh_png("passport.png", 8))
    secrets = decision.results["image_text.secrets_in_screenshot"]
    assert (secrets.matched, secrets.error) == (True, None)
    assert secrets.latency_ms < timeout
    read_key, not_read = secrets.value["images"]
    assert read_key["findings"]["aws_access_key"] == 1
    assert not_read == {"image": 1, "error": f"not read within {timeout} ms"}
    # the unread passport is not evidence either way: no MRZ, and no failure of the signal
    mrz = decision.results["image_text.passport_mrz"]
    assert (mrz.matched, mrz.error) == (False, None)
    engine.close()


def _one_line_at_a_time(engine: OcrEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine reads its boxes one after another, so that the order in which they are
    recognised is the order in which they are taken (side by side, two lines finish in
    either order)."""
    monkeypatch.setattr(engine, "settings", replace(engine.settings, threads=1))


def _stop_after(engine: OcrEngine, monkeypatch: pytest.MonkeyPatch, boxes: int) -> None:
    """Make OCR run out of time after recognising ``boxes`` text boxes."""
    _one_line_at_a_time(engine, monkeypatch)
    recognise = engine._recognise
    done: list[int] = []

    def limited(crop: Any) -> tuple[str, float]:
        if len(done) >= boxes:
            raise OcrStopped
        done.append(1)
        return recognise(crop)

    monkeypatch.setattr(engine, "_recognise", limited)


def _recorded(engine: OcrEngine, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts ``engine`` recognises from now on, in the order it reads its boxes."""
    _one_line_at_a_time(engine, monkeypatch)
    texts: list[str] = []
    recognise = engine._recognise

    def recording(crop: Any) -> tuple[str, float]:
        text, confidence = recognise(crop)
        texts.append(text)
        return text, confidence

    monkeypatch.setattr(engine, "_recognise", recording)
    return texts


def test_a_budget_that_runs_out_keeps_the_secret_already_read(
    router: Router, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _engine(router)
    order = _recorded(engine, monkeypatch)
    whole = engine.read(Image.open(IMAGES / "code_with_key.png"))
    monkeypatch.undo()
    assert whole.complete
    assert "AKIA" in whole.text
    # stop right after the box with the key, in the order OCR reads them
    enough = next(i for i, text in enumerate(order) if "AKIA" in text) + 1
    assert enough < whole.boxes
    _stop_after(engine, monkeypatch, enough)
    decision = _decide(router, _fresh_png("code_with_key.png", 11))
    secrets = decision.results["image_text.secrets_in_screenshot"]
    assert secrets.matched
    assert secrets.error is None
    (report,) = secrets.value["images"]
    assert report["complete"] is False
    assert report["read"] == f"{enough}/{whole.boxes} text boxes"
    assert report["findings"] == {"aws_access_key": 1}
    # no MRZ-shaped box went unread, so "no MRZ" is an answer, not a failure
    mrz = decision.results["image_text.passport_mrz"]
    assert mrz.error is None
    assert not mrz.matched


def test_a_passport_mrz_is_read_before_the_rest_of_the_page(
    router: Router, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _engine(router)
    # count the recognitions of the band: its first reading, and a second look if needed
    calls: list[int] = []
    recognise, second_look = engine._recognise, engine._second_look

    def counting(crop: Any) -> tuple[str, float]:
        calls.append(1)
        return recognise(crop)

    band_calls: list[int] = []

    def recording(*args: Any) -> Any:
        found = second_look(*args)
        band_calls.append(len(calls))
        return found

    monkeypatch.setattr(engine, "_recognise", counting)
    monkeypatch.setattr(engine, "_second_look", recording)
    whole = engine.read(Image.open(IMAGES / "passport_photo.jpg"))
    monkeypatch.undo()
    assert 2 <= whole.mrz_boxes < whole.boxes
    _stop_after(engine, monkeypatch, band_calls[0])
    decision = _decide(router, _fresh_png("passport_photo.jpg", 12))
    mrz = decision.results["image_text.passport_mrz"]
    assert mrz.matched, mrz
    (report,) = mrz.value["images"]
    assert report["complete"] is False
    assert report["mrz"] == [{"format": "td3", "valid": True}]


def test_finding_nothing_in_part_of_an_image_still_fails_the_other_detections(
    router: Router, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stop_after(_engine(router), monkeypatch, 2)
    decision = _decide(router, _fresh_png("code_clean.png", 13))
    pii = decision.results["image_text.personal_data_in_image"]
    assert not pii.matched
    assert pii.error is not None
    assert "budget" in pii.error


def test_the_mrz_band_is_two_or_three_equal_rows_and_prose_has_none() -> None:
    page = [
        _quad(40, 40, 300, 70),  # a title
        _quad(40, 100, 900, 130),  # prose lines of different lengths
        _quad(40, 140, 700, 170),
        _quad(40, 600, 960, 640),  # the MRZ: two rows of the same length
        _quad(42, 655, 958, 695),
    ]
    blank = np.full((800, 1000, 3), 255, np.uint8)
    lines = mrz_band(blank, page)
    assert [line.boxes for line in lines] == [(3,), (4,)]
    assert lines[0].quad is page[3]
    assert mrz_band(blank, page[:3]) == []
    # a line split by OCR into two boxes is one line, read whole by a second look
    split = [*page[:3], _quad(40, 600, 500, 640), _quad(510, 600, 960, 640), page[4]]
    lines = mrz_band(blank, split)
    assert [line.boxes for line in lines] == [(3, 4), (5,)]
    assert np.allclose(lines[0].quad, page[3])
    # photographed at an angle, the second line starts a little further in; a line that
    # starts two heights in is another column's
    for shift, band in ((55, [(3,), (4,)]), (85, [])):
        shifted = [*page[:4], _quad(40 + shift, 655, 958 + shift, 695)]
        assert [line.boxes for line in mrz_band(blank, shifted)] == band


def _turned(quad: Any, degrees: float, centre: tuple[float, float] = (500, 400)) -> Any:
    angle = np.radians(degrees)
    turn = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    return ((quad - centre) @ turn.T + centre).astype(np.float32)


def test_a_tilted_mrz_line_split_in_two_is_one_line_of_the_band() -> None:
    """A photo turned 8°: the first line's run of fillers was boxed apart, and its middle
    lies a third of the page's text higher than the text's; level, it would be a row of its
    own, and neither row as long as the second line."""
    level = [
        _quad(100, 300, 520, 336),  # P<D<<MELENDEZ<<MOISES
        _quad(540, 300, 960, 330),  # <<<<<<<<<<<<<<<<<<<<<< (a shorter box)
        _quad(102, 350, 962, 386),  # the second line, one box
    ]
    tilted = [_turned(quad, -8) for quad in level]
    lines = mrz_band(np.full((800, 1100, 3), 255, np.uint8), tilted)
    assert [line.boxes for line in lines] == [(0, 1), (2,)]
    whole = lines[0].quad
    assert np.allclose(whole[0], (tilted[0][0] + tilted[0][3]) / 2 - _up(whole), atol=1)
    assert np.allclose(whole[1], (tilted[1][1] + tilted[1][2]) / 2 - _up(whole), atol=1)
    # level boxes at those heights are three rows: no band
    staggered = [_quad(100, 300, 520, 336), _quad(540, 250, 960, 280), _quad(102, 350, 962, 386)]
    assert mrz_band(np.full((800, 1100, 3), 255, np.uint8), staggered) == []


def _up(quad: Any) -> Any:
    """Half the box's height, along its left edge, pointing down."""
    return (quad[3] - quad[0]) / 2


def _chevrons(pitch: int, count: int, lead: str = "") -> tuple[Any, int]:
    """A strip of ``count`` large ``<`` drawn every ``pitch`` px, each 30 px wide, after
    ``lead`` text; and where the text ends."""
    font = ImageFont.load_default(36)
    probe = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    text_end = 20 + round(probe.textlength(lead, font=font)) if lead else 20
    strip = Image.new("RGB", (text_end + 10 + pitch * count + 40, 60), (245, 215, 225))
    draw = ImageDraw.Draw(strip)
    if lead:
        draw.text((20, 12), lead, fill=(30, 30, 30), font=font)
    for number in range(count):
        x = text_end + 10 + number * pitch
        draw.line([(x + 30, 14), (x, 30), (x + 30, 46)], fill=(20, 20, 20), width=5)
    return np.asarray(strip)[:, :, ::-1].copy(), text_end


def test_fillers_at_a_tight_pitch_are_counted_by_their_blots() -> None:
    """Chevrons 30 px wide every 29 px: each one's arms reach over the next one's point,
    so no column between them is blank; as blots of ink they are separate and alike."""
    from vsr_extproc.runtime.ocr import _blot_glyphs, _column_glyphs, _ink, filler_run

    strip, _ = _chevrons(29, 12)
    assert len(_column_glyphs(_ink(strip))) == 1
    assert len(_blot_glyphs(_ink(strip))) == 12
    run = filler_run(strip)
    assert run is not None
    assert run[2] == 12
    apart, _ = _chevrons(40, 12)  # apart, the columns count them too
    assert len(_column_glyphs(_ink(apart))) == 12
    assert filler_run(apart) == (30, 30 + 11 * 40 + 31, 12)


def test_a_line_the_detector_cut_before_its_fillers_is_read_over_them() -> None:
    """Two lines placed like an MRZ's, each boxed up to where its fillers start, one much
    longer than the other: each is extended over its run of alike glyphs, and the pair
    is a band. On a blank page the same boxes stay as they are and are no band."""
    page = np.full((300, 1400, 3), (245, 215, 225), np.uint8)
    boxes, fillers_end = [], []
    for top, lead, count in ((40, "P<USACARRANZA", 30), (120, "5V0F153RR4USA5707049", 22)):
        strip, text_end = _chevrons(29, count, lead)
        page[top : top + 60, : strip.shape[1]] = strip
        boxes.append(_quad(18, top + 12, text_end + 2, top + 48))
        fillers_end.append(text_end + 10 + 29 * (count - 1) + 30)
    assert abs(fillers_end[0] - fillers_end[1]) < 0.12 * fillers_end[0]
    lines = mrz_band(page, boxes)
    assert [line.boxes for line in lines] == [(0,), (1,)]
    for line, end in zip(lines, fillers_end, strict=True):
        assert abs(float(line.quad[1][0]) - end) <= 3
    assert mrz_band(np.full((300, 1400, 3), 255, np.uint8), boxes) == []


def _quad(x0: float, y0: float, x1: float, y1: float) -> Any:
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=np.float32)


def test_a_gutter_is_a_column_of_narrow_boxes_most_followed_by_code() -> None:
    # twelve right-aligned numbers, 1-2 digits wide; every third line blank (no code)
    numbers = [_quad(40 if n < 10 else 30, 20 + 30 * n, 52, 40 + 30 * n) for n in range(12)]
    code = [_quad(70, 20 + 30 * n, 300 + 10 * n, 40 + 30 * n) for n in range(12) if n % 3]
    boxes = [*code, *numbers]
    column = number_column(boxes)
    assert column == list(range(len(code), len(boxes)))  # the numbers, top to bottom
    assert number_column(boxes[: len(code) + 7]) == []  # too few for a gutter
    # the same column with nothing to its right: a list of short words, not a gutter
    assert number_column(numbers) == []
    # the MRZ band's boxes are never taken for one
    assert number_column(boxes, exclude=set(range(len(code), len(boxes)))) == []


def test_a_gutters_numbers_go_from_its_own_column_and_nowhere_else() -> None:
    numbers = [_quad(300, 20 + 30 * n, 320, 40 + 30 * n) for n in range(8)]
    joined = _quad(298, 260, 700, 280)  # a number the detector joined to its code
    tree = _quad(10, 260, 200, 280)  # an IDE's file tree, left of the gutter
    boxes = [*numbers, joined, tree]
    readings = {0: ("1", 0.99), 8: ("9 total = 1", 0.95), 9: ("2024_report.py", 0.97)}
    _without_line_numbers(boxes, readings, list(range(8)))
    assert readings == {0: ("", 0.99), 8: ("total = 1", 0.95), 9: ("2024_report.py", 0.97)}


def test_cjk_look_alikes_of_ascii_symbols_are_read_back_in_latin_text() -> None:
    # the recogniser reads a faint ``#`` as 非 and ``*`` as 米 (Ruby and Python comments
    # lost their mark and read as prose)
    assert normalise("非 require 'bigdecimal'") == "# require 'bigdecimal'"
    assert normalise("/米") == "/*"
    assert normalise("[Object 丨 fun() -> x end];") == "[Object | fun() -> x end];"
    # an editor's ligature font draws ``->`` and ``>=`` as an arrow and a sign
    assert normalise("| Some x → x ≥ 0") == "| Some x -> x >= 0"
    # Chinese text keeps its characters; so does a character alone (no sign it is a symbol)
    assert normalise("中文 非 常") == "中文 非 常"
    assert normalise("中文 → 好") == "中文 → 好"
    assert normalise("米") == "米"


def _marked(ink: list[tuple[int, int]], width: int = 400, height: int = 120) -> Any:
    """A white page with dark ink in the columns ``ink`` (from, to) of rows 28-31."""
    import numpy as np

    pixels = np.full((height, width, 3), 255, dtype=np.uint8)
    for start, end in ink:
        pixels[28:32, start:end] = 30
    return pixels


def test_a_mark_the_detector_left_out_is_taken_into_its_box() -> None:
    text = _quad(100, 20, 380, 40)  # 20 px high
    code = [_quad(60, 50, 380, 70), _quad(60, 80, 380, 100)]  # lines that start further left
    # "--" a space before the box's first glyph: the box now starts at the mark
    grown, *rest = with_lost_marks(_marked([(70, 78), (80, 88)]), [text, *code])
    assert 66 <= float(grown[:, 0].min()) <= 70
    assert float(grown[:, 0].max()) == 380
    assert [box.tolist() for box in rest] == [box.tolist() for box in code]
    tilted = _quad(100, 20, 380, 40)
    tilted[1:3, 1] += 8
    # not a mark: ink too far before the box, ink too wide, ink glued to a box before it
    # (a quote after a key's colon), ink where no other line has text (a line number
    # left of all the code), and a tilted box (a photo)
    for pixels, boxes in [
        (_marked([(20, 30)]), [text, *code]),
        (_marked([(40, 96)]), [text, *code]),
        (_marked([(80, 88)]), [_quad(20, 20, 78, 40), text, *code]),
        (_marked([(70, 78), (80, 88)]), [text]),
        (_marked([(70, 78), (80, 88)]), [tilted, *code]),
    ]:
        same = with_lost_marks(pixels, boxes)
        assert [box.tolist() for box in same] == [box.tolist() for box in boxes]
    # a mark boxed on its own goes into its neighbour's box and is not read alone
    joined, *rest = with_lost_marks(_marked([]), [_quad(70, 21, 88, 39), text, *code])
    assert 66 <= float(joined[:, 0].min()) <= 70
    assert len(rest) == 2


def test_an_editors_line_numbers_are_not_taken_for_marks() -> None:
    numbers = [_quad(40, 20 + 30 * n, 60, 40 + 30 * n) for n in range(10)]
    code = [_quad(80, 20 + 30 * n, 400, 40 + 30 * n) for n in range(10)]
    # text of other lines where the numbers stand (a status bar): only the column says
    # these are line numbers
    bars = [_quad(10, 330, 400, 350), _quad(10, 360, 400, 380)]
    boxes = [*numbers, *code, *bars]
    found = with_lost_marks(_marked([], width=420, height=400), boxes)
    assert [box.tolist() for box in found] == [box.tolist() for box in boxes]


def _commented_screen() -> Image.Image:
    """Lua in a dark theme, its comments in the theme's faint comment colour."""
    font = ImageFont.truetype(str(MONO), 16) if MONO.exists() else ImageFont.load_default(16)
    lines = [
        ("-- This module wraps the functions of other modules", (117, 113, 94)),
        ("-- into one file related module for convenience.", (117, 113, 94)),
        ("local utils = require 'pl.utils'", (230, 219, 116)),
        ("--- return the contents of a file as a string.", (117, 113, 94)),
        ("-- This function is a copy of utils.readfile", (117, 113, 94)),
        ("file.read = utils.readfile", (248, 248, 242)),
    ]
    canvas = Image.new("RGB", (560, 30 + 26 * len(lines)), (39, 40, 34))
    draw = ImageDraw.Draw(canvas)
    for row, (line, colour) in enumerate(lines):
        draw.text((24, 15 + 26 * row), line, fill=colour, font=font)
    return canvas


def test_a_comments_faint_mark_is_read_with_its_words(router: Router) -> None:
    result = _engine(router).read(_commented_screen())
    comments = [line for line in result.text.splitlines() if "module" in line or "string" in line]
    assert len(comments) == 3
    assert all(line.startswith("--") for line in comments), comments


def _gutter_screen(labels: list[str], *, alike: bool = False) -> Image.Image:
    """Code beside ``labels`` (a gutter); every fourth line blank and the others of
    different lengths, or ``alike``: no line blank, all of one length."""
    font = ImageFont.truetype(str(MONO), 18) if MONO.exists() else ImageFont.load_default(18)
    canvas = Image.new("RGB", (760, 40 + 28 * len(labels)), "white")
    draw = ImageDraw.Draw(canvas)
    for row, label in enumerate(labels):
        y = 20 + 28 * row
        draw.text((60 - draw.textlength(label, font=font), y), label, fill="grey", font=font)
        if alike:
            draw.text(
                (90, y), f"total_{row:02d} = compute(values[{row:02d}])", fill="black", font=font
            )
        elif row % 4 != 3:
            code = f"total_{row} = compute(values[{row}]" + ", scale=2" * (row % 3) + ")"
            draw.text((90, y), code, fill="black", font=font)
    return canvas


def test_an_editors_line_numbers_are_known_from_a_sample_and_left_unread(router: Router) -> None:
    engine = _engine(router)
    numbered = engine.read(_gutter_screen([str(n) for n in range(1, 21)]))
    assert numbered.complete
    assert numbered.line_numbers >= 10
    assert numbered.read + numbered.line_numbers == numbered.boxes
    assert "total_18 = compute(values[18])" in numbered.text
    # no number is left on any line, read or not: a screen where only some lines carry
    # one would not read as code with a gutter
    assert not [line for line in numbered.text.splitlines() if line[:1].isdigit()]
    # a column that does not count up is read whole
    words = ["id", "qty", "sku", "tax", "net", "sum", "due", "fee", "vat", "cap", "max", "min"]
    labelled = engine.read(_gutter_screen(words))
    assert labelled.line_numbers == 0
    assert labelled.read == labelled.boxes


def test_a_gutter_beside_lines_that_pair_like_an_mrz_is_sampled_not_read(router: Router) -> None:
    # lines of one length, one under another, are looked at first as an MRZ could be;
    # the numbers in front of them are the gutter's all the same: only its sample is read
    result = _engine(router).read(_gutter_screen([str(n) for n in range(1, 21)], alike=True))
    assert result.complete
    assert result.line_numbers == 20 - 5
    assert result.read + result.line_numbers == result.boxes
    assert "total_18 = compute(values[18])" in result.text
    assert not [line for line in result.text.splitlines() if line[:1].isdigit()]


@pytest.fixture(scope="module")
def two_threads() -> Iterator[OcrEngine]:
    """An engine that recognises two lines at a time, whatever this machine's core count."""
    engine = OcrEngine(OcrSettings(threads=2))
    yield engine
    engine.close()


def _threads_recognising(engine: OcrEngine, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []
    recognise = engine._recognise

    def naming(crop: Any) -> tuple[str, float]:
        names.append(threading.current_thread().name)
        return recognise(crop)

    monkeypatch.setattr(engine, "_recognise", naming)
    return names


@pytest.mark.parametrize("image", ["code_clean.png", "passport.png", "gutter"])
def test_lines_read_side_by_side_read_as_one_at_a_time(
    two_threads: OcrEngine, monkeypatch: pytest.MonkeyPatch, image: str
) -> None:
    def picture() -> Image.Image:
        if image == "gutter":
            return _gutter_screen([str(n) for n in range(1, 21)])
        return Image.open(IMAGES / image)

    threads = _threads_recognising(two_threads, monkeypatch)
    side_by_side = two_threads.read(picture())
    assert len(set(threads)) == 2  # the lines really were shared out
    _one_line_at_a_time(two_threads, monkeypatch)
    threads.clear()
    one_at_a_time = two_threads.read(picture())
    assert len(set(threads)) == 1
    assert side_by_side.complete
    assert side_by_side.text == one_at_a_time.text
    assert side_by_side.lines == one_at_a_time.lines
    assert (side_by_side.read, side_by_side.line_numbers) == (
        one_at_a_time.read,
        one_at_a_time.line_numbers,
    )


def _stopped_after(engine: OcrEngine, monkeypatch: pytest.MonkeyPatch, calls: int) -> OcrResult:
    """``engine``'s read of code_clean.png, stopped (as a deadline would stop it: no box is
    taken after) once ``calls`` recognitions have started."""
    stop = threading.Event()
    recognise = engine._recognise
    started: list[int] = []

    def stopping(crop: Any) -> tuple[str, float]:
        started.append(1)
        if len(started) == calls:
            stop.set()
        return recognise(crop)

    monkeypatch.setattr(engine, "_recognise", stopping)
    try:
        return engine.read(Image.open(IMAGES / "code_clean.png"), stop=stop)
    finally:
        monkeypatch.setattr(engine, "_recognise", recognise)


def test_a_read_stopped_side_by_side_keeps_what_was_read_in_order(
    two_threads: OcrEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop leaves the boxes taken before it read, in the engine's order (the MRZ-shaped
    band, then top to bottom): the same as one at a time, plus at most the box the other
    thread had taken."""
    part = _stopped_after(two_threads, monkeypatch, 6)
    assert not part.complete
    assert 6 <= part.read <= 7 < part.boxes
    with monkeypatch.context() as alone:
        _one_line_at_a_time(two_threads, alone)
        six, seven = (_stopped_after(two_threads, alone, calls) for calls in (6, 7))
    assert (six.read, seven.read) == (6, 7)
    assert set(six.lines) <= set(part.lines) <= set(seven.lines)


def test_a_recogniser_failure_on_either_thread_fails_the_read_and_not_the_engine(
    two_threads: OcrEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    recognise = two_threads._recognise
    calls: list[str] = []

    def failing(crop: Any) -> tuple[str, float]:
        calls.append(threading.current_thread().name)
        if len(calls) == 5:
            raise RuntimeError("the recogniser failed")
        return recognise(crop)

    monkeypatch.setattr(two_threads, "_recognise", failing)
    with pytest.raises(RuntimeError, match="the recogniser failed"):
        two_threads.read(Image.open(IMAGES / "code_clean.png"))
    assert len(calls) <= 6  # nobody took another box once it failed
    monkeypatch.undo()
    assert "def " in two_threads.read(Image.open(IMAGES / "code_clean.png")).text


@pytest.mark.parametrize(
    ("reading", "second_look"),
    [
        ("P<D<<STEY<<WTLD<ALMT<<<<<<<<<<<<<<<<<<<<<", True),  # characters dropped
        ("<CHEVRS0×B<<9<<<<<<<<<<<<<<<\n5807190M3407013CHE<<<<<<<<<<<4", True),
        ("I < UTO D 23145 890 << < < << <<<", True),  # spaces read between glyphs
        ("std::cout << value << std::endl;", False),
        ("cat <<EOF > /etc/app.conf", False),
        ("FLAGS = 1 << 4 | 1 << 7", False),
        ("Summary << back to the list", False),
    ],
)
def test_only_a_band_read_like_an_mrz_gets_a_second_look(reading: str, second_look: bool) -> None:
    # the second look reads the band up to eight more times: code showing "<<" must not
    # spend a screenshot's budget on it
    assert _looks_like_mrz(reading) is second_look


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"detect": "mrz", "min_score": 0.7}, "min_score applies to detect: code, not mrz"),
        ({"detect": "code", "types": ["email"]}, "types applies to detect: pii, not code"),
        ({"detect": "secrets", "require_valid": True}, "require_valid applies to detect: mrz"),
        ({"detect": "faces"}, "detect"),
    ],
)
def test_options_must_fit_what_is_detected(entry: dict[str, Any], problem: str) -> None:
    config = _config()
    config["signals"] = {"image_text": [{"name": "bad", **entry}]}
    config["decisions"] = []
    with pytest.raises(ConfigError, match=problem):
        parse_config(config)


# --- the OCR runtime on what clients really send ------------------------------------------


def _jpeg(image: Image.Image, **params: Any) -> bytes:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, "JPEG", quality=90, **params)
    return buffer.getvalue()


def test_a_phone_photo_turned_by_its_exif_orientation_is_read_upright(router: Router) -> None:
    upright = Image.open(IMAGES / "code_with_key.png")
    exif = Image.Exif()
    exif[ExifTags.Base.Orientation] = 6  # stored turned left; viewers turn it right
    stored = _jpeg(upright.transpose(Image.Transpose.ROTATE_90), exif=exif)
    decision = _decide(router, stored)
    assert decision.results["image_text.secrets_in_screenshot"].matched


def test_text_on_a_transparent_canvas_is_read_on_white(router: Router) -> None:
    # black text on transparent black: dropping alpha would leave black on black
    canvas = Image.new("RGBA", (560, 60), (0, 0, 0, 0))
    font = ImageFont.truetype(str(MONO), 22) if MONO.exists() else ImageFont.load_default(22)
    ImageDraw.Draw(canvas).text((10, 16), 'key = "AKIAQ7RZ3XLM2VKP6TWD"', font=font, fill="black")
    buffer = io.BytesIO()
    canvas.save(buffer, "PNG")
    findings = _image_report(_decide(router, buffer.getvalue()), KEYS[1])["findings"]
    assert findings == {"aws_access_key": 1}


@pytest.mark.parametrize(
    ("image", "pixel"),
    [
        (Image.new("I;16", (4, 4), 1000), (0, 0, 0)),  # a flat 16-bit field: no contrast
        (Image.new("LA", (4, 4), (0, 0)), (255, 255, 255)),  # transparent: white
        (Image.new("P", (4, 4), 3), None),
        (Image.new("CMYK", (4, 4), (0, 0, 0, 0)), (255, 255, 255)),
    ],
)
def test_every_mode_becomes_upright_bgr(image: Image.Image, pixel: tuple[int, ...] | None) -> None:
    pixels, scale = prepare(image, 1, 1600)
    assert pixels.shape == (4, 4, 3)
    assert scale == 1.0
    if pixel is not None:
        assert tuple(pixels[0, 0]) == pixel


def test_large_images_are_downscaled_and_turned_by_orientation() -> None:
    pixels, scale = prepare(Image.new("RGB", (4000, 1000), "white"), 6, 1600)
    assert pixels.shape[:2] == (1600, 400)  # turned upright: tall, longer side 1600
    assert scale == 2.5


def _line(text: str, x0: float, y0: float, x1: float, y1: float) -> OcrLine:
    return OcrLine(text, (x0, y0, x1, y1), 0.9)


def test_reading_order_joins_rows_and_keeps_tilted_mrz_lines_apart() -> None:
    rows = reading_order(
        [
            _line("world", 120, 11, 200, 31),
            _line("hello", 10, 10, 100, 30),
            # the two MRZ lines of a page photographed 1.5° off: their boxes overlap
            _line("C01X00T478", 50, 640, 950, 690),
            _line("P<UTOMUSTERMANN", 48, 596, 948, 646),
        ]
    )
    assert [[line.text for line in row] for row in rows] == [
        ["hello", "world"],
        ["P<UTOMUSTERMANN"],
        ["C01X00T478"],
    ]


def test_reading_order_keeps_the_lines_of_a_page_rotated_seven_degrees_apart() -> None:
    # 900 px lines 60 px apart, tilted 7°: each axis-aligned box is 150 px tall, the
    # text in it 40 px
    first = OcrLine("I<CANLOPEZ<<JESSICA", (50, 500, 950, 650), 0.9, height=40)
    second = OcrLine("0YZ1SFH4T0CAN6712167", (50, 560, 950, 710), 0.9, height=40)
    rows = reading_order([second, first])
    assert [[line.text for line in row] for row in rows] == [[first.text], [second.text]]


def test_an_ide_file_tree_is_read_as_its_own_column() -> None:
    tree = [_line(name, 10, 100 + 30 * i, 120, 120 + 30 * i) for i, name in enumerate("abcd")]
    code = [
        _line(f"{n} x = {n}", 300, 100 + 30 * i, 600, 120 + 30 * i) for i, n in enumerate("1234")
    ]
    rows = reading_order([*code, *tree])
    assert [[line.text for line in row] for row in rows] == [
        ["a"],
        ["b"],
        ["c"],
        ["d"],
        ["1 x = 1"],
        ["2 x = 2"],
        ["3 x = 3"],
        ["4 x = 4"],
    ]
    # a label and its value, one text height apart, stay one row
    form = [_line("Name:", 10, 100 + 30 * i, 80, 120 + 30 * i) for i in range(4)]
    value = [_line("Ann", 100, 100 + 30 * i, 160, 120 + 30 * i) for i in range(4)]
    assert all(len(row) == 2 for row in reading_order([*form, *value]))


def test_recogniser_quirks_are_normalised_for_the_detectors() -> None:
    assert normalise("C01×00T47") == "C01X00T47"
    assert normalise("a×b") == "axb"
    assert normalise('"s3"，') == '"s3",'
    assert normalise("“quoted”《") == '"quoted"<<'


def test_a_band_read_with_a_quirk_verifies_without_a_second_look(
    router: Router, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recogniser reads passport.png's document number ``C01×00T47``: normalised, the
    first reading verifies, and the band is not read again (a second look costs ~1 s)."""
    engine = _engine(router)
    calls = _recorded(engine, monkeypatch)
    with Image.open(IMAGES / "passport.png") as passport:
        result = engine.read(passport)
    assert "C01X00T478UT0" in result.text
    assert len(calls) == result.boxes  # each box read once
    assert not any("×" in text for text in calls)


def test_a_passport_is_decided_once_its_mrz_verifies_and_the_rest_of_the_page_is_not_read(
    router: Router,
) -> None:
    config = {
        "models": [
            {"name": "m", "cluster": "c", "upstream_model": "up", "modalities": ["text", "image"]}
        ],
        "signals": {
            "image_text": [
                {"name": "passport_mrz", "detect": "mrz"},
                {"name": "code", "detect": "code"},
                {"name": "secrets", "detect": "secrets"},
            ]
        },
        "decisions": [
            {
                "name": "identity_document",
                "priority": 200,
                "rules": "image_text.passport_mrz",
                "action": {"type": "route", "models": ["m"]},
            },
            {
                "name": "security_review",
                "priority": 100,
                "rules": "image_text.code",
                "action": {
                    "type": "route",
                    "models": ["m"],
                    "signal_headers": [
                        {"signal": "image_text.secrets", "header": "x-leak", "value": "true"}
                    ],
                },
            },
        ],
        "default": {"action": {"type": "route", "models": ["m"]}},
    }
    settling = Router(compile_policy(parse_config(config), Resources()))
    request = settling.parse(body(_request(_fresh_png("passport.png", 21))), settling.policy)
    decision = asyncio.run(settling.decide(request, settling.policy))
    assert decision.name == "identity_document"
    (report,) = decision.results["image_text.passport_mrz"].value["images"]
    assert report["read"].startswith("the MRZ band first")
    assert report["mrz"] == [{"format": "td3", "valid": True}]
    for key in ("image_text.code", "image_text.secrets"):
        assert decision.results[key].skipped, key  # the decision could no longer change


def test_an_ocr_failure_ends_the_wait_for_the_mrz_band_at_once(
    router: Router, monkeypatch: pytest.MonkeyPatch
) -> None:
    signal = router.policy.signals[KEYS[0]]
    assert isinstance(signal, ImageTextSignal)

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the OCR worker died")

    monkeypatch.setattr(signal.reader, "_compute", broken)
    decision = _decide(router, _fresh_png("passport.png", 33))
    mrz = decision.results["image_text.passport_mrz"]
    assert mrz.error is not None
    assert "timed out" not in mrz.error  # it failed with the read, not at its timeout
