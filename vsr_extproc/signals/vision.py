"""``vision``: what an image shows, by SigLIP zero-shot against labels from the config.

    vision:
      model: google/siglip-base-patch16-224    # or a local directory
    signals:
      vision:
        - name: chest_xray
          labels: ["a chest x-ray", "a medical scan"]
          templates: ["a photo of {}.", "{}"]      # each label's prompts, averaged
          threshold: 0.1                          # SigLIP's sigmoid probability
        - name: medical_image
          labels: ["an x-ray", "an MRI scan", "a CT scan", "a microscope slide"]
          others: ["a photo of a car", "a screenshot", "a document", "a landscape"]
          mode: softmax                           # probability within labels + others
          threshold: 0.5
        - name: looks_like_code
          labels: ["a screenshot of source code"]
          others: ["a document", "a photo"]
          require_top: true                       # best of all listed labels

``sigmoid`` mode scores each label on its own with the checkpoint's logit scale and bias
(``sigmoid(scale·cos + bias)``, exactly the reference ``logits_per_image``); an image
matches when its best label reaches the threshold. ``softmax`` mode normalises over
``labels`` + ``others`` and sums the probability of ``labels``: "medical or not". The
request matches when any inspected image matches (``aggregate: all`` for every image).

Label texts are embedded once per compile. Each image is embedded once per request, shared
by every vision signal, and cached by content across requests (a chat resends its images).
Without a checkpoint — none configured, or one that cannot load offline — vision signals
report that as their error, and each rule's ``on_error`` decides; the router still serves.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import structlog
from pydantic import Field, model_validator

from vsr_extproc.core.signals import AsyncSignal, Evaluation, Outcome
from vsr_extproc.errors import ImageError, ModelUnavailable, SignalError
from vsr_extproc.runtime.cache import LruCache
from vsr_extproc.signals.base import AsyncSignalEntry, Resources, SignalFamily
from vsr_extproc.signals.images import decode, image_limits, inspected

if TYPE_CHECKING:
    from vsr_extproc.core.request import ImagePart
    from vsr_extproc.runtime.batcher import MicroBatcher
    from vsr_extproc.runtime.images import DecodedImage, ImageLimits
    from vsr_extproc.runtime.siglip import FloatArray, SiglipEncoder

log = structlog.get_logger("vsr_extproc.vision")


class VisionEntry(AsyncSignalEntry):
    labels: tuple[str, ...] = Field(min_length=1, description="labels that make it match")
    others: tuple[str, ...] = Field(
        default=(), description="competing labels (softmax mode normalises over both)"
    )
    templates: tuple[str, ...] = Field(
        default=("a photo of {}.",), min_length=1, description="prompt templates with {}"
    )
    mode: Literal["sigmoid", "softmax"] = Field(
        default="sigmoid", description="sigmoid: each label alone; softmax: within the group"
    )
    threshold: float = Field(default=0.5, ge=0, le=1, description="probability needed")
    require_top: bool = Field(
        default=False,
        description="also require the image's best label over labels + others to be a label",
    )
    aggregate: Literal["any", "all"] = Field(
        default="any", description="any inspected image matches, or all of them"
    )
    timeout_ms: int = Field(default=3000, gt=0, le=120_000, description="time budget")

    @model_validator(mode="after")
    def _shape(self) -> VisionEntry:
        if any("{}" not in template for template in self.templates):
            raise ValueError("every template needs a {} for the label")
        if self.mode == "softmax" and not self.others:
            raise ValueError("softmax mode needs others: labels the image is weighed against")
        return self


class VisionRuntime:
    """A loaded SigLIP encoder behind a micro-batcher, with a content cache of embeddings."""

    def __init__(self, encoder: SiglipEncoder, settings: Any, cache_size: int = 256) -> None:
        from vsr_extproc.runtime.batcher import MicroBatcher

        self.encoder = encoder
        self.batcher: MicroBatcher[DecodedImage, FloatArray] = MicroBatcher(
            self._run, max_batch=settings.max_batch, max_wait_ms=settings.max_wait_ms
        )
        self._cache: LruCache[str, FloatArray] = LruCache(cache_size)

    def _run(self, images: list[DecodedImage]) -> list[FloatArray]:
        pixels = np.stack([self.encoder.preprocess(image) for image in images])
        return list(self.encoder.forward(pixels))

    async def embed(self, key: str, image: DecodedImage, owner: Hashable) -> FloatArray:
        """The image's embedding, queued for ``owner`` (its request) when not cached."""
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        vector = await self.batcher.submit(image, owner=owner)
        self._cache.put(key, vector)
        return vector

    def close(self) -> None:
        # the batcher's worker belongs to an event loop; dropping it is enough here
        self._cache.clear()


@dataclass(frozen=True)
class Unavailable:
    """Stands in for the runtime when no checkpoint could be loaded."""

    reason: str


def load_runtime(resources: Resources) -> VisionRuntime | Unavailable:
    settings = resources.config.vision
    if settings.model is None:
        return Unavailable(
            "no SigLIP checkpoint is configured (vision.model); vision signals cannot see "
            "images, so their rules' on_error applies"
        )

    def make() -> VisionRuntime | Unavailable:
        from vsr_extproc.runtime.siglip import load_siglip

        try:
            encoder = load_siglip(
                settings.model,
                precision=settings.precision,
                apply_exif_orientation=settings.apply_exif_orientation,
            )
        except ModelUnavailable as exc:
            reason = (
                f"{exc} — vision signals report this error and their rules' on_error "
                "applies; OCR, image metadata and text signals keep working"
            )
            log.warning("vision_unavailable", checkpoint=settings.model, reason=str(exc))
            return Unavailable(reason)
        return VisionRuntime(encoder, settings)

    runtime: VisionRuntime | Unavailable = resources.get(
        ("siglip", settings.model, settings.precision, settings.apply_exif_orientation),
        make,
        runtime=("vision", str(settings.model)),
    )
    return runtime


@dataclass(frozen=True)
class LabelSet:
    """An entry's label prompts, embedded once per compile."""

    names: tuple[str, ...]
    embeddings: FloatArray  # one row per name (templates averaged, re-normalised)
    matching: int  # the first ``matching`` names are the entry's ``labels``

    @classmethod
    def build(cls, encoder: SiglipEncoder, entry: VisionEntry) -> LabelSet:
        names = (*entry.labels, *entry.others)
        prompts = [template.format(name) for name in names for template in entry.templates]
        vectors = encoder.embed_texts(prompts).reshape(len(names), len(entry.templates), -1)
        mean = vectors.mean(axis=1)
        mean /= np.linalg.norm(mean, axis=1, keepdims=True)
        return cls(names, mean.astype(np.float32), len(entry.labels))


class VisionSignal(AsyncSignal):
    family: ClassVar[str] = "vision"

    def __init__(
        self,
        entry: VisionEntry,
        runtime: VisionRuntime | Unavailable,
        labels: LabelSet | None,
        limits: ImageLimits,
        max_images: int,
    ) -> None:
        self.name = entry.name
        self.timeout_s = entry.timeout_ms / 1000
        self.mode = entry.mode
        self.threshold = entry.threshold
        self.require_top = entry.require_top
        self.every = entry.aggregate == "all"
        self.runtime = runtime
        self.labels = labels
        self.limits = limits
        self.max_images = max_images

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        images = inspected(evaluation, self.max_images)
        if not images:
            return Outcome(False, 0.0, {"images": 0})
        if isinstance(self.runtime, Unavailable) or self.labels is None:
            reason = self.runtime.reason if isinstance(self.runtime, Unavailable) else ""
            raise SignalError(reason)
        runtime = self.runtime
        embedded = await asyncio.gather(
            *(self._embedding(evaluation, runtime, image) for image in images)
        )
        per_image: list[dict[str, Any]] = []
        for image, vector in zip(images, embedded, strict=True):
            if isinstance(vector, ImageError):
                per_image.append({"image": image.index, "error": str(vector)})
                continue
            per_image.append({"image": image.index, **self._score(runtime, vector)})
        scored = [row for row in per_image if "score" in row]
        if not scored:
            raise SignalError("; ".join(row["error"] for row in per_image))
        matches = [
            row["score"] >= self.threshold and (row["top_is_label"] or not self.require_top)
            for row in scored
        ]
        matched = all(matches) if self.every else any(matches)
        confidence = (min if self.every else max)(row["score"] for row in scored)
        return Outcome(matched, float(confidence), {"images": per_image})

    async def _embedding(
        self, evaluation: Evaluation, runtime: VisionRuntime, image: ImagePart
    ) -> FloatArray | ImageError:
        decoded = await decode(evaluation, image, self.limits)
        if isinstance(decoded, ImageError):
            return decoded

        digest = hashlib.blake2b(image.data(), digest_size=16).hexdigest()

        async def compute() -> FloatArray:
            return await runtime.embed(digest, decoded, evaluation)

        # keyed by content: the same image twice in one request is embedded once
        vector: FloatArray = await evaluation.once(("siglip", digest), compute)
        return vector

    def _score(self, runtime: VisionRuntime, vector: FloatArray) -> dict[str, Any]:
        assert self.labels is not None
        cosines = self.labels.embeddings @ vector
        logits = runtime.encoder.logit_scale * cosines + runtime.encoder.logit_bias
        if self.mode == "sigmoid":
            probabilities = 1.0 / (1.0 + np.exp(-logits))
            best = int(np.argmax(probabilities[: self.labels.matching]))
            score = float(probabilities[best])
        else:
            shifted = np.exp(logits - logits.max())
            probabilities = shifted / shifted.sum()
            best = int(np.argmax(probabilities[: self.labels.matching]))
            score = float(probabilities[: self.labels.matching].sum())
        top = int(np.argmax(probabilities))
        return {
            "score": round(score, 4),
            "best_label": self.labels.names[best],
            "top_label": self.labels.names[top],
            "top_is_label": top < self.labels.matching,
        }


def build(entry: VisionEntry, resources: Resources) -> VisionSignal:
    runtime = load_runtime(resources)
    labels = None
    if isinstance(runtime, VisionRuntime):
        encoder = runtime.encoder
        labels = resources.get(
            ("siglip-labels", id(encoder), entry), lambda: LabelSet.build(encoder, entry)
        )
    settings = resources.config.images
    return VisionSignal(entry, runtime, labels, image_limits(resources), settings.max_images)


FAMILY = SignalFamily(
    "vision", VisionEntry, build, "what an image shows (SigLIP zero-shot)", reads_images=True
)
