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
    monkeypatch.setenv("VSR_CORPORA", str(tmp_path))
    monkeypatch.setattr(codewindows, "PACKAGES", {})  # nothing is fetched
    monkeypatch.setattr(codewindows, "SOURCES", {"ruby": codewindows.SOURCES["ruby"]})
    monkeypatch.setattr(codewindows, "MORE_SOURCES", {})
    monkeypatch.setattr(codewindows, "NOT_CODE", {})  # the machine's docs: not this test's
    assert codewindows.main(["--misses"]) == 0
    first = capsys.readouterr().out
    assert "ruby          1/1    1.000" in first
    codewindows.main(["--misses"])
    assert capsys.readouterr().out == first  # the same windows every run


def test_a_package_the_mirrors_no_longer_hold_is_named_and_the_others_are_unpacked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import subprocess

    ran: list[list[str]] = []

    def run(command: list[str], cwd: str | None = None, **_: object) -> None:
        ran.append(command)
        if command[:2] == ["apt-get", "download"]:
            if command[2].startswith("gone="):
                raise subprocess.CalledProcessError(100, command)
            (Path(cwd or ".") / f"{command[2].split('=')[0]}.deb").write_bytes(b"deb")

    monkeypatch.setattr(codewindows.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(codewindows.subprocess, "run", run)
    monkeypatch.setattr(codewindows, "PACKAGES", {"gone": "1.0-1", "kept": "1:2.0-1"})
    codewindows.unpacked(tmp_path / "debian")
    err = capsys.readouterr().err
    assert "gone=1.0-1 could not be fetched" in err
    assert "kept.deb  sha256" in err
    assert [command[0] for command in ran] == ["apt-get", "apt-get", "dpkg"]
    # the package that came is not fetched again; the one that did not is tried again
    ran.clear()
    codewindows.unpacked(tmp_path / "debian")
    assert ran == [["apt-get", "download", "gone=1.0-1"]]
