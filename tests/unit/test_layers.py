"""The pure core and the rule-only signals load without any model runtime."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys

import pytest
import vsr_extproc.core.router, vsr_extproc.core.decision, vsr_extproc.core.explain
import vsr_extproc.config.compile
from vsr_extproc.config.compile import load_policy
load_policy("deploy/examples/rules-only.yaml")
heavy = sorted(m for m in ("torch", "transformers", "PIL", "cv2", "grpc", "lingua")
               if m in sys.modules)
print(",".join(heavy))
"""


def test_rules_and_deterministic_signals_import_no_model_runtime() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == ""


def test_debug_access_trusts_a_token_or_a_source_range() -> None:
    import ipaddress

    from vsr_extproc.envoy.servicer import DebugAccess

    access = DebugAccess(
        token="a-long-enough-token",
        trusted=(ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("fd00::/8")),
    )
    asked = {"x-router-debug": "1"}
    assert not access.granted({}, "10.1.2.3")  # not asked
    assert access.granted(asked, "10.1.2.3")
    assert access.granted(asked, "fd00::1")
    assert not access.granted(asked, "192.168.1.1")
    assert not access.granted(asked, None)
    assert not access.granted(asked, "not-an-address")
    assert access.granted({**asked, "x-router-debug-token": "a-long-enough-token"}, None)
    assert not access.granted({**asked, "x-router-debug-token": "guess"}, None)
    assert not access.granted({**asked, "x-router-debug-token": "a-long-enough-tokeN"}, None)
    assert not access.granted({**asked, "x-router-debug-token": "ä-long-enough-token"}, None)


def test_the_debug_token_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A comparison that stops at the first wrong character tells, by its time, how much
    of a guess was right; every token check must go through hmac.compare_digest."""
    import hmac

    from vsr_extproc.envoy import servicer

    compared: list[tuple[bytes, bytes]] = []
    constant_time = hmac.compare_digest

    def compare(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return constant_time(a, b)

    monkeypatch.setattr(servicer.hmac, "compare_digest", compare)
    access = servicer.DebugAccess(token="a-long-enough-token")
    asked = {"x-router-debug": "1"}
    assert not access.granted({**asked, "x-router-debug-token": "a-long-enough-tokeX"}, None)
    assert access.granted({**asked, "x-router-debug-token": "a-long-enough-token"}, None)
    assert compared == [
        (b"a-long-enough-tokeX", b"a-long-enough-token"),
        (b"a-long-enough-token", b"a-long-enough-token"),
    ]


def test_the_client_address_comes_from_envoys_attributes() -> None:
    from envoy.service.ext_proc.v3 import external_processor_pb2 as ext_proc
    from google.protobuf import struct_pb2

    from vsr_extproc.envoy.convert import client_address

    def message(address: str) -> ext_proc.ProcessingRequest:
        attributes = struct_pb2.Struct()
        attributes.update({"source.address": address})
        request = ext_proc.ProcessingRequest()
        request.attributes["envoy.filters.http.ext_proc"].CopyFrom(attributes)
        return request

    assert client_address(message("127.0.0.1:51234")) == "127.0.0.1"
    assert client_address(message("[fd00::1]:443")) == "fd00::1"
    assert client_address(ext_proc.ProcessingRequest()) is None
