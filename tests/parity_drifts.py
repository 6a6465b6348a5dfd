"""The known drifts of a SigLIP serving path, re-created on purpose: each must fail the
parity gate (``tests/models/test_siglip_parity.py``). They live with the tests, not in the
package: nothing in production may be able to serve them.

A peer router's vision signal inverted 82 % of a probe through three of them: a
mean+Linear+tanh pooler, pixels left in [0, 1], and a bilinear resize without
antialiasing. Two more are common: transparency dropped instead of composited, and a
CLIP-style centre crop where SigLIP squashes.
"""

from __future__ import annotations

import numpy as np
import torch
from PIL import Image

from vsr_extproc.runtime.images import DecodedImage
from vsr_extproc.runtime.parity import PRODUCTION, ServingPath
from vsr_extproc.runtime.siglip import FloatArray, SiglipEncoder


def _bicubic(encoder: SiglipEncoder, rgb: Image.Image) -> Image.Image:
    height, width = encoder.image_size
    return rgb.resize((width, height), resample=Image.Resampling.BICUBIC)


def _unnormalized_pixels(encoder: SiglipEncoder, image: DecodedImage) -> FloatArray:
    """Drift (2): rescaled to [0, 1] but never normalised with mean/std."""
    rgb = _bicubic(encoder, encoder.prepare_rgb(image))
    pixels: FloatArray = (np.asarray(rgb, dtype=np.float32) / 255.0).transpose(2, 0, 1)
    return np.ascontiguousarray(pixels)


def _bilinear_pixels(encoder: SiglipEncoder, image: DecodedImage) -> FloatArray:
    """Drift (3): a 4-tap bilinear resize without antialiasing (torch ``interpolate``)."""
    rgb = np.asarray(encoder.prepare_rgb(image), dtype=np.float32)
    tensor = torch.from_numpy(rgb).permute(2, 0, 1)[None]
    resized = torch.nn.functional.interpolate(
        tensor, size=encoder.image_size, mode="bilinear", align_corners=False, antialias=False
    )[0]
    config = encoder.preprocess_config
    mean = torch.tensor(config.image_mean, dtype=torch.float32)[:, None, None]
    std = torch.tensor(config.image_std, dtype=torch.float32)[:, None, None]
    pixels: FloatArray = ((resized * config.rescale_factor - mean) / std).numpy()
    return pixels


def _alpha_dropped_pixels(encoder: SiglipEncoder, image: DecodedImage) -> FloatArray:
    """Alpha and palette transparency discarded (``convert("RGB")``) instead of composited."""
    rgb = _bicubic(encoder, image.image.convert("RGB"))
    return encoder.normalize(np.asarray(rgb, dtype=np.uint8))


def _center_crop_pixels(encoder: SiglipEncoder, image: DecodedImage) -> FloatArray:
    """CLIP-style: shortest edge to the model size, then a centre crop — SigLIP squashes."""
    rgb = encoder.prepare_rgb(image)
    height, width = encoder.image_size
    scale = max(width / rgb.width, height / rgb.height)
    resized = rgb.resize(
        (max(width, round(rgb.width * scale)), max(height, round(rgb.height * scale))),
        resample=Image.Resampling.BICUBIC,
    )
    left, top = (resized.width - width) // 2, (resized.height - height) // 2
    cropped = resized.crop((left, top, left + width, top + height))
    return encoder.normalize(np.asarray(cropped, dtype=np.uint8))


def _mean_pooler(encoder: SiglipEncoder, batch: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Drift (1): a BERT-style pooler — mean of patch tokens → Linear → tanh — in place of the
    MAP head. The Linear is the checkpoint's own head output projection, so it *looks* loaded."""
    vision = encoder.model.vision_model
    with torch.inference_mode():
        pixel_values = torch.from_numpy(np.ascontiguousarray(batch)).to(encoder.input_dtype)
        tokens = vision(pixel_values=pixel_values).last_hidden_state
        dense = vision.head.attention.out_proj
        pooled = torch.tanh(dense(tokens.mean(dim=1).to(dense.weight.dtype))).float()
        pooled = torch.nn.functional.normalize(pooled, p=2.0, dim=-1)
        return pooled.numpy(), tokens.float().numpy()


DRIFTS: dict[str, ServingPath] = {
    "mean_pooler": ServingPath("mean_pooler", PRODUCTION.prepare, _mean_pooler),
    "unnormalized": ServingPath("unnormalized", _unnormalized_pixels, PRODUCTION.pool),
    "bilinear": ServingPath("bilinear", _bilinear_pixels, PRODUCTION.pool),
    "alpha_dropped": ServingPath("alpha_dropped", _alpha_dropped_pixels, PRODUCTION.pool),
    "center_crop": ServingPath("center_crop", _center_crop_pixels, PRODUCTION.pool),
}
