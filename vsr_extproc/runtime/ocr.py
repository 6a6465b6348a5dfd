"""OCR of request images with the PP-OCRv4 models shipped in ``rapidocr-onnxruntime``.

``OcrEngine.read`` takes a decoded PIL image and returns its text lines (text, box,
confidence) and the whole text in reading order. ``OcrEngine.read_async`` runs it on the
engine's own single worker thread under a deadline: OCR takes hundreds of milliseconds to
seconds, so it must neither block the event loop nor queue behind (and hold up) the short
jobs on the signals' shared ``run_cpu`` thread. onnxruntime runs its own intra-op threads
inside that worker.

The pipeline is rapidocr's detector and recogniser, driven here rather than through
``RapidOCR.__call__``, for reasons found by measurement (below):

* no angle classifier. On a rendered config file it judged two of twelve lines upside
  down and turned them to ``""`` and ``"C"`` — one of them held the AWS key. Chat images
  are upright (or carry an EXIF orientation, which is applied first);
* recognition one text line per call. rapidocr pads every batch of six crops to the
  widest one; one call per crop read the same 32 lines in two thirds of the CPU time
  (676 vs 1030 ms on one thread);
* detection at the image's own size, capped at ``det_limit_side`` on the longer side,
  instead of stretching the *shorter* side to 736 px (rapidocr's default): a 736×530
  screenshot was detected at 1022×736, and a 640×420 photo at 1121×736. rapidocr's
  "max" mode picks its own cap by the image's size (960, 1,500 or 2,000 px) and ignores
  the one it is given, so until 2026-12-05 every image was detected whole (up to
  ``max_side``); the cap is now the engine's. 1,280 px was chosen on the image corpus's
  ``dev`` split, whose counts it keeps in every row (960 lost a bank statement
  photographed small inside a larger photo); it detects the benchmark's 967×1591
  screenshot at 0.8 of its size;
* a deadline checked between detection and each recognised line, so a request's budget
  really bounds the thread's work; a cancelled request stops it too;
* the boxes shaped like a machine-readable zone read first (``mrz_band``): a passport's
  MRZ is read in the first few hundred milliseconds even on a page whose other text
  outlasts the budget, and a slow screenshot without one is known not to hide one; a band
  that does not verify gets a second look (``OcrEngine._second_look``), and so, once the
  whole page is read, do lines placed and read like an MRZ's that the band's geometry
  missed (``mrz_like_lines``);
* an editor's line numbers read from a sample: a column of narrow boxes beside code, five
  of which, spread down it, read as numbers counting down the page, is known to be a
  gutter, and its other boxes are left unread (``number_column``). The sample is read
  before the boxes shaped like an MRZ, and a gutter's boxes are none of those: code lines
  of like length under each other pair like an MRZ's, numbers and all. On the benchmark's
  65-line screenshot (128 text boxes) 60 numbers are left unread and 68 boxes read.

Both models are loaded through ``runtime.onnxgraph.fold`` first: the exported graphs spell
every activation out in elementwise nodes (a scalar affine, a four-node hard-swish, another
scalar affine between each two convolutions), which the rewrite folds into the
convolutions' weights or fuses, with the same outputs up to float rounding. Measured on the
benchmark's screenshot and passport page, eight of each read in one process by an engine
with and one without it, taking turns (a 2-core AMD EPYC with AVX-512): the same text on
all 16, the whole OCR 1,390 → 1,097 ms p50 on the screenshot and 476 → 374 ms on the page.

The onnxruntime sessions are rebuilt with onnxruntime's memory arena (rapidocr turns it
off; it measured no worse) and without spin-waiting: spinning bought ~9% OCR latency for
~25% more CPU burnt and ~20% less throughput for a Python thread running beside it — on two
cores, that thread is every other signal. The detector, one large image, runs two intra-op
threads (the machines have two cores; one thread cost ~25% more latency for ~20% less CPU).
The recogniser runs one: text lines are read side by side instead, two at a time, each on
its own thread (``OcrEngine._each``). A line is too small a job for two intra-op threads to
share well: recognising the 62 boxes of the benchmark's 65-line screenshot took 1,413 ms
p50 one at a time on two intra-op threads and 897 ms two at a time, with the same text.

Measured, before lines were read side by side, on the committed test images
(tests/data/images) plus a 70-line screenshot of the same code (and that screenshot at 2×
"retina" scale), 2 cores, each image read 5 times in its own process, best run; wall / CPU
milliseconds:

    image                            rapidocr defaults      this engine
    passport.png (1000×700)             548 / 1075           463 / 767
    passport_photo.jpg (1080×780)       482 /  964           452 / 752
    code_clean.png (40 lines)           757 / 1504           591 / 990
    code_with_key.png (21 lines)        616 / 1210           336 / 572   (defaults lose the key)
    photo_car.jpg (no text)             143 /  285            36 /  59
    70-line code screenshot            1181 / 2328          1008 / 1699
    the same at 2× (1274×3078)         1303 / 2583          1043 / 1739

Recognition is most of what is left; its cost grows with the box's width at height 48
(measured on one 2-core machine: 9 ms at 64 px, 17 ms at 160, 30 ms at 320, 56 ms at 640),
so a box narrower than rapidocr's 320 px is padded only to the next multiple of 32 px: the
line numbers of an editor's gutter, each its own box, cost a third of what they did.

OCR output is normalised for the detectors that read it: NFKC (the Chinese-trained
recogniser emits full-width ``，`` and ``：``), typographic quotes and CJK brackets to ASCII,
and ``×`` to ``X``/``x`` (it reads a monospace X as the multiplication sign, which broke
the MRZ's document number). In a reading that is otherwise ASCII, the CJK characters it
takes ASCII symbols for are read back as those symbols (``非`` and ``排`` as ``#``, ``米``
as ``*``, ``丨`` as ``|``, ``了`` as ``}``), and so are the arrows and signs an editor's
ligature font draws for ``->``, ``<-``, ``=>``, ``>=``, ``<=`` and ``!=``
(``_LOOKALIKES``); a reading with any other CJK character is Chinese text and keeps its
characters. On 176 screenshots of source files none of the checks were written from
(windows as ``python -m vsr_extproc.eval.codewindows --ocr`` cuts them, seeds 31 and 32,
each drawn in a ``dev`` style of its own), 122 of 4,179 lines
held such a CJK character (``非`` 95 times, ``米`` 24), and 92 arrows were read: Ruby's and
Python's comments lost their ``#`` and read as prose.

A mark the detector leaves out of a line's box is taken back into it before the line is
read (``with_lost_marks``): a comment's ``--``, ``//`` or ``#`` in an editor's faint
comment colour, a space before the comment's words, was outside the box or boxed apart,
and the comment read as prose.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import math
import os
import re
import threading
import unicodedata
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from time import perf_counter
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from PIL import Image

from vsr_extproc.errors import ModelUnavailable
from vsr_extproc.runtime.batcher import FairWorker

UInt8Array = npt.NDArray[np.uint8]
# the recogniser's input: height 48, rapidocr's default padded width 320
_REC_HEIGHT, _REC_WIDTH, _REC_MIN_WIDTH = 48, 320, 64
_SMALL_CROP = _REC_HEIGHT // 2  # the MRZ's second look enlarges a crop under it (``_enlarged``)
FloatArray = npt.NDArray[np.float32]
_T = TypeVar("_T")
_DONE = object()  # the end of ``_each``'s queue

# EXIF orientation → the transposition that makes the image upright
_UPRIGHT: dict[int, Image.Transpose] = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}

_PUNCTUATION = str.maketrans(
    {
        "“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "《": "<<", "》": ">>",
        "〈": "<", "〉": ">", "「": '"', "」": '"', "、": ",", "。": ".", "—": "-", "–": "-",
    }
)  # fmt: skip
# ASCII symbols the Chinese-trained recogniser reads as CJK characters of the same shape,
# and the arrows and signs an editor's ligature font draws for ASCII operators
_CJK_LOOKALIKES = {"非": "#", "排": "#", "米": "*", "丨": "|", "了": "}"}
_LIGATURES = {"→": "->", "←": "<-", "⇒": "=>", "≥": ">=", "≤": "<=", "≠": "!="}
_LOOKALIKES = _CJK_LOOKALIKES | _LIGATURES
_LOOKALIKE_TABLE = str.maketrans(_LOOKALIKES)


@dataclass(frozen=True, slots=True)
class OcrSettings:
    """How the engine reads; the defaults are the measured choices in the module docstring."""

    max_side: int = 1600  # longer side of the image OCR sees (downscaled, never upscaled)
    det_limit_side: int = 1280  # longer side the detector sees (downscaled, never upscaled)
    min_confidence: float = 0.5  # lines the recogniser is less sure of are dropped
    # the detector's intra-op threads, and the text lines recognised at once
    threads: int = field(default_factory=lambda: min(2, len(os.sched_getaffinity(0))))


@dataclass(frozen=True, slots=True)
class OcrLine:
    """One recognised text box: its text, its axis-aligned box (x0, y0, x1, y1) in the
    pixels of the input image (turned upright by its EXIF orientation), and the
    recogniser's confidence. The text stays out of the repr: it may be personal data."""

    text: str = field(repr=False)
    box: tuple[float, float, float, float]
    confidence: float
    height: float = 0.0  # the text's own height (of its tilted box); 0: the box's height


@dataclass(frozen=True, slots=True)
class OcrResult:
    """What OCR read from one image.

    ``text`` joins the lines in reading order: rows top to bottom, boxes on one row left
    to right and joined by a space. ``complete`` is False when the deadline or a
    cancellation stopped recognition: ``boxes`` text boxes were found, ``read`` of them
    were recognised (``lines`` holds those with text). The boxes shaped like a
    machine-readable zone (``mrz_boxes``, see ``mrz_band``) are read first, so
    ``mrz_read`` says whether the result can still be missing an MRZ.
    """

    lines: list[OcrLine]
    text: str = field(repr=False)
    seconds: float
    boxes: int = 0
    complete: bool = True
    read: int = 0
    mrz_boxes: int = 0
    #: boxes of an editor's line-number gutter left unread (``OcrEngine._line_numbers``)
    line_numbers: int = 0

    @property
    def mrz_read(self) -> bool:
        return self.complete or self.read >= self.mrz_boxes


class OcrStopped(Exception):
    """Raised inside the pipeline when its deadline passed or its caller went away."""


class OcrEngine:
    """PP-OCRv4 text detection and recognition on onnxruntime, loaded once.

    ``read`` is synchronous and not thread-safe (one pipeline, one set of sessions);
    ``read_async`` serialises calls on the engine's own worker thread.
    """

    def __init__(
        self,
        settings: OcrSettings | None = None,
        mrz_check: Callable[[str], bool] | None = None,
    ) -> None:
        """``mrz_check`` says whether text holds a verified MRZ; given one, an MRZ band
        that does not verify gets a second look (``_second_look``)."""
        self.settings = settings or OcrSettings()
        self.mrz_check = mrz_check
        self._detector, self._recogniser = _load_models(self.settings)
        # recognition runs on the calling thread and these: one line per thread
        self._helpers = (
            concurrent.futures.ThreadPoolExecutor(
                self.settings.threads - 1, thread_name_prefix="ocr-rec"
            )
            if self.settings.threads > 1
            else None
        )
        # one image at a time, the request served least first: a request with many
        # images cannot hold up another request's one
        self._worker = FairWorker("ocr")
        self._warm_up()

    def read(
        self,
        image: Image.Image,
        *,
        orientation: int = 1,
        deadline: float | None = None,
        stop: threading.Event | None = None,
        on_band: Callable[[OcrResult], None] | None = None,
    ) -> OcrResult:
        """OCR ``image`` (any PIL mode; EXIF ``orientation`` applied first).

        ``deadline`` is a ``time.perf_counter()`` value: past it, reading stops and the
        result is marked incomplete. Setting ``stop`` does the same. ``on_band`` is called
        with what was read once the boxes shaped like an MRZ are (an incomplete result;
        no text when there are none), before the rest of the image is read.
        """
        started = perf_counter()

        def check() -> None:
            if (deadline is not None and perf_counter() > deadline) or (
                stop is not None and stop.is_set()
            ):
                raise OcrStopped

        pixels, scale = prepare(image, orientation, self.settings.max_side)
        boxes: list[FloatArray] = []
        band: list[int] = []
        gutter: set[int] = set()
        column: list[int] = []
        readings: dict[int, tuple[str, float]] = {}
        sampled: dict[int, tuple[str, float]] = {}  # the gutter's sample, read first
        proven: set[int] = set()  # the boxes of an MRZ whose check digits pass
        try:
            check()
            boxes = self._detect(pixels)
            boxes = with_lost_marks(pixels, boxes)
            # an editor's gutter first: its numbers start rows that pair like an MRZ's
            # lines (in line, of like lengths), and would be read as the band's
            column = self._line_numbers(pixels, boxes, sampled, check)
            lines = mrz_band(pixels, boxes, exclude=column)
            band = [index for line in lines for index in line.boxes]
            self._read_boxes(pixels, boxes, band, readings, check, known=sampled)
            verified, whole = self._second_look(pixels, lines, readings, check)
            readings |= verified
            proven = {index for index, (text, _) in verified.items() if text}
            for line in lines if whole else []:
                boxes[line.boxes[0]] = line.quad  # where the line's reading was read
            if on_band is not None:
                on_band(
                    _result(
                        boxes, readings, len(band), scale, started, self.settings, False, proven
                    )
                )
            gutter = set(column) - sampled.keys()
            rest = sorted(set(range(len(boxes))) - set(band) - set(column) - sampled.keys())
            self._read_boxes(pixels, boxes, rest, readings, check)
        except OcrStopped:
            complete = False
        else:
            complete = True
            if not proven:
                proven = self._late_look(pixels, boxes, readings, band, column, check)
        readings.update((index, read) for index, read in sampled.items() if index not in readings)
        if gutter:
            _without_line_numbers(boxes, readings, column)
        result = _result(
            boxes, readings, len(band), scale, started, self.settings, complete, proven
        )
        return replace(result, line_numbers=len(gutter))

    async def read_async(
        self,
        image: Image.Image,
        *,
        orientation: int = 1,
        budget_s: float | None = None,
        owner: Hashable | None = None,
        on_band: Callable[[OcrResult], None] | None = None,
    ) -> OcrResult:
        """``read`` on the engine's worker thread, stopping ``budget_s`` after it starts.

        The budget starts when this image's OCR starts, not while it waits behind other
        images: a request's several images each get the whole budget, and the signal's
        own timeout bounds the wait. Images wait in a queue where the ``owner`` (request)
        served least goes first. A caller that is cancelled (its request timed out or finished)
        stops the thread at the next line, or removes the job from the queue at once.
        """
        stop = threading.Event()
        loop = asyncio.get_running_loop()

        def band_read(result: OcrResult) -> None:  # on the worker thread
            if on_band is not None and not loop.is_closed():
                loop.call_soon_threadsafe(on_band, result)

        def work() -> OcrResult:
            deadline = None if budget_s is None else perf_counter() + budget_s
            return self.read(
                image, orientation=orientation, deadline=deadline, stop=stop, on_band=band_read
            )

        try:
            return await self._worker.run(work, owner=owner)
        finally:
            stop.set()

    def close(self) -> None:
        """Stop the worker thread once its current image is done (reading stops early)."""
        self._worker.shutdown()
        if self._helpers is not None:
            self._helpers.shutdown(wait=False)

    def _read_boxes(
        self,
        pixels: UInt8Array,
        boxes: list[FloatArray],
        indices: Sequence[int],
        readings: dict[int, tuple[str, float]],
        check: Callable[[], None],
        known: Mapping[int, tuple[str, float]] | None = None,
    ) -> None:
        """Recognise ``boxes[i]`` for each ``i`` of ``indices`` into ``readings``, several at
        once (``_each``); on ``OcrStopped`` the boxes read so far stay. They enter
        ``readings`` in the order of ``indices`` whichever finished first: the MRZ band's
        lines are joined, and looked at again, in that order. A box ``known`` already is
        taken from there, not read again."""
        known = known or {}
        read: dict[int, tuple[str, float]] = {i: known[i] for i in indices if i in known}

        def recognise(index: int) -> None:
            read[index] = self._recognise(_crop(pixels, boxes[index]))

        try:
            self._each([i for i in indices if i not in read], recognise, check)
        finally:
            readings.update((index, read[index]) for index in indices if index in read)

    def _each(
        self, items: Sequence[_T], work: Callable[[_T], None], check: Callable[[], None]
    ) -> None:
        """``work(item)`` for every item, taken in order by ``settings.threads`` threads
        (the caller's and the engine's helpers), ``check()`` before each is taken. The first
        exception stops every thread before it takes another item, and is raised once all
        have stopped, so no thread still works for a read that ended; a deadline leaves the
        items taken before it done, and none after.

        The recogniser's session runs one thread a call, and lines are read side by side
        instead: a text line is too small a job for two intra-op threads to share well."""
        if self._helpers is None or self.settings.threads < 2 or len(items) < 2:
            for item in items:
                check()
                work(item)
            return
        queue = iter(items)
        taking = threading.Lock()
        failed = threading.Event()

        def run() -> None:
            while True:
                try:
                    with taking:
                        item = _DONE if failed.is_set() else next(queue, _DONE)
                        if item is _DONE:
                            return
                        check()
                    work(item)  # type: ignore[arg-type]
                except BaseException:
                    failed.set()
                    raise

        helpers = [
            self._helpers.submit(run) for _ in range(min(self.settings.threads, len(items)) - 1)
        ]
        try:
            run()
        finally:
            concurrent.futures.wait(helpers)
        for helper in helpers:
            error = helper.exception()
            if error is not None:
                raise error

    # --- the pipeline -------------------------------------------------------------------

    def _detect(self, pixels: UInt8Array) -> list[FloatArray]:
        """Text box quadrilaterals (4×2, clockwise from top-left) in ``pixels``' frame."""
        padded, (top, left) = _pad_for_detection(pixels)
        quads, _ = self._detector(padded)
        if quads is None or len(quads) == 0:
            return []
        height, width = pixels.shape[:2]
        shifted = [np.asarray(quad, dtype=np.float32) - (left, top) for quad in quads]
        clipped = [np.clip(quad, 0, (width - 1, height - 1)).astype(np.float32) for quad in shifted]
        # top to bottom, so that a deadline leaves the top of the image read
        return sorted(clipped, key=lambda quad: (float(quad[0][1]), float(quad[0][0])))

    def _line_numbers(
        self,
        pixels: UInt8Array,
        boxes: list[FloatArray],
        readings: dict[int, tuple[str, float]],
        check: Callable[[], None],
    ) -> list[int]:
        """The boxes of an editor's line-number gutter, known from a sample: a column of
        narrow boxes (``number_column``) of which five, spread from its first to its last,
        read as numbers that grow down the page. Those five are read (into ``readings``);
        the others need not be. An editor shows a number on every line, so this takes a
        third or more of the boxes of a code screenshot off the recogniser."""
        column = number_column(boxes)
        if not column:
            return []
        last = len(column) - 1
        samples = sorted({column[round(last * part / 4)] for part in range(5)})
        self._read_boxes(pixels, boxes, samples, readings, check)
        # the recogniser misreads a digit now and then (``20`` as ``2θ``): four of the
        # five must read as numbers, and those must count up
        values = [
            int(text) for text, _ in (readings[i] for i in samples) if _LINE_NUMBER.fullmatch(text)
        ]
        counting = all(earlier < later for earlier, later in itertools.pairwise(values))
        return column if len(values) >= len(samples) - 1 and counting else []

    def _second_look(
        self,
        pixels: UInt8Array,
        lines: list[BandLine],
        readings: dict[int, tuple[str, float]],
        check: Callable[[], None],
    ) -> tuple[dict[int, tuple[str, float]], bool]:
        """The MRZ band's readings once they verify (its first reading, or the first that
        verifies of further looks), or nothing. The band is read again, differently, when
        its first reading looks like an MRZ (``_looks_like_mrz``) but does not verify, or
        when the band is of a zone's size (two or three lines) and a line shows a run of
        alike glyphs (``filler_run``), whatever it was read as: with the fillers counted by
        their shape, stretched across (1.5×, 1.75×, 2×, 1.25×), sharpened, binarised,
        contrast-equalised, then in two halves; a line under half the recogniser's height
        enlarged bicubically first (``_enlarged``). After each look, every combination of the
        lines' readings so far is checked (a TD1 card may need its first line from one look
        and its second from another). Each look reads a line whole (``BandLine.quad``); what
        verifies is a line's reading, given to its first box (its other boxes read nothing,
        and True says so: the first box is then the line's).

        Stretching is the look that counts. The recogniser drops characters of an MRZ's
        evenly spaced OCR-B glyphs (``8302113`` read ``832113``); given more width per
        glyph it keeps them. On the image corpus's dev split (44 MRZs) the band verified as
        first read 23 times, stretched 1.5× 36 times, and with the combinations of five
        widths 42 times. Of the 39 dev look-alikes and documents without an MRZ that have a
        band, none verified at any single width, nor in the combinations of the 28 with at
        most 3,000 of them; on the whole corpus no image without an MRZ yields one."""
        if self.mrz_check is None or not readings:
            return {}, False
        first = [_joined([readings[index] for index in line.boxes]) for line in lines]
        boxwise = "\n".join(text for text, _ in readings.values())
        read_like_one = _looks_like_mrz(boxwise)
        if read_like_one and self.mrz_check(boxwise):
            return dict(readings), False
        if read_like_one and self.mrz_check("\n".join(text for text, _ in first)):
            return _by_box(lines, first), True
        # fillers by shape open a band of a zone's size only: a screenshot's many equal
        # lines, "====" among them, would spend its budget on looks that cannot verify
        crops = (
            [_crop(pixels, line.quad) for line in lines] if read_like_one or len(lines) <= 3 else []
        )
        if not read_like_one and not any(filler_run(crop) for crop in crops):
            return {}, False
        seen: list[dict[str, tuple[str, float]]] = [{text: (text, conf)} for text, conf in first]
        tried = {tuple(first)}
        for look in _SECOND_LOOKS:

            def read(pair: tuple[UInt8Array, dict[str, tuple[str, float]]]) -> None:
                crop, line = pair
                reading = look(self._enlarging_recognise, crop)  # noqa: B023 - in the look
                if reading[0]:
                    line.setdefault(reading[0], reading)

            self._each(list(zip(crops, seen, strict=True)), read, check)
            verified = self._verified_combination(seen, tried)
            if verified is not None:
                return _by_box(lines, list(verified)), True
        return {}, False

    def _enlarging_recognise(self, crop: UInt8Array) -> tuple[str, float]:
        """``_recognise`` for the second look: a crop under half the recogniser's height is
        enlarged bicubically to it first (``_enlarged``)."""
        return self._recognise(_enlarged(crop) if crop.shape[0] < _SMALL_CROP else crop)

    def _late_look(
        self,
        pixels: UInt8Array,
        boxes: list[FloatArray],
        readings: dict[int, tuple[str, float]],
        band: list[int],
        column: list[int],
        check: Callable[[], None],
    ) -> set[int]:
        """The second look (``_second_look``) at lines the band missed but whose reading
        looks like an MRZ (``mrz_like_lines``), once the whole page is read; ``readings``
        and ``boxes`` are updated with what verifies, whose boxes come back. The text is
        already read whole: a deadline that passes during the look only ends the look. A
        page that read fewer than two fillers in all has no such line, and is not grouped
        into lines again."""
        fillers = sum(char in _FILLERS for text, _ in readings.values() for char in text)
        if fillers < 2:
            return set()
        lines = mrz_like_lines(pixels, boxes, readings, column)
        if not lines or {index for line in lines for index in line.boxes} <= set(band):
            return set()
        read = {index: readings.get(index, ("", 0.0)) for line in lines for index in line.boxes}
        try:
            verified, whole = self._second_look(pixels, lines, read, check)
        except OcrStopped:
            return set()
        readings |= verified
        for line in lines if whole else []:
            boxes[line.boxes[0]] = line.quad
        return {index for index, (text, _) in verified.items() if text}

    def _verified_combination(
        self, seen: list[dict[str, tuple[str, float]]], tried: set[tuple[tuple[str, float], ...]]
    ) -> tuple[tuple[str, float], ...] | None:
        """The first combination of one reading per line, not tried before, that verifies
        (at most ``_MAX_COMBINATIONS`` checks a look: a check costs about a millisecond)."""
        assert self.mrz_check is not None
        checks = 0
        # a reading that looks like an MRZ line first: a card's name line verifies as
        # anything, and should be kept as its fillers say it is
        lines = [
            sorted(line.values(), key=lambda read: not _looks_like_mrz(read[0])) for line in seen
        ]
        for combination in itertools.product(*lines):
            if combination in tried:
                continue
            if checks == _MAX_COMBINATIONS:
                break
            tried.add(combination)
            checks += 1
            if self.mrz_check("\n".join(text for text, _ in combination)):
                return combination
        return None

    def _recognise(self, crop: UInt8Array) -> tuple[str, float]:
        """One text box read by the recogniser, at height 48 and its own width: a box
        narrower than rapidocr's 320 px is padded to the next multiple of 32 px (at least
        64), not to 320 — a 2-digit line number costs a third as much. The text comes back
        ``normalise``d: every reading, a second look's too, is checked as the detectors will
        read it (a raw ``C01×00T47`` fails the MRZ check that ``C01X00T47`` passes)."""
        recogniser = self._recogniser
        height, width = crop.shape[:2]
        ratio = width / max(height, 1)
        if ratio < _REC_WIDTH / _REC_HEIGHT:
            padded = max(_REC_MIN_WIDTH, math.ceil(_REC_HEIGHT * ratio / 32) * 32)
            ratio_padded = padded / _REC_HEIGHT
        else:
            ratio_padded = ratio
        batch = recogniser.resize_norm_img(crop, ratio_padded)[np.newaxis].astype(np.float32)
        predictions = recogniser.session(batch)[0]
        ((text, confidence),) = recogniser.postprocess_op(
            predictions, False, wh_ratio_list=[ratio], max_wh_ratio=ratio_padded
        )
        return normalise(str(text)), float(confidence)

    def _warm_up(self) -> None:
        """One tiny read, so the first request does not pay onnxruntime's first-run setup."""
        canvas = Image.new("RGB", (160, 48), "white")
        from PIL import ImageDraw

        ImageDraw.Draw(canvas).text((8, 16), "warm up 0123", fill="black")
        self.read(canvas)


def _load_models(settings: OcrSettings) -> tuple[Any, Any]:
    """rapidocr's detector and recogniser, with sessions built by ``_session``."""
    try:
        from rapidocr_onnxruntime.ch_ppocr_det import TextDetector
        from rapidocr_onnxruntime.ch_ppocr_det.utils import DetPreProcess
        from rapidocr_onnxruntime.ch_ppocr_rec import TextRecognizer
        from rapidocr_onnxruntime.main import DEFAULT_CFG_PATH
        from rapidocr_onnxruntime.utils import read_yaml, update_model_path
    except ImportError as exc:  # pragma: no cover - a hard dependency
        raise ModelUnavailable(f"rapidocr-onnxruntime is not installed: {exc}") from exc
    config = update_model_path(read_yaml(DEFAULT_CFG_PATH))
    det_config = {**config["Det"], "limit_type": "max", "limit_side_len": settings.det_limit_side}
    rec_config = {**config["Rec"], "rec_batch_num": 1}

    class _DetectorInput(DetPreProcess):  # type: ignore[misc]
        """rapidocr's input for the detector, the same values made the quick way: each
        channel normalised straight into the network's layout. rapidocr normalises the
        page as it is stored (height, width, channel) and then copies it across: 18 ms
        of a 1280×768 page against 4, and 28–45 ms on a first read."""

        def __call__(self, img: UInt8Array) -> FloatArray | None:
            resized = self.resize(img)
            if resized is None:
                return None
            page: FloatArray = np.empty((1, 3, *resized.shape[:2]), dtype=np.float32)
            for index in range(3):  # as rapidocr's float32 arithmetic, in its order
                channel = page[0, index]
                channel[...] = resized[:, :, index]
                channel *= self.scale
                channel -= self.mean[index]
                channel /= self.std[index]
            return page

    try:
        detector = TextDetector(det_config)
        recogniser = TextRecognizer(rec_config)
        # rapidocr builds its sessions without a way to pass session config entries, so
        # they are rebuilt (the models are small: 4.7 MB and 10.9 MB)
        detector.infer.session = _session(det_config["model_path"], settings.threads)
        # the page is normalised with these: as float64 (rapidocr's lists) the arithmetic
        # ran in float64 and took 35 ms of a 1600×992 screenshot, 21 ms in float32, the
        # same values
        detector.mean = np.asarray(detector.mean, dtype=np.float32)
        detector.std = np.asarray(detector.std, dtype=np.float32)
        # rapidocr's "max" mode chooses its own cap (960, 1500 or 2000 px by the image's
        # size) and ignores ``limit_side_len``: the engine's cap is set here
        detector.get_preprocess = lambda _longest: _DetectorInput(
            settings.det_limit_side, "max", detector.mean, detector.std
        )
        recogniser.session.session = _session(rec_config["model_path"], 1)
    except Exception as exc:
        raise ModelUnavailable(f"the OCR models could not be loaded: {exc}") from exc
    return detector, recogniser


def _session(model_path: str | Path, threads: int) -> Any:
    import onnx
    import onnxruntime

    from vsr_extproc.runtime.onnxgraph import fold

    model = onnx.load(str(model_path))
    fold(model)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(
        model.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"]
    )


# --- image preparation ----------------------------------------------------------------------


def _result(
    boxes: list[FloatArray],
    readings: dict[int, tuple[str, float]],
    band: int,
    scale: float,
    started: float,
    settings: OcrSettings,
    complete: bool,
    proven: set[int],
) -> OcrResult:
    """The lines read so far. A line the recogniser is unsure of is dropped, unless it is
    part of an MRZ whose check digits pass: they prove it better than its confidence does
    (a TD1 line read at 0.45 whose every digit checks)."""
    lines = [
        OcrLine(text, _scaled_box(boxes[index], scale), confidence,
                _text_height(boxes[index]) * scale)
        for index, (text, confidence) in readings.items()
        if index in proven or _kept(text, confidence, settings.min_confidence)
    ]  # fmt: skip
    rows = reading_order(lines)
    return OcrResult(
        [line for row in rows for line in row],
        "\n".join(" ".join(line.text for line in row) for row in rows),
        perf_counter() - started,
        boxes=len(boxes),
        complete=complete,
        read=len(readings),
        mrz_boxes=band,
    )


def _joined(readings: list[tuple[str, float]]) -> tuple[str, float]:
    """The readings of one line's boxes, left to right, as one."""
    return "".join(text for text, _ in readings), min(
        (confidence for text, confidence in readings if text), default=0.0
    )


def _by_box(lines: list[BandLine], reads: list[tuple[str, float]]) -> dict[int, tuple[str, float]]:
    """Each band line's reading given to its first box; its other boxes read nothing."""
    return {
        index: reading if number == 0 else ("", 0.0)
        for line, reading in zip(lines, reads, strict=True)
        for number, index in enumerate(line.boxes)
    }


def prepare(image: Image.Image, orientation: int, max_side: int) -> tuple[UInt8Array, float]:
    """An upright BGR array (rapidocr's models take OpenCV's channel order) with the
    longer side at most ``max_side``, and the factor from its pixels back to the (upright)
    input's.

    Transparency is composited on white (text drawn on a transparent canvas is usually
    dark); 16- and 32-bit greyscale is scaled to 8 bits instead of clipped to white.
    """
    if orientation in _UPRIGHT:
        image = image.transpose(_UPRIGHT[orientation])
    image = _to_rgb(image)
    longest = max(image.size)
    scale = 1.0
    if longest > max_side:
        scale = longest / max_side
        size = (max(1, round(image.width / scale)), max(1, round(image.height / scale)))
        image = image.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)
    rgb = np.asarray(image, dtype=np.uint8)
    return np.ascontiguousarray(rgb[:, :, ::-1]), scale


def _to_rgb(image: Image.Image) -> Image.Image:
    mode = image.mode
    if mode.startswith("I") or mode == "F":
        return Image.fromarray(_to_8bit(np.asarray(image)), "L").convert("RGB")
    if mode == "RGB":
        return image
    transparent = "A" in image.getbands() or image.info.get("transparency") is not None
    if transparent:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")


def _to_8bit(values: npt.NDArray[Any]) -> UInt8Array:
    """Stretch a high-bit-depth greyscale array over 0-255."""
    array = values.astype(np.float64)
    low, high = float(array.min()), float(array.max())
    if high <= low:
        return np.zeros(array.shape, dtype=np.uint8)
    return np.round((array - low) * (255.0 / (high - low))).astype(np.uint8)


def _pad_for_detection(pixels: UInt8Array) -> tuple[UInt8Array, tuple[int, int]]:
    """Pad thin images by repeating their border: the detector rounds sides to multiples
    of 32 (a 12 px tall strip would vanish) and misses text in very wide strips."""
    height, width = pixels.shape[:2]
    target_height = max(height, 64, math.ceil(width / 8))
    target_width = max(width, 64, math.ceil(height / 8))
    top, left = (target_height - height) // 2, (target_width - width) // 2
    if (top, left) == (0, 0) and (target_height, target_width) == (height, width):
        return pixels, (0, 0)
    import cv2

    bottom, right = target_height - height - top, target_width - width - left
    padded = cv2.copyMakeBorder(pixels, top, bottom, left, right, cv2.BORDER_REPLICATE)
    return np.asarray(padded, dtype=np.uint8), (top, left)


_CROP_MARGIN = 0.3  # of the text height, added before the first and after the last glyph


def _crop(pixels: UInt8Array, quad: FloatArray) -> UInt8Array:
    """The text box straightened to a rectangle (rapidocr's crop, with its rule that a
    box 1.5× taller than wide is vertical text, turned to read left to right).

    The box is first widened along its text by 0.3 of its height at each end: the detector
    often cuts into the first or last glyph, and the recogniser then drops it (measured on
    the image corpus's dev split: MRZs read 29 of 44 with the margin, 27 without)."""
    along = quad[1] - quad[0]
    length, text_height = float(np.linalg.norm(along)), _text_height(quad)
    if text_height < 1.5 * length:  # not vertical text (turned below; it stays as found)
        along = along / length * _CROP_MARGIN * text_height
        height, width = pixels.shape[:2]
        widened = quad.astype(np.float32).copy()
        widened[[0, 3]] -= along
        widened[[1, 2]] += along
        quad = np.clip(widened, 0, (width - 1, height - 1)).astype(np.float32)

    crop = _straightened(pixels, quad)
    if crop.shape[0] >= 1.5 * crop.shape[1]:
        crop = np.rot90(crop)
    return np.ascontiguousarray(crop, dtype=np.uint8)


def _straightened(pixels: UInt8Array, quad: FloatArray) -> UInt8Array:
    """The quadrilateral ``quad`` of ``pixels`` warped to an upright rectangle."""
    import cv2

    width = int(max(np.linalg.norm(quad[0] - quad[1]), np.linalg.norm(quad[2] - quad[3])))
    height = int(max(np.linalg.norm(quad[0] - quad[3]), np.linalg.norm(quad[1] - quad[2])))
    width, height = max(width, 1), max(height, 1)
    target = np.array([[0, 0], [width, 0], [width, height], [0, height]], dtype=np.float32)
    matrix = cv2.getPerspectiveTransform(quad.astype(np.float32), target)
    crop = cv2.warpPerspective(
        pixels, matrix, (width, height), borderMode=cv2.BORDER_REPLICATE, flags=cv2.INTER_CUBIC
    )
    return np.ascontiguousarray(crop, dtype=np.uint8)


# A mark the detector leaves out at the start of a line or of a comment: a thin, faint
# comment mark (``--``, ``//``, ``#``, `` * ``) or diff marker a space before the text.
# In text heights: the space after it (a space is wider next to the box's height in some
# fonts than in others), the gaps inside it, its width, and the blank before it (a quote
# or colon glued to the word before is that word's, not a mark).
_MARK_GAP = 1.2
_MARK_INNER_GAP = 0.4
_MARK_WIDTH = 2.5
_MARK_CLEAR = 0.5
_INK = 40  # a pixel this far from the background colour (largest channel difference) is ink


def with_lost_marks(pixels: UInt8Array, boxes: list[FloatArray]) -> list[FloatArray]:
    """``boxes`` with each level box widened to the left over a mark the detector left out
    of it, or boxed apart: ink in the box's middle rows, or a narrow box of its own on its
    row, less than ``_MARK_GAP`` text heights before it, at most ``_MARK_WIDTH`` wide (ink
    with no gap wider than ``_MARK_INNER_GAP`` in it), with ``_MARK_CLEAR`` of blank before
    it, and where other lines have text: boxes of two other rows cross its right edge. A
    box taken into its neighbour is dropped. An editor's line numbers are not marks: their
    column (``number_column``) is left as it is, and a number the column check missed stands
    left of all the code, where no other line has text. (Told apart by the space after
    them alone, they were not: an IDE's numbers stood 0.7-0.9 text heights before their
    code, and a terminal's ``//`` 0.65.)

    The detector joins glyphs into boxes, and a comment's mark in an editor's faint comment
    colour, a space before the comment's words, is often not joined: on screenshots of
    Lua's Penlight drawn in the image corpus's ``dev`` styles, every ``--`` of a comment was
    outside its box, the recogniser never saw it, and the comments read as prose; a ``//``
    boxed on its own read as nothing. With the mark in the crop it reads ``-- This module
    wraps …``."""
    if not boxes:
        return boxes
    corners = np.stack(boxes)
    spans = np.stack(
        [corners[:, :, 0].min(axis=1), corners[:, :, 0].max(axis=1),
         corners[:, :, 1].min(axis=1), corners[:, :, 1].max(axis=1)],
        axis=1,
    )  # fmt: skip
    excluded = np.zeros(len(boxes), dtype=bool)
    excluded[number_column(boxes)] = True
    widened = list(boxes)
    dropped: set[int] = set()
    for index, quad in enumerate(boxes):
        text_height = _text_height(quad)
        if index in dropped or text_height < 6:
            continue
        if abs(float(quad[1][1] - quad[0][1])) > 0.2 * text_height:
            continue  # tilted: a photo, not a screen
        boxed = _boxed_mark(spans, index, text_height, excluded)
        if boxed is not None:
            dropped.add(boxed)
            excluded[boxed] = True
            left_edge: float | None = float(spans[boxed, 0])
        else:
            left_edge = _inked_mark(pixels, spans, index, text_height)
        if left_edge is not None:
            grown = quad.copy()
            grown[[0, 3], 0] = max(0.0, left_edge - 0.1 * text_height)
            widened[index] = grown
    return [quad for index, quad in enumerate(widened) if index not in dropped]


def _on_row(spans: FloatArray, index: int) -> npt.NDArray[np.bool_]:
    """The boxes whose middle is within half a text height of box ``index``'s."""
    middles = (spans[:, 2] + spans[:, 3]) / 2
    heights = spans[:, 3] - spans[:, 2]
    row: npt.NDArray[np.bool_] = np.abs(middles - middles[index]) < 0.5 * np.minimum(
        heights[index], heights
    )
    return row


def _clear_before(
    spans: FloatArray, row: npt.NDArray[np.bool_], mark_left: float, text_height: float
) -> bool:
    """Whether no box on the row ends in the ``_MARK_CLEAR`` before ``mark_left``."""
    rights = spans[:, 1]
    return not (
        row & (rights > mark_left - _MARK_CLEAR * text_height) & (rights <= mark_left)
    ).any()


def _within_the_text(
    spans: FloatArray, row: npt.NDArray[np.bool_], mark_right: float, text_height: float
) -> bool:
    """Whether boxes of two other rows, wider than a mark, cross ``mark_right``: the mark
    stands where text stands on other lines. An editor's line numbers stand left of all
    the code, in a column of their own (one tab title above them is not the code)."""
    lefts, rights = spans[:, 0], spans[:, 1]
    wide = rights - lefts > _MARK_WIDTH * text_height
    return int((~row & wide & (lefts <= mark_right) & (rights > mark_right)).sum()) >= 2


def _boxed_mark(
    spans: FloatArray, index: int, text_height: float, excluded: npt.NDArray[np.bool_]
) -> int | None:
    """The index of a narrow box just before box ``index`` on its row, if there is one
    (``spans``: each box's left, right, top, bottom)."""
    left = float(spans[index, 0])
    lefts, rights = spans[:, 0], spans[:, 1]
    gap = left - rights  # (boxes of one line may overlap a little)
    row = _on_row(spans, index)
    row[index] = False
    candidates = (
        row
        & ~excluded
        & (lefts < left)
        & (gap >= -0.3 * text_height)
        & (gap < _MARK_GAP * text_height)
        & (rights - lefts <= _MARK_WIDTH * text_height)
    )
    for other in np.flatnonzero(candidates):
        if _clear_before(spans, row, float(lefts[other]), text_height) and _within_the_text(
            spans, row | (np.arange(len(spans)) == index), float(rights[other]), text_height
        ):
            return int(other)
    return None


def _inked_mark(
    pixels: UInt8Array, spans: FloatArray, index: int, text_height: float
) -> float | None:
    """The left edge of unboxed ink just before box ``index`` that reads as a mark."""
    left, _, top, bottom = (float(value) for value in spans[index])
    reach = int(text_height * (_MARK_GAP + _MARK_WIDTH + _MARK_CLEAR))
    x0, x1 = max(0, int(left) - reach), int(left)
    y0, y1 = int(top + 0.25 * text_height), int(bottom - 0.25 * text_height) + 1
    window = pixels[y0:y1, x0:x1].astype(np.int16)
    if x1 - x0 < 2 or y1 - y0 < 2 or window.size == 0:
        return None
    if int((window.max(axis=(0, 1)) - window.min(axis=(0, 1))).max()) <= _INK:
        return None  # one colour: nothing there (most lines; no median needed)
    lefts, rights, tops, bottoms = spans.T
    near = (tops < y1) & (bottoms > y0) & (rights > x0) & (lefts < x1)
    near[index] = False
    if (rights[near] >= x1 - 1).any():
        return None  # another box reaches up to this one: nothing was left out
    background = np.median(window.reshape(-1, window.shape[2]), axis=0)
    ink = (np.abs(window - background).max(axis=2) > _INK).any(axis=0)
    mark = _leftmost_mark(ink[::-1], text_height)
    if mark is None:
        return None
    mark_left = float(x1 - mark)
    # a column inked from above the line to below it is a rule (a pane's or a table's
    # border), not a glyph
    column_ink = np.flatnonzero(ink[int(mark_left) - x0 :]) + int(mark_left)
    above, below = max(0, int(top - 0.3 * text_height)), int(bottom + 0.3 * text_height) + 1
    strip = pixels[above:below, int(column_ink.min()) : int(column_ink.max()) + 1].astype(np.int16)
    if (np.abs(strip - background).max(axis=2) > _INK).all(axis=0).any():
        return None
    row = _on_row(spans, index)
    row[index] = False
    inside = [(float(lefts[o]), float(rights[o])) for o in np.flatnonzero(near)]
    if any(o_left <= mark_left + 1 and o_right >= mark_left for o_left, o_right in inside):
        return None  # the ink is another box's
    if not _clear_before(spans, row, mark_left, text_height):
        return None
    row[index] = True
    mark_right = float(column_ink.max())
    return mark_left if _within_the_text(spans, row, mark_right, text_height) else None


def _leftmost_mark(ink: npt.NDArray[np.bool_], text_height: float) -> int | None:
    """How far left of the box (in columns, ``ink`` read from the box leftwards) a mark
    ends, or None when there is none that fits ``with_lost_marks``' bounds: ink again
    within ``_MARK_CLEAR`` before the mark makes it part of something wider."""
    columns = np.flatnonzero(ink)
    if columns.size == 0 or columns[0] >= _MARK_GAP * text_height:
        return None
    start = int(columns[0])
    end = start
    for column in columns[1:]:
        if column - end > _MARK_INNER_GAP * text_height:
            if column - end <= _MARK_CLEAR * text_height:
                return None
            break
        end = int(column)
    if end - start > _MARK_WIDTH * text_height:
        return None
    return end + 1


_LINE_NUMBER = re.compile(r"\d{1,5}")
#: a gutter holds at least this many line numbers
_MIN_GUTTER = 8


def _without_line_numbers(
    boxes: list[FloatArray], readings: dict[int, tuple[str, float]], column: list[int]
) -> None:
    """Take a gutter's numbers out of what was read, all of them: the sampled boxes, and
    the number a box that starts inside the gutter holds at its start (the detector joins
    some numbers to their code). A screen whose lines all carry their number reads as
    code with a gutter; one where only some do reads as lines that start with numbers, so
    left unread, the numbers must go from every line."""
    lefts = [float(boxes[index][:, 0].min()) for index in column]
    right = max(float(boxes[index][:, 0].max()) for index in column)
    # from the gutter's left edge, less a digit's width, to its right edge: an IDE's file
    # tree further left keeps a name such as ``2024_report.py`` whole
    left = min(lefts) - float(np.median([_text_height(boxes[index]) for index in column]))
    for index, (text, confidence) in readings.items():
        if index in column:
            readings[index] = ("", confidence)
        elif left <= float(boxes[index][:, 0].min()) < right:
            readings[index] = (_LEADING_NUMBER.sub("", text, count=1), confidence)


_LEADING_NUMBER = re.compile(r"^\s*\d{1,5}\s*")


def number_column(quads: list[FloatArray], exclude: Collection[int] = ()) -> list[int]:
    """The boxes that may be an editor's line numbers, top to bottom, or none: at least
    ``_MIN_GUTTER`` boxes at most four text heights wide whose right edges (numbers are
    right-aligned) or else left edges are in line within half a text height, at least
    half of them with a box to their right on their row (their code; a blank line has
    a number and nothing after it) less than eight text heights away."""
    rects = [(float(q[:, 0].min()), float(q[:, 1].min()), float(q[:, 0].max()),
              float(q[:, 1].max())) for q in quads]  # fmt: skip
    narrow = [
        index
        for index, (x0, y0, x1, y1) in enumerate(rects)
        if index not in exclude and 0 < x1 - x0 <= 4 * (y1 - y0)
    ]
    if len(narrow) < _MIN_GUTTER:
        return []
    height = float(np.median([rects[i][3] - rects[i][1] for i in narrow]))
    for edge in (2, 0):  # right edges first, then left
        ordered = sorted(narrow, key=lambda i: rects[i][edge])
        best: list[int] = []
        start = 0
        for end in range(len(ordered)):
            while rects[ordered[end]][edge] - rects[ordered[start]][edge] > 0.5 * height:
                start += 1
            if end - start + 1 > len(best):
                best = ordered[start : end + 1]
        followed = sum(_code_follows(rects, index) for index in best)
        if len(best) >= _MIN_GUTTER and 2 * followed >= len(best):
            return sorted(best, key=lambda i: rects[i][1])
    return []


def _code_follows(rects: list[tuple[float, float, float, float]], index: int) -> bool:
    _, y0, x1, y1 = rects[index]
    centre, height = (y0 + y1) / 2, y1 - y0
    return any(
        other != index
        and abs((oy0 + oy1) / 2 - centre) < 0.5 * min(height, oy1 - oy0)
        and 0 <= ox0 - x1 < 8 * height
        for other, (ox0, oy0, _, oy1) in enumerate(rects)
    )


@dataclass(frozen=True, slots=True)
class BandLine:
    """A line of an MRZ band: its boxes, left to right, and one box over the whole line
    along its slope (the line's one box, when the detector found it whole)."""

    boxes: tuple[int, ...]
    quad: FloatArray = field(repr=False)


def mrz_band(
    pixels: UInt8Array, quads: list[FloatArray], exclude: Collection[int] = ()
) -> list[BandLine]:
    """The lines of ``quads`` that could hold a machine-readable zone, top to bottom,
    leaving out the boxes of ``exclude`` (an editor's line numbers).

    An MRZ is two or three lines of 30-44 monospace characters with no spaces: text lines
    (``_text_lines``) at least ten text heights long, one under the other at most two and a
    half heights apart, of the same length (±12 %), starting at the same place (± one and
    a half text heights: in a photo at an angle the second line starts a little further
    in) and of the same height (±30 %). Every line that belongs to such a group counts.

    The detector splits such a line where glare washes part of it out, and where a tilted
    line's run of fillers drifts off its text; it can leave a run of large ``<`` out
    altogether. So a line that would pair with its neighbour but for its length is first
    extended over a run of alike glyphs just after its end (``_over_fillers``), and each
    line's ``quad`` spans it whole, gaps and all: the second look reads it so (read box by
    box, a tilted line's run of fillers came first, or was never read)."""
    lines, angle = _text_lines(quads, exclude)
    shapes = [_line_shape(quads, line, angle) for line in lines]
    ends: dict[int, FloatArray] = {}  # line → its right end, moved over fillers
    tried: set[int] = set()
    chosen: set[int] = set()
    for upper in range(len(lines) - 1):
        lower = upper + 1
        if not _may_pair(shapes[upper], shapes[lower], 5):
            continue
        if not _pairs(shapes[upper], shapes[lower]):
            for number in (upper, lower):
                if number in tried:
                    continue
                tried.add(number)
                end = _over_fillers(pixels, quads, lines[number])
                if end is not None:
                    ends[number] = end
                    shapes[number] = _line_shape(quads, lines[number], angle, end)
            if not _pairs(shapes[upper], shapes[lower]):
                continue
        chosen.update((upper, lower))
    return [
        BandLine(
            tuple(lines[number]),
            _line_quad(quads, lines[number], ends.get(number))
            if len(lines[number]) > 1 or number in ends
            else quads[lines[number][0]],
        )
        for number in sorted(chosen)
    ]


def mrz_like_lines(
    pixels: UInt8Array,
    quads: list[FloatArray],
    readings: dict[int, tuple[str, float]],
    exclude: Collection[int] = (),
) -> list[BandLine]:
    """The lines of a read page that may be an MRZ the band (``mrz_band``) missed, top to
    bottom, at most three: two lines placed like an MRZ's (``_may_pair``, five text heights
    long at least, whatever their lengths), each read as a run of 12 or more MRZ
    characters, one of them with fillers (``_looks_like_mrz``). The band wants lines of one
    length; the detector can cut a line short where glare or blur washes its fillers out,
    or give a tilted line's fillers a line of their own, and the other line is then the
    one that carries the check digits."""
    lines, angle = _text_lines(quads, exclude)
    texts = [
        "".join(readings[index][0] for index in line if index in readings).replace(" ", "")
        for line in lines
    ]
    candidates = [number for number, text in enumerate(texts) if _MRZ_RUN.search(text)]
    shapes = {number: _line_shape(quads, lines[number], angle) for number in candidates}
    chosen: set[int] = set()
    for upper, lower in itertools.pairwise(candidates):
        if _may_pair(shapes[upper], shapes[lower], 5) and (
            _looks_like_mrz(texts[upper]) or _looks_like_mrz(texts[lower])
        ):
            chosen.update((upper, lower))
    found = []
    for number in sorted(chosen)[-3:]:
        end = _over_fillers(pixels, quads, lines[number])
        quad = (
            _line_quad(quads, lines[number], end)
            if len(lines[number]) > 1 or end is not None
            else quads[lines[number][0]]
        )
        found.append(BandLine(tuple(lines[number]), quad))
    return found


def _text_lines(
    quads: list[FloatArray], exclude: Collection[int] = ()
) -> tuple[list[list[int]], float]:
    """The boxes grouped into text lines, top to bottom, each left to right, and the page's
    tilt (radians): boxes whose middles lie within half a text height of each other once
    the tilt, the median slope of the boxes at least three heights long, is taken out. A
    photo tilts every line alike; the two parts of a tilted line split by the detector
    have their middles at different heights of the image."""
    if not quads:
        return [], 0.0
    corners = np.stack(quads).astype(np.float64)
    along = corners[:, 1] - corners[:, 0]
    heights = np.array([_text_height(quad) for quad in quads])
    wide = np.linalg.norm(along, axis=1) >= 3 * heights
    angle = float(np.median(np.arctan2(along[wide, 1], along[wide, 0]))) if wide.any() else 0.0
    middles = corners.mean(axis=1)
    across = middles[:, 1] * math.cos(angle) - middles[:, 0] * math.sin(angle)
    ahead = middles[:, 0] * math.cos(angle) + middles[:, 1] * math.sin(angle)
    lines: list[list[int]] = []
    left_out = set(exclude)
    for index in (int(i) for i in np.argsort(across, kind="stable")):
        if index in left_out:
            continue
        if lines:
            last = lines[-1][-1]
            if abs(across[last] - across[index]) < 0.5 * min(heights[index], heights[last]):
                lines[-1].append(index)
                continue
        lines.append([index])
    return [sorted(line, key=lambda index: float(ahead[index])) for line in lines], angle


_Shape = tuple[float, float, float, float]  # a line's left, length, middle and height, untilted


def _line_shape(
    quads: list[FloatArray], line: list[int], angle: float, end: FloatArray | None = None
) -> _Shape:
    points = np.concatenate([quads[index] for index in line]).astype(np.float64)
    if end is not None:
        points = np.vstack([points, end[None, :]])
    cos, sin = math.cos(angle), math.sin(angle)
    ahead = points[:, 0] * cos + points[:, 1] * sin
    across = points[:, 1] * cos - points[:, 0] * sin
    height = max(max(_text_height(quads[index]) for index in line), 1.0)
    left = float(ahead.min())
    return left, float(ahead.max()) - left, float(across.mean()), height


def _may_pair(upper: _Shape, lower: _Shape, min_length: float) -> bool:
    """Two lines placed like an MRZ's, whatever their lengths (each ``min_length`` text
    heights at least)."""
    left_a, length_a, middle_a, height_a = upper
    left_b, length_b, middle_b, height_b = lower
    height = max(height_a, height_b)
    return (
        length_a >= min_length * height_a
        and length_b >= min_length * height_b
        and abs(left_a - left_b) <= 1.5 * height
        and abs(height_a - height_b) <= 0.3 * height
        and middle_b - middle_a <= 2.5 * height
    )


def _pairs(upper: _Shape, lower: _Shape) -> bool:
    """Two lines of one MRZ: placed like one, ten heights long and of the same length."""
    return _may_pair(upper, lower, 10) and abs(upper[1] - lower[1]) <= 0.12 * max(
        upper[1], lower[1]
    )


def _line_quad(quads: list[FloatArray], line: list[int], end: FloatArray | None) -> FloatArray:
    """One box over a text line's boxes, along its slope, from the first box's left edge to
    the last one's right edge (or ``end``), as tall as its tallest box."""
    first, last = quads[line[0]], quads[line[-1]]
    left = (first[0] + first[3]) / 2
    right = (last[1] + last[2]) / 2 if end is None else end
    direction = (right - left) / max(float(np.linalg.norm(right - left)), 1.0)
    half = np.array([-direction[1], direction[0]]) * max(_text_height(quads[i]) for i in line) / 2
    return np.array([left - half, right - half, right + half, left + half], dtype=np.float32)


def _over_fillers(
    pixels: UInt8Array, quads: list[FloatArray], line: list[int]
) -> FloatArray | None:
    """The middle of a text line's right end moved over a run of alike glyphs
    (``filler_run``) the detector left out, starting within one and a half text heights of
    the line's end, and the glyphs right after it (an MRZ's last check digit); or None.
    Ink is looked for first: after most lines there is none."""
    last = quads[line[-1]]
    height = max(_text_height(quads[index]) for index in line)
    end = (last[1] + last[2]) / 2
    x, y = int(end[0]), int(end[1])
    near = pixels[
        max(0, int(y - 0.25 * height)) : int(y + 0.25 * height) + 1, x : x + int(1.5 * height)
    ]
    if near.size == 0 or int(np.ptp(near.reshape(-1, near.shape[2]), axis=0).max()) <= _INK:
        return None
    first = quads[line[0]]
    direction = end - (first[0] + first[3]) / 2
    direction = direction / max(float(np.linalg.norm(direction)), 1.0)
    image_height, image_width = pixels.shape[:2]
    reach = 40 * height  # or to the image's edge
    for position, step, size in zip(end, direction, (image_width, image_height), strict=True):
        if step > 0:
            reach = min(reach, (size - 1 - position) / step)
        elif step < 0:
            reach = min(reach, -position / step)
    if reach < 2 * height:
        return None
    half = np.array([-direction[1], direction[0]]) * height / 2
    far = end + direction * reach
    strip = _straightened(
        pixels, np.array([end - half, far - half, far + half, end + half], dtype=np.float32)
    )
    ink = _ink(strip)
    run = _alike_glyph_run(ink)
    if run is None or run[0] > 1.5 * height:
        return None
    inked = np.flatnonzero(_ink_columns(ink))
    after = inked[inked >= run[1]]
    stop = run[1]
    for column in after:
        if column - stop > height:
            break
        stop = int(column) + 1
    moved: FloatArray = (end + direction * stop).astype(np.float32)
    return moved


Recognise = Callable[[UInt8Array], tuple[str, float]]

# 12 or more characters of an MRZ's alphabet, as OCR writes fillers, spaces aside
_FILLERS = "<«‹"  # a filler as the recogniser reads it
_MRZ_RUN = re.compile(r"[A-Z0-9<«‹(\[{]{12,}")


def _looks_like_mrz(text: str) -> bool:
    """Whether a band's reading is worth a second look: some line holds, spaces aside, 12
    or more upper-case letters, digits and fillers with at least two fillers among them.
    Code that shows ``<<`` (``cout << x``, ``cat <<EOF``, ``1 << 4``) does not: on the
    image corpus, 22 of the 312 screenshots and pages without an MRZ hold ``<<``, none
    such a run, and every MRZ does."""
    for line in text.splitlines():
        for run in _MRZ_RUN.finditer(line.replace(" ", "")):
            if sum(char in _FILLERS for char in run.group()) >= 2:
                return True
    return False


def _enlarged(crop: UInt8Array) -> UInt8Array:
    """``crop`` enlarged bicubically to the recogniser's height, its width in proportion:
    the recogniser then reads it at its own size instead of enlarging it bilinearly. The
    zone of a passport photographed small, 5-7 px a character, came back garbled at every
    look from the bilinear enlargement; from the sharper one two of five such ``dev``
    pages verify. (Every line of every image enlarged so changed what OCR read of other
    small text both ways: of 460 ``dev`` config files and documents, one more credential
    found, one credential and one document lost; so only the MRZ's second look does.)"""
    import cv2

    height, width = crop.shape[:2]
    size = (max(1, round(width * _REC_HEIGHT / height)), _REC_HEIGHT)
    return np.ascontiguousarray(cv2.resize(crop, size, interpolation=cv2.INTER_CUBIC))


def _sharpened(recognise: Recognise, crop: UInt8Array) -> tuple[str, float]:
    import cv2

    blurred = cv2.GaussianBlur(crop, (0, 0), 2)
    return recognise(np.asarray(cv2.addWeighted(crop, 1.8, blurred, -0.8, 0), dtype=np.uint8))


def _binarised(recognise: Recognise, crop: UInt8Array) -> tuple[str, float]:
    import cv2

    grey = cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY)
    _, black_white = cv2.threshold(grey, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    return recognise(np.asarray(cv2.cvtColor(black_white, cv2.COLOR_GRAY2BGR), dtype=np.uint8))


def _equalised(recognise: Recognise, crop: UInt8Array) -> tuple[str, float]:
    import cv2

    grey = cv2.createCLAHE(2.0, (8, 8)).apply(cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY))
    return recognise(np.asarray(cv2.cvtColor(grey, cv2.COLOR_GRAY2BGR), dtype=np.uint8))


def _stretched(factor: float) -> Callable[[Recognise, UInt8Array], tuple[str, float]]:
    def look(recognise: Recognise, crop: UInt8Array) -> tuple[str, float]:
        import cv2

        height, width = crop.shape[:2]
        wider = cv2.resize(crop, (round(width * factor), height), interpolation=cv2.INTER_CUBIC)
        return recognise(np.ascontiguousarray(wider, dtype=np.uint8))

    return look


_FILLER_RUN = 4  # alike glyphs in a row, at least, to be read as fillers by their shape
_ALIKE = 0.8  # correlation of two glyphs' shapes (16×12, binarised) to count as the same


def filler_run(crop: UInt8Array) -> tuple[int, int, int] | None:
    """The longest run of at least ``_FILLER_RUN`` alike glyphs in a line, side by side:
    (its first column, its end column, how many). An MRZ's fillers are such a run; the
    recogniser, trained on other text, can read a run of large ``<`` as ``AAAA`` and lose
    the whole line with it (a close photo of an ID card read ``I<UTOE38701QW94<<<…`` as
    ``1030``), while the glyphs themselves are easy to tell apart and to count.

    Glyphs are taken two ways, and the longer run counts: the stretches of inked columns
    (a thin guilloche line crossing a gap leaves it a gap), and the connected blots of ink
    (a ``<`` whose arms reach over the next one's point, at a tight pitch or on a slant,
    shares every column with its neighbours but touches neither)."""
    return _alike_glyph_run(_ink(crop))


def _alike_glyph_run(ink: UInt8Array) -> tuple[int, int, int] | None:
    """``filler_run`` on a line's ``_ink``."""
    best: tuple[int, int, int] | None = None
    for glyphs in (_column_glyphs(ink), _blot_glyphs(ink)):
        run = _alike_run(glyphs)
        if run is not None and (best is None or run[2] > best[2]):
            best = run
    return best


_Glyph = tuple[int, int, FloatArray]  # first column, end column, shape (16×12, centred)


def _glyph_shape(glyph: npt.NDArray[Any]) -> FloatArray:
    import cv2

    rows = np.flatnonzero(glyph.sum(axis=1))
    cut = glyph[rows[0] : rows[-1] + 1].astype(np.float32)
    shape = np.asarray(cv2.resize(cut, (12, 16), interpolation=cv2.INTER_AREA), np.float32)
    centred: FloatArray = (shape - shape.mean()).ravel()
    return centred


def _column_glyphs(ink: UInt8Array) -> list[_Glyph]:
    columns = _ink_columns(ink)
    edges = np.flatnonzero(np.diff(np.concatenate(([0], columns.astype(np.int8), [0]))))
    return [
        (int(start), int(end), _glyph_shape(ink[:, start:end]))
        for start, end in zip(edges[::2], edges[1::2], strict=True)
    ]


def _blot_glyphs(ink: UInt8Array) -> list[_Glyph]:
    """The connected blots of ink at least a fifth of the line tall, left to right."""
    import cv2

    count, labels, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    glyphs = []
    for label in range(1, count):
        left, top, width, height, _ = (int(value) for value in stats[label])
        if height < max(3, ink.shape[0] // 5):
            continue
        blot = labels[top : top + height, left : left + width] == label
        glyphs.append((left, left + width, _glyph_shape(blot)))
    return sorted(glyphs, key=lambda glyph: glyph[0])


def _alike_run(glyphs: list[_Glyph]) -> tuple[int, int, int] | None:
    best: tuple[int, int] | None = None
    first = 0
    while first < len(glyphs):
        last = first + 1
        while last < len(glyphs) and _alike(glyphs[first][2], glyphs[last][2]):
            last += 1
        if last - first >= _FILLER_RUN and (best is None or last - first > best[1] - best[0]):
            best = (first, last)
        first = last
    if best is None:
        return None
    return glyphs[best[0]][0], glyphs[best[1] - 1][1], best[1] - best[0]


def _ink(crop: UInt8Array) -> UInt8Array:
    """1 where ``crop`` is darker than Otsu's threshold of it (dark text on light paper)."""
    import cv2

    grey = cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY)
    _, ink = cv2.threshold(grey, 0, 1, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    return np.asarray(ink, dtype=np.uint8)


def _ink_columns(ink: UInt8Array) -> npt.NDArray[np.bool_]:
    """The columns of a line's ``_ink`` that hold some; a column with a little (a thin
    guilloche line crossing) is still a gap."""
    columns: npt.NDArray[np.bool_] = ink.sum(axis=0) >= max(2, ink.shape[0] // 12)
    return columns


def _alike(one: FloatArray, other: FloatArray) -> bool:
    scale = float(np.linalg.norm(one) * np.linalg.norm(other))
    return scale > 0 and float(one @ other) / scale >= _ALIKE


def _fillers_by_shape(recognise: Recognise, crop: UInt8Array) -> tuple[str, float]:
    """The line with its filler run counted by shape (``filler_run``) and the text on
    either side of it read alone; no reading when it has no such run."""
    run = filler_run(crop)
    if run is None:
        return "", 0.0
    start, end, count = run
    texts, confidences = [], []
    for part in (crop[:, : max(0, start - 2)], crop[:, end + 2 :]):
        text, confidence = recognise(np.ascontiguousarray(part)) if part.shape[1] > 4 else ("", 0)
        texts.append(text)
        if text:
            confidences.append(confidence)
    return texts[0] + "<" * count + texts[1], min(confidences, default=0.0)


def _halved(recognise: Recognise, crop: UInt8Array) -> tuple[str, float]:
    middle = crop.shape[1] // 2
    left = recognise(np.ascontiguousarray(crop[:, : middle + 4]))
    right = recognise(np.ascontiguousarray(crop[:, middle - 4 :]))
    return left[0] + right[0], min(left[1], right[1])


_SECOND_LOOKS = (
    _fillers_by_shape,
    _stretched(1.5),
    _stretched(1.75),
    _stretched(2.0),
    _stretched(1.25),
    _sharpened,
    _binarised,
    _equalised,
    _halved,
)
_MAX_COMBINATIONS = 64


def _kept(text: str, confidence: float, min_confidence: float) -> bool:
    """A recognised line worth keeping. Marks alone (``}``, ``);``) need more certainty:
    in a photo the recogniser reads shadows and edges as ``..`` at about 0.5."""
    if not text.strip():
        return False
    if not any(char.isalnum() for char in text):
        return confidence >= max(min_confidence, 0.8)
    return confidence >= min_confidence


def _text_height(quad: FloatArray) -> float:
    """The height of a (possibly tilted) text box: its left and right edges' mean length."""
    return float(np.linalg.norm(quad[0] - quad[3]) + np.linalg.norm(quad[1] - quad[2])) / 2


def _scaled_box(quad: FloatArray, scale: float) -> tuple[float, float, float, float]:
    x0, y0 = quad.min(axis=0) * scale
    x1, y1 = quad.max(axis=0) * scale
    return round(float(x0), 1), round(float(y0), 1), round(float(x1), 1), round(float(y1), 1)


# --- text -----------------------------------------------------------------------------------


def normalise(text: str) -> str:
    """OCR text as the detectors expect it (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).translate(_PUNCTUATION)
    if not text.isascii():
        text = _latin_lookalikes(text)
    if "×" not in text:
        return text.strip()
    chars = list(text)
    for index, char in enumerate(chars):
        if char == "×":
            neighbours = "".join(chars[max(0, index - 2) : index + 3])
            chars[index] = "x" if any(c.islower() for c in neighbours) else "X"
    return "".join(chars).strip()


def _latin_lookalikes(text: str) -> str:
    """``text`` with its look-alikes of ASCII symbols (the recogniser's CJK characters, a
    ligature font's arrows and signs) read as those symbols, when every other character
    of it is ASCII and some of those are not spaces (``非 require 'x'``, ``/米``,
    ``x → y``); Chinese text keeps its characters."""
    others = [char for char in text if char not in _LOOKALIKES]
    if len(others) == len(text) or not all(char.isascii() for char in others):
        return text
    if not any(not char.isspace() for char in others):
        return text
    return text.translate(_LOOKALIKE_TABLE)


def reading_order(lines: list[OcrLine]) -> list[list[OcrLine]]:
    """Lines grouped into rows, column by column, top to bottom, each row's boxes left to
    right.

    Columns first: where a vertical strip at least two text heights wide crosses the whole
    page without touching a box, with at least three boxes on each side (an IDE's file tree
    beside the code, a two-column page), each side is read on its own, left first, so a
    file name is not glued to the start of a code line. A strip narrower than that (an
    editor's gutter and its code, a label and its value) does not split.

    Two boxes share a row when their vertical centres differ by less than half the
    smaller box's text height. Boxes are compared by centre, not by overlap, and by the
    height of the tilted text box, not of its axis-aligned bounds, so the two MRZ lines of
    a rotated photo (whose axis-aligned boxes overlap, and are several lines tall) stay
    apart.
    """
    return [row for column in _columns(lines) for row in _rows(column)]


def _columns(lines: list[OcrLine]) -> list[list[OcrLine]]:
    if len(lines) < 2 * _MIN_COLUMN_BOXES:
        return [lines]
    gap = _COLUMN_GAP * float(np.median([_height(line) for line in lines]))
    ordered = sorted(lines, key=lambda line: line.box[0])
    reach = ordered[0].box[2]
    for index in range(1, len(ordered)):
        start = ordered[index].box[0]
        left, right = ordered[:index], ordered[index:]
        if (
            start - reach >= gap
            and len(left) >= _MIN_COLUMN_BOXES
            and len(right) >= _MIN_COLUMN_BOXES
        ):
            return [left, *_columns(right)]
        reach = max(reach, ordered[index].box[2])
    return [lines]


_COLUMN_GAP = 2.0  # text heights of empty space between two columns
_MIN_COLUMN_BOXES = 3


def _rows(lines: list[OcrLine]) -> list[list[OcrLine]]:
    rows: list[list[OcrLine]] = []
    for line in sorted(lines, key=_centre_y):
        # sorted by centre, a box's row partner is among the last rows started
        for row in reversed(rows[-3:]):
            anchor = row[-1]
            limit = 0.5 * min(_height(line), _height(anchor))
            if abs(_centre_y(line) - _centre_y(anchor)) < limit:
                row.append(line)
                break
        else:
            rows.append([line])
    return [sorted(row, key=lambda item: item.box[0]) for row in rows]


def _centre_y(line: OcrLine) -> float:
    return (line.box[1] + line.box[3]) / 2


def _height(line: OcrLine) -> float:
    return line.height or line.box[3] - line.box[1]
