"""The content-keyed LRU behind the embedding, OCR, vision and wording caches, and the
files kept on disk between starts."""

from __future__ import annotations

import os
from pathlib import Path

from vsr_extproc.runtime.cache import LruCache, keep, text_key, used


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


def test_a_cache_file_is_whole_or_absent_and_a_failed_write_loses_nothing(
    tmp_path: Path,
) -> None:
    target = tmp_path / "kept" / "entry.bin"
    keep(target, lambda partial: partial.write_bytes(b"whole"))
    assert target.read_bytes() == b"whole"

    def cut_short(partial: Path) -> None:
        partial.write_bytes(b"ha")
        raise TypeError("this value cannot be serialised")

    keep(target, cut_short)  # no exception: the caller goes on without the file
    assert target.read_bytes() == b"whole"  # the earlier file stays, not the half one
    assert sorted(p.name for p in target.parent.iterdir()) == ["entry.bin"]  # no leftovers


def test_a_folder_keeps_its_most_recently_written_or_used_files(tmp_path: Path) -> None:
    for age, name in enumerate(["e", "d", "c", "b", "a"]):  # "a" the oldest
        keep(tmp_path / name, lambda partial: partial.write_text("kept"))
        os.utime(tmp_path / name, (1_000_000 - age * 100, 1_000_000 - age * 100))
    used(tmp_path / "a")  # read just now: the newest of all
    keep(tmp_path / "f", lambda partial: partial.write_text("new"), most=3)
    assert sorted(entry.name for entry in tmp_path.iterdir()) == ["a", "e", "f"]
