"""The images of a request, decoded once and safely, for every image signal.

Decoding is bounded (bytes, pixels from the header, allowed formats, first frame only) and
runs off the event loop. An image that cannot be decoded is an ``ImageError`` value in the
list, not an exception: the request is still decided, and the signals that needed that
image report the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vsr_extproc.core.request import ImagePart
from vsr_extproc.core.signals import Evaluation
from vsr_extproc.errors import ImageError
from vsr_extproc.signals.base import Resources, run_cpu

if TYPE_CHECKING:
    from vsr_extproc.runtime.images import DecodedImage, ImageLimits


def image_limits(resources: Resources) -> ImageLimits:
    """The configured decoding limits."""
    from vsr_extproc.runtime.images import ImageLimits

    settings = resources.config.images
    return ImageLimits(
        max_bytes=settings.max_bytes,
        max_pixels=settings.max_pixels,
        allowed_formats=frozenset(settings.formats),
    )


def inspected(evaluation: Evaluation, limit: int) -> list[ImagePart]:
    """The images a request's image signals look at: the first ``limit`` of them."""
    return list(evaluation.request.images[:limit])


async def decode(
    evaluation: Evaluation, image: ImagePart, limits: ImageLimits
) -> DecodedImage | ImageError:
    """Decode one image of the request (once per request, whoever asks)."""
    from vsr_extproc.runtime.images import decode_image

    def work() -> DecodedImage | ImageError:
        try:
            return decode_image(image.data(), limits)
        except ImageError as exc:
            return exc

    async def compute() -> DecodedImage | ImageError:
        return await run_cpu(work, owner=evaluation)

    return await evaluation.once(("decoded-image", image.index), compute)
