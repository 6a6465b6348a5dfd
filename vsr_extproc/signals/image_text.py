"""``image_text``: what the text *in* the request's images says, read by OCR.

    signals:
      image_text:
        - name: passport_mrz
          detect: mrz
          require_valid: true          # every ICAO check digit passes after OCR repair
        - name: secrets_in_screenshot
          detect: secrets
        - name: code_screenshot
          detect: code
          min_score: 0.5               # code_score threshold
        - name: personal_data_in_image
          detect: pii
          types: [email, phone, card, iban, ssn, date_of_birth]
        - name: document_photo
          detect: document              # a personal document without an MRZ

Each inspected image (the first ``images.max_images``) is decoded and OCR'd at most once
per request, whichever signals ask, and only when a referenced ``image_text`` signal
runs: nothing else in the router calls OCR. OCR runs on its own worker thread (never on
the event loop or the short-job ``run_cpu`` thread), each image within ``ocr.timeout_ms``
of its OCR starting. Results are also kept by image content for later requests (a chat
resends its images on every turn), in a small in-memory LRU that is never logged.

The signal matches when any image yields a finding. Its value lists, per image, its
index, what was found (counts by type or kind, MRZ format and validity, code score and
language), ``ocr_ms``, the number of ``lines`` and, when OCR was cut short, how many of
the text boxes it found were read — never the text, a value or a secret.

``detect: document`` finds personal documents without a machine-readable zone (driving
licences, ID card fronts, bank statements, medical forms): the text must hold an
identifying value (a date of birth, an ID or passport number, an IBAN, a card number, an
SSN, an MRZ) and read as a form — mostly short lines, not prose and not code.
An image that fails to decode or to OCR is reported with its reason while the others are
evaluated; when every image fails, the signal fails with those reasons and the rule's
``on_error`` applies. OCR cut short by its budget still counts what it read: a finding
made stands. So does one made before the signal's ``timeout_ms``: at 95% of it the signal
answers with the images read by then, and an image still waiting for OCR (behind a slow
one) is reported ``not read within`` its timeout. Finding nothing in part of an image
fails that image, except for ``mrz`` once every text box shaped like a machine-readable
zone was read (OCR reads those first), so a slow page of prose or a spreadsheet is not
mistaken for a passport by ``on_error``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, model_validator

from vsr_extproc.core.signals import AsyncSignal, Evaluation, Outcome
from vsr_extproc.detectors import (
    FindingType,
    code_score,
    find_mrz,
    find_pii,
    find_secrets_in_read_text,
)
from vsr_extproc.errors import ImageError, SignalError
from vsr_extproc.runtime.cache import LruCache
from vsr_extproc.signals.base import AsyncSignalEntry, Resources, SignalFamily, run_cpu
from vsr_extproc.signals.images import decode, image_limits, inspected

if TYPE_CHECKING:
    from vsr_extproc.core.request import ImagePart
    from vsr_extproc.runtime.images import ImageLimits
    from vsr_extproc.runtime.ocr import OcrEngine, OcrResult

Detect = Literal["mrz", "pii", "secrets", "code", "document"]

# which options belong to which kind of detection
_OPTIONS: dict[str, tuple[str, ...]] = {
    "types": ("pii",),
    "min_confidence": ("pii", "secrets", "document"),
    "min_score": ("code",),
    "require_valid": ("mrz",),
}


class ImageTextEntry(AsyncSignalEntry):
    detect: Detect = Field(
        description="what to look for in the OCR text: mrz, pii, secrets, code, document"
    )
    types: tuple[FindingType, ...] = Field(
        default=(), description="pii: finding types that count; empty = every type"
    )
    min_confidence: float = Field(
        default=0.5, ge=0, le=1, description="pii, secrets: weaker findings are ignored"
    )
    min_score: float = Field(
        default=0.5, ge=0, le=1, description="code: the code_score that makes it match"
    )
    require_valid: bool = Field(
        default=False,
        description="mrz: only an MRZ whose check digits all pass (after OCR repair) counts",
    )
    timeout_ms: int = Field(
        default=4000,
        gt=0,
        le=120_000,
        description="the signal's budget for all its images (each image's OCR also has "
        "ocr.timeout_ms); keep it under envoy.message_timeout_ms",
    )

    @model_validator(mode="after")
    def _options_fit(self) -> ImageTextEntry:
        for option in sorted(self.model_fields_set & _OPTIONS.keys()):
            if self.detect not in _OPTIONS[option]:
                kinds = " or ".join(_OPTIONS[option])
                raise ValueError(f"{option} applies to detect: {kinds}, not {self.detect}")
        return self


# --- OCR, once per image ----------------------------------------------------------------------


@dataclass(frozen=True)
class ImageText:
    """One image's OCR, as the detectors need it. ``text`` never leaves this module (and
    stays out of the repr, so a stray log line cannot carry it)."""

    text: str = field(repr=False)
    lines: int
    ocr_ms: float
    complete: bool
    cached: bool = False
    boxes: int = 0  # text boxes found
    read: int = 0  # of them recognised (all of them when complete)
    mrz_read: bool = True  # every box that could hold an MRZ was recognised
    line_numbers: int = 0  # boxes of an editor's line numbers, known from a sample, unread


class ImageReader:
    """The OCR engine, with a content-keyed LRU of complete results."""

    def __init__(self, engine: OcrEngine, cache_size: int = 64) -> None:
        self.engine = engine
        self._cache: LruCache[str, ImageText] = LruCache(cache_size)

    async def read(
        self, evaluation: Evaluation, image: ImagePart, limits: ImageLimits, budget_s: float
    ) -> ImageText | ImageError:
        """The text of ``image``: once per request, and from the cache when seen before."""
        band = self._band(evaluation, image)

        def band_read(result: OcrResult) -> None:
            if not band.done():
                band.set_result(_image_text(result))

        async def compute() -> ImageText | ImageError:
            try:
                text = await self._compute(evaluation, image, limits, budget_s, band_read)
            except BaseException:
                if not band.done():
                    band.cancel()  # whoever waits for the band stops waiting too
                raise
            if not band.done():
                band.set_result(text)
            return text

        return await evaluation.once(("ocr", image.index), compute)

    async def read_band(
        self, evaluation: Evaluation, image: ImagePart, limits: ImageLimits, budget_s: float
    ) -> ImageText | ImageError:
        """What OCR read of the boxes of ``image`` shaped like an MRZ, as soon as they are
        read and before the rest of the image (the whole text when that came first: from
        the cache, or an image without such boxes). ``read`` goes on for the rest."""
        reading = asyncio.ensure_future(self.read(evaluation, image, limits, budget_s))
        try:
            return await asyncio.shield(self._band(evaluation, image))
        finally:
            reading.cancel()  # only this wait: the read itself is shared (``once``)

    @staticmethod
    def _band(evaluation: Evaluation, image: ImagePart) -> asyncio.Future[ImageText | ImageError]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ImageText | ImageError] = evaluation.memo(
            ("ocr-band", image.index), loop.create_future
        )
        return future

    async def _compute(
        self,
        evaluation: Evaluation,
        image: ImagePart,
        limits: ImageLimits,
        budget_s: float,
        on_band: Callable[[OcrResult], None],
    ) -> ImageText | ImageError:
        decoded = await decode(evaluation, image, limits)
        if isinstance(decoded, ImageError):
            return decoded
        key = await run_cpu(image.digest, owner=evaluation)
        cached = self._cache.get(key)
        if cached is not None:
            return dataclasses.replace(cached, cached=True)
        try:
            result = await self.engine.read_async(
                decoded.image,
                orientation=decoded.exif_orientation,
                budget_s=budget_s,
                owner=evaluation,
                on_band=on_band,
            )
        except Exception as exc:  # onnxruntime and OpenCV raise their own types
            return ImageError(f"OCR failed: {type(exc).__name__}: {exc}")
        text = _image_text(result)
        if text.complete:
            self._cache.put(key, text)
        return text

    def close(self) -> None:
        self._cache.clear()
        self.engine.close()


def _image_text(result: OcrResult) -> ImageText:
    return ImageText(
        result.text,
        len(result.lines),
        round(result.seconds * 1000, 1),
        result.complete,
        boxes=result.boxes,
        read=result.read,
        mrz_read=result.mrz_read,
        line_numbers=result.line_numbers,
    )


def verified_mrz(text: str) -> bool:
    """Whether ``text`` holds an MRZ whose check digits all pass: the OCR engine's test
    for reading an MRZ band a second time."""
    return any(match.valid for match in find_mrz(text))


def load_reader(resources: Resources) -> ImageReader:
    """The shared OCR reader for the configured ``ocr`` settings (loaded once)."""
    max_side: int = resources.config.ocr.max_side

    def make() -> ImageReader:
        from vsr_extproc.runtime.ocr import OcrEngine, OcrSettings

        return ImageReader(OcrEngine(OcrSettings(max_side=max_side), mrz_check=verified_mrz))

    reader: ImageReader = resources.get(("ocr", max_side), make, runtime=("ocr", "pp-ocrv4"))
    return reader


# --- detection ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Detected:
    """What one image's text yielded: a match, its confidence, and a text-free summary."""

    matched: bool
    confidence: float
    summary: dict[str, Any]


class TextDetector:
    """One entry's detection over OCR text (pure CPU work, run on ``run_cpu``)."""

    def __init__(self, entry: ImageTextEntry) -> None:
        self.detect: Detect = entry.detect
        self.types = frozenset(entry.types) or None
        self.min_confidence = entry.min_confidence
        self.min_score = entry.min_score
        self.require_valid = entry.require_valid

    def __call__(self, text: str) -> Detected:
        if self.detect == "mrz":
            return self._mrz(text)
        if self.detect == "code":
            return self._code(text)
        if self.detect == "document":
            return self._document(text)
        return self._findings(text)

    def _document(self, text: str) -> Detected:
        found = [
            finding
            for finding in find_pii(text, _IDENTIFYING, read=True)
            if finding.confidence >= self.min_confidence
        ]
        form = _reads_as_form(text)
        kinds = sorted({finding.type.value for finding in found})
        matched = bool(found) and form
        confidence = max((finding.confidence for finding in found), default=0.0) if form else 0.0
        return Detected(matched, confidence, {"document": {"identifying": kinds, "form": form}})

    def _mrz(self, text: str) -> Detected:
        zones = [
            match
            for match in find_mrz(text)
            if match.confidence > 0 and (match.valid or not self.require_valid)
        ]
        summary = {"mrz": [{"format": zone.format, "valid": zone.valid} for zone in zones]}
        confidence = max((zone.confidence for zone in zones), default=0.0)
        return Detected(bool(zones), confidence, summary)

    def _code(self, text: str) -> Detected:
        score = code_score(text)
        matched = score.score >= self.min_score
        summary = {"code": {"score": score.score, "language": score.language}}
        return Detected(matched, score.score, summary)

    def _findings(self, text: str) -> Detected:
        if self.detect == "pii":
            found = find_pii(text, self.types, read=True)
            kinds = [finding.type.value for finding in found]
        else:
            # every secret is of type "secret"; its kind (aws_access_key, password) says more;
            # OCR's misreadings of keys and tokens are undone first
            found = find_secrets_in_read_text(text)
            kinds = [finding.detail or finding.type.value for finding in found]
        kept = [
            (kind, finding.confidence)
            for kind, finding in zip(kinds, found, strict=True)
            if finding.confidence >= self.min_confidence
        ]
        counts = Counter(kind for kind, _ in kept)
        confidence = max((score for _, score in kept), default=0.0)
        return Detected(bool(kept), confidence, {"findings": dict(sorted(counts.items()))})


_IDENTIFYING = frozenset(
    {
        FindingType.DATE_OF_BIRTH,
        FindingType.PASSPORT,
        FindingType.SSN,
        FindingType.NATIONAL_ID,
        FindingType.IBAN,
        FindingType.CARD,
        FindingType.MRZ,
    }
)
_FORM_LINE_WORDS = 6


def _reads_as_form(text: str) -> bool:
    """Mostly short lines (labels and values), and not source code: a card, a form, a
    statement. Prose runs in long lines; code has its own score."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 3:
        return False
    short = sum(len(line.split()) <= _FORM_LINE_WORDS for line in lines)
    return short >= 0.6 * len(lines) and code_score(text).score < 0.5


# --- the signal -----------------------------------------------------------------------------


# the share of its timeout after which the signal answers with the images read by then
_ANSWER_AT = 0.95


class ImageTextSignal(AsyncSignal):
    family: ClassVar[str] = "image_text"

    def __init__(
        self,
        entry: ImageTextEntry,
        reader: ImageReader,
        limits: ImageLimits,
        max_images: int,
        ocr_budget_s: float,
    ) -> None:
        self.name = entry.name
        self.timeout_s = entry.timeout_ms / 1000
        self.detector = TextDetector(entry)
        self.reader = reader
        self.limits = limits
        self.max_images = max_images
        self.ocr_budget_s = ocr_budget_s

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        images = inspected(evaluation, self.max_images)
        if not images:
            return Outcome(False, 0.0, {"images": []})
        tasks = [asyncio.ensure_future(self._inspect(evaluation, image)) for image in images]
        # answer with what is read just before the signal's own timeout, which would lose
        # every image's findings to the slowest one's
        try:
            await asyncio.wait(tasks, timeout=self.timeout_s * _ANSWER_AT)
        finally:
            for task in tasks:
                task.cancel()  # only the waits: the reads are shared and end with the request
        timeout_ms = round(self.timeout_s * 1000)
        inspections = [
            task.result()
            if task.done() and not task.cancelled()
            else ({"image": image.index, "error": f"not read within {timeout_ms} ms"}, None)
            for task, image in zip(tasks, images, strict=True)
        ]
        errors = [_reason(report) for report, _ in inspections if "error" in report]
        if len(errors) == len(inspections):
            raise SignalError("; ".join(errors))
        found = [detected for _, detected in inspections if detected and detected.matched]
        confidence = max((detected.confidence for detected in found), default=0.0)
        return Outcome(bool(found), confidence, {"images": [report for report, _ in inspections]})

    async def _inspect(
        self, evaluation: Evaluation, image: ImagePart
    ) -> tuple[dict[str, Any], Detected | None]:
        """One image's text-free report, and what its text yielded (None on error). An
        MRZ is looked for in the boxes shaped like one as soon as they are read: one that
        verifies is the answer, without waiting for the rest of the page."""
        if self.detector.detect == "mrz":
            band = await self.reader.read_band(evaluation, image, self.limits, self.ocr_budget_s)
            if isinstance(band, ImageText) and not band.complete:
                detected = await run_cpu(self.detector, band.text, owner=evaluation)
                if detected.matched:
                    return {
                        "image": image.index,
                        "matched": True,
                        **detected.summary,
                        "ocr_ms": band.ocr_ms,
                        "lines": band.lines,
                        "complete": False,
                        "read": f"the MRZ band first: {band.read}/{band.boxes} text boxes",
                    }, detected
        read = await self.reader.read(evaluation, image, self.limits, self.ocr_budget_s)
        if isinstance(read, ImageError):
            return {"image": image.index, "error": str(read)}, None
        detected = await run_cpu(self.detector, read.text, owner=evaluation)
        report: dict[str, Any] = {
            "image": image.index,
            "matched": detected.matched,
            **detected.summary,
            "ocr_ms": read.ocr_ms,
            "lines": read.lines,
        }
        if read.cached:
            report["cached"] = True
        if read.line_numbers:
            report["line_numbers_unread"] = read.line_numbers
        if not read.complete:
            report["complete"] = False
            report["read"] = f"{read.read}/{read.boxes} text boxes"
            # what was found counts; finding nothing in part of the text says nothing
            # about the rest, unless the rest cannot hold it (the boxes shaped like an
            # MRZ are read first)
            evidence_complete = self.detector.detect == "mrz" and read.mrz_read
            if not detected.matched and not evidence_complete:
                budget_ms = round(self.ocr_budget_s * 1000)
                report["error"] = f"OCR stopped at its {budget_ms} ms budget"
        return report, detected


def _reason(report: dict[str, Any]) -> str:
    reason = str(report["error"])
    prefix = f"image {report['image']}"
    return reason if reason.startswith(prefix) else f"{prefix}: {reason}"


def build(entry: ImageTextEntry, resources: Resources) -> ImageTextSignal:
    return ImageTextSignal(
        entry,
        load_reader(resources),
        image_limits(resources),
        resources.config.images.max_images,
        resources.config.ocr.timeout_ms / 1000,
    )


FAMILY = SignalFamily(
    "image_text",
    ImageTextEntry,
    build,
    "text in images, read by OCR: MRZs, personal data, secrets, source code",
    reads_images=True,
)
