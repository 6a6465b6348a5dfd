"""The README's config reference is the one the validator implies."""

from __future__ import annotations

from pathlib import Path

from vsr_extproc.config.reference import embed

README = Path(__file__).resolve().parents[2] / "README.md"


def test_config_reference_is_current() -> None:
    text = README.read_text()
    assert embed(text) == text, "the README's config reference is stale: run `make readme`"


def test_reference_documents_every_signal_family_and_action() -> None:
    text = README.read_text()
    for heading in (
        "signals.keyword[]",
        "signals.modality[]",
        "signals.context[]",
        "signals.conversation[]",
        "action (type: route)",
        "action (type: block)",
        "action (type: confirm)",
        "envoy.clusters[]",
    ):
        assert f"#### `{heading}`" in text
