"""Parity tooling: prove the production SigLIP path equals the transformers reference.

A peer router's vision signal inverted 82 % of a probe because its serving path drifted from
the reference (a mean+Linear+tanh pooler, pixels left in [0, 1], a bilinear resize without
antialiasing). Random or real weights hide small pixel drifts behind high embedding cosines,
so parity is checked at both levels, image by image:

* **pixels** — production ``SiglipEncoder.preprocess`` vs ``SiglipImageProcessorPil``:
  max |Δ| ≤ ``PIXEL_GATE``;
* **embeddings** — production ``vision_model(...).pooler_output`` (MAP head) and its patch
  tokens vs an independently loaded fp32 ``SiglipModel.get_image_features`` (which in
  transformers 5 returns an output object: ``.pooler_output`` is the embedding and
  ``.last_hidden_state`` the patch tokens): cosine ≥ ``COSINE_GATES[precision]`` for the
  pooled embedding and for the image's mean per-token cosine. The worst single token is
  reported but not gated: under int8 a few low-norm tokens dip below the mean (0.9987 vs a
  mean of 0.9996 on the random test checkpoint) without moving the pooled embedding.

``run_parity(..., path=...)`` takes another ``ServingPath`` in place of ``PRODUCTION``:
the tests pass deliberate re-creations of each known drift (``tests/parity_drifts.py``) to
show that the gate fails on every one.
``run_probe`` measures what users feel: how often an image's top label belongs to the wrong
vertical (the inversion rate) and where the right label ranks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import torch
import yaml
from PIL import Image, ImageOps

from vsr_extproc.errors import ConfigError
from vsr_extproc.runtime.images import DecodedImage, ImageLimits, decode_image
from vsr_extproc.runtime.siglip import (
    FloatArray,
    Precision,
    SiglipEncoder,
    embed_images,
    load_siglip,
)

PIXEL_GATE = 1e-4
COSINE_GATES: dict[Precision, float] = {"fp32": 0.99999, "bf16": 0.9999, "int8": 0.999}
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})

# Offline tooling reads files the operator chose; the request-path limits still apply to
# bytes and pixels, only the format list is the corpus's.
_TOOL_LIMITS = ImageLimits()

_BATCH = 16


@dataclass(frozen=True)
class ImageParity:
    """One image's parity numbers."""

    name: str
    mode: str
    width: int
    height: int
    pixel_max_abs_diff: float
    pooled_cosine: float
    patch_cosine: float
    patch_worst_token: float


@dataclass(frozen=True)
class ParityReport:
    """Parity of one (checkpoint, precision, serving path) over a corpus, with its verdict."""

    model: str
    precision: Precision
    path: str
    images: tuple[ImageParity, ...]
    pixel_gate: float
    cosine_gate: float

    @property
    def pixel_max(self) -> float:
        return max(i.pixel_max_abs_diff for i in self.images)

    @property
    def pooled_min(self) -> float:
        return min(i.pooled_cosine for i in self.images)

    @property
    def pooled_mean(self) -> float:
        return float(np.mean([i.pooled_cosine for i in self.images]))

    @property
    def patch_min(self) -> float:
        return min(i.patch_cosine for i in self.images)

    @property
    def patch_mean(self) -> float:
        return float(np.mean([i.patch_cosine for i in self.images]))

    @property
    def worst_token(self) -> float:
        """The lowest single patch-token cosine anywhere (reported, not gated)."""
        return min(i.patch_worst_token for i in self.images)

    @property
    def pixel_ok(self) -> int:
        """Images whose preprocessing max |Δ| is within the pixel gate."""
        return sum(i.pixel_max_abs_diff <= self.pixel_gate for i in self.images)

    @property
    def pooled_ok(self) -> int:
        """Images whose pooled cosine is at or above the gate."""
        return sum(i.pooled_cosine >= self.cosine_gate for i in self.images)

    @property
    def patch_ok(self) -> int:
        """Images whose mean patch-token cosine is at or above the gate."""
        return sum(i.patch_cosine >= self.cosine_gate for i in self.images)

    @property
    def pixel_passed(self) -> bool:
        return self.pixel_ok == len(self.images)

    @property
    def pooled_passed(self) -> bool:
        return self.pooled_ok == len(self.images)

    @property
    def patch_passed(self) -> bool:
        return self.patch_ok == len(self.images)

    @property
    def passed(self) -> bool:
        return bool(self.images) and self.pixel_passed and self.pooled_passed and self.patch_passed

    @property
    def failures(self) -> list[str]:
        """One line per failed gate, naming how many images missed it."""
        total = len(self.images)
        problems = []
        if not self.images:
            problems.append("no images")
        if not self.pixel_passed:
            problems.append(
                f"preprocessing max|Δ| {self.pixel_max:.3g} > {self.pixel_gate:g} "
                f"on {total - self.pixel_ok}/{total} images"
            )
        if not self.pooled_passed:
            problems.append(
                f"pooled cosine min {self.pooled_min:.6f} < {self.cosine_gate} "
                f"on {total - self.pooled_ok}/{total} images"
            )
        if not self.patch_passed:
            problems.append(
                f"patch-token cosine (mean over tokens) min {self.patch_min:.6f} "
                f"< {self.cosine_gate} on {total - self.patch_ok}/{total} images"
            )
        return problems


@dataclass(frozen=True)
class ProbeImage:
    """Where one probe image's labels landed."""

    image: str
    vertical: str
    top_label: str
    top_vertical: str
    top_probability: float
    right_label: str
    right_rank: int
    right_probability: float

    @property
    def inverted(self) -> bool:
        """The top label belongs to another vertical than the image's own."""
        return self.top_vertical != self.vertical


@dataclass(frozen=True)
class ProbeReport:
    """Inversion rate and per-image ranks of a label probe."""

    model: str
    precision: Precision
    path: str
    label_count: int
    rows: tuple[ProbeImage, ...]

    @property
    def inverted_count(self) -> int:
        return sum(row.inverted for row in self.rows)

    @property
    def inversion_rate(self) -> float:
        return self.inverted_count / len(self.rows) if self.rows else 0.0


@dataclass(frozen=True)
class ProbeVertical:
    """A vertical of a probes file: its candidate labels and the images that belong to it."""

    name: str
    labels: tuple[str, ...]
    images: tuple[Path, ...]


# --------------------------------------------------------------------------------------------
# Production path and its deliberately broken variants


Preparer = Callable[[SiglipEncoder, DecodedImage], FloatArray]
Pooler = Callable[[SiglipEncoder, FloatArray], tuple[FloatArray, FloatArray]]


def _production_pixels(encoder: SiglipEncoder, image: DecodedImage) -> FloatArray:
    return encoder.preprocess(image)


def _production_pool(encoder: SiglipEncoder, batch: FloatArray) -> tuple[FloatArray, FloatArray]:
    return encoder.forward_with_patch_tokens(batch)


@dataclass(frozen=True)
class ServingPath:
    """How images become embeddings: their pixels, then their pooled embedding and patch
    tokens. Parity checks the production path (``PRODUCTION``); a test passes another —
    a deliberate re-creation of a known drift — to show that the gate fails on it."""

    name: str
    prepare: Preparer
    pool: Pooler


PRODUCTION = ServingPath("production", _production_pixels, _production_pool)


def _embed(
    encoder: SiglipEncoder, path: ServingPath, images: Sequence[DecodedImage]
) -> tuple[list[FloatArray], FloatArray, FloatArray]:
    """Pixels, pooled embeddings and patch tokens of ``images`` along ``path``."""
    pixels = [path.prepare(encoder, image) for image in images]
    pooled_parts, token_parts = [], []
    for start in range(0, len(pixels), _BATCH):
        pooled, tokens = path.pool(encoder, np.stack(pixels[start : start + _BATCH]))
        pooled_parts.append(pooled)
        token_parts.append(tokens)
    return pixels, np.concatenate(pooled_parts), np.concatenate(token_parts)


# --------------------------------------------------------------------------------------------
# The reference


class _Reference:
    """transformers' own path: ``SiglipImageProcessorPil`` and an fp32 ``SiglipModel``."""

    def __init__(self, model: str, apply_exif_orientation: bool) -> None:
        from transformers import SiglipImageProcessorPil, SiglipModel

        self.model: Any = cast(Any, SiglipModel).from_pretrained(model, dtype=torch.float32)
        self.model.eval()
        try:
            self.processor = SiglipImageProcessorPil.from_pretrained(model)
        except OSError:
            size = int(self.model.config.vision_config.image_size)
            self.processor = SiglipImageProcessorPil(size={"height": size, "width": size})
        self.apply_exif_orientation = apply_exif_orientation

    def pixels(self, path: Path) -> FloatArray:
        with Image.open(path) as opened:
            image = ImageOps.exif_transpose(opened) if self.apply_exif_orientation else opened
            output = self.processor(images=image, return_tensors="np")
        result: FloatArray = output["pixel_values"][0]
        return result

    def embed(self, pixels: FloatArray) -> tuple[FloatArray, FloatArray]:
        with torch.inference_mode():
            output = self.model.get_image_features(pixel_values=torch.from_numpy(pixels[None]))
            return output.pooler_output[0].numpy(), output.last_hidden_state[0].numpy()


def _cosine_rows(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> npt.NDArray[np.float64]:
    """Row-wise cosine in float64 (a 1-D pair gives a 0-d array)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    numerator = np.sum(a64 * b64, axis=-1)
    denominator = np.linalg.norm(a64, axis=-1) * np.linalg.norm(b64, axis=-1)
    cosines: npt.NDArray[np.float64] = numerator / np.maximum(denominator, 1e-30)
    return cosines


# --------------------------------------------------------------------------------------------
# Public entry points


def corpus_paths(images: str | Path | Iterable[str | Path]) -> list[Path]:
    """A directory's image files (sorted by name), or the given files in order."""
    if isinstance(images, str | Path):
        root = Path(images)
        if root.is_dir():
            return sorted(p for p in root.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        return [root]
    return [Path(p) for p in images]


def embed_images_to_file(
    model: str | Path,
    image_paths: Sequence[str | Path],
    out_npy: str | Path,
    precision: Precision = "fp32",
) -> FloatArray:
    """Save production embeddings (L2-normalised, one row per image in argument order)."""
    embeddings = embed_images(image_paths, model, precision, limits=_TOOL_LIMITS)
    np.save(Path(out_npy), embeddings)
    return embeddings


def run_parity(
    model: str | Path,
    images_dir: str | Path | Iterable[str | Path],
    precision: Precision = "fp32",
    *,
    path: ServingPath = PRODUCTION,
    apply_exif_orientation: bool = False,
) -> ParityReport:
    """Compare the production serving path (or the ``path`` a test passes) with the
    reference, image by image."""
    name = str(model)
    paths = corpus_paths(images_dir)
    encoder = load_siglip(name, precision=precision, apply_exif_orientation=apply_exif_orientation)
    reference = _Reference(name, apply_exif_orientation)
    decoded = [decode_image(path.read_bytes(), _TOOL_LIMITS) for path in paths]
    pixels, pooled, tokens = _embed(encoder, path, decoded)
    rows = []
    for index, (file, image) in enumerate(zip(paths, decoded, strict=True)):
        ref_pixels = reference.pixels(file)
        ref_pooled, ref_tokens = reference.embed(ref_pixels)
        token_cosines = _cosine_rows(tokens[index], ref_tokens)
        rows.append(
            ImageParity(
                name=file.name,
                mode=image.mode,
                width=image.width,
                height=image.height,
                pixel_max_abs_diff=float(np.max(np.abs(pixels[index] - ref_pixels))),
                pooled_cosine=float(_cosine_rows(pooled[index], ref_pooled)),
                patch_cosine=float(token_cosines.mean()),
                patch_worst_token=float(token_cosines.min()),
            )
        )
    return ParityReport(
        model=name,
        precision=precision,
        path=path.name,
        images=tuple(rows),
        pixel_gate=PIXEL_GATE,
        cosine_gate=COSINE_GATES[precision],
    )


def format_parity(report: ParityReport) -> str:
    """A readable table of ``report``, one row per image, then the verdict."""
    gate = report.cosine_gate
    lines = [
        f"SigLIP parity  model={report.model}  precision={report.precision}  path={report.path}",
        f"gates: preprocessing max|Δ| ≤ {report.pixel_gate:g}; pooled and patch cosine ≥ {gate}",
        "",
        f"{'image':<28} {'mode':<5} {'size':>10} {'max|Δ|':>9} {'pooled cos':>11} "
        f"{'patch cos':>10} {'worst tok':>10}  ok",
    ]
    for row in report.images:
        ok = (
            row.pixel_max_abs_diff <= report.pixel_gate
            and row.pooled_cosine >= gate
            and row.patch_cosine >= gate
        )
        lines.append(
            f"{row.name[:28]:<28} {row.mode:<5} {f'{row.width}x{row.height}':>10} "
            f"{row.pixel_max_abs_diff:>9.2e} {row.pooled_cosine:>11.7f} "
            f"{row.patch_cosine:>10.7f} {row.patch_worst_token:>10.7f}  "
            f"{'yes' if ok else 'NO'}"
        )
    total = len(report.images)
    if total:
        lines += [
            "",
            f"preprocessing max|Δ|: {report.pixel_max:.3g}   "
            f"({report.pixel_ok}/{total} within {report.pixel_gate:g})",
            f"pooled cosine: min {report.pooled_min:.7f}  mean {report.pooled_mean:.7f}   "
            f"({report.pooled_ok}/{total} ≥ {gate})",
            f"patch cosine:  min {report.patch_min:.7f}  mean {report.patch_mean:.7f}   "
            f"({report.patch_ok}/{total} ≥ {gate}; worst single token {report.worst_token:.7f})",
        ]
    verdict = "PASSED" if report.passed else "FAILED: " + "; ".join(report.failures)
    lines += ["", verdict]
    return "\n".join(lines)


def load_probes(probes_file: str | Path) -> list[ProbeVertical]:
    """Read a probes file (YAML or JSON).

    Shape: ``{"verticals": [{"name": ..., "labels": [...], "images": [...]}, ...]}`` or
    ``{"verticals": {name: {"labels": [...], "images": [...]}}}``; image paths are relative
    to the file.
    """
    path = Path(probes_file)
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError([f"cannot parse probes file: {exc}"], str(path)) from exc
    raw = data.get("verticals") if isinstance(data, dict) else None
    if isinstance(raw, dict):
        raw = [{"name": key, **(value or {})} for key, value in raw.items()]
    if not isinstance(raw, list) or not raw:
        raise ConfigError(["expected a non-empty 'verticals' list or mapping"], str(path))
    verticals, problems = [], []
    for index, entry in enumerate(raw):
        name = entry.get("name") if isinstance(entry, dict) else None
        labels = entry.get("labels") if isinstance(entry, dict) else None
        images = entry.get("images", []) if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            problems.append(f"verticals[{index}]: 'name' must be a non-empty string")
            continue
        if (
            not isinstance(labels, list)
            or not labels
            or not all(isinstance(label, str) for label in labels)
        ):
            problems.append(f"verticals[{index}] ({name}): 'labels' must list strings")
            continue
        if not isinstance(images, list) or not all(isinstance(i, str) for i in images):
            problems.append(f"verticals[{index}] ({name}): 'images' must list paths")
            continue
        verticals.append(
            ProbeVertical(
                name=name,
                labels=tuple(labels),
                images=tuple((path.parent / image).resolve() for image in images),
            )
        )
    if problems:
        raise ConfigError(problems, str(path))
    return verticals


def run_probe(
    model: str | Path,
    probes_file: str | Path,
    precision: Precision = "fp32",
    *,
    path: ServingPath = PRODUCTION,
) -> ProbeReport:
    """Rank every probe label for every probe image; count images whose top label is from
    another vertical (the inversion rate the peer router measured at 82 %)."""
    verticals = load_probes(probes_file)
    encoder = load_siglip(model, precision=precision)
    label_owner = [(v.name, label) for v in verticals for label in v.labels]
    text = encoder.embed_texts([label for _, label in label_owner])
    image_rows = [(v.name, file) for v in verticals for file in v.images]
    decoded = [decode_image(file.read_bytes(), _TOOL_LIMITS) for _, file in image_rows]
    pooled = _embed(encoder, path, decoded)[1] if decoded else np.zeros((0, text.shape[1]))
    probabilities = encoder.scores(pooled.astype(np.float32), text)
    rows = []
    for (vertical, file), scores in zip(image_rows, probabilities, strict=True):
        order = np.argsort(-scores, kind="stable")
        ranks = np.empty(len(order), dtype=np.int64)
        ranks[order] = np.arange(1, len(order) + 1)
        own = [i for i, (owner, _) in enumerate(label_owner) if owner == vertical]
        best = min(own, key=lambda i: ranks[i])
        top = int(order[0])
        rows.append(
            ProbeImage(
                image=file.name,
                vertical=vertical,
                top_label=label_owner[top][1],
                top_vertical=label_owner[top][0],
                top_probability=float(scores[top]),
                right_label=label_owner[best][1],
                right_rank=int(ranks[best]),
                right_probability=float(scores[best]),
            )
        )
    return ProbeReport(
        model=str(model),
        precision=precision,
        path=path.name,
        label_count=len(label_owner),
        rows=tuple(rows),
    )


def format_probe(report: ProbeReport) -> str:
    """A readable table of a probe: each image's top label and its right label's rank."""
    lines = [
        f"SigLIP probe  model={report.model}  precision={report.precision}  "
        f"path={report.path}  labels={report.label_count}",
        "",
        f"{'image':<24} {'vertical':<12} {'top label (vertical)':<44} {'p':>6} "
        f"{'right rank':>10} {'right p':>8}",
    ]
    for row in report.rows:
        top = f"{row.top_label} ({row.top_vertical})"
        mark = "  INVERTED" if row.inverted else ""
        lines.append(
            f"{row.image[:24]:<24} {row.vertical[:12]:<12} {top[:44]:<44} "
            f"{row.top_probability:>6.3f} {row.right_rank:>10} {row.right_probability:>8.3f}"
            f"{mark}"
        )
    lines += [
        "",
        f"inversion rate: {report.inversion_rate:.1%} "
        f"({report.inverted_count}/{len(report.rows)} images whose top label is another "
        "vertical's)",
    ]
    return "\n".join(lines)
