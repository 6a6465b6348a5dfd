"""The code-window evaluation: seeded windows of real files, scored as screens."""

from __future__ import annotations

from pathlib import Path

import pytest

from vsr_extproc.eval import codewindows

RUBY = """require 'json'

module Shop
  class Cart
    attr_reader :items

    def initialize
      @items = []
    end

    def add(item, quantity = 1)
      @items << { item: item, quantity: quantity }
      self
    end

    def total
      @items.sum { |line| line[:item].price * line[:quantity] }
    end

    def to_json(*args)
      { items: @items, total: total }.to_json(*args)
    end
  end
end
"""


def test_windows_are_seeded_and_scored_per_language(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "debian" / "root"
    (root / "usr/lib/ruby/3.1.0").mkdir(parents=True)
    (root / "usr/lib/ruby/3.1.0/cart.rb").write_text(RUBY)
    (root / ".complete").touch()  # unpacked already: nothing is fetched
    monkeypatch.setenv("VSR_CORPORA", str(tmp_path))
    monkeypatch.setattr(codewindows, "SOURCES", {"ruby": codewindows.SOURCES["ruby"]})
    monkeypatch.setattr(codewindows, "NOT_CODE", {})  # the machine's docs: not this test's
    assert codewindows.main(["--misses"]) == 0
    first = capsys.readouterr().out
    assert "ruby          1/1    1.000" in first
    codewindows.main(["--misses"])
    assert capsys.readouterr().out == first  # the same windows every run


def test_packages_the_mirrors_no_longer_hold_leave_a_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import subprocess

    def refuse(command: list[str], **_: object) -> None:
        raise subprocess.CalledProcessError(100, command)

    monkeypatch.setattr(codewindows.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(codewindows.subprocess, "run", refuse)
    root = codewindows.unpacked(tmp_path / "debian")
    assert not (root / ".complete").exists()  # tried again next time
    assert "could not all be fetched" in capsys.readouterr().err
