"""The content-keyed LRU behind the embedding, OCR, vision and wording caches."""

from __future__ import annotations

from vsr_extproc.runtime.cache import LruCache, text_key


def test_the_least_recently_used_entry_is_forgotten() -> None:
    cache: LruCache[str, int] = LruCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert cache.get("b") is None
    assert (cache.get("a"), cache.get("c"), len(cache)) == (1, 3, 2)


def test_setdefault_keeps_the_first_value_a_key_gets() -> None:
    cache: LruCache[str, list[int]] = LruCache(2)
    first, second = [1], [2]
    assert cache.setdefault("a", first) is first
    assert cache.setdefault("a", second) is first  # every later caller shares the first
    cache.put("b", [3])
    cache.setdefault("a", second)  # a use: "b" is now the least recently used
    cache.put("c", [4])
    assert cache.get("b") is None
    assert cache.get("a") is first


def test_size_zero_keeps_nothing_and_clear_empties() -> None:
    empty: LruCache[str, int] = LruCache(0)
    empty.put("a", 1)
    assert empty.get("a") is None
    cache: LruCache[str, int] = LruCache(4)
    cache.put("a", 1)
    cache.clear()
    assert cache.get("a") is None


def test_text_keys_are_short_digests_that_tell_texts_apart() -> None:
    assert len(text_key("hello")) == 16
    assert text_key("hello") == text_key("hello") != text_key("hello ")
    assert len(text_key("\ud800 lone surrogate")) == 16  # no UnicodeEncodeError
