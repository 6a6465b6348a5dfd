"""Replay records and their stores: what is kept, where, and that recording never gets in
the way of routing (a slow, full or failing store drops records, never requests).

The store contract runs on both stores: SQLite, and PostgreSQL on the session's real
server (tests/postgres.py). What only PostgreSQL does is in test_replay_postgres.py."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from builders import body, chat, data_url, encoded, image_part, text_part, user
from PIL import Image
from pydantic import ValidationError

from vsr_extproc.config.compile import compile_policy, load_policy, parse_config
from vsr_extproc.config.schema import ReplayConfig
from vsr_extproc.core.router import Router
from vsr_extproc.errors import ReplayStoreUnavailable
from vsr_extproc.replay import (
    ReplayRecord,
    ReplayRecorder,
    SqliteReplayStore,
    make_record,
    new_replay_id,
    open_store,
)
from vsr_extproc.replay import store as replay_store
from vsr_extproc.replay.postgres import PostgresReplayStore
from vsr_extproc.replay.record import IMAGE_FAMILIES
from vsr_extproc.replay.store import SQLITE_SCHEMA_VERSION
from vsr_extproc.signals import FAMILIES
from vsr_extproc.signals.base import Resources

ROOT = Path(__file__).resolve().parents[2]
RULES_ONLY = ROOT / "deploy" / "examples" / "rules-only.yaml"

EMAIL = "jane.doe@example.com"
CARD = "4111 1111 1111 1111"

IMAGE_CONFIG: dict[str, Any] = {
    "models": [
        {"name": "m", "cluster": "c", "upstream_model": "up", "modalities": ["text", "image"]}
    ],
    "signals": {
        "image": [{"name": "xray_like", "grayscale": True}],
        "modality": [{"name": "has_image"}],
    },
    "decisions": [
        {
            "name": "radiology",
            "priority": 10,
            "rules": "image.xray_like",
            "action": {"type": "route", "models": ["m"]},
        },
        {
            "name": "pictures",
            "rules": "modality.has_image",
            "action": {"type": "route", "models": ["m"]},
        },
    ],
    "default": {"action": {"type": "route", "models": ["m"]}},
}


def grey_png() -> bytes:
    return encoded(Image.new("L", (16, 16), 128), "PNG")


def record_of(
    document: dict[str, Any],
    *,
    router: Router | None = None,
    keep_content: bool = True,
    replay_id: str | None = None,
) -> ReplayRecord:
    router = router or Router(load_policy(RULES_ONLY)[1])
    raw = body(document)
    request = router.parse(raw, router.policy)
    decision = asyncio.run(router.decide(request, router.policy))
    return make_record(
        replay_id or new_replay_id(),
        "req-1",
        raw,
        request,
        decision,
        keep_content=keep_content,
        policy_fingerprint=router.policy.fingerprint,
    )


def plain(replay_id: str, at: float, *, content: bool = False) -> ReplayRecord:
    return ReplayRecord(
        id=replay_id,
        time=at,
        request_id=f"r-{replay_id}",
        request_hash="0" * 64,
        policy="abc",
        decision="coding",
        outcome="routed",
        model="coder",
        signals={"keyword.code_words": {"matched": True, "confidence": 1.0, "error": None}},
        trace={"decision": "coding"},
        content={"messages": [{"role": "user", "content": "hi"}]} if content else None,
    )


Store = SqliteReplayStore | PostgresReplayStore


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A new, empty store of each kind."""
    opened: Store
    if request.param == "sqlite":
        opened = SqliteReplayStore(tmp_path / "replay.sqlite3")
    else:
        opened = PostgresReplayStore(request.getfixturevalue("postgres_url"))
    yield opened
    opened.close()


# --- the store ---------------------------------------------------------------------------


def test_a_record_reads_back_as_it_was_written(store: Store) -> None:
    record = record_of(chat(user(f"fix this bug, mail {EMAIL}")))
    store.put(record)
    assert store.get(record.id) == record
    assert store.get("nope") is None


def test_a_batch_is_stored_whole_or_not_at_all(store: Store) -> None:
    store.put_many([plain("one", 1.0), plain("two", 2.0)])
    assert [r.id for r in store.scan()] == ["one", "two"]
    unstorable = dataclasses.replace(plain("four", 4.0), trace={1: "a key JSON cannot hold"})
    with pytest.raises(TypeError):
        store.put_many([plain("three", 3.0), unstorable])
    assert [r.id for r in store.scan()] == ["one", "two"]
    store.put_many([plain("three", 3.0)])  # the connection is usable again
    assert store.count() == 3


def test_scan_starts_at_a_time_and_can_keep_only_records_with_content(store: Store) -> None:
    for number in range(600):  # more than one page of the scan
        store.put(plain(f"id{number:04d}", 1000.0 + number, content=number % 2 == 0))
    assert [r.id for r in store.scan(1598.0)] == ["id0598", "id0599"]
    assert len(list(store.scan())) == 600
    with_content = list(store.scan(1000.0, with_content=True))
    assert len(with_content) == 300
    assert all(r.content is not None for r in with_content)
    assert [r.id for r in store.scan(1010.0, with_content=True, limit=3)] == [
        "id0010",
        "id0012",
        "id0014",
    ]


def test_prune_deletes_by_age_then_the_oldest_beyond_the_count(store: Store) -> None:
    for number in range(10):
        store.put(plain(f"id{number}", 100.0 + number))
    assert store.prune(max_age_s=5.0, max_records=100, now=110.0) == 5  # 100..104 are too old
    assert [r.id for r in store.scan()] == ["id5", "id6", "id7", "id8", "id9"]
    assert store.prune(max_age_s=1e9, max_records=2, now=110.0) == 3
    assert [r.id for r in store.scan()] == ["id8", "id9"]


def test_responses_are_set_on_stored_records_and_read_back(store: Store) -> None:
    store.put_many([plain("one", 1.0), plain("two", 2.0)])
    assert store.get("one") == plain("one", 1.0)  # no response yet
    answered = {"status": 200, "usage": {"completion_tokens": 7}}
    assert store.put_responses([("one", answered), ("never-written", {"status": 200})]) == 1
    found = store.get("one")
    assert found is not None
    assert found.response == answered
    assert [r.response for r in store.scan()] == [answered, None]
    assert store.put_responses([("one", {"status": 502})]) == 1  # the latest wins
    assert [r.response for r in store.scan(with_content=False)] == [{"status": 502}, None]
    with_response = dataclasses.replace(plain("three", 3.0), response={"status": 200})
    store.put(with_response)
    assert store.get("three") == with_response


def test_a_batch_of_responses_is_set_whole_or_not_at_all(store: Store) -> None:
    store.put(plain("one", 1.0))
    with pytest.raises(TypeError):
        store.put_responses([("one", {"status": 200}), ("one", {1: "a key JSON cannot hold"})])
    assert store.get("one") == plain("one", 1.0)


def test_text_with_a_nul_character_or_an_escaped_one_is_kept(store: Store) -> None:
    """jsonb refuses U+0000, so PostgreSQL keeps U+FFFD in its place; a backslash and
    "u0000" typed by a user are text, and stay as they were in both stores."""
    typed = "a\\u0000b"
    record = dataclasses.replace(
        plain("nul", 1.0),
        content={"messages": [{"role": "user", "content": "a\x00b"}, {"content": typed}]},
    )
    store.put(record)
    found = store.get("nul")
    assert found is not None
    assert found.content is not None
    nul, escaped = found.content["messages"]
    assert nul["content"] == ("a\ufffdb" if isinstance(store, PostgresReplayStore) else "a\x00b")
    assert escaped["content"] == typed


def test_another_connection_reads_a_store_while_it_is_written(tmp_path: Path) -> None:
    path = tmp_path / "live.sqlite3"
    recorder = ReplayRecorder(SqliteReplayStore(path), max_age_s=3600, max_records=100)
    try:
        first = plain(new_replay_id(), time.time())
        assert recorder.record(first)
        reader = SqliteReplayStore(path, readonly=True)
        try:
            assert _eventually(lambda: reader.get(first.id) is not None)
            second = plain(new_replay_id(), time.time())
            recorder.record(second)
            assert _eventually(lambda: [r.id for r in reader.scan()] == [first.id, second.id])
        finally:
            reader.close()
        connection = sqlite3.connect(path)
        try:
            (mode,) = connection.execute("PRAGMA journal_mode").fetchone()
        finally:
            connection.close()
        assert mode == "wal"
    finally:
        recorder.close()


def test_a_read_only_store_must_exist(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no replay store"):
        SqliteReplayStore(tmp_path / "missing.sqlite3", readonly=True)
    assert not (tmp_path / "missing.sqlite3").exists()


def test_open_store_picks_sqlite_by_the_path_and_postgresql_by_the_url(tmp_path: Path) -> None:
    for path in (tmp_path / "a.sqlite3", f"sqlite://{tmp_path / 'b.db'}"):
        opened = open_store(ReplayConfig(path=str(path)))
        try:
            assert isinstance(opened, SqliteReplayStore)
        finally:
            opened.close()
    # opening does not wait for the database: a processor starts whether it is up or not
    started = time.monotonic()
    shared = open_store(ReplayConfig.model_validate({"url": "postgresql://vsr@127.0.0.1:9/r"}))
    try:
        assert isinstance(shared, PostgresReplayStore)
        assert time.monotonic() - started < 1.0
    finally:
        shared.close()


def test_the_sqlite_schema_is_versioned_and_old_files_gain_the_response_column(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.sqlite3"
    _write_old_file(path, plain("before", 1.0))
    reader = SqliteReplayStore(path, readonly=True)  # the replay command changes nothing
    try:
        assert reader.get("before") == plain("before", 1.0)
    finally:
        reader.close()
    assert _user_version(path) == 0
    opened = SqliteReplayStore(path)
    try:
        assert opened.get("before") == plain("before", 1.0)
        assert opened.put_responses([("before", {"status": 200})]) == 1
        found = opened.get("before")
        assert found is not None
        assert found.response == {"status": 200}
    finally:
        opened.close()
    assert _user_version(path) == SQLITE_SCHEMA_VERSION == 2
    SqliteReplayStore(path).close()  # opening again changes nothing
    assert _user_version(path) == SQLITE_SCHEMA_VERSION


def test_processes_opening_one_new_file_together_create_it_once(tmp_path: Path) -> None:
    path = tmp_path / "together.sqlite3"
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def open_it() -> None:
        start.wait()
        try:
            SqliteReplayStore(path).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert _user_version(path) == SQLITE_SCHEMA_VERSION


def _write_old_file(path: Path, record: ReplayRecord) -> None:
    """A store as the processor wrote it before records had responses."""
    connection = sqlite3.connect(path)
    try:
        connection.executescript(
            """CREATE TABLE replay_records (
                id TEXT PRIMARY KEY, time REAL NOT NULL, request_id TEXT NOT NULL,
                request_hash TEXT NOT NULL, policy TEXT NOT NULL, decision TEXT NOT NULL,
                outcome TEXT NOT NULL, model TEXT, signals TEXT NOT NULL, trace TEXT NOT NULL,
                content TEXT);
            CREATE INDEX replay_records_time ON replay_records (time, id);"""
        )
        row = (record.id, record.time, record.request_id, record.request_hash, record.policy,
               record.decision, record.outcome, record.model, orjson.dumps(record.signals),
               orjson.dumps(record.trace), None)  # fmt: skip
        connection.execute("INSERT INTO replay_records VALUES (?,?,?,?,?,?,?,?,?,?,?)", row)
        connection.commit()
    finally:
        connection.close()


def _user_version(path: Path) -> int:
    connection = sqlite3.connect(path)
    try:
        (version,) = connection.execute("PRAGMA user_version").fetchone()
    finally:
        connection.close()
    return int(version)


# --- the config --------------------------------------------------------------------------

SECRET = "pa55-w0rd-never-shown"


@pytest.mark.parametrize(
    ("replay", "problem"),
    [
        ({"url": f"postgresql://vsr:{SECRET}@db/replay", "path": "mine.sqlite3"},
         "url and path name two stores"),
        ({"url": f"mysql://vsr:{SECRET}@db/replay"}, "must start with postgresql://"),
        ({"url": f"postgresql://vsr:{SECRET}@db:port/replay"}, "port is not a number"),
        ({"path": f"postgres://vsr:{SECRET}@db/replay"}, "a PostgreSQL database goes in url"),
        ({"url": "postgresql://db/r", "pool_min_size": 5, "pool_max_size": 2},
         "pool_min_size is above pool_max_size"),
    ],
)  # fmt: skip
def test_a_replay_store_is_named_once_and_the_password_is_never_repeated(
    replay: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        ReplayConfig.model_validate(replay)
    messages = " ".join(error["msg"] for error in caught.value.errors())
    assert problem in messages
    assert SECRET not in messages


def test_the_config_keeps_the_url_secret() -> None:
    config = ReplayConfig.model_validate({"url": f"postgresql://vsr:{SECRET}@db:5432/replay"})
    assert SECRET not in repr(config)
    assert SECRET not in str(config.model_dump())
    assert config.url is not None
    assert config.url.get_secret_value().endswith("@db:5432/replay")
    assert (config.pool_min_size, config.pool_max_size, config.timeout_s) == (1, 4, 2.0)


# --- the recorder ------------------------------------------------------------------------


class MemoryStore:
    """A store in a dict whose ``put`` can be held (slow) or made to fail."""

    def __init__(self, *, fail_first: int = 0, unavailable: bool = False) -> None:
        self.records: dict[str, ReplayRecord] = {}
        self.release = threading.Event()
        self.release.set()
        self.entered = threading.Event()
        self.fail_first = fail_first
        self.unavailable = unavailable
        self.closed = False
        #: ("put_many" or "put_responses", the ids), in the order the store saw them
        self.calls: list[tuple[str, list[str]]] = []

    def put(self, record: ReplayRecord) -> None:
        self.put_many([record])

    def put_many(self, records: Sequence[ReplayRecord]) -> None:
        self.entered.set()
        self.release.wait(10)
        self.calls.append(("put_many", [record.id for record in records]))
        if self.unavailable:
            raise ReplayStoreUnavailable("the database is down")
        if self.fail_first:
            self.fail_first -= 1
            raise sqlite3.OperationalError("disk I/O error")
        self.records.update((record.id, record) for record in records)

    def put_responses(self, items: Sequence[tuple[str, dict[str, Any]]]) -> int:
        self.calls.append(("put_responses", [replay_id for replay_id, _ in items]))
        if self.unavailable:
            raise ReplayStoreUnavailable("the database is down")
        found = [(i, r) for i, r in items if i in self.records]
        for replay_id, response in found:
            self.records[replay_id] = dataclasses.replace(
                self.records[replay_id], response=response
            )
        return len(found)

    def get(self, replay_id: str) -> ReplayRecord | None:
        return self.records.get(replay_id)

    def scan(
        self, since: float | None = None, *, with_content: bool = False, limit: int | None = None
    ) -> Iterator[ReplayRecord]:
        return iter(sorted(self.records.values(), key=lambda r: r.time))

    def prune(self, *, max_age_s: float, max_records: int, now: float | None = None) -> int:
        return 0

    def close(self) -> None:
        self.closed = True


def test_record_returns_at_once_and_drops_when_the_queue_is_full() -> None:
    store = MemoryStore()
    store.release.clear()  # every put hangs until released
    recorder = ReplayRecorder(store, max_age_s=60, max_records=10, queue_size=2)
    try:
        started = time.perf_counter()
        assert recorder.record(plain("a", 1.0))
        assert store.entered.wait(5)  # the writer holds "a"; the queue is empty again
        assert recorder.record(plain("b", 2.0))
        assert recorder.record(plain("c", 3.0))
        assert not recorder.record(plain("d", 4.0))
        assert time.perf_counter() - started < 1.0
        assert recorder.dropped == 1
        assert recorder.get("c") == plain("c", 3.0)  # queued, not yet written
        assert recorder.get("d") is None
    finally:
        store.release.set()
        recorder.close()
    assert sorted(store.records) == ["a", "b", "c"]
    assert store.closed


def test_a_deferred_record_is_built_once_and_served_before_it_is_written() -> None:
    store = MemoryStore()
    recorder = ReplayRecorder(store, max_age_s=60, max_records=10, flush_every_s=60)
    builds: list[str] = []

    def build() -> ReplayRecord:
        builds.append("a")
        return plain("a", 1.0)

    try:
        assert recorder.defer("a", build)
        assert builds == []  # nothing is built on the request path
        assert recorder.get("a") == plain("a", 1.0)  # queued, built on demand
        assert "a" not in store.records
    finally:
        recorder.close()  # writes what is queued
    assert store.records == {"a": plain("a", 1.0)}
    assert builds == ["a"]


def test_a_failing_store_is_counted_and_never_raised() -> None:
    """A refused batch is retried record by record, so only the refused record is lost."""
    store = MemoryStore(fail_first=2)  # the batch holding "a", then "a" alone, fail
    recorder = ReplayRecorder(store, max_age_s=60, max_records=10)
    try:
        assert all(recorder.record(plain(name, 1.0)) for name in ("a", "b", "c"))
    finally:
        recorder.close()
    assert recorder.failed == 1
    assert recorder.written == 2
    assert sorted(store.records) == ["b", "c"]


def test_a_response_to_a_queued_record_waits_for_it_and_is_served_at_once() -> None:
    store = MemoryStore()
    recorder = ReplayRecorder(store, max_age_s=60, max_records=10, flush_every_s=60)
    try:
        assert recorder.defer("a", lambda: plain("a", 1.0))
        assert recorder.respond("a", {"status": 200})
        assert recorder.respond("a", {"status": 503})  # the later one wins
        queued = recorder.get("a")
        assert queued is not None
        assert queued.response == {"status": 503}
        assert store.calls == []
    finally:
        recorder.close()
    assert store.records["a"].response == {"status": 503}
    assert store.calls == [("put_many", ["a"]), ("put_responses", ["a", "a"])]
    assert (recorder.written, recorder.responded, recorder.failed) == (1, 2, 0)


def test_a_response_that_arrives_before_its_record_waits_for_it() -> None:
    """On a shared store the replica that measured an answer may not be the one that
    decided it, and may get there first: the response waits for the record."""
    store = MemoryStore()
    measuring = ReplayRecorder(store, max_age_s=60, max_records=10)
    deciding = ReplayRecorder(store, max_age_s=60, max_records=10)
    try:
        assert measuring.respond("a", {"status": 200})
        assert _eventually(lambda: ("put_responses", ["a"]) in store.calls)
        assert deciding.record(plain("a", 1.0))
        assert _eventually(lambda: "a" in store.records)
        assert _eventually(lambda: store.records["a"].response == {"status": 200})
    finally:
        deciding.close()
        measuring.close()
    assert (measuring.responded, measuring.failed) == (1, 0)


def test_a_response_whose_record_never_comes_is_counted_as_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(replay_store, "UNMATCHED_WAIT_S", 0.05)
    store = MemoryStore()
    recorder = ReplayRecorder(store, max_age_s=60, max_records=10)
    try:
        assert recorder.respond("gone", {"status": 200})
        assert _eventually(lambda: recorder.failed == 1)
    finally:
        recorder.close()
    assert recorder.responded == 0
    assert "gone" not in store.records


def test_a_response_to_a_written_record_is_set_in_the_store() -> None:
    store = MemoryStore()
    recorder = ReplayRecorder(store, max_age_s=60, max_records=10)
    try:
        assert recorder.record(plain("a", 1.0))
        assert _eventually(lambda: "a" in store.records)
        assert recorder.respond("a", {"status": 200, "finish_reason": "stop"})
        answered = recorder.get("a")  # from the queue or, once set, from the store
        assert answered is not None
        assert answered.response == {"status": 200, "finish_reason": "stop"}
        assert _eventually(lambda: store.records["a"].response is not None)
    finally:
        recorder.close()
    assert recorder.get("a") == dataclasses.replace(
        plain("a", 1.0), response={"status": 200, "finish_reason": "stop"}
    )


def test_responses_share_the_bounded_queue_and_are_dropped_when_it_is_full() -> None:
    store = MemoryStore()
    store.release.clear()
    recorder = ReplayRecorder(store, max_age_s=60, max_records=10, queue_size=2)
    try:
        assert recorder.record(plain("a", 1.0))
        assert store.entered.wait(5)  # the writer holds "a"
        assert recorder.respond("a", {"status": 200})
        assert recorder.record(plain("b", 2.0))
        started = time.perf_counter()
        assert not recorder.respond("b", {"status": 200})
        assert time.perf_counter() - started < 0.5
        assert recorder.dropped == 1
    finally:
        store.release.set()
        recorder.close()
    assert store.records["a"].response == {"status": 200}
    assert store.records["b"].response is None


def test_an_unreachable_store_loses_its_batch_at_once_and_says_how_many() -> None:
    """No retry record by record: each would wait for the database again."""
    lost: list[int] = []
    store = MemoryStore(unavailable=True)
    recorder = ReplayRecorder(store, max_age_s=60, max_records=10, flush_every_s=60,
                              lost=lost.append)  # fmt: skip
    try:
        assert all(recorder.record(plain(name, 1.0)) for name in ("a", "b", "c"))
        assert recorder.respond("a", {"status": 200})
    finally:
        recorder.close()
    assert store.calls == [("put_many", ["a", "b", "c"]), ("put_responses", ["a"])]
    assert (recorder.failed, recorder.written, recorder.dropped) == (4, 0, 0)
    assert sum(lost) == 4


def test_close_writes_everything_queued(tmp_path: Path) -> None:
    path = tmp_path / "flush.sqlite3"
    recorder = ReplayRecorder(SqliteReplayStore(path), max_age_s=3600, max_records=1000)
    ids = [new_replay_id() for _ in range(200)]
    for replay_id in ids:
        assert recorder.record(plain(replay_id, time.time()))
    recorder.close()
    assert not recorder.record(plain(new_replay_id(), time.time()))  # closed: dropped
    reader = SqliteReplayStore(path, readonly=True)
    try:
        assert [r.id for r in reader.scan()] == ids
    finally:
        reader.close()


def test_the_writer_prunes_old_records(tmp_path: Path) -> None:
    store = SqliteReplayStore(tmp_path / "old.sqlite3")
    store.put(plain("ancient", time.time() - 7200))
    recorder = ReplayRecorder(store, max_age_s=3600, max_records=10, prune_every_s=0.01)
    try:
        assert _eventually(lambda: store.get("ancient") is None)
    finally:
        recorder.close()


# --- what a record keeps -----------------------------------------------------------------


def test_without_keep_content_a_record_holds_no_request() -> None:
    raw_text = f"fix this bug for {EMAIL}"
    record = record_of(chat(user(raw_text)), keep_content=False)
    assert record.content is None
    assert record.decision == "coding"
    assert record.outcome == "routed"
    assert record.model == "coder"
    assert record.signals["keyword.code_words"] == {
        "matched": True,
        "confidence": 1.0,
        "error": None,
    }
    assert record.trace["decision"] == "coding"
    assert EMAIL not in orjson.dumps(record.__dict__).decode()


def test_kept_content_without_a_name_model_says_names_were_kept() -> None:
    record = record_of(chat(user(f"Dear Maria Gonzalez, write to {EMAIL}")))
    assert record.content is not None
    assert record.content["messages"][0]["content"] == "Dear Maria Gonzalez, write to <EMAIL_1>"
    assert record.trace["content"] == "names not redacted: no named-entity model"


def test_kept_content_has_pii_placeholders_and_images_as_hashes_with_features() -> None:
    router = Router(compile_policy(parse_config(IMAGE_CONFIG), Resources()))
    png = grey_png()
    document = chat(
        {"role": "system", "content": f"The account card is {CARD}."},
        {
            "role": "user",
            "name": "Jane Doe",
            "content": [text_part(f"Mail {EMAIL} about this scan"), image_part(data_url(png))],
        },
        user("again, " + EMAIL),
        user([{"type": "file", "file": {"file_data": "SGVsbG8=", "filename": "jane.pdf"}}]),
        user([image_part("https://example.com/u/jane/photo.jpg?token=abc")]),
        user=EMAIL,
        metadata={"customer": "Jane"},
    )
    record = record_of(document, router=router)
    assert record.decision == "radiology"
    content = record.content
    assert content is not None
    stored = orjson.dumps(content).decode()
    for secret in (EMAIL, CARD, "Jane", "jane", "SGVsbG8=", "token=abc"):
        assert secret not in stored
    assert set(content) == {"model", "messages"}
    system, with_image, again, with_file, remote = content["messages"]
    assert system["content"] == "The account card is <CARD_1>."
    assert with_image["content"][0]["text"] == "Mail <EMAIL_1> about this scan"
    assert again["content"] == "again, <EMAIL_1>"  # one value, one placeholder
    assert with_file["content"] == [{"type": "file"}]
    stub = with_image["content"][1]["image_url"]
    assert stub["sha256"] == hashlib.sha256(png).hexdigest()
    assert stub["format"] == "png"
    assert stub["source"] == "data"
    assert stub["features"]["image.xray_like"] == {
        "format": "png",
        "width": 16,
        "height": 16,
        "frames": 1,
        "gps": False,
        "grayscale": True,
        "matched": True,
    }
    remote_stub = remote["content"][0]["image_url"]
    assert remote_stub["source"] == "remote"
    assert remote_stub["format"] == "jpeg"
    assert "url" not in remote_stub


def test_the_record_identifies_the_body_and_the_policy() -> None:
    document = chat(user("hello"))
    record = record_of(document)
    assert record.request_hash == hashlib.sha256(body(document)).hexdigest()
    assert record.policy == load_policy(RULES_ONLY)[1].fingerprint != ""
    assert record.request_id == "req-1"
    assert abs(record.time - time.time()) < 60


@pytest.mark.parametrize(
    ("outcome", "error", "decision"),
    [
        (None, None, "invalid_request"),
        (None, "request_too_large", "request_too_large"),
        ("passthrough", None, "passthrough"),
    ],
)
def test_a_request_without_a_decision_is_recorded_as_what_happened(
    outcome: str | None, error: str | None, decision: str
) -> None:
    record = make_record(
        "x",
        "req",
        b"{not json",
        None,
        None,
        outcome=outcome,
        keep_content=True,
        policy_fingerprint="p",
        error=error,
    )
    assert record.decision == decision
    assert record.outcome == (outcome or "error")
    assert record.content is None
    assert record.model is None


def test_a_request_with_more_text_than_max_content_chars_keeps_no_content() -> None:
    router = Router(load_policy(RULES_ONLY)[1])
    raw = body(chat(user("Summarise this contract. " * 100)))
    request = router.parse(raw, router.policy)
    decision = asyncio.run(router.decide(request, router.policy))

    def recorded(limit: int) -> ReplayRecord:
        return make_record(
            "x",
            "req",
            raw,
            request,
            decision,
            keep_content=True,
            max_content_chars=limit,
            policy_fingerprint="p",
        )

    kept = recorded(len("Summarise this contract. " * 100))
    assert kept.content is not None
    omitted = recorded(1_000)
    assert omitted.content is None
    assert omitted.trace["content"] == "not kept: 2500 characters of text"
    assert omitted.decision == kept.decision


def test_replay_ids_are_unique_url_safe_and_sort_by_time() -> None:
    ids = [new_replay_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    assert sorted(ids) == ids
    assert all(re.fullmatch(r"[0-9a-f]{20}", replay_id) for replay_id in ids)
    before = new_replay_id()
    time.sleep(0.002)
    assert new_replay_id() > before


def test_the_image_families_are_the_families_that_read_images() -> None:
    assert {name for name, family in FAMILIES.items() if family.reads_images} == IMAGE_FAMILIES


def _eventually(check: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return False


def _answered(replay_id: str, at: float, **response: Any) -> ReplayRecord:
    return dataclasses.replace(plain(replay_id, at), response=response)


def test_replay_lists_and_filters_records_by_what_the_model_answered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vsr_extproc.cli import main

    path = tmp_path / "replay.sqlite3"
    store = SqliteReplayStore(path)
    store.put_many(
        [
            _answered("a1", 1.0, status=200, finish_reason="stop", tool_calls=[],
                      usage={"output_tokens": 12}, decisions=[]),
            _answered("a2", 2.0, status=200, finish_reason="tool_calls",
                      tool_calls=["save_memory"], decision="refuse_memory_pii",
                      decisions=[{"decision": "refuse_memory_pii", "action": "block"}]),
            _answered("a3", 3.0, status=503, finish_reason=None, tool_calls=[], decisions=[]),
            plain("a4", 4.0),  # decided, but its answer was never measured
        ]
    )  # fmt: skip
    store.close()

    def listed(*options: str) -> list[str]:
        assert main(["replay", "--store", str(path), "--list", "--json", *options]) == 0
        return [orjson.loads(line)["id"] for line in capsys.readouterr().out.splitlines()]

    assert listed() == ["a1", "a2", "a3", "a4"]
    assert listed("--tool", "*memory*") == ["a2"]
    assert listed("--response-decision", "refuse_memory_pii") == ["a2"]
    assert listed("--status", "5xx") == ["a3"]
    assert listed("--status", "200", "--finish-reason", "stop") == ["a1"]
    assert listed("--decision", "nothing-like-it") == []
    assert main(["replay", "--store", str(path), "--list", "--status", "bad"]) == 2
    assert "expected a status such as 200 or 5xx" in capsys.readouterr().err
