"""The SigLIP image/text encoder runtime: a fast preprocessing path that is pixel-identical to
transformers' reference, the vision tower ending in SigLIP's attention-probe (MAP) head, and
the text tower for label prompts.

Why this module is strict about matching the reference: a peer router's vision signal was
confidently wrong (82 % inversion) because its serving path drifted from the reference in
three small-looking ways — a mean+Linear+tanh pooler instead of the MAP head, pixels left in
[0, 1], and a 4-tap bilinear resize. ``vsr_extproc.runtime.parity`` proves this module
matches ``transformers.SiglipImageProcessorPil`` + ``SiglipModel`` and CI gates on it.

Preprocessing, step by step, and what the reference does (transformers 5.x,
``PilBackend.process_image`` → ``convert_to_rgb`` → ``resize`` → ``rescale`` → ``normalize``):

* **Colour and transparency.** When the reference is handed a PIL image, an image with an
  ``A`` band (RGBA, LA, PA) or a ``transparency`` entry in ``info`` (palette or colour-key
  transparency) is converted to RGBA and alpha-composited onto opaque white; anything else
  goes through PIL's ``convert("RGB")``. That includes PIL's own lossy conversions: CMYK
  uses PIL's naive CMYK→RGB, and 16-bit greyscale (``I;16``) is *clipped* at 255 rather
  than scaled, so most 16-bit images come out nearly white. We reproduce all of it exactly.
  (The reference's *path / URL / base64* entry point, ``load_image``, differs: it calls
  ``convert("RGB")`` first, which drops alpha without compositing, so transparent pixels
  show whatever colour they store. We follow the PIL-image entry point, the one the router
  uses, which composites onto white.)
* **EXIF orientation.** Given a PIL image the reference does **not** apply the EXIF
  Orientation tag: a phone photo stored sideways is encoded sideways. Its path / URL entry
  point (``load_image``) does apply ``ImageOps.exif_transpose``. Our default follows the
  PIL-image entry point; ``load_siglip(..., apply_exif_orientation=True)`` follows
  ``load_image`` instead (``ImageOps.exif_transpose`` before the colour conversion).
* **Resize.** ``PIL.Image.resize`` straight to the checkpoint's ``size`` (no aspect-ratio
  preservation, no crop) with the checkpoint's ``resample`` — BICUBIC for SigLIP, which in
  PIL is a separable, antialiased filter whose support widens when downscaling.
* **Rescale and normalise.** ``float32(float64(v) * rescale_factor)``, then
  ``(x - mean) / std`` in float32 with the checkpoint's ``image_mean``/``image_std``
  (0.5/0.5 for SigLIP, giving [-1, 1]). Because the input is uint8 this is a per-channel
  256-entry lookup table computed with the same operations, so the result is bit-identical.

Precisions: ``fp32`` (default; the reference), ``bf16`` (weights and activations in
bfloat16), ``int8`` (``torch.ao.quantization.quantize_dynamic`` on every ``nn.Linear``; the
MAP head's ``nn.MultiheadAttention`` keeps float weights). Thread counts are the caller's
business: nothing here calls ``torch.set_num_threads``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt
import torch
from PIL import Image, ImageOps

from vsr_extproc.errors import ModelUnavailable
from vsr_extproc.runtime.images import DecodedImage, ImageLimits, decode_image, has_alpha

Precision = Literal["fp32", "bf16", "int8"]
PRECISIONS: tuple[Precision, ...] = get_args(Precision)

FloatArray = npt.NDArray[np.float32]

_TEXT_BATCH = 64
_IMAGE_BATCH = 16


@dataclass(frozen=True)
class PreprocessConfig:
    """The checkpoint's image preprocessing, resolved once at load."""

    height: int
    width: int
    resample: Image.Resampling
    do_resize: bool
    do_rescale: bool
    rescale_factor: float
    do_normalize: bool
    image_mean: tuple[float, float, float]
    image_std: tuple[float, float, float]

    def lookup_table(self) -> FloatArray:
        """Per-channel uint8 → float32 table, computed with the reference's own arithmetic."""
        values = np.arange(256, dtype=np.uint8)
        if self.do_rescale:
            scaled = (values.astype(np.float64) * self.rescale_factor).astype(np.float32)
        else:
            scaled = values.astype(np.float32)
        table = np.empty((3, 256), dtype=np.float32)
        for channel in range(3):
            if self.do_normalize:
                mean = np.float32(self.image_mean[channel])
                std = np.float32(self.image_std[channel])
                table[channel] = (scaled - mean) / std
            else:
                table[channel] = scaled
        return table


def to_rgb(image: Image.Image) -> Image.Image:
    """Convert to RGB exactly as transformers' ``convert_to_rgb`` does for a PIL image:
    transparency (alpha band or palette/colour-key ``transparency``) is composited onto white.
    """
    if has_alpha(image):
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    if image.mode == "RGB":
        return image
    return image.convert("RGB")


class SiglipEncoder:
    """A loaded SigLIP dual encoder: ``preprocess`` (CPU, per image) → ``forward`` (batched).

    Embeddings are L2-normalised float32 rows; ``scores`` turns image × label cosines into the
    reference's sigmoid probabilities ``sigmoid(logit_scale * cos + logit_bias)``.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        preprocess_config: PreprocessConfig,
        *,
        name: str,
        precision: Precision,
        logit_scale: float,
        logit_bias: float,
        apply_exif_orientation: bool = False,
    ) -> None:
        self.name = name
        self.precision: Precision = precision
        self.preprocess_config = preprocess_config
        self.logit_scale = logit_scale
        self.logit_bias = logit_bias
        self.apply_exif_orientation = apply_exif_orientation
        self._model = model
        self._tokenizer = tokenizer
        self._table = preprocess_config.lookup_table()
        self._input_dtype = torch.bfloat16 if precision == "bf16" else torch.float32
        text_config = model.config.text_config
        self._text_max_length = min(
            int(getattr(tokenizer, "model_max_length", text_config.max_position_embeddings)),
            int(text_config.max_position_embeddings),
        )
        self.embedding_dim = int(model.config.vision_config.hidden_size)

    @property
    def model(self) -> Any:
        """The underlying ``SiglipModel`` (for tooling; serving uses ``forward``)."""
        return self._model

    @property
    def input_dtype(self) -> torch.dtype:
        """The dtype ``forward`` feeds the vision tower (bfloat16 for ``bf16``)."""
        return self._input_dtype

    @property
    def image_size(self) -> tuple[int, int]:
        """The model's input (height, width)."""
        return self.preprocess_config.height, self.preprocess_config.width

    def preprocess(self, image: DecodedImage | Image.Image) -> FloatArray:
        """One image → a (3, H, W) float32 array identical to the reference processor's."""
        rgb = self.prepare_rgb(image)
        config = self.preprocess_config
        if config.do_resize and rgb.size != (config.width, config.height):
            rgb = rgb.resize((config.width, config.height), resample=config.resample)
        return self.normalize(np.asarray(rgb, dtype=np.uint8))

    def prepare_rgb(self, image: DecodedImage | Image.Image) -> Image.Image:
        """The reference's colour step (plus EXIF orientation when this encoder applies it)."""
        pil = image.image if isinstance(image, DecodedImage) else image
        if self.apply_exif_orientation:
            pil = ImageOps.exif_transpose(pil)
        return to_rgb(pil)

    def normalize(self, pixels: npt.NDArray[np.uint8]) -> FloatArray:
        """(H, W, 3) uint8 → (3, H, W) float32 after the checkpoint's rescale and normalise."""
        out = np.empty((3, pixels.shape[0], pixels.shape[1]), dtype=np.float32)
        for channel in range(3):
            np.take(self._table[channel], pixels[:, :, channel], out=out[channel], mode="clip")
        return out

    def forward(self, batch: FloatArray) -> FloatArray:
        """(N, 3, H, W) pixels → (N, D) L2-normalised embeddings from the MAP head."""
        pooled, _ = self._run_vision(batch)
        return pooled

    def forward_with_patch_tokens(self, batch: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Like ``forward``, plus the vision tower's ``last_hidden_state`` (N, P, D) for parity."""
        return self._run_vision(batch)

    def embed_texts(self, labels: Sequence[str]) -> FloatArray:
        """Label prompts → (N, D) L2-normalised text embeddings (run once per policy compile).

        Tokenised with ``padding="max_length"``, as SigLIP was trained: its text tower pools
        the *last* position, so the padding length changes the embedding.
        """
        if not labels:
            return np.zeros((0, self.embedding_dim), dtype=np.float32)
        rows = [
            self._run_text(list(labels[start : start + _TEXT_BATCH]))
            for start in range(0, len(labels), _TEXT_BATCH)
        ]
        return np.concatenate(rows, axis=0)

    def scores(self, image_embeddings: FloatArray, text_embeddings: FloatArray) -> FloatArray:
        """Sigmoid probabilities (N images × M labels), as the reference ``logits_per_image``."""
        logits = self.logit_scale * (image_embeddings @ text_embeddings.T) + self.logit_bias
        probabilities: FloatArray = (1.0 / (1.0 + np.exp(-logits))).astype(np.float32)
        return probabilities

    @torch.inference_mode()
    def _run_vision(self, batch: FloatArray) -> tuple[FloatArray, FloatArray]:
        pixel_values = torch.from_numpy(np.ascontiguousarray(batch)).to(self._input_dtype)
        output = self._model.vision_model(pixel_values=pixel_values)
        pooled = output.pooler_output.float()
        pooled = torch.nn.functional.normalize(pooled, p=2.0, dim=-1)
        tokens = output.last_hidden_state.float()
        pooled_rows: FloatArray = pooled.numpy()
        token_rows: FloatArray = tokens.numpy()
        return pooled_rows, token_rows

    @torch.inference_mode()
    def _run_text(self, labels: list[str]) -> FloatArray:
        encoded = self._tokenizer(
            labels,
            padding="max_length",
            max_length=self._text_max_length,
            truncation=True,
            return_tensors="pt",
        )
        accepted = ("input_ids", "attention_mask", "position_ids")
        inputs = {key: value for key, value in encoded.items() if key in accepted}
        output = self._model.text_model(**inputs)
        pooled = torch.nn.functional.normalize(output.pooler_output.float(), p=2.0, dim=-1)
        result: FloatArray = pooled.numpy()
        return result


def load_siglip(
    model: str | Path,
    *,
    precision: Precision = "fp32",
    apply_exif_orientation: bool = False,
) -> SiglipEncoder:
    """Load a SigLIP checkpoint (a local directory or a hub id) for serving.

    Fixed-resolution SigLIP2 checkpoints whose config says ``model_type: siglip`` load too.
    Raises ``ModelUnavailable`` naming the checkpoint when it cannot be found (e.g. offline
    with an empty cache), is not a SigLIP dual encoder, lacks weights (transformers would
    fill them randomly and only log it), or needs preprocessing this runtime does not
    implement.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    from transformers import AutoConfig, AutoTokenizer, SiglipModel
    from transformers.utils import logging as transformers_logging

    # no "Loading weights" bar on stderr; downloads keep huggingface_hub's progress bar
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]

    name = str(model)
    config = _from_pretrained(name, "config", AutoConfig.from_pretrained, name)
    if getattr(config, "model_type", None) != "siglip":
        raise ModelUnavailable(
            f"checkpoint {name!r} has model_type {getattr(config, 'model_type', None)!r}; "
            "expected a SigLIP dual encoder (model_type 'siglip'; fixed-resolution SigLIP2 "
            "checkpoints qualify, NaFlex 'siglip2' ones do not)"
        )
    siglip, loading = _from_pretrained(
        name,
        "weights",
        SiglipModel.from_pretrained,
        name,
        config=config,
        dtype=torch.float32,
        output_loading_info=True,
    )
    # transformers fills absent weights with random ones and only logs it: a serving path
    # that is confidently wrong, which is exactly what this runtime exists to prevent.
    absent = sorted(
        {str(key) for key in loading.get("missing_keys", ())}
        | {str(key) for key in loading.get("mismatched_keys", ())}
    )
    if absent:
        shown = ", ".join(absent[:5])
        raise ModelUnavailable(
            f"SigLIP checkpoint {name!r} lacks {len(absent)} weights the model needs "
            f"(e.g. {shown}); refusing to serve randomly initialised layers"
        )
    tokenizer = _from_pretrained(name, "tokenizer", AutoTokenizer.from_pretrained, name)
    preprocess_config = _load_preprocess_config(name, config)
    siglip.eval()
    siglip.requires_grad_(False)
    logit_scale = math.exp(float(siglip.logit_scale.detach().float().item()))
    logit_bias = float(siglip.logit_bias.detach().float().item())
    siglip = _apply_precision(siglip, precision)
    return SiglipEncoder(
        siglip,
        tokenizer,
        preprocess_config,
        name=name,
        precision=precision,
        logit_scale=logit_scale,
        logit_bias=logit_bias,
        apply_exif_orientation=apply_exif_orientation,
    )


def embed_images(
    paths: Sequence[str | Path],
    model_dir: str | Path | SiglipEncoder,
    precision: Precision = "fp32",
    *,
    limits: ImageLimits | None = None,
) -> FloatArray:
    """Embed image files in argument order → (N, D) L2-normalised rows (offline tooling)."""
    encoder = (
        model_dir
        if isinstance(model_dir, SiglipEncoder)
        else load_siglip(model_dir, precision=precision)
    )
    pixels = [encoder.preprocess(decode_image(Path(p).read_bytes(), limits)) for p in paths]
    if not pixels:
        return np.zeros((0, encoder.embedding_dim), dtype=np.float32)
    rows = [
        encoder.forward(np.stack(pixels[start : start + _IMAGE_BATCH]))
        for start in range(0, len(pixels), _IMAGE_BATCH)
    ]
    return np.concatenate(rows, axis=0)


def _from_pretrained(name: str, what: str, loader: Any, *args: Any, **kwargs: Any) -> Any:
    """Call a ``from_pretrained`` and translate "not found / offline" into ModelUnavailable."""
    try:
        return loader(*args, **kwargs)
    except (OSError, ValueError, KeyError) as exc:
        hint = ""
        if not Path(name).exists():
            hint = (
                " It is not a local directory; as a hub id it must be downloadable or already "
                "in the Hugging Face cache (HF_HUB_OFFLINE=1 or no network allows the cache only)."
            )
        raise ModelUnavailable(
            f"SigLIP checkpoint {name!r} is unavailable: could not load its {what}.{hint} "
            f"Cause: {type(exc).__name__}: {exc}"
        ) from exc


def _load_preprocess_config(name: str, config: Any) -> PreprocessConfig:
    """Resolve the preprocessing the reference would use for this checkpoint.

    The checkpoint's ``preprocessor_config.json`` is read through the reference class itself,
    so defaults resolve identically; without that file the vision config's ``image_size``
    with SigLIP's defaults is used.
    """
    from transformers import SiglipImageProcessorPil

    image_size = int(config.vision_config.image_size)
    try:
        processor = SiglipImageProcessorPil.from_pretrained(name)
    except OSError:
        processor = SiglipImageProcessorPil(size={"height": image_size, "width": image_size})
    size = processor.size
    height, width = getattr(size, "height", None), getattr(size, "width", None)
    unsupported = [flag for flag in ("do_center_crop", "do_pad") if getattr(processor, flag, None)]
    if height is None or width is None or unsupported:
        raise ModelUnavailable(
            f"SigLIP checkpoint {name!r} asks for preprocessing this runtime does not implement "
            f"(size={size}, flags={unsupported}); only a fixed height×width resize is supported"
        )
    if (height, width) != (image_size, image_size):
        raise ModelUnavailable(
            f"SigLIP checkpoint {name!r}: preprocessor size {height}x{width} does not match "
            f"the vision tower's image_size {image_size}"
        )
    return PreprocessConfig(
        height=int(height),
        width=int(width),
        resample=Image.Resampling(int(processor.resample)),
        do_resize=bool(processor.do_resize),
        do_rescale=bool(processor.do_rescale),
        rescale_factor=float(processor.rescale_factor),
        do_normalize=bool(processor.do_normalize),
        image_mean=_three(processor.image_mean),
        image_std=_three(processor.image_std),
    )


def _three(value: float | Sequence[float]) -> tuple[float, float, float]:
    if isinstance(value, int | float):
        return float(value), float(value), float(value)
    first, second, third = (float(v) for v in value)
    return first, second, third


def _apply_precision(model: Any, precision: Precision) -> Any:
    if precision == "fp32":
        return model.float()
    if precision == "bf16":
        return model.to(torch.bfloat16)
    with warnings.catch_warnings():
        # torch.ao.quantization is deprecated in favour of torchao, which is not a dependency;
        # the eager dynamic-quantisation API still works in torch 2.13 and is what we measure.
        warnings.filterwarnings(
            "ignore", message=r"torch\.ao\.quantization is deprecated", category=DeprecationWarning
        )
        warnings.filterwarnings(
            "ignore", message=r"torch\.quantize_per_tensor.*deprecated", category=UserWarning
        )
        quantize: Any = torch.ao.quantization.quantize_dynamic  # untyped in torch
        return quantize(model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)
