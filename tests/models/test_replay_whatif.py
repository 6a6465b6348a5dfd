"""Replay: recorded requests decided again under another config, and what would change.

Deterministic signals only (keywords, modality, the PIL-only ``image`` family): no model
is loaded, so these run without torch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from builders import PNG_1X1, body, chat, data_url, encoded, image_part, text_part, user
from PIL import Image
from postgres import PostgresServer

from vsr_extproc.cli import main
from vsr_extproc.config.compile import compile_policy, parse_config
from vsr_extproc.core.policy import Policy
from vsr_extproc.core.router import Router
from vsr_extproc.demo.stack import free_port
from vsr_extproc.replay import (
    ReplayRecord,
    SqliteReplayStore,
    format_whatif,
    make_record,
    new_replay_id,
    whatif,
)
from vsr_extproc.replay.postgres import PostgresReplayStore
from vsr_extproc.replay.whatif import (
    IMAGE_NOT_KEPT,
    SKIPPED_LIVE,
    StoredImageRunner,
    parse_since,
    replay_body,
    stored_image_results,
)
from vsr_extproc.signals.base import Resources

ROOT = Path(__file__).resolve().parents[2]
RULES_ONLY = ROOT / "deploy" / "examples" / "rules-only.yaml"


def rules_only() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(RULES_ONLY.read_text())
    return document


def compiled(document: dict[str, Any]) -> Policy:
    return compile_policy(parse_config(document), Resources(), fingerprint="test")


def recorded(
    policy: Policy, document: dict[str, Any], *, keep_content: bool = True
) -> ReplayRecord:
    router = Router(policy)
    raw = body(document)
    request = router.parse(raw, policy)
    decision = asyncio.run(router.decide(request, policy))
    return make_record(
        new_replay_id(),
        "req",
        raw,
        request,
        decision,
        keep_content=keep_content,
        policy_fingerprint=policy.fingerprint,
    )


def grey_png() -> bytes:
    return encoded(Image.new("L", (16, 16), 90), "PNG")


def stricter() -> dict[str, Any]:
    """rules-only.yaml with code blocked, and PNG pictures sent to their own decision."""
    document = rules_only()
    document["signals"]["modality"].append({"name": "png", "formats": ["png"]})
    document["decisions"] += [
        {
            "name": "no_code",
            "priority": 150,
            "rules": "keyword.code_words",
            "action": {"type": "block", "message": "not here"},
        },
        {
            "name": "png_pictures",
            "priority": 250,
            "rules": "modality.png",
            "action": {"type": "route", "models": ["vision"]},
        },
    ]
    return document


@pytest.fixture
def traffic() -> list[ReplayRecord]:
    """Recorded under rules-only.yaml: two coding requests, chat, a PNG, a linked image,
    and one request recorded without content."""
    policy = compiled(rules_only())
    documents = [
        chat(user("there is a bug in my parser, mail me at jane@example.com")),
        chat(user("please refactor this function")),
        chat(user("what a lovely day")),
        chat(user([text_part("what is this?"), image_part(data_url(PNG_1X1))])),
        chat(user([image_part("https://example.com/cat.jpg")])),
    ]
    records = [recorded(policy, document) for document in documents]
    records.append(recorded(policy, chat(user("another bug")), keep_content=False))
    return records


def test_the_report_counts_each_change_with_examples(traffic: list[ReplayRecord]) -> None:
    assert [r.decision for r in traffic] == [
        "coding",
        "coding",
        "general_chat",
        "image_understanding",
        "confirm_remote_images",
        "coding",
    ]
    report = whatif(traffic, compiled(stricter()))
    assert (report.read, report.evaluated, report.skipped) == (6, 5, 1)
    assert (report.unchanged, report.changed) == (2, 3)
    changes = {(c.source, c.target): c for c in report.changes}
    assert set(changes) == {("coding", "no_code"), ("image_understanding", "png_pictures")}
    assert changes["coding", "no_code"].count == 2
    assert changes["coding", "no_code"].examples == (traffic[0].id, traffic[1].id)
    assert changes["image_understanding", "png_pictures"].examples == (traffic[3].id,)
    assert report.changes[0].source == "coding"  # most frequent first


def test_the_same_config_changes_nothing(traffic: list[ReplayRecord]) -> None:
    report = whatif(traffic, compiled(rules_only()))
    assert (report.evaluated, report.unchanged, report.changed) == (5, 5, 0)
    assert "no decision would change" in format_whatif(report)


def test_redacted_text_is_what_signals_see(traffic: list[ReplayRecord]) -> None:
    document = rules_only()
    document["signals"]["keyword"].append({"name": "jane", "any": ["jane@example.com"]})
    document["decisions"].append(
        {
            "name": "about_jane",
            "priority": 5000,
            "rules": "keyword.jane",
            "action": {"type": "block", "message": "no"},
        }
    )
    report = whatif(traffic[:1], compiled(document))
    assert report.unchanged == 1  # the address is <EMAIL_1> in the record


# --- image families: stored results stand in for pixels that were not kept ----------------

IMAGE_CONFIG: dict[str, Any] = {
    "models": [
        {"name": "vlm", "cluster": "c", "upstream_model": "up", "modalities": ["text", "image"]}
    ],
    "signals": {
        "image": [{"name": "xray_like", "grayscale": True}, {"name": "colour", "grayscale": False}],
        "modality": [{"name": "has_image"}],
    },
    "decisions": [
        {
            "name": "radiology",
            "priority": 10,
            "rules": "image.xray_like",
            "action": {"type": "route", "models": ["vlm"]},
        },
        {
            "name": "pictures",
            "rules": "modality.has_image",
            "action": {"type": "route", "models": ["vlm"]},
        },
    ],
    "default": {"action": {"type": "route", "models": ["vlm"]}},
}


@pytest.fixture
def xray() -> ReplayRecord:
    record = recorded(
        compiled(IMAGE_CONFIG), chat(user([text_part("look"), image_part(data_url(grey_png()))]))
    )
    assert record.decision == "radiology"
    return record


def test_an_image_signal_answers_from_the_record(xray: ReplayRecord) -> None:
    # decoding the magic-bytes stand-in would fail and fall through to "pictures"
    report = whatif([xray], compiled(IMAGE_CONFIG))
    assert (report.unchanged, report.changed) == (1, 0)
    stored = stored_image_results(xray)["image.xray_like"]
    assert stored.matched
    assert stored.value["images"][0]["grayscale"] is True


def test_an_image_signal_the_record_lacks_fails_and_on_error_decides(xray: ReplayRecord) -> None:
    document = dict(IMAGE_CONFIG)
    document["decisions"] = [
        *IMAGE_CONFIG["decisions"],
        {
            "name": "colour_photo",
            "priority": 20,
            "rules": {"signal": "image.colour", "on_error": "match"},
            "action": {"type": "route", "models": ["vlm"]},
        },
    ]
    policy = compiled(document)
    router = Router(policy, runner=StoredImageRunner(stored_image_results(xray)))
    assert xray.content is not None
    decision = asyncio.run(router.explain(replay_body(xray.content)))
    assert decision.results["image.colour"].error == IMAGE_NOT_KEPT
    assert decision.name == "colour_photo"
    report = whatif([xray], policy)
    assert [(c.source, c.target, c.count) for c in report.changes] == [
        ("radiology", "colour_photo", 1)
    ]


def test_an_image_signal_skipped_live_is_unknown_to_a_what_if(xray: ReplayRecord) -> None:
    entries = [
        {**entry, "matched": False, "value": {"skipped": "…"}, "skipped": True}
        if entry.get("signal") == "image.xray_like"
        else entry
        for entry in xray.trace["signals"]
    ]
    skipped = dataclasses.replace(xray, trace={**xray.trace, "signals": entries})
    stored = stored_image_results(skipped)["image.xray_like"]
    assert stored.error == SKIPPED_LIVE  # not a "no match" the live decision never saw


# --- the command line ----------------------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_location(
    request: pytest.FixtureRequest, tmp_path: Path, traffic: list[ReplayRecord]
) -> str:
    """The traffic in a store of each kind, named as ``--store`` takes it."""
    store: SqliteReplayStore | PostgresReplayStore
    if request.param == "sqlite":
        location = str(tmp_path / "replay.sqlite3")
        store = SqliteReplayStore(location)
    else:
        location = request.getfixturevalue("postgres_url")
        store = PostgresReplayStore(location)
    try:
        for record in traffic:
            store.put(record)
        # recorded two hours ago: the same coding request, outside --since 1h
        store.put(dataclasses.replace(traffic[0], id=new_replay_id(), time=time.time() - 7200))
    finally:
        store.close()
    return location


@pytest.fixture
def new_config(tmp_path: Path) -> Path:
    path = tmp_path / "new.yaml"
    path.write_text(yaml.safe_dump(stricter()))
    return path


def test_the_command_prints_the_table(
    store_location: str,
    new_config: Path,
    traffic: list[ReplayRecord],
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["replay", "--store", store_location, "--config", str(new_config)]) == 0
    out = capsys.readouterr().out
    assert "records read               7" in out
    assert "skipped (no content kept)  1" in out
    assert "changed                    4" in out
    row = next(line for line in out.splitlines() if line.startswith("coding"))
    assert row.split()[:3] == ["coding", "no_code", "3"]
    assert traffic[0].id in row


def test_the_command_prints_json_and_since_filters(
    store_location: str, new_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["replay", "--store", store_location, "--config", str(new_config), "--json"]
    assert main([*args, "--since", "1h"]) == 0
    report = orjson.loads(capsys.readouterr().out)
    assert report["read"] == 6
    assert report["skipped_without_content"] == 1
    assert report["changed"] == 3
    assert {(c["from"], c["to"], c["count"]) for c in report["changes"]} == {
        ("coding", "no_code", 2),
        ("image_understanding", "png_pictures", 1),
    }
    assert main([*args, "--since", "bogus"]) == 2
    assert "neither an ISO-8601 time nor an age" in capsys.readouterr().err


def test_the_command_needs_an_existing_store(
    tmp_path: Path, new_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.sqlite3"
    assert main(["replay", "--store", str(missing), "--config", str(new_config)]) == 2
    assert "no replay store" in capsys.readouterr().err
    assert not missing.exists()


@pytest.mark.postgres
def test_the_command_needs_a_database_it_can_reach_and_never_shows_its_password(
    postgres_server: PostgresServer,
    postgres_url: str,
    new_config: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    secret = "pa55-w0rd-never-printed"
    closed = free_port()  # nothing listens there
    unreachable = f"postgresql://vsr:{secret}@127.0.0.1:{closed}/replay"
    args = ["--config", str(new_config)]
    assert main(["replay", "--store", unreachable, *args]) == 2
    said = capsys.readouterr().err
    assert "unreachable" in said
    assert f"vsr:***@127.0.0.1:{closed}" in said
    assert secret not in said
    assert main(["replay", "--store", postgres_url, *args]) == 2  # reachable, but empty
    assert "no replay records in" in capsys.readouterr().err
    assert main(["replay", "--store", f"postgresql://vsr:{secret}@db:port/r", *args]) == 2
    said = capsys.readouterr().err
    assert "--store: invalid config" in said
    assert "port is not a number" in said
    assert secret not in said


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30m", 10_000.0 - 1800),
        ("2h", 10_000.0 - 7200),
        ("1.5d", 10_000.0 - 129_600),
        ("1970-01-01T01:00:00+00:00", 3600.0),
        ("1970-01-01T00:00:10Z", 10.0),
    ],
)
def test_since_reads_ages_and_iso_times(text: str, expected: float) -> None:
    assert parse_since(text, now=10_000.0) == expected
