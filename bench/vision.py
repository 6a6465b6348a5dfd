"""Image benchmarks: decoding and preprocessing, full decisions with vision, OCR decisions.

A SigLIP-base-sized checkpoint (768 wide, 12 layers, 224², patch 16) with random weights
is built in a temporary directory: a forward pass costs the same as the real one's, and no
checkpoint can be downloaded here.
"""

from __future__ import annotations

import asyncio
import base64
import io
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import yaml

from bench.common import ROOT, decide_once, describe, processor

DEMO = ROOT / "deploy" / "demo" / "router.yaml"
IMAGES = ROOT / "tests" / "data" / "images"


def _photo(width: int = 1024, height: int = 768, seed: int = 0) -> bytes:
    """A photo-like JPEG (gradient and noise), different for every seed."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 / width, y * 255 / height, (x + y) * 127 / (width + height)], -1)
    pixels = np.clip(base + rng.normal(0, 18, base.shape), 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG", quality=88)
    return buffer.getvalue()


def preprocessing(model_dir: Path, repeats: int = 30) -> tuple[float, float]:
    """Median ms of decode + production preprocess, and of decode + the reference processor."""
    from transformers import SiglipImageProcessorPil

    from vsr_extproc.runtime.images import decode_image
    from vsr_extproc.runtime.siglip import load_siglip

    encoder = load_siglip(model_dir)
    reference = SiglipImageProcessorPil.from_pretrained(model_dir)
    data = _photo()
    production, baseline = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        encoder.preprocess(decode_image(data))
        production.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        reference(images=[decode_image(data).image], return_tensors="np")
        baseline.append((time.perf_counter() - started) * 1000)
    return statistics.median(production), statistics.median(baseline)


def _vision_config(model_dir: Path, precision: str) -> dict[str, Any]:
    """The demo config with a checkpoint, minus OCR (measured separately)."""
    document: dict[str, Any] = yaml.safe_load(DEMO.read_text())
    document["vision"] = {"model": str(model_dir), "precision": precision}
    document["signals"].pop("image_text", None)
    document["decisions"] = [
        d for d in document["decisions"] if "image_text" not in orjson.dumps(d).decode()
    ]
    return document


def _words(rng: random.Random, count: int) -> str:
    bank = yaml.safe_load((ROOT / "vsr_extproc" / "banks" / "domains.yaml").read_text())
    sentences = [s for spec in bank["domains"].values() for s in spec["examples"]]
    words: list[str] = []
    while len(words) < count:
        words += rng.choice(sentences).split()
    return " ".join(words[:count])


def decisions(
    document: dict[str, Any], bodies: list[bytes], warm_up: int = 3
) -> tuple[list[float], list[str]]:
    import grpc
    from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as ext_proc_grpc

    runs: list[float] = []
    decided: list[str] = []
    with processor(document) as target:

        async def drive() -> None:
            async with grpc.aio.insecure_channel(
                target, options=[("grpc.max_send_message_length", 64 << 20)]
            ) as channel:
                stub = ext_proc_grpc.ExternalProcessorStub(channel)
                for index, body in enumerate(bodies):
                    elapsed, decision = await decide_once(stub, body)
                    if index >= warm_up:
                        runs.append(elapsed)
                        decided.append(decision)

        asyncio.run(drive())
    return runs, decided


def _page(seed: int) -> bytes:
    from PIL import Image

    page = Image.open(IMAGES / "passport.png").convert("RGB")
    page.putpixel((0, 0), (seed % 256, seed // 256 % 256, 7))
    buffer = io.BytesIO()
    page.save(buffer, format="PNG")
    return buffer.getvalue()


def _request(text: str, image: bytes, kind: str) -> bytes:
    url = f"data:image/{kind};base64,{base64.b64encode(image).decode()}"
    content = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}]
    return orjson.dumps({"model": "auto", "messages": [{"role": "user", "content": content}]})


def main(samples: int) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from checkpoints import build_tiny_siglip

    rng = random.Random(3)
    with tempfile.TemporaryDirectory(prefix="vsr-siglip-base-") as tmp:
        model_dir = build_tiny_siglip(
            Path(tmp), image_size=224, hidden_size=768, layers=12, heads=12,
            intermediate_size=3072,
        )  # fmt: skip
        production, reference = preprocessing(model_dir)
        print(
            f"decode + preprocess, 1024×768 JPEG: {production:.1f} ms "
            f"(transformers' SiglipImageProcessorPil: {reference:.1f} ms)"
        )
        bodies = [
            _request(_words(rng, 100), _photo(seed=index), "jpeg") for index in range(samples + 3)
        ]  # a fresh image every time: no cache helps
        for precision in ("fp32", "bf16"):
            runs, _ = decisions(_vision_config(model_dir, precision), bodies)
            print(describe(f"image + 100-word prompt, {precision}", runs))
    document = yaml.safe_load(DEMO.read_text())
    ocr_bodies = [
        _request("Summarize this.", _page(index), "png") for index in range(samples + 3)
    ]  # the same page with one pixel changed: new bytes, so the OCR cache cannot answer
    runs, decided = decisions(document, ocr_bodies)
    print(describe("document screenshot needing OCR", runs, f"  decided: {decided[0]}"))
    ocr_targets(document, samples)


def _generated(seed: int) -> tuple[bytes, bytes]:
    """A passport page (TD3, as printed: no photo effects) and a 65-line IDE screenshot
    with a gutter, drawn by the image corpus's generator; ``seed`` varies a pixel so that
    the OCR cache cannot answer."""
    import inspect
    import json.decoder

    from vsr_extproc.eval import imagegen

    draw = imagegen.Draw("dev", "bench", 0)
    page, _, _ = imagegen.mrz_page(draw, "td3")
    source = inspect.getsource(json.decoder).splitlines()[:65]
    draw = imagegen.Draw("dev", "bench", 1)
    draw.rng.random = lambda: 0.5  # type: ignore[method-assign]  # gutter on, 1× scale
    screen = imagegen.code_screen(draw, "python", "decoder.py", source, 0, "ide")
    images = []
    for image in (page, screen):
        image = image.copy()
        image.putpixel((0, 0), (seed % 256, seed // 256 % 256, 3))
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        images.append(buffer.getvalue())
    return images[0], images[1]


def ocr_targets(document: dict[str, Any], samples: int) -> None:
    """A passport page and a 65-line screenshot decided by the demo config, beside the OCR
    engine's own read of the same image (the decision's floor)."""
    from vsr_extproc.runtime.images import decode_image
    from vsr_extproc.runtime.ocr import OcrEngine
    from vsr_extproc.signals.image_text import verified_mrz

    generated = [_generated(seed) for seed in range(samples + 3)]
    engine = OcrEngine(mrz_check=verified_mrz)  # as the router builds it
    for label, prompt, index in (
        ("passport page", "Summarize this.", 0),
        ("65-line code screenshot", "Find the bug in this code.", 1),
    ):
        images = [pair[index] for pair in generated]
        size = decode_image(images[0]).image.size
        alone = []
        for data in images[3:]:
            decoded = decode_image(data).image
            started = time.perf_counter()
            engine.read(decoded)
            alone.append((time.perf_counter() - started) * 1000)
        bodies = [_request(prompt, data, "png") for data in images]
        runs, decided = decisions(document, bodies)
        ratio = statistics.median(runs) / statistics.median(alone)
        note = (
            f"  {size[0]}×{size[1]}; OCR alone p50 {statistics.median(alone):.0f} ms, "
            f"decision/OCR {ratio:.2f}; decided: {decided[0]}"
        )
        print(describe(f"{label} (OCR)", runs, note))
