"""``modality``: how many images a request carries, of which formats, from where.

signals:
  modality:
    - name: has_image
      min_images: 1            # default 1
      max_images: null         # no upper bound
      formats: []              # count only these formats (png, jpeg, webp, gif, …)
      source: any              # any | data | remote
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from vsr_extproc.core.request import ImageSource, NormalizedRequest
from vsr_extproc.core.signals import InlineSignal, Outcome
from vsr_extproc.signals.base import Resources, SignalEntry, SignalFamily

ImageFormat = Literal["png", "jpeg", "webp", "gif", "bmp", "tiff"]


class ModalityEntry(SignalEntry):
    min_images: int = Field(default=1, ge=0, description="at least this many counted images")
    max_images: int | None = Field(default=None, ge=0, description="at most this many")
    formats: tuple[ImageFormat, ...] = Field(
        default=(), description="count only these formats (sniffed from the bytes)"
    )
    source: Literal["any", "data", "remote"] = Field(
        default="any", description="count inline (data) or linked (remote) images only"
    )

    @model_validator(mode="after")
    def _range(self) -> ModalityEntry:
        if self.max_images is not None and self.max_images < self.min_images:
            raise ValueError("max_images must be at least min_images")
        return self


class ModalitySignal(InlineSignal):
    family: ClassVar[str] = "modality"

    def __init__(self, entry: ModalityEntry) -> None:
        self.name = entry.name
        self.minimum = entry.min_images
        self.maximum = entry.max_images
        self.formats = frozenset(entry.formats)
        self.source = None if entry.source == "any" else ImageSource(entry.source)

    def evaluate_now(self, request: NormalizedRequest) -> Outcome:
        images = request.images
        if self.source is not None:
            images = tuple(image for image in images if image.source is self.source)
        formats = [image.format or "unknown" for image in images]
        counted = [name for name in formats if name in self.formats] if self.formats else formats
        count = len(counted)
        matched = count >= self.minimum and (self.maximum is None or count <= self.maximum)
        return Outcome.of(matched, {"images": count, "formats": sorted(set(formats))})


def build(entry: ModalityEntry, resources: Resources) -> ModalitySignal:
    return ModalitySignal(entry)


FAMILY = SignalFamily(
    "modality", ModalityEntry, build, "image count, image formats, remote images present"
)
