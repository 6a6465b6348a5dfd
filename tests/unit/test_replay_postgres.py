"""The PostgreSQL replay store on a real server: replicas sharing one database, the schema
made once however many start together, and a database that is away at start.

What both stores promise (put, get, scan, prune, responses) is tested on both in
test_replay_store.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
import structlog
from postgres import Forwarder, PostgresServer

from vsr_extproc.errors import ConfigError, ReplayStoreError, ReplayStoreUnavailable
from vsr_extproc.replay import ReplayRecord, ReplayRecorder, new_replay_id
from vsr_extproc.replay.postgres import SCHEMA_VERSION, PostgresReplayStore, redacted

pytestmark = pytest.mark.postgres

SECRET = "pa55-w0rd-never-logged"


def plain(replay_id: str, at: float) -> ReplayRecord:
    return ReplayRecord(
        id=replay_id,
        time=at,
        request_id=f"r-{replay_id}",
        request_hash="0" * 64,
        policy="abc",
        decision="coding",
        outcome="routed",
        model="coder",
        signals={},
        trace={"decision": "coding"},
    )


def versions(url: str) -> list[int]:
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT version FROM replay_schema ORDER BY version")
        return [row[0] for row in rows.fetchall()]


@pytest.fixture
def logs() -> Iterator[list[dict[str, Any]]]:
    """What the store logs, at every level (an earlier test may have set a level filter)."""
    structlog.reset_defaults()
    try:
        with structlog.testing.capture_logs() as entries:
            yield entries
    finally:
        structlog.reset_defaults()


@pytest.fixture
def replicas(postgres_url: str) -> Iterator[tuple[ReplayRecorder, ReplayRecorder]]:
    """Two processors' recorders on one database."""
    pair = tuple(
        ReplayRecorder(PostgresReplayStore(postgres_url), max_age_s=3600, max_records=1000)
        for _ in range(2)
    )
    yield pair[0], pair[1]
    for recorder in pair:
        recorder.close()


def test_replicas_sharing_a_database_find_each_others_records(
    replicas: tuple[ReplayRecorder, ReplayRecorder],
) -> None:
    first, second = replicas
    mine = [plain(new_replay_id(), time.time()) for _ in range(5)]
    theirs = [plain(new_replay_id(), time.time()) for _ in range(5)]
    assert all(first.record(record) for record in mine)
    assert all(second.record(record) for record in theirs)
    for record in mine:
        assert _eventually(lambda r=record: second.get(r.id) == r)
    for record in theirs:
        assert _eventually(lambda r=record: first.get(r.id) == r)
    assert second.respond(mine[0].id, {"status": 200})  # the other replica answered it
    assert _eventually(lambda: (first.store.get(mine[0].id) or mine[0]).response is not None)
    found = [r.id for r in first.store.scan()]
    assert sorted(found) == sorted(r.id for r in mine + theirs)


def test_the_schema_is_made_once_and_its_version_written_down(postgres_url: str) -> None:
    for _ in range(2):
        store = PostgresReplayStore(postgres_url)
        try:
            store.put(plain("one", 1.0))
            assert store.count() == 1
        finally:
            store.close()
    assert versions(postgres_url) == list(range(1, SCHEMA_VERSION + 1))


def test_replicas_starting_together_make_the_schema_once(postgres_url: str) -> None:
    """Each opens its own connection at once; the advisory lock makes them take turns
    (without it, concurrent CREATE TABLE fails in all but one)."""
    count = 8
    start = threading.Barrier(count)
    errors: list[BaseException] = []
    stores = [PostgresReplayStore(postgres_url) for _ in range(count)]

    def first_write(store: PostgresReplayStore, number: int) -> None:
        start.wait()
        try:
            store.put(plain(f"id{number}", float(number)))
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=first_write, args=(store, number))
        for number, store in enumerate(stores)
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
        assert stores[0].count() == count
    finally:
        for store in stores:
            store.close()
    assert versions(postgres_url) == list(range(1, SCHEMA_VERSION + 1))


def test_a_newer_schema_is_used_as_it_is(postgres_url: str) -> None:
    """During a rolling update an old replica meets the new replicas' schema: steps only
    add, so it keeps writing."""
    store = PostgresReplayStore(postgres_url)
    try:
        store.put(plain("one", 1.0))
    finally:
        store.close()
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("ALTER TABLE replay_records ADD COLUMN later text")
        connection.execute("INSERT INTO replay_schema (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
    old = PostgresReplayStore(postgres_url)
    try:
        old.put(plain("two", 2.0))
        assert [r.id for r in old.scan()] == ["one", "two"]
    finally:
        old.close()


def test_a_database_away_at_start_drops_and_counts_records_then_is_used(
    postgres_server: PostgresServer, postgres_url: str, logs: list[dict[str, Any]]
) -> None:
    """The processor starts and routes; records made while the database cannot be reached
    are dropped and counted (never waited for on the request path), and once it can be
    reached the schema is made and records are written."""
    database = postgres_url.rsplit("/", 1)[1]
    forwarder = Forwarder(postgres_server.port)
    lost: list[int] = []
    url = postgres_server.url(database, port=forwarder.port)
    recorder = ReplayRecorder(PostgresReplayStore(url, timeout_s=0.5), max_age_s=3600,
                              max_records=1000, lost=lost.append)  # fmt: skip
    try:
        started = time.perf_counter()
        early = [plain(new_replay_id(), time.time()) for _ in range(20)]
        assert all(recorder.record(record) for record in early)
        assert time.perf_counter() - started < 0.1  # the request path never waits
        assert _eventually(lambda: recorder.failed == 20, timeout=15)
        assert sum(lost) == 20
        assert any(entry["event"] == "replay_store_unreachable" for entry in logs)
        forwarder.open()

        def record_one() -> None:
            recorder.record(plain(new_replay_id(), time.time()))

        assert _eventually(lambda: recorder.written > 0, timeout=40, poke=record_one)
    finally:
        recorder.close()
        forwarder.close()
    assert versions(postgres_url) == list(range(1, SCHEMA_VERSION + 1))
    assert any(entry["event"] == "replay_store_reachable" for entry in logs)
    direct = PostgresReplayStore(postgres_url)
    try:
        assert direct.count() == recorder.written
        assert all(direct.get(record.id) is None for record in early)
    finally:
        direct.close()


def test_an_unreachable_database_fails_fast_for_a_while_and_never_shows_the_password(
    postgres_server: PostgresServer, logs: list[dict[str, Any]]
) -> None:
    forwarder = Forwarder(postgres_server.port)  # never opened: nothing listens there
    url = f"postgresql://vsr:{SECRET}@127.0.0.1:{forwarder.port}/replay"
    store = PostgresReplayStore(url, timeout_s=0.5)
    try:
        with pytest.raises(ReplayStoreUnavailable) as first:
            store.get("x")
        started = time.perf_counter()
        with pytest.raises(ReplayStoreUnavailable) as again:
            store.put(plain("x", 1.0))
        assert time.perf_counter() - started < 0.1  # no second wait during the pause
    finally:
        store.close()
    said = f"{first.value} {again.value} {logs}"
    assert SECRET not in said
    assert f"vsr:***@127.0.0.1:{forwarder.port}/replay" in said
    assert "Connection refused" in said  # why, from libpq


def test_the_replay_command_reads_only_an_existing_store(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    with pytest.raises(ReplayStoreError, match="no replay records in"):
        PostgresReplayStore(postgres_url, readonly=True)
    with pytest.raises(psycopg.errors.UndefinedTable), psycopg.connect(postgres_url) as c:
        c.execute("SELECT 1 FROM replay_schema")  # nothing was made
    unreachable = Forwarder(postgres_server.port)
    with pytest.raises(ReplayStoreUnavailable):
        PostgresReplayStore(postgres_server.url(port=unreachable.port), readonly=True,
                            timeout_s=0.5)  # fmt: skip


def test_pruning_is_one_replicas_job_at_a_time(postgres_url: str) -> None:
    store = PostgresReplayStore(postgres_url)
    try:
        store.put_many([plain(f"id{n}", 100.0 + n) for n in range(4)])
        with psycopg.connect(postgres_url) as other, other.transaction():
            other.execute("SELECT pg_advisory_xact_lock(%s)", (0x5653525F50524E45,))
            assert store.prune(max_age_s=1.0, max_records=100, now=110.0) == 0
        assert store.prune(max_age_s=1.0, max_records=100, now=110.0) == 4
    finally:
        store.close()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"postgresql://vsr:{SECRET}@db:5432/replay", "postgresql://vsr:***@db:5432/replay"),
        ("postgresql://vsr@db/replay", "postgresql://vsr@db/replay"),
        (f"postgres://db/replay?sslmode=require&password={SECRET}",
         "postgres://db/replay?sslmode=require&password=***"),
    ],
)  # fmt: skip
def test_a_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert redacted(url) == shown


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://vsr:p%zz{SECRET}@db/replay",  # a percent sign that escapes nothing
        f"postgresql://vsr:{SECRET}@db/replay?colour=red",  # no such parameter
        f"postgresql://db/replay?password={SECRET}&colour=red",
    ],
)
def test_a_url_libpq_cannot_read_is_a_config_error_that_hides_the_password(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        PostgresReplayStore(url)
    assert caught.value.problems[0].startswith("replay.url: libpq cannot read it")
    assert SECRET not in str(caught.value)


def _eventually(
    check: Callable[[], bool], timeout: float = 10.0, poke: Callable[[], object] | None = None
) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        if poke is not None:
            poke()
        time.sleep(0.05)
    return False
