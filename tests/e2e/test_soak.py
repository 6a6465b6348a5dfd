"""The short version of `make soak`: the demo stack under bounded load, judged by the same
criteria — every request answered, no 5xx or timeout, decisions identical to the same
requests sent alone, RSS flat."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.soak import soak, verdict

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


async def test_a_short_soak_passes(tmp_path: Path) -> None:
    report = await soak([1, 4], seconds=6, workdir=tmp_path, pool=4)
    assert verdict(report, supported=4) == []
    for level in report["levels"]:
        classes = level["classes"]
        assert classes["routed"] > 0
        assert classes["blocked"] > 0  # the jailbreaks
        assert sum(classes.values()) == level["sent"]
    assert {"text", "pii", "jailbreak", "image_small", "ocr_passport"} <= set(
        report["levels"][0]["latency_ms"]
    )
