"""The bounded, content-keyed caches the runtimes and signals keep between requests.

Chat clients resend the system prompt and the history every turn, and the same images
come back: embeddings, OCR results and wording features are kept by a digest of their
content, never by the content itself.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


def text_key(text: str) -> bytes:
    """A 16-byte digest of ``text`` (lone surrogates included) to key a cache by."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


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
