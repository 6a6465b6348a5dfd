"""Fixtures for model tests: small randomly initialised SigLIP checkpoints built offline
(see ``tests/checkpoints.py``).

torch and transformers are imported inside the fixtures so that tests in this directory
that need neither (image decoding) stay light.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from checkpoints import build_tiny_siglip

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PARITY_CORPUS = Path(__file__).resolve().parent.parent / "data" / "parity"


@pytest.fixture(scope="session", autouse=True)
def _two_torch_threads() -> Iterator[None]:
    """Model tests run with two intra-op threads, like the 2-core CI machine."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a hard dependency
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def tiny_siglip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 64×64, 2-layer, 64-wide random SigLIP checkpoint directory (16 patches)."""
    return build_tiny_siglip(tmp_path_factory.mktemp("tiny-siglip-64"), image_size=64)


@pytest.fixture(scope="session")
def tiny_siglip_224_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same tiny tower at SigLIP-base's 224×224 input (196 patches)."""
    return build_tiny_siglip(tmp_path_factory.mktemp("tiny-siglip-224"), image_size=224, seed=1)


@pytest.fixture(scope="session")
def parity_corpus() -> Path:
    """The committed parity corpus (tests/data/parity, made by make_corpus.py)."""
    return PARITY_CORPUS
