"""``image``: facts about the request's images from decoding and cheap pixel checks.

    signals:
      image:
        - name: xray_like
          grayscale: true
          min_width: 256
          min_height: 256
        - name: geotagged_photo        # EXIF GPS position: location PII
          gps: true
        - name: animated_gif
          formats: [gif]
          animated: true
        - name: has_faces
          faces: true                  # or min_faces: 2
        - name: huge_image
          min_pixels: 12000000

Every condition given must hold for an image; the signal matches when any inspected image
(the first ``images.max_images``) satisfies them all. Formats, sizes, frames and GPS come
from the shared decode; ``grayscale`` is measured on a copy at most 256 px on a side: an
image is greyscale when under 1% of its pixels have a chroma (max − min of R, G, B) above
24 — JPEG's chroma noise stays far below that, a sepia tint or a colour photo far above,
and a few coloured annotations on an X-ray stay under 1%.

Faces are counted by OpenCV's frontal-face Haar cascade on a greyscale copy at most 640 px
on a side, only when an entry asks (``faces`` or ``min_faces``). At that size detection
takes 10–40 ms, so it runs on the signals' shared CPU thread (``run_cpu``) rather than
the OCR thread, where it would wait behind seconds of OCR. opencv-python 5 no longer ships
the cascade (it moved to opencv-contrib); there, face conditions report that as their
error and each rule's ``on_error`` decides.

The value lists each image's format, size, frames, grayscale, GPS flag and (when asked)
face count — never pixels or coordinates. An image that cannot be decoded is reported with
its reason; when every image fails, the signal fails with the reasons.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import structlog
from pydantic import Field, model_validator

from vsr_extproc.core.signals import AsyncSignal, Evaluation, Outcome
from vsr_extproc.errors import ImageError, SignalError
from vsr_extproc.signals.base import AsyncSignalEntry, Resources, SignalFamily, run_cpu
from vsr_extproc.signals.images import decode, image_limits, inspected

if TYPE_CHECKING:
    from PIL import Image

    from vsr_extproc.core.request import ImagePart
    from vsr_extproc.runtime.images import DecodedImage, ImageLimits

log = structlog.get_logger("vsr_extproc.image")

ImageFormat = Literal["png", "jpeg", "webp", "gif", "bmp", "tiff"]

_GRAYSCALE_SIDE = 256
_CHROMA_LIMIT = 24
_COLOURED_SHARE = 0.01
_FACE_SIDE = 640
_FACE_CASCADE = "haarcascade_frontalface_default.xml"


class ImageEntry(AsyncSignalEntry):
    formats: tuple[ImageFormat, ...] = Field(default=(), description="one of these formats")
    min_width: int | None = Field(default=None, ge=1, description="at least this wide, pixels")
    min_height: int | None = Field(default=None, ge=1, description="at least this tall, pixels")
    max_width: int | None = Field(default=None, ge=1, description="at most this wide, pixels")
    max_height: int | None = Field(default=None, ge=1, description="at most this tall, pixels")
    min_pixels: int | None = Field(default=None, ge=1, description="at least width × height")
    max_pixels: int | None = Field(default=None, ge=1, description="at most width × height")
    grayscale: bool | None = Field(
        default=None, description="true: greyscale (an X-ray, a scan); false: in colour"
    )
    faces: bool | None = Field(
        default=None, description="true: at least one frontal face; false: none"
    )
    min_faces: int | None = Field(default=None, ge=1, description="at least this many faces")
    gps: bool | None = Field(
        default=None, description="true: EXIF carries a GPS position (location PII)"
    )
    animated: bool | None = Field(default=None, description="true: more than one frame")

    @model_validator(mode="after")
    def _consistent(self) -> ImageEntry:
        for low, high in (
            ("min_width", "max_width"),
            ("min_height", "max_height"),
            ("min_pixels", "max_pixels"),
        ):
            low_value, high_value = getattr(self, low), getattr(self, high)
            if low_value is not None and high_value is not None and low_value > high_value:
                raise ValueError(f"{low} ({low_value}) is above {high} ({high_value})")
        if self.faces is False and self.min_faces is not None:
            raise ValueError("faces: false contradicts min_faces")
        return self

    @property
    def counts_faces(self) -> bool:
        return self.faces is not None or self.min_faces is not None


# --- measurements ---------------------------------------------------------------------------


def downscaled(image: Image.Image, side: int) -> Image.Image:
    """A copy of ``image`` at most ``side`` pixels on its longer side, made without first
    copying a large image whole (PIL itself falls back to nearest for palette images)."""
    from PIL import Image as PILImage

    longest = max(image.size)
    if longest <= side:
        return image
    size = (max(1, image.width * side // longest), max(1, image.height * side // longest))
    return image.resize(size, PILImage.Resampling.BILINEAR, reducing_gap=2.0)


def is_grayscale(image: Image.Image) -> bool:
    """Whether ``image`` is greyscale (see the module docstring for the measure)."""
    import numpy as np

    if image.mode in ("1", "L", "LA", "I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
        return True
    small = downscaled(image, _GRAYSCALE_SIDE)
    pixels = np.asarray(small.convert("RGB"), dtype=np.int16)
    chroma = pixels.max(axis=2) - pixels.min(axis=2)
    return float((chroma > _CHROMA_LIMIT).mean()) <= _COLOURED_SHARE


class FaceCounter:
    """OpenCV's frontal-face Haar cascade, loaded once; one caller at a time (run_cpu)."""

    def __init__(self, cascade: Any) -> None:
        self._cascade = cascade

    def __call__(self, image: Image.Image) -> int:
        import cv2
        import numpy as np

        small = downscaled(image, _FACE_SIDE)
        gray = cv2.equalizeHist(np.asarray(small.convert("L"), dtype=np.uint8))
        faces = self._cascade.detectMultiScale(
            gray, scaleFactor=1.1, minNeighbors=5, minSize=(24, 24)
        )
        return len(faces)


@dataclass(frozen=True)
class FacesUnavailable:
    reason: str


def load_face_counter() -> FaceCounter | FacesUnavailable:
    """The Haar face counter, or why there is none in this OpenCV."""
    import cv2

    classifier = getattr(cv2, "CascadeClassifier", None)
    path = Path(getattr(getattr(cv2, "data", None), "haarcascades", "")) / _FACE_CASCADE
    if classifier is None or not path.is_file():
        return FacesUnavailable(
            f"face detection is unavailable: OpenCV {cv2.__version__} ships no Haar cascade "
            f"({_FACE_CASCADE}); opencv-python 4.x has it, 5.x moved it to opencv-contrib"
        )
    cascade = classifier(str(path))
    if cascade.empty():
        return FacesUnavailable(f"face detection is unavailable: {path} did not load")
    return FaceCounter(cascade)


# --- the signal -----------------------------------------------------------------------------


class ImageSignal(AsyncSignal):
    family: ClassVar[str] = "image"

    def __init__(
        self,
        entry: ImageEntry,
        limits: ImageLimits,
        max_images: int,
        faces: FaceCounter | FacesUnavailable | None,
    ) -> None:
        self.name = entry.name
        self.timeout_s = entry.timeout_ms / 1000
        self.entry = entry
        self.limits = limits
        self.max_images = max_images
        self.faces = faces

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        images = inspected(evaluation, self.max_images)
        if not images:
            return Outcome(False, 0.0, {"images": []})
        if isinstance(self.faces, FacesUnavailable):
            raise SignalError(self.faces.reason)
        reports = await asyncio.gather(*(self._inspect(evaluation, image) for image in images))
        errors = [report["error"] for report in reports if "error" in report]
        if len(errors) == len(reports):
            raise SignalError("; ".join(errors))
        matched = any(report.get("matched") for report in reports)
        return Outcome.of(matched, {"images": reports})

    async def _inspect(self, evaluation: Evaluation, image: ImagePart) -> dict[str, Any]:
        decoded = await decode(evaluation, image, self.limits)
        if isinstance(decoded, ImageError):
            reason = str(decoded)
            if not reason.startswith(f"image {image.index}"):
                reason = f"image {image.index}: {reason}"
            return {"image": image.index, "error": reason}
        report: dict[str, Any] = {
            "image": image.index,
            "format": decoded.format,
            "width": decoded.width,
            "height": decoded.height,
            "frames": decoded.frames,
            "gps": decoded.has_gps,
            "grayscale": await self._grayscale(evaluation, image, decoded),
        }
        if isinstance(self.faces, FaceCounter):
            report["faces"] = await self._count_faces(evaluation, image, decoded, self.faces)
        report["matched"] = self._satisfied(report)
        return report

    async def _grayscale(
        self, evaluation: Evaluation, image: ImagePart, decoded: DecodedImage
    ) -> bool:
        async def compute() -> bool:
            return await run_cpu(is_grayscale, decoded.image, owner=evaluation)

        return await evaluation.once(("image-grayscale", image.index), compute)

    async def _count_faces(
        self,
        evaluation: Evaluation,
        image: ImagePart,
        decoded: DecodedImage,
        counter: FaceCounter,
    ) -> int:
        async def compute() -> int:
            return await run_cpu(counter, decoded.image, owner=evaluation)

        return await evaluation.once(("image-faces", image.index), compute)

    def _satisfied(self, report: dict[str, Any]) -> bool:
        """Whether one image's report meets every condition the entry gives."""
        entry = self.entry
        width, height = report["width"], report["height"]
        bounds = (
            (entry.min_width, width, True),
            (entry.max_width, width, False),
            (entry.min_height, height, True),
            (entry.max_height, height, False),
            (entry.min_pixels, width * height, True),
            (entry.max_pixels, width * height, False),
            (entry.min_faces, report.get("faces", 0), True),
        )
        for limit, actual, is_minimum in bounds:
            if limit is not None and (actual < limit if is_minimum else actual > limit):
                return False
        flags = (
            (entry.grayscale, report["grayscale"]),
            (entry.gps, report["gps"]),
            (entry.animated, report["frames"] > 1),
            (entry.faces, report.get("faces", 0) > 0),
        )
        if any(wanted is not None and wanted != actual for wanted, actual in flags):
            return False
        return not entry.formats or report["format"] in entry.formats


def build(entry: ImageEntry, resources: Resources) -> ImageSignal:
    faces: FaceCounter | FacesUnavailable | None = None
    if entry.counts_faces:
        faces = resources.get(("haar-faces",), load_face_counter)
        if isinstance(faces, FacesUnavailable):
            log.warning("faces_unavailable", signal=f"image.{entry.name}", reason=faces.reason)
    return ImageSignal(entry, image_limits(resources), resources.config.images.max_images, faces)


FAMILY = SignalFamily(
    "image",
    ImageEntry,
    build,
    "image facts: format, size, greyscale, faces, GPS, animation",
    reads_images=True,
)
