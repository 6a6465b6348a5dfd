"""Compile ``proto/`` into ``vsr_extproc/_proto`` with grpcio-tools (``make proto``).

The generated modules are committed so an installed package needs no build step; a test
regenerates them into a temporary directory and fails when the committed ones differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO = ROOT / "proto"
OUT = ROOT / "vsr_extproc" / "_proto"


def compile_protos(out: Path = OUT) -> list[Path]:
    """Generate the Python modules (messages and gRPC stubs); returns the files written."""
    import grpc_tools
    from grpc_tools import protoc

    out.mkdir(parents=True, exist_ok=True)
    includes = Path(grpc_tools.__file__).parent / "_proto"
    sources = sorted(str(path.relative_to(PROTO)) for path in PROTO.rglob("*.proto"))
    status = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{PROTO}",
            f"-I{includes}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            f"--grpc_python_out={out}",
            *sources,
        ]
    )
    if status != 0:
        raise SystemExit(f"protoc failed with status {status}")
    for directory in [out, *(p for p in out.rglob("*") if p.is_dir())]:
        (directory / "__init__.py").touch()
    package = ".".join(out.relative_to(ROOT).parts) if out.is_relative_to(ROOT) else ""
    for module in out.rglob("*_pb2*.py"):
        # protoc writes `from vsr.v1 import …`; inside this package that must be absolute
        text = module.read_text()
        if package:
            text = text.replace("from vsr.v1 import", f"from {package}.vsr.v1 import")
        module.write_text(text)
    return sorted(path for path in out.rglob("*") if path.is_file())


if __name__ == "__main__":
    for path in compile_protos(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
