"""The SigLIP serving path equals the transformers reference — the CI gate against drift.

A peer router's vision signal inverted 82 % of a probe because its serving path had a
mean+Linear+tanh pooler, un-normalised pixels and a bilinear resize. These tests hold the
production path to the reference at the pixel level *and* the embedding level on a corpus of
awkward images, and show that the same gate fails on each of those drifts — random weights
compress small pixel drifts into high cosines, so the pixel gate is what catches resize bugs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
import torch
from parity_drifts import DRIFTS
from PIL import Image
from transformers import AutoTokenizer, SiglipImageProcessorPil, SiglipModel

from vsr_extproc.errors import ConfigError, ModelUnavailable
from vsr_extproc.runtime.images import decode_image
from vsr_extproc.runtime.parity import (
    COSINE_GATES,
    PIXEL_GATE,
    corpus_paths,
    embed_images_to_file,
    format_parity,
    format_probe,
    run_parity,
    run_probe,
)
from vsr_extproc.runtime.siglip import SiglipEncoder, load_siglip

pytestmark = pytest.mark.models

LABELS = [
    "a photo of a cat",
    "a chest x-ray",
    "a screenshot of source code",
    "a passport identity card",
    "a photo of a car",
]


def _reference_model(directory: Path) -> Any:
    """The reference SiglipModel in fp32 and eval mode (untyped in transformers)."""
    model: Any = cast(Any, SiglipModel).from_pretrained(directory, dtype=torch.float32)
    model.eval()
    return model


@pytest.fixture(scope="module")
def encoder(tiny_siglip_dir: Path) -> SiglipEncoder:
    return load_siglip(tiny_siglip_dir)


@pytest.fixture(scope="module")
def reference_processor(tiny_siglip_dir: Path) -> SiglipImageProcessorPil:
    return SiglipImageProcessorPil.from_pretrained(tiny_siglip_dir)


CORPUS_FILES = corpus_paths(Path(__file__).resolve().parent.parent / "data" / "parity")


def test_the_test_checkpoint_loads_like_a_hub_checkpoint_offline(tiny_siglip_dir: Path) -> None:
    from transformers import AutoConfig, AutoProcessor

    assert AutoConfig.from_pretrained(tiny_siglip_dir).model_type == "siglip"
    processor = AutoProcessor.from_pretrained(tiny_siglip_dir)
    assert type(processor).__name__ == "SiglipProcessor"
    tokenizer = AutoTokenizer.from_pretrained(tiny_siglip_dir)
    ids = tokenizer(["a photo of a cat"])["input_ids"][0]
    assert ids[-1] == tokenizer.convert_tokens_to_ids("</s>")  # SigLIP-style trailing EOS


def test_corpus_covers_every_preprocessing_branch() -> None:
    decoded = {path.name: decode_image(path.read_bytes()) for path in CORPUS_FILES}
    modes = {image.mode for image in decoded.values()}
    formats = {image.format for image in decoded.values()}
    assert len(decoded) >= 20
    assert {"RGBA", "P", "LA", "L", "I;16", "CMYK", "1", "RGB"} <= modes
    assert formats == {"png", "jpeg", "gif", "webp"}
    assert any(image.mode == "P" and image.has_alpha for image in decoded.values())
    assert any(image.mode == "RGB" and image.has_alpha for image in decoded.values())
    assert any(image.exif_orientation == 6 for image in decoded.values())
    assert any(image.frames > 1 for image in decoded.values())
    assert any(image.width * image.height < 64 for image in decoded.values())
    assert any(image.width / image.height >= 20 for image in decoded.values())
    assert any(image.height / image.width >= 20 for image in decoded.values())
    assert any(image.width * image.height >= 1_500_000 for image in decoded.values())
    assert sum(path.stat().st_size for path in CORPUS_FILES) < 3_000_000


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_preprocessing_is_pixel_identical_to_reference(
    path: Path, encoder: SiglipEncoder, reference_processor: SiglipImageProcessorPil
) -> None:
    production = encoder.preprocess(decode_image(path.read_bytes()))
    with Image.open(path) as image:
        reference = reference_processor(images=image, return_tensors="np")["pixel_values"]
    assert production.shape == reference.shape[1:]
    assert production.dtype == np.float32
    assert float(np.abs(production - reference[0]).max()) <= PIXEL_GATE


@pytest.mark.parametrize("precision", ["fp32", "bf16", "int8"])
def test_production_path_passes_the_parity_gate(
    precision: str, tiny_siglip_dir: Path, parity_corpus: Path
) -> None:
    report = run_parity(tiny_siglip_dir, parity_corpus, precision)  # type: ignore[arg-type]
    table = format_parity(report)
    assert report.passed, table
    assert len(report.images) == len(CORPUS_FILES)
    assert report.pixel_max <= PIXEL_GATE
    assert report.pooled_min >= COSINE_GATES[precision]  # type: ignore[index]
    assert report.patch_min >= COSINE_GATES[precision]  # type: ignore[index]
    assert table.rstrip().endswith("PASSED")


def test_production_path_passes_at_224(tiny_siglip_224_dir: Path, parity_corpus: Path) -> None:
    report = run_parity(tiny_siglip_224_dir, parity_corpus, "fp32")
    assert report.passed, format_parity(report)


def _failing(report_images: tuple[object, ...], attribute: str, gate: float) -> set[str]:
    names = set()
    for row in report_images:
        value = getattr(row, attribute)
        too_far = value > gate if attribute == "pixel_max_abs_diff" else value < gate
        if too_far:
            names.add(row.name)  # type: ignore[attr-defined]
    return names


@pytest.mark.parametrize("variant", sorted(DRIFTS))
def test_every_known_drift_fails_the_gate(
    variant: str, tiny_siglip_dir: Path, parity_corpus: Path
) -> None:
    report = run_parity(tiny_siglip_dir, parity_corpus, "fp32", path=DRIFTS[variant])
    assert report.path == variant
    table = format_parity(report)
    assert not report.passed, table
    assert "FAILED" in table
    decoded = {path.name: decode_image(path.read_bytes()) for path in CORPUS_FILES}
    pixel_failures = _failing(report.images, "pixel_max_abs_diff", PIXEL_GATE)
    pooled_failures = _failing(report.images, "pooled_cosine", report.cosine_gate)

    if variant == "mean_pooler":
        # Right pixels, right tokens, wrong pooling: only the pooled embedding can tell.
        assert report.pixel_passed
        assert report.patch_passed
        assert pooled_failures == set(decoded)
        assert report.pooled_min < 0.9
    elif variant == "unnormalized":
        assert pixel_failures == set(decoded)
        assert pooled_failures == set(decoded)
    elif variant == "bilinear":
        resized = {n for n, image in decoded.items() if (image.width, image.height) != (64, 64)}
        assert pixel_failures == resized
        # Random weights hide part of it at the embedding level; the pixel gate does not.
        assert pooled_failures
        assert not report.pooled_passed
    elif variant == "alpha_dropped":
        transparent = {name for name, image in decoded.items() if image.has_alpha}
        assert len(transparent) >= 5
        assert pixel_failures == transparent
        assert pooled_failures <= transparent
        assert pooled_failures
    elif variant == "center_crop":
        non_square = {name for name, image in decoded.items() if image.width != image.height}
        assert pixel_failures == non_square
        assert pooled_failures <= non_square
        assert pooled_failures
    else:  # pragma: no cover - a new control needs its own expectations
        pytest.fail(f"no expectation for negative control {variant}")


def test_probabilities_equal_the_reference_logits(
    tiny_siglip_dir: Path, encoder: SiglipEncoder, reference_processor: SiglipImageProcessorPil
) -> None:
    paths = [p for p in CORPUS_FILES if p.stem in {"rgba_shapes", "code_screenshot", "cmyk"}]
    images = [decode_image(path.read_bytes()).image for path in paths]
    model = _reference_model(tiny_siglip_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_siglip_dir)
    text = tokenizer(LABELS, padding="max_length", return_tensors="pt")
    pixels = reference_processor(images=images, return_tensors="pt")["pixel_values"]
    with torch.inference_mode():
        logits = model(**text, pixel_values=pixels).logits_per_image
    reference = torch.sigmoid(logits).numpy()

    batch = np.stack([encoder.preprocess(decode_image(p.read_bytes())) for p in paths])
    production = encoder.scores(encoder.forward(batch), encoder.embed_texts(LABELS))

    assert production.shape == (len(paths), len(LABELS))
    assert float(np.abs(production - reference).max()) <= 1e-5
    assert production.argmax(axis=1).tolist() == reference.argmax(axis=1).tolist()
    # The probabilities are spread out, so the comparison above is not trivially near 0 or 1.
    assert reference.min() < 0.45 < 0.55 < reference.max()


def test_logit_scale_and_bias_come_from_the_checkpoint(
    tiny_siglip_dir: Path, encoder: SiglipEncoder
) -> None:
    model = _reference_model(tiny_siglip_dir)
    assert encoder.logit_scale == pytest.approx(math.exp(model.logit_scale.item()), rel=1e-6)
    assert encoder.logit_bias == pytest.approx(model.logit_bias.item(), abs=1e-6)
    assert encoder.logit_scale == pytest.approx(10.0, rel=1e-5)  # what the fixture saved


def test_embeddings_are_unit_rows_from_the_map_head(
    encoder: SiglipEncoder, parity_corpus: Path
) -> None:
    batch = np.stack([encoder.preprocess(decode_image(p.read_bytes())) for p in CORPUS_FILES[:4]])
    pooled, tokens = encoder.forward_with_patch_tokens(batch)
    with torch.inference_mode():
        head = encoder.model.vision_model.head(torch.from_numpy(tokens)).numpy()
    expected = head / np.linalg.norm(head, axis=1, keepdims=True)
    assert pooled.shape == (4, encoder.embedding_dim)
    assert tokens.shape == (4, 16, encoder.embedding_dim)
    np.testing.assert_allclose(np.linalg.norm(pooled, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(pooled, expected, atol=1e-5)
    np.testing.assert_allclose(encoder.forward(batch), pooled, atol=1e-6)


def test_text_embeddings_equal_the_reference(tiny_siglip_dir: Path, encoder: SiglipEncoder) -> None:
    model = _reference_model(tiny_siglip_dir)
    tokens = AutoTokenizer.from_pretrained(tiny_siglip_dir)(
        LABELS, padding="max_length", return_tensors="pt"
    )
    with torch.inference_mode():
        reference = model.get_text_features(**tokens).pooler_output
    reference = torch.nn.functional.normalize(reference, dim=-1).numpy()
    np.testing.assert_allclose(encoder.embed_texts(LABELS), reference, atol=1e-5)
    assert encoder.embed_texts([]).shape == (0, encoder.embedding_dim)


def test_exif_orientation_follows_the_chosen_reference_entry_point(
    tiny_siglip_dir: Path, reference_processor: SiglipImageProcessorPil, parity_corpus: Path
) -> None:
    path = parity_corpus / "exif_rotated_6.jpg"
    decoded = decode_image(path.read_bytes())
    assert decoded.exif_orientation == 6
    assert (decoded.width, decoded.height) == (320, 200)
    as_stored = load_siglip(tiny_siglip_dir).preprocess(decoded)
    upright = load_siglip(tiny_siglip_dir, apply_exif_orientation=True).preprocess(decoded)
    # PIL-image entry point: orientation ignored. Path entry point (load_image): applied.
    from_pil = reference_processor(images=decoded.image, return_tensors="np")["pixel_values"]
    # A path string takes the reference through load_image (exif_transpose + convert("RGB")).
    from_path = reference_processor(images=str(path), return_tensors="np")["pixel_values"]  # type: ignore[arg-type]
    assert np.abs(as_stored - from_pil[0]).max() <= PIXEL_GATE
    assert np.abs(upright - from_path[0]).max() <= PIXEL_GATE
    assert np.abs(as_stored - upright).max() > 0.5
    report = run_parity(tiny_siglip_dir, [path], "fp32", apply_exif_orientation=True)
    assert report.passed, format_parity(report)


def test_missing_hub_checkpoint_offline_names_the_checkpoint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.chdir(tmp_path)
    checkpoint = "vsr-tests/siglip-that-does-not-exist"
    with pytest.raises(ModelUnavailable) as raised:
        load_siglip(checkpoint)
    message = str(raised.value)
    assert checkpoint in message
    assert "HF_HUB_OFFLINE" in message
    assert "cache" in message


def test_a_checkpoint_that_is_not_siglip_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(ModelUnavailable, match="model_type 'bert'"):
        load_siglip(tmp_path)


def test_a_checkpoint_missing_weights_is_refused_not_randomly_filled(
    tiny_siglip_dir: Path, tmp_path: Path
) -> None:
    from safetensors.torch import load_file, save_file

    for item in tiny_siglip_dir.iterdir():
        (tmp_path / item.name).write_bytes(item.read_bytes())
    weights = load_file(tiny_siglip_dir / "model.safetensors")
    del weights["vision_model.head.probe"]
    save_file(weights, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ModelUnavailable, match=r"lacks 1 weights .*vision_model\.head\.probe"):
        load_siglip(tmp_path)


def test_unknown_precision_is_a_programming_error(tiny_siglip_dir: Path) -> None:
    with pytest.raises(ValueError, match="precision"):
        load_siglip(tiny_siglip_dir, precision="fp16")  # type: ignore[arg-type]


def test_embed_images_to_file_keeps_argument_order(
    tiny_siglip_dir: Path, encoder: SiglipEncoder, tmp_path: Path
) -> None:
    paths = [CORPUS_FILES[3], CORPUS_FILES[0], CORPUS_FILES[7]]
    out = tmp_path / "embeddings.npy"
    returned = embed_images_to_file(tiny_siglip_dir, paths, out)
    saved = np.load(out)
    np.testing.assert_array_equal(saved, returned)
    assert saved.shape == (3, encoder.embedding_dim)
    np.testing.assert_allclose(np.linalg.norm(saved, axis=1), 1.0, rtol=1e-5)
    for row, path in zip(saved, paths, strict=True):
        alone = encoder.forward(encoder.preprocess(decode_image(path.read_bytes()))[None])[0]
        np.testing.assert_allclose(row, alone, atol=1e-5)


def _write_probes(directory: Path, corpus: Path, suffix: str) -> Path:
    verticals = [
        {
            "name": "code",
            "labels": ["a screenshot of source code", "code"],
            "images": [str(corpus / "code_screenshot.png")],
        },
        {
            "name": "documents",
            "labels": ["a document page", "an invoice report"],
            "images": [str(corpus / "document_page.png"), str(corpus / "cmyk.jpg")],
        },
        {
            "name": "photos",
            "labels": ["a photo of a car", "a colourful gradient"],
            "images": [str(corpus / "gradient_photo.jpg"), str(corpus / "large_1600x1200.jpg")],
        },
    ]
    path = directory / f"probes{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps({"verticals": verticals}))
    else:
        lines = ["verticals:"]
        for vertical in verticals:
            lines.append(f"  {vertical['name']}:")
            lines.append(f"    labels: {json.dumps(vertical['labels'])}")
            lines.append(f"    images: {json.dumps(vertical['images'])}")
        path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_probe_reports_inversions_and_ranks(
    suffix: str, tiny_siglip_dir: Path, parity_corpus: Path, tmp_path: Path
) -> None:
    report = run_probe(tiny_siglip_dir, _write_probes(tmp_path, parity_corpus, suffix))
    assert report.label_count == 6
    assert [row.vertical for row in report.rows] == [
        "code",
        "documents",
        "documents",
        "photos",
        "photos",
    ]
    for row in report.rows:
        assert 1 <= row.right_rank <= 5  # the best of two right labels ranks at most 5th of 6
        assert row.inverted == (row.right_rank > 1)
        assert row.top_probability >= row.right_probability
    assert report.inversion_rate == pytest.approx(
        sum(row.inverted for row in report.rows) / len(report.rows)
    )
    table = format_probe(report)
    assert f"inversion rate: {report.inversion_rate:.1%}" in table
    assert "code_screenshot.png" in table


def test_probe_file_problems_are_reported_with_their_place(tmp_path: Path) -> None:
    bad = tmp_path / "probes.yaml"
    bad.write_text("verticals:\n  - name: code\n    labels: []\n    images: []\n")
    with pytest.raises(ConfigError, match=r"verticals\[0\] \(code\): 'labels'"):
        run_probe("unused", bad)


def test_probe_rank_logic_matches_the_scores(
    tiny_siglip_dir: Path, parity_corpus: Path, tmp_path: Path, encoder: SiglipEncoder
) -> None:
    probes = _write_probes(tmp_path, parity_corpus, ".json")
    report = run_probe(tiny_siglip_dir, probes)
    labels = [
        "a screenshot of source code",
        "code",
        "a document page",
        "an invoice report",
        "a photo of a car",
        "a colourful gradient",
    ]
    image = decode_image((parity_corpus / "cmyk.jpg").read_bytes())
    scores = encoder.scores(
        encoder.forward(encoder.preprocess(image)[None]), encoder.embed_texts(labels)
    )[0]
    row = report.rows[2]
    assert row.image == "cmyk.jpg"
    assert row.top_label == labels[int(scores.argmax())]
    assert math.isclose(row.top_probability, float(scores.max()), abs_tol=1e-6)
