"""The local demo: the whole stack on loopback (``run``), and how it is started (``stack``)."""

from __future__ import annotations

from pathlib import Path


def demo_files() -> Path:
    """The demo's router config and sample requests: inside the installed package (a
    wheel carries them as ``vsr_extproc/demo/files``), else the source tree's
    ``deploy/demo``."""
    packaged = Path(__file__).resolve().parent / "files"
    if (packaged / "router.yaml").is_file():
        return packaged
    return Path(__file__).resolve().parents[2] / "deploy" / "demo"
