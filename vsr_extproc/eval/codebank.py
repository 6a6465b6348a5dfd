"""Write ``banks/jailbreak_code.jsonl``: source code on the jailbreak model's benign side.

A coding agent's tool results are mostly source files, and the jailbreak model, fitted
without any, extrapolated on them: 10 of 178 windows of Pygments' example files (the
``pygments-code`` rows of ``vsr-extproc eval jailbreak``, dev split) scored as attacks, a
comment such as ``// initialize the digital pin as an output.`` at 0.88. So the benign
side holds windows of real source files in many languages, comments and all.

``python -m vsr_extproc.eval.codebank`` draws ``WINDOWS`` windows of 6-20 consecutive
non-empty lines (at most ``WINDOW_CHARS`` characters) per language from files installed on
the machine it runs on, seeded, and writes them with their language and path. Only
sources under permissive licences are read: CPython's standard library (PSF), the C and
C++ headers of NumPy and PyTorch and PyTorch's CUDA headers (BSD), Cython and Fortran
files of the installed scientific packages (BSD), CMake's modules (BSD), PostgreSQL's
extension scripts (PostgreSQL licence), Vim's runtime files (Vim licence), Perl's modules
(Artistic), npm's JavaScript (Artistic-2.0, its dependencies ISC/MIT), the App Engine
PHP SDK (Apache-2.0), the packages' CSS and Jinja templates (BSD/MIT). Pygments' example
files, which measure the model, are never read.
"""

from __future__ import annotations

import glob
import random
import sys
from pathlib import Path

import orjson

from vsr_extproc.eval.codelines import SITE

BANK = Path(__file__).resolve().parent.parent / "banks" / "jailbreak_code.jsonl"
SEED = 20261204
WINDOWS = 20  # per language
WINDOW_CHARS = 700
SOURCES = {
    "python": "/usr/lib/python3.11/**/*.py",
    "c": f"{SITE}/site-packages/numpy/**/*.h",
    "cpp": f"{SITE}/site-packages/torch/include/**/*.h",
    "cuda": f"{SITE}/site-packages/torch/include/**/*.cuh",
    "cython": f"{SITE}/site-packages/**/*.pyx",
    "fortran": f"{SITE}/site-packages/**/*.f90",
    "cmake": "/usr/share/cmake-*/Modules/*.cmake",
    "sql": "/usr/share/postgresql/*/extension/*.sql",
    "vim": "/usr/share/vim/**/*.vim",
    "perl": "/usr/share/perl/**/*.pm",
    "javascript": "/usr/lib/node_modules/npm/**/*.js",
    "php": "/usr/lib/google-cloud-sdk/platform/google_appengine/php/**/*.php",
    "css": f"{SITE}/site-packages/**/*.css",
    "jinja": f"{SITE}/site-packages/**/*.jinja",
}


def windows(pattern: str, rng: random.Random) -> list[tuple[str, str]]:
    """``WINDOWS`` windows ``(path, text)`` of the files ``pattern`` finds, one a file."""
    files = sorted(path for path in glob.glob(pattern, recursive=True) if "pygments" not in path)
    rng.shuffle(files)
    found: list[tuple[str, str]] = []
    for path in files:
        try:
            text = Path(path).read_text(encoding="utf-8")[:200_000]
        except (OSError, UnicodeDecodeError):
            continue
        lines = [line.rstrip() for line in text.splitlines() if line.strip()]
        size = rng.randint(6, 20)
        if len(lines) < size:
            continue
        start = rng.randrange(len(lines) - size + 1)
        window = "\n".join(lines[start : start + size])[:WINDOW_CHARS]
        found.append((path, window))
        if len(found) == WINDOWS:
            break
    return found


def _shown(path: str) -> str:
    """``path`` as the bank records it: inside site-packages from there on."""
    site = f"{SITE}/site-packages/"
    return path.removeprefix(site) if path.startswith(site) else path


def main() -> int:
    rng = random.Random(SEED)
    rows: list[dict[str, str]] = []
    for language, pattern in SOURCES.items():
        drawn = windows(pattern, rng)
        print(f"{language:12} {len(drawn)} windows", file=sys.stderr)
        rows.extend(
            {"language": language, "path": _shown(path), "text": text} for path, text in drawn
        )
    BANK.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    print(f"{len(rows)} windows -> {BANK}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
