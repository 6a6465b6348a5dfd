"""The committed generated code is what proto/ compiles to (`make proto` refreshes it)."""

from __future__ import annotations

import ast
from pathlib import Path

from vsr_extproc.protos import OUT, compile_protos


def _descriptor(module: Path) -> bytes:
    """The serialized FileDescriptorProto a *_pb2.py registers (independent of tool versions)."""
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "AddSerializedFile":
            value = ast.literal_eval(node.args[0])
            assert isinstance(value, bytes)
            return value
    raise AssertionError(f"{module} registers no descriptor")


def test_generated_code_is_current(tmp_path: Path) -> None:
    compile_protos(tmp_path)
    fresh = sorted(tmp_path.rglob("*_pb2.py"))
    assert fresh, "proto/ compiled to nothing"
    for module in fresh:
        committed = OUT / module.relative_to(tmp_path)
        assert committed.exists(), f"{committed} is missing: run `make proto`"
        assert _descriptor(committed) == _descriptor(module), (
            f"{committed} is stale: run `make proto`"
        )
