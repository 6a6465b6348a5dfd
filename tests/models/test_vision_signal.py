"""The ``vision`` signal on a tiny random SigLIP checkpoint, against the reference model."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import body, chat, image_part, text_part, user

from vsr_extproc.config.compile import compile_policy, parse_config
from vsr_extproc.core.decision import RoutingDecision
from vsr_extproc.core.router import Router
from vsr_extproc.signals.base import Resources

pytestmark = pytest.mark.models

LABELS = ["chest x-ray", "car", "cat", "document page", "source code"]
IMAGES = ["grayscale.png", "gradient_photo.jpg", "code_screenshot.png", "document_page.png",
          "rgba_shapes.png", "large_1600x1200.jpg"]  # fmt: skip


def _config(model: str | None, **entry: Any) -> dict[str, Any]:
    signal = {"name": "what", "labels": LABELS, "templates": ["{}"], "threshold": 0.0, **entry}
    return {
        "vision": {"model": model},
        "models": [{"name": "m", "cluster": "c", "upstream_model": "u",
                    "modalities": ["text", "image"]}],
        "signals": {"vision": [signal]},
        "decisions": [{"name": "seen", "rules": {"signal": "vision.what", "on_error": "match"},
                       "action": {"type": "route", "models": ["m"]}}],
        "default": {"action": {"type": "route", "models": ["m"]}},
    }  # fmt: skip


def _data_url(path: Path) -> str:
    kind = "jpeg" if path.suffix == ".jpg" else path.suffix.lstrip(".")
    return f"data:image/{kind};base64,{base64.b64encode(path.read_bytes()).decode()}"


def _decide(router: Router, *paths: Path) -> RoutingDecision:
    parts = [text_part("what is this?"), *(image_part(_data_url(path)) for path in paths)]
    return asyncio.run(router.explain(body(chat(user(parts)))))


@pytest.fixture(scope="module")
def router(tiny_siglip_dir: Path) -> Router:
    return Router(compile_policy(parse_config(_config(str(tiny_siglip_dir))), Resources()))


def _reference_top_labels(model_dir: Path, paths: list[Path]) -> list[str]:
    import torch
    from PIL import Image
    from transformers import AutoTokenizer, SiglipImageProcessorPil, SiglipModel

    model = SiglipModel.from_pretrained(model_dir).eval()
    processor = SiglipImageProcessorPil.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    images = [Image.open(path) for path in paths]
    for image in images:
        image.load()
    pixels = processor(images=images, return_tensors="pt")["pixel_values"]
    text = tokenizer(LABELS, padding="max_length", max_length=16, return_tensors="pt")
    with torch.no_grad():
        logits = model(input_ids=text["input_ids"], pixel_values=pixels).logits_per_image
    return [LABELS[int(index)] for index in logits.argmax(dim=1)]


def test_the_chosen_label_is_the_reference_models_argmax(
    router: Router, tiny_siglip_dir: Path, parity_corpus: Path
) -> None:
    paths = [parity_corpus / name for name in IMAGES]
    result = _decide(router, *paths)
    rows = result.results["vision.what"].value["images"]
    assert [row["image"] for row in rows] == list(range(len(paths)))
    assert [row["top_label"] for row in rows] == _reference_top_labels(tiny_siglip_dir, paths)


def test_sigmoid_scores_are_the_reference_probabilities(
    router: Router, tiny_siglip_dir: Path, parity_corpus: Path
) -> None:
    import torch
    from PIL import Image
    from transformers import AutoTokenizer, SiglipImageProcessorPil, SiglipModel

    path = parity_corpus / "grayscale.png"
    row = _decide(router, path).results["vision.what"].value["images"][0]
    model = SiglipModel.from_pretrained(tiny_siglip_dir).eval()
    pixels = SiglipImageProcessorPil.from_pretrained(tiny_siglip_dir)(
        images=[Image.open(path)], return_tensors="pt"
    )["pixel_values"]
    text = AutoTokenizer.from_pretrained(tiny_siglip_dir)(
        [row["best_label"]], padding="max_length", max_length=16, return_tensors="pt"
    )
    with torch.no_grad():
        logit = model(input_ids=text["input_ids"], pixel_values=pixels).logits_per_image
    assert row["score"] == pytest.approx(float(torch.sigmoid(logit)[0, 0]), abs=1e-4)


def test_a_request_shares_one_forward_per_image_and_caches_it(
    tiny_siglip_dir: Path, parity_corpus: Path
) -> None:
    router = Router(compile_policy(parse_config(_config(str(tiny_siglip_dir))), Resources()))
    runtime = router.policy.signals["vision.what"].runtime  # type: ignore[attr-defined]
    calls: list[int] = []
    original = runtime.encoder.forward

    def counting(batch: np.ndarray) -> np.ndarray:
        calls.append(len(batch))
        return original(batch)

    runtime.encoder.forward = counting
    image = parity_corpus / "cmyk.jpg"
    _decide(router, image, image)
    assert sum(calls) == 1  # the same bytes twice: embedded once
    _decide(router, image)
    assert sum(calls) == 1  # the next request hits the content cache


def test_an_unavailable_checkpoint_is_a_signal_error_not_a_dead_router(
    parity_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = _config("vsr-tests/no-such-siglip")
    router = Router(compile_policy(parse_config(config), Resources()))
    result = _decide(router, parity_corpus / "grayscale.png")
    error = result.results["vision.what"].error or ""
    assert "no-such-siglip" in error
    assert "on_error applies" in error
    assert result.name == "seen"  # on_error: match


def test_without_a_checkpoint_the_signal_says_so(parity_corpus: Path) -> None:
    router = Router(compile_policy(parse_config(_config(None)), Resources()))
    result = _decide(router, parity_corpus / "grayscale.png")
    assert "no SigLIP checkpoint is configured" in (result.results["vision.what"].error or "")


def test_softmax_mode_sums_the_group(
    router: Router, tiny_siglip_dir: Path, parity_corpus: Path
) -> None:
    config = _config(
        str(tiny_siglip_dir),
        labels=["chest x-ray"],
        others=LABELS[1:],
        mode="softmax",
        threshold=0.0,
    )
    group = Router(compile_policy(parse_config(config), Resources()))
    row = _decide(group, parity_corpus / "grayscale.png").results["vision.what"].value["images"][0]
    assert 0.0 < row["score"] < 1.0
    assert row["best_label"] == "chest x-ray"


def test_a_corrupt_image_is_reported_and_the_others_are_scored(
    router: Router, parity_corpus: Path
) -> None:
    parts = [
        text_part("look"),
        image_part("data:image/png;base64,iVBORw0KGgoAAAANSUhE"),
        image_part(_data_url(parity_corpus / "grayscale.png")),
    ]
    result = asyncio.run(router.explain(body(chat(user(parts)))))
    rows = result.results["vision.what"].value["images"]
    assert "error" in rows[0]
    assert "score" in rows[1]


def test_the_command_line_parity_gate(
    tiny_siglip_dir: Path, parity_corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vsr_extproc.cli import main

    assert main(["parity", "--model", str(tiny_siglip_dir), "--images", str(parity_corpus)]) == 0
    out = capsys.readouterr().out
    assert "pooled cosine: min 1.0000000" in out
    assert "(22/22 ≥ 0.99999)" in out
    assert out.rstrip().endswith("PASSED")


def test_embed_images_writes_one_row_per_image_in_order(
    tiny_siglip_dir: Path, parity_corpus: Path, tmp_path: Path
) -> None:
    from vsr_extproc.cli import main
    from vsr_extproc.runtime.siglip import embed_images

    paths = [parity_corpus / "cmyk.jpg", parity_corpus / "grayscale.png"]
    out = tmp_path / "rows.npy"
    assert main(["embed-images", "--model", str(tiny_siglip_dir), "--out", str(out),
                 *map(str, paths)]) == 0  # fmt: skip
    rows = np.load(out)
    assert rows.shape[0] == 2
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert np.allclose(rows, embed_images(paths, tiny_siglip_dir), atol=1e-6)
