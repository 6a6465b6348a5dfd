"""The unit tier runs without models: a test here that loads one (the text encoder, OCR,
SigLIP or the named-entity model) fails at once and says so. Tests that need a model live
in ``tests/models``."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest

LOADERS = (
    "vsr_extproc.runtime.embedding.load_text_encoder",
    "vsr_extproc.runtime.ocr._load_models",
    "vsr_extproc.runtime.siglip.load_siglip",
    "vsr_extproc.runtime.entities.load_entity_model",
)


@pytest.fixture(autouse=True)
def _no_models(monkeypatch: pytest.MonkeyPatch) -> None:
    for loader in LOADERS:

        def refuse(*_: Any, loader: str = loader, **__: Any) -> NoReturn:
            raise AssertionError(f"the unit tier runs without models; this test calls {loader}")

        monkeypatch.setattr(loader, refuse)
