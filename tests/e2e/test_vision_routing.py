"""The vision signal end to end: a tiny random SigLIP checkpoint behind a real Envoy.

Each label has a decision that matches only when it is the image's best label, so the
decision Envoy reports must be the argmax of the reference model's logits.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from builders import chat, image_part, text_part, user
from checkpoints import build_tiny_siglip
from stacks import ROOT, post_chat, start_stack

from vsr_extproc.demo.stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.models]

LABELS = ["chest x-ray", "car", "document page", "source code"]
CORPUS = ROOT / "tests" / "data" / "parity"
IMAGES = ["grayscale.png", "gradient_photo.jpg", "code_screenshot.png", "document_page.png",
          "rgba_shapes.png", "cmyk.jpg", "checkerboard.png"]  # fmt: skip


def _decision(label: str) -> str:
    return "best_" + label.replace(" ", "_").replace("-", "_")


def _config(model: Path) -> dict[str, Any]:
    signals = [
        {
            "name": _decision(label),
            "labels": [label],
            "templates": ["{}"],
            "others": [other for other in LABELS if other != label],
            "mode": "softmax",
            "threshold": 0.0,
            "require_top": True,
        }
        for label in LABELS
    ]
    decisions = [
        {
            "name": _decision(label),
            "rules": f"vision.{_decision(label)}",
            "action": {"type": "route", "models": ["vlm"]},
        }
        for label in LABELS
    ]
    return {
        "vision": {"model": str(model)},
        "models": [{"name": "vlm", "cluster": "vlm", "upstream_model": "some-vlm",
                    "modalities": ["text", "image"]}],
        "signals": {"vision": signals},
        "decisions": decisions,
        "default": {"name": "unsure", "action": {"type": "route", "models": ["vlm"]}},
        "envoy": {"listen": {"port": 1}, "admin": {"port": 1}, "processor": [{"port": 1}],
                  "clusters": [{"name": "vlm", "endpoints": [{"port": 1}]}]},
    }  # fmt: skip


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_siglip(tmp_path_factory.mktemp("siglip"), image_size=64)


@pytest.fixture(scope="module")
def vision_stack(checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = start_stack(_config(checkpoint), tmp_path_factory.mktemp("vision-stack"))
    yield running
    running.stop()


def _reference_best(model_dir: Path, path: Path) -> str:
    import torch
    from PIL import Image
    from transformers import AutoTokenizer, SiglipImageProcessorPil, SiglipModel

    model = SiglipModel.from_pretrained(model_dir).eval()
    pixels = SiglipImageProcessorPil.from_pretrained(model_dir)(
        images=[Image.open(path)], return_tensors="pt"
    )["pixel_values"]
    text = AutoTokenizer.from_pretrained(model_dir)(
        LABELS, padding="max_length", max_length=16, return_tensors="pt"
    )
    with torch.no_grad():
        logits = model(input_ids=text["input_ids"], pixel_values=pixels).logits_per_image
    return LABELS[int(logits.argmax())]


@pytest.mark.parametrize("name", IMAGES)
def test_the_routed_decision_is_the_reference_argmax(
    vision_stack: Stack, checkpoint: Path, name: str
) -> None:
    path = CORPUS / name
    kind = "jpeg" if path.suffix == ".jpg" else path.suffix.lstrip(".")
    url = f"data:image/{kind};base64,{base64.b64encode(path.read_bytes()).decode()}"
    with httpx.Client(base_url=vision_stack.url, timeout=60) as http:
        response = post_chat(http, chat(user([text_part("what is this?"), image_part(url)])))
    assert response.status_code == 200
    assert response.headers["x-vsr-decision"] == _decision(_reference_best(checkpoint, path))


def test_the_images_exercise_several_labels(checkpoint: Path) -> None:
    """Guards the table above: an untrained model that picked one label everywhere would
    make it pass without proving anything."""
    assert len({_reference_best(checkpoint, CORPUS / name) for name in IMAGES}) >= 3
