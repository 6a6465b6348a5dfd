"""The PII signal's scan, cut into short CPU jobs so that long requests interleave fairly."""

from __future__ import annotations

from vsr_extproc.detectors import find_pii
from vsr_extproc.signals.pii import PHONE_RUNS_PER_JOB, scan


async def test_the_pii_scan_in_short_jobs_finds_what_one_find_pii_call_finds() -> None:
    """More digit runs than one job takes: the split scan must lose and add nothing."""
    lines = [
        f"Order {index}: call +44 20 7946 {index:04d} or 0{index % 9 + 1}0 1234 {index:04d}, "
        f"mail user{index}@example.com, card 4111 1111 1111 1111."
        for index in range(PHONE_RUNS_PER_JOB * 2)
    ]
    texts = ("\n".join(lines), "Call me on 415-555-0132 tomorrow.", "no personal data here")
    found = await scan(texts, owner="request")
    assert found == [finding for text in texts for finding in find_pii(text)]
    assert sum(finding.type.value == "phone" for finding in found) > PHONE_RUNS_PER_JOB
