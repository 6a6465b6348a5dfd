"""The bounded, content-keyed caches the runtimes and signals keep between requests.

Chat clients resend the system prompt and the history every turn, and the same images
come back: embeddings, OCR results and wording features are kept by a digest of their
content, never by the content itself.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt
import structlog

log = structlog.get_logger(__name__)

K = TypeVar("K")
V = TypeVar("V")


def text_key(text: str) -> bytes:
    """A 16-byte digest of ``text`` (lone surrogates included) to key a cache by."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def cache_folder() -> Path:
    """``$VSR_CACHE_DIR``, default ``~/.cache/vsr-extproc``: the root of what is kept on disk."""
    return Path(os.environ.get("VSR_CACHE_DIR", Path.home() / ".cache" / "vsr-extproc"))


#: the package's own files whose content a fit may read: source and banks
_SOURCE_SUFFIXES = frozenset({".py", ".json", ".jsonl", ".yaml"})


@functools.cache
def source_digest() -> str:
    """A digest of this package's source and banks (about 2 MB: 9 ms, once a process)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.suffix in _SOURCE_SUFFIXES and "__pycache__" not in path.parts:
            digest.update(path.relative_to(root).as_posix().encode() + b"\x00")
            digest.update(path.read_bytes() + b"\x00")
    return digest.hexdigest()


def kept_bank(
    model: str, texts: Sequence[str], width: int, embed: Callable[[], npt.NDArray[np.float32]]
) -> npt.NDArray[np.float32]:
    """A bank's embeddings (``embed()``: one row of ``width`` per text), kept on disk
    (``$VSR_CACHE_DIR``, default ``~/.cache/vsr-extproc``) under ``model`` (a digest of the
    model's identity and weights) and a digest of the texts: a process that compiles the
    same bank with the same model reads them back instead of computing them. A cache that
    cannot be read or written is skipped."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass") + b"\x00")
    path = cache_folder() / "banks" / model / f"{digest.hexdigest()[:32]}.npy"
    with contextlib.suppress(OSError, ValueError):
        cached: npt.NDArray[np.float32] = np.load(path, allow_pickle=False)
        if cached.shape == (len(texts), width):
            return cached
    rows = embed()

    def write(partial: Path) -> None:
        with partial.open("wb") as file:  # a name, np.save would give ".npy" to
            np.save(file, rows, allow_pickle=False)

    keep(path, write)
    return rows


def keep(path: Path, write: Callable[[Path], object], *, most: int | None = None) -> None:
    """``write`` a file of the cache to a path of its own, then move it to ``path`` in one
    step: a reader finds the whole file or none, whichever processes and threads write it
    at once. A file that cannot be written (a read-only folder, a full disk, a value that
    cannot be serialised) is not kept, and the caller goes on without it.

    With ``most``, the folder keeps that many files, those written or ``used`` last: an
    entry keyed by the package's source is written anew after every change to the code,
    and a developer's cache would otherwise grow by each one."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(partial)
        partial.replace(path)
    except Exception as exc:  # the cache only saves time; nothing fails for want of it
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        if not isinstance(exc, OSError):
            log.warning("cache_file_not_written", path=str(path), error=repr(exc))
        return
    if most is not None:
        with contextlib.suppress(OSError):
            kept = [entry for entry in path.parent.iterdir() if not entry.name.startswith(".")]
            kept.sort(key=lambda entry: entry.stat().st_mtime, reverse=True)
            for old in kept[most:]:
                old.unlink(missing_ok=True)  # a process reading it keeps its open file


def used(path: Path) -> None:
    """Mark a cache file as just used, so that ``keep`` removes others first."""
    with contextlib.suppress(OSError):
        os.utime(path)


class LruCache(Generic[K, V]):
    """A mapping of at most ``size`` entries that forgets the least recently used one.

    Safe to share between threads; ``size`` 0 keeps nothing.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            self._evict()

    def setdefault(self, key: K, value: V) -> V:
        """The value kept for ``key``, or else ``value``, kept now: one step for all threads."""
        with self._lock:
            kept = self._items.get(key)
            if kept is None:
                self._items[key] = kept = value
            self._items.move_to_end(key)
            self._evict()
            return kept

    def _evict(self) -> None:
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
