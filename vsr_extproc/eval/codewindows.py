"""How the code detector reads screens of source files it was never tuned on.

``python -m vsr_extproc.eval.codewindows`` cuts windows of 15-80 lines (seeded) out of
source files and scores each window's text as a screen shows it (no OCR), then prints the
share that reads as code, per language, and the windows that do not; then the same for
windows of text that is mostly not code (READMEs, changelogs, licences, package
descriptions: many of them show a code example, so this is a check, not a count of false
alarms).

The files come from Debian packages that neither the line model's fit
(``eval.codelines``) nor the image corpus reads: Ruby's standard library, two Rust
crates, Lua's Penlight, Erlang/OTP's sources (with their Java interface), OCaml's
standard library; and from two sources the line model was fitted on line by line but
never as screens: Python's standard library and the machine's C headers. A second group
(``MORE_SOURCES``, scored after the first so that its windows stay the same) adds five
languages from other packages: shell (bash-completion's completions), Perl's standard
library, JavaScript (Express and Commander), PHP (Guzzle and Symfony's console) and Go
(Cobra and Logrus). The packages are fetched once each with ``apt-get download`` at the
versions below (Debian 12), unpacked with ``dpkg -x`` into ``$VSR_CORPORA/debian`` and
never installed; the SHA-256 of each is printed. A package that cannot be fetched (a
point release replaces versions on the mirrors) is named and its language scores what
the machine has.

``--ocr N`` also draws N windows of each language as screenshots, the way the image
corpus draws its code (its ``dev`` styles), and reads them with the OCR engine: what OCR
does to code (comment marks misread, closers lost) is measured on code the detector was
not written from.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import hashlib
import random
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from vsr_extproc.detectors.code import code_score
from vsr_extproc.eval.corpora import corpora_dir

PACKAGES = {
    "libruby3.1": "3.1.2-7+deb12u1",
    "librust-regex-dev": "1.7.1-1",
    "librust-serde-dev": "1.0.152-2",
    "lua-penlight": "1.13.1-3",
    "erlang-src": "1:25.2.3+dfsg-1+deb12u4",
    "ocaml": "4.13.1-4",
    "bash-completion": "1:2.11-6",
    "perl-modules-5.36": "5.36.0-7+deb12u3",
    "node-express": "4.18.2+~4.17.14-1",
    "node-commander": "9.4.1-1",
    "php-guzzlehttp-guzzle": "7.4.5-1",
    "php-symfony-console": "5.4.53+dfsg-0+deb12u1",
    "golang-github-spf13-cobra-dev": "1.6.1-1",
    "golang-github-sirupsen-logrus-dev": "1.9.0-1",
}
# language -> files, under the unpacked packages ("{root}") or on the machine
SOURCES = {
    "ruby": "{root}/usr/lib/ruby/**/*.rb",
    "rust": "{root}/usr/share/cargo/**/*.rs",
    "lua": "{root}/usr/share/lua/**/*.lua",
    "erlang": "{root}/usr/lib/erlang/**/*.erl",
    "java": "{root}/usr/lib/erlang/**/*.java",
    "ocaml": "{root}/usr/lib/ocaml/**/*.ml",
    "python": "/usr/lib/python3.11/**/*.py",
    "c": "/usr/include/**/*.h",
}
MORE_SOURCES = {
    "shell": "{root}/usr/share/bash-completion/completions/*",
    "perl": "{root}/usr/share/perl/5.36/**/*.pm",
    "javascript": "{root}/usr/share/nodejs/**/*.js",
    "php": "{root}/usr/share/php/**/*.php",
    "go": "{root}/usr/share/gocode/src/**/*.go",
}
# text that is mostly not code, though READMEs and package descriptions often show some
NOT_CODE = {
    "readme": "/usr/share/doc/*/README*",
    "changelog": "/usr/share/doc/*/changelog.Debian.gz",
    "licence": "/usr/share/common-licenses/*",
    "markdown": "{site}/**/*.md",
    "rst": "{site}/**/*.rst",
    "metadata": "{site}/*.dist-info/METADATA",
}
FILES_PER_LANGUAGE = 150
MIN_LINES = 10  # a window must show this many non-blank lines
SEED = 9


def unpacked(folder: Path) -> Path:
    """The pinned packages unpacked under ``folder`` (each fetched the first time)."""
    root = folder / "root"
    fetched = root / ".fetched"
    missing = [
        (name, version)
        for name, version in PACKAGES.items()
        if not (fetched / f"{name}={version.replace(':', '%')}").exists()
    ]
    if not missing:
        return root
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        print("apt-get or dpkg missing: scoring only what this machine has", file=sys.stderr)
        return root
    fetched.mkdir(parents=True, exist_ok=True)
    for name, version in missing:
        with tempfile.TemporaryDirectory(prefix="vsr-debs-") as tmp:
            try:
                subprocess.run(
                    ["apt-get", "download", f"{name}={version}"],
                    cwd=tmp,
                    check=True,
                    capture_output=True,
                )
            except subprocess.CalledProcessError:
                print(
                    f"{name}={version} could not be fetched: its language scores only what"
                    " this machine has",
                    file=sys.stderr,
                )
                continue
            for deb in sorted(Path(tmp).glob("*.deb")):
                digest = hashlib.sha256(deb.read_bytes()).hexdigest()
                print(f"  {deb.name}  sha256 {digest}", file=sys.stderr)
                subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
        (fetched / f"{name}={version.replace(':', '%')}").touch()
    return root


def windows(pattern: str, rng: random.Random) -> list[tuple[str, int, str]]:
    """(file, first line, text) of one window of 15-80 lines from each of up to
    ``FILES_PER_LANGUAGE`` files matching ``pattern``."""
    files = sorted(path for path in glob.glob(pattern, recursive=True) if Path(path).is_file())
    rng.shuffle(files)
    found = []
    for path in files[:FILES_PER_LANGUAGE]:
        data = Path(path).read_bytes()
        text = (gzip.decompress(data) if path.endswith(".gz") else data).decode("utf-8", "replace")
        lines = [line.expandtabs(4).rstrip() for line in text.splitlines()]
        if sum(1 for line in lines if line.strip()) < 15:
            continue
        count = rng.randint(15, 80)
        start = rng.randint(0, max(0, len(lines) - count))
        shown = lines[start : start + count]
        if sum(1 for line in shown if line.strip()) >= MIN_LINES:
            found.append((path, start, "\n".join(shown)))
    return found


def _scored(pattern: str, rng: random.Random) -> list[tuple[float, str, int]]:
    """(code score, file, first line) of each window ``windows`` cuts for ``pattern``."""
    return [(code_score(text).score, path, start) for path, start, text in windows(pattern, rng)]


def through_ocr(root: Path, site: Path, per_language: int, seed: int) -> None:
    """Draw ``per_language`` windows of each language as the image corpus draws code
    screenshots (its ``dev`` styles: an editor, an IDE, a terminal, a diff or a notebook),
    read each with the OCR engine without a budget, and print how many read as code on the
    drawn text and on what OCR read; then the same for ``per_language`` windows of each
    kind of text that is mostly not code, drawn the same way (a README open in an editor
    is a screenshot users send too)."""
    from vsr_extproc.eval import imagegen
    from vsr_extproc.runtime.images import decode_image
    from vsr_extproc.runtime.ocr import OcrEngine
    from vsr_extproc.signals.image_text import verified_mrz

    engine = OcrEngine(mrz_check=verified_mrz)
    rng = random.Random(seed)
    groups = [
        (
            "language",
            {language: pattern.format(root=root) for language, pattern in SOURCES.items()},
        ),
        ("not code", {kind: pattern.format(site=site) for kind, pattern in NOT_CODE.items()}),
        (
            "language",
            {language: pattern.format(root=root) for language, pattern in MORE_SOURCES.items()},
        ),
    ]
    for title, patterns in groups:
        print(f"\n{title:<10}{'drawn text':>12}{'OCR':>10}")
        totals = [0, 0, 0]
        for language, pattern in patterns.items():
            chosen = windows(pattern, rng)
            rng.shuffle(chosen)
            drawn = read = 0
            for index, (path, start, text) in enumerate(chosen[:per_language]):
                lines = text.splitlines()[: rng.randint(15, 45)]
                d = imagegen.Draw("dev", f"deb-{language}", index)
                variant = d.rng.choice(["editor", "editor", "ide", "terminal", "diff", "notebook"])
                shown = language if language in SOURCES or language in MORE_SOURCES else "text"
                image = imagegen.code_screen(d, shown, Path(path).name, lines, start, variant)
                decoded = decode_image(imagegen._png(image))
                result = engine.read(decoded.image, orientation=decoded.exif_orientation)
                drawn += code_score("\n".join(lines)).score >= 0.5
                read += code_score(result.text).score >= 0.5
            count = min(per_language, len(chosen))
            totals = [totals[0] + drawn, totals[1] + read, totals[2] + count]
            print(f"{language:<10}{drawn:>8}/{count:<3}{read:>6}/{count:<3}")
        print(f"{'all':<10}{totals[0]:>8}/{totals[2]:<3}{totals[1]:>6}/{totals[2]:<3}")


def _print_languages(
    sources: dict[str, str],
    root: Path,
    rng: random.Random,
    list_misses: bool,
) -> None:
    """Print the share of each language's windows that reads as code (and every miss)."""
    found = total = 0
    misses: list[tuple[str, float, str, int]] = []
    print(f"{'language':<10}{'code':>12}")
    for language, pattern in sources.items():
        scored = _scored(pattern.format(root=root), rng)
        if not scored:
            print(f"{language:<10}{'(no files)':>12}")
            continue
        hits = sum(score >= 0.5 for score, _, _ in scored)
        found, total = found + hits, total + len(scored)
        misses += [(language, *miss) for miss in scored if miss[0] < 0.5]
        print(f"{language:<10}{hits:>5}/{len(scored):<4} {hits / len(scored):.3f}")
    print(f"{'all':<10}{found:>5}/{total:<4} {found / max(total, 1):.3f}")
    if list_misses:
        for language, score, path, start in misses:
            print(f"  {score:.3f} {language} {path}:{start + 1}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vsr_extproc.eval.codewindows")
    parser.add_argument("--misses", action="store_true", help="list every window under 0.5")
    parser.add_argument(
        "--ocr",
        type=int,
        default=0,
        metavar="N",
        help="also draw N windows a language (and of each kind of not-code text) as"
        " screenshots and read them with OCR",
    )
    parser.add_argument("--ocr-seed", type=int, default=22, help="which windows --ocr draws")
    args = parser.parse_args(argv)
    root = unpacked(corpora_dir() / "debian")
    rng = random.Random(SEED)
    _print_languages(SOURCES, root, rng, args.misses)
    site = Path(sysconfig.get_paths()["purelib"])
    print(f"\n{'not code':<10}{'read as code':>16}")
    for kind, pattern in NOT_CODE.items():
        scored = _scored(pattern.format(site=site), rng)
        alarms = [(score, path, start) for score, path, start in scored if score >= 0.5]
        print(f"{kind:<10}{len(alarms):>5}/{len(scored):<4}")
        if args.misses:
            for score, path, start in alarms:
                print(f"  {score:.3f} {kind} {path}:{start + 1}")
    print()
    _print_languages(MORE_SOURCES, root, rng, args.misses)
    if args.ocr:
        through_ocr(root, site, args.ocr, args.ocr_seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
