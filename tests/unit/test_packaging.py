"""What a user installs: the wheel carries the demo, and `make clean` keeps tracked files."""

from __future__ import annotations

import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_make_clean_removes_nothing_git_tracks() -> None:
    recipe = subprocess.run(
        ["make", "-n", "clean"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    removed = [word for line in recipe.splitlines() if line.startswith("rm ")
               for word in shlex.split(line)[1:] if not word.startswith("-")]  # fmt: skip
    assert removed, recipe
    tracked = subprocess.run(
        ["git", "ls-files", "--", *removed], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert tracked == []


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(out), str(ROOT)],
        check=True,
    )  # fmt: skip
    (built,) = out.glob("vsr_extproc-*.whl")
    return built


def test_an_installed_demo_finds_its_config_and_requests(wheel: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(tmp_path)
    assert "vsr_extproc/demo/files/router.yaml" in names
    requests = sorted(ROOT.joinpath("deploy/demo/requests").iterdir())
    assert {f"vsr_extproc/demo/files/requests/{path.name}" for path in requests} <= names
    assert "vsr_extproc/_proto/vsr/v1/router_pb2.py" in names
    # imported from the unpacked wheel, not from the source tree
    found = subprocess.run(
        [sys.executable, "-c",
         "from vsr_extproc.demo import demo_files; import vsr_extproc.demo.run as run; "
         "print(demo_files()); print(run.REQUESTS)"],
        cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert found == [
        str(tmp_path / "vsr_extproc/demo/files"),
        str(tmp_path / "vsr_extproc/demo/files/requests"),
    ]
