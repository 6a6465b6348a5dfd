"""Where replay records live, and the asynchronous recorder in front of the store.

``ReplayStore`` is the small interface a database implements. ``SqliteReplayStore`` is
the embedded default: one file per processor, WAL mode, so the ``replay`` command and the
admin port can read it while the processor writes. ``PostgresReplayStore``
(``replay/postgres.py``) is the shared one: every replica writes one database, so any of
them serves any record. ``open_store`` picks one from the config (``replay.url`` or
``replay.path``). Each store brings its schema up to date when it opens.

``ReplayRecorder`` is what the request path talks to. ``defer``, ``record`` and
``respond`` only put an item on a bounded queue and return; one writer thread builds the
records, writes them in batches and prunes old records. A slow, failing or unreachable
store therefore never delays or fails routing: the record is dropped and counted instead.
"""

from __future__ import annotations

import collections
import dataclasses
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson
import structlog

from vsr_extproc.errors import ReplayStoreUnavailable
from vsr_extproc.replay.record import ReplayRecord

if TYPE_CHECKING:
    from vsr_extproc.config.schema import ReplayConfig

log = structlog.get_logger("vsr_extproc.replay")


class ReplayStore(Protocol):
    """A database of replay records."""

    def put(self, record: ReplayRecord) -> None:
        """Store one record; may block briefly (called from the writer thread only)."""
        ...

    def put_many(self, records: Sequence[ReplayRecord]) -> None:
        """Store several records at once, all or none (the writer thread's batches)."""
        ...

    def put_responses(self, items: Sequence[tuple[str, dict[str, Any]]]) -> int:
        """Set the ``response`` of records already stored, by id, all or none; returns how
        many records were found (a response to a pruned or unwritten record is skipped)."""
        ...

    def get(self, replay_id: str) -> ReplayRecord | None: ...

    def scan(
        self, since: float | None = None, *, with_content: bool = False, limit: int | None = None
    ) -> Iterator[ReplayRecord]:
        """Records from ``since`` (unix time) on, oldest first; only those that kept
        their content when ``with_content``."""
        ...

    def prune(self, *, max_age_s: float, max_records: int, now: float | None = None) -> int:
        """Delete records older than ``max_age_s`` and the oldest beyond ``max_records``;
        returns how many were deleted."""
        ...

    def close(self) -> None: ...


#: a record's fields in the order both stores keep them
COLUMNS = (
    "id",
    "time",
    "request_id",
    "request_hash",
    "policy",
    "decision",
    "outcome",
    "model",
    "signals",
    "trace",
    "content",
    "response",
)
#: rows fetched per query while scanning, so no cursor stays open between yields
PAGE = 256


def to_json(value: Any) -> str:
    """JSON text of a record's field (what no JSON type holds becomes its ``str``)."""
    return orjson.dumps(value, default=str).decode()


def _json_or_none(value: Any) -> str | None:
    return to_json(value) if value is not None else None


def as_row(record: ReplayRecord) -> tuple[Any, ...]:
    """A record as the values of ``COLUMNS``, its JSON fields as text."""
    return (
        record.id,
        record.time,
        record.request_id,
        record.request_hash,
        record.policy,
        record.decision,
        record.outcome,
        record.model,
        to_json(record.signals),
        to_json(record.trace),
        _json_or_none(record.content),
        _json_or_none(record.response),
    )


def scan_pages(
    fetch: Callable[[tuple[float, str], int], list[Any]], since: float | None, limit: int | None
) -> Iterator[ReplayRecord]:
    """The records in (time, id) order from ``since``, at most ``limit``, read ``PAGE`` at
    a time: ``fetch(after, page)`` returns up to ``page`` rows (in ``COLUMNS`` order) that
    come after the (time, id) pair ``after``. Keyset pages: a long scan holds no cursor or
    lock between pages, and never returns a record twice. (Both stores scan through it.)"""
    # ids are never empty, so (since, "") starts at ``since`` itself
    after: tuple[float, str] = (since if since is not None else float("-inf"), "")
    remaining = limit
    while remaining is None or remaining > 0:
        page = PAGE if remaining is None else min(PAGE, remaining)
        rows = fetch(after, page)
        for row in rows:
            yield from_row(row)
        if len(rows) < page:
            return
        after = (rows[-1][1], rows[-1][0])
        if remaining is not None:
            remaining -= len(rows)


def from_row(row: Sequence[Any]) -> ReplayRecord:
    """The record a row of ``COLUMNS`` holds (JSON fields as text)."""
    return ReplayRecord(
        id=row[0],
        time=row[1],
        request_id=row[2],
        request_hash=row[3],
        policy=row[4],
        decision=row[5],
        outcome=row[6],
        model=row[7],
        signals=orjson.loads(row[8]),
        trace=orjson.loads(row[9]),
        content=orjson.loads(row[10]) if row[10] is not None else None,
        response=orjson.loads(row[11]) if row[11] is not None else None,
    )


#: each step brings a file to the next ``PRAGMA user_version``; files written before the
#: versions were counted are at 0 and already hold the table of step 1
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE IF NOT EXISTS replay_records (
            id TEXT PRIMARY KEY,
            time REAL NOT NULL,
            request_id TEXT NOT NULL,
            request_hash TEXT NOT NULL,
            policy TEXT NOT NULL,
            decision TEXT NOT NULL,
            outcome TEXT NOT NULL,
            model TEXT,
            signals TEXT NOT NULL,
            trace TEXT NOT NULL,
            content TEXT
        )""",
        "CREATE INDEX IF NOT EXISTS replay_records_time ON replay_records (time, id)",
    ),
    ("ALTER TABLE replay_records ADD COLUMN response TEXT",),
)
SQLITE_SCHEMA_VERSION = len(_MIGRATIONS)


class SqliteReplayStore(ReplayStore):
    """Replay records in one SQLite file (WAL mode).

    Writes (``put``, ``prune``) and reads (``get``, ``scan``) use separate connections,
    each behind its own lock, so a read never waits for the writer thread and another
    process can read the file while this one writes. Opening a file brings its schema up
    to date (``PRAGMA user_version``), in one transaction that a second process opening
    the file waits for. ``readonly`` opens an existing file without creating or changing
    anything (the ``replay`` command); a file from before the ``response`` column reads
    as records without responses.
    """

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        if readonly and not self.path.is_file():
            raise FileNotFoundError(f"no replay store at {self.path}")
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._writer: sqlite3.Connection | None = None
        if not readonly:
            self._writer = self._connect()
            self._into_wal(self._writer)
            self._writer.execute("PRAGMA synchronous=NORMAL")
            self._migrate(self._writer)
        self._reader = self._connect()
        self._columns = ", ".join(self._readable_columns())

    def _connect(self) -> sqlite3.Connection:
        # autocommit (isolation_level None): each statement is its own transaction, so a
        # reader never holds a snapshot open between calls
        return sqlite3.connect(
            self.path, timeout=5.0, isolation_level=None, check_same_thread=False
        )

    @staticmethod
    def _into_wal(connection: sqlite3.Connection, timeout_s: float = 5.0) -> None:
        """WAL mode, waiting for a process that is creating the file at the same moment:
        the switch can be refused as busy without SQLite's busy timeout being applied."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    @staticmethod
    def _migrate(connection: sqlite3.Connection) -> None:
        # IMMEDIATE takes the write lock before reading the version: two processes opening
        # one file migrate one after the other, and the second finds nothing to do
        connection.execute("BEGIN IMMEDIATE")
        try:
            (version,) = connection.execute("PRAGMA user_version").fetchone()
            for number, statements in enumerate(_MIGRATIONS, 1):
                if number > version:
                    for statement in statements:
                        connection.execute(statement)
            if version < SQLITE_SCHEMA_VERSION:
                connection.execute(f"PRAGMA user_version = {SQLITE_SCHEMA_VERSION}")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    def _readable_columns(self) -> list[str]:
        present = {row[1] for row in self._reader.execute("PRAGMA table_info(replay_records)")}
        return [name if name in present else f"NULL AS {name}" for name in COLUMNS]

    def _write(self) -> sqlite3.Connection:
        if self._writer is None:
            raise RuntimeError(f"the replay store {self.path} was opened read-only")
        return self._writer

    def put(self, record: ReplayRecord) -> None:
        self.put_many([record])

    def put_many(self, records: Sequence[ReplayRecord]) -> None:
        rows = [as_row(record) for record in records]
        placeholders = ", ".join("?" * len(COLUMNS))
        self._transaction(
            f"INSERT OR REPLACE INTO replay_records ({', '.join(COLUMNS)}) VALUES ({placeholders})",
            rows,
        )

    def put_responses(self, items: Sequence[tuple[str, dict[str, Any]]]) -> int:
        rows = [(to_json(response), replay_id) for replay_id, response in items]
        return self._transaction("UPDATE replay_records SET response = ? WHERE id = ?", rows)

    def _transaction(self, statement: str, rows: Sequence[tuple[Any, ...]]) -> int:
        """Run ``statement`` once per row in one transaction; the rows it changed."""
        with self._write_lock:
            connection = self._write()
            connection.execute("BEGIN")
            try:
                changed = connection.executemany(statement, rows).rowcount
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
        return changed

    def get(self, replay_id: str) -> ReplayRecord | None:
        with self._read_lock:
            row = self._reader.execute(
                f"SELECT {self._columns} FROM replay_records WHERE id = ?", (replay_id,)
            ).fetchone()
        return from_row(row) if row is not None else None

    def scan(
        self, since: float | None = None, *, with_content: bool = False, limit: int | None = None
    ) -> Iterator[ReplayRecord]:
        where = "(time, id) > (?, ?)"
        if with_content:
            where += " AND content IS NOT NULL"
        query = (
            f"SELECT {self._columns} FROM replay_records WHERE {where} ORDER BY time, id LIMIT ?"
        )

        def fetch(after: tuple[float, str], page: int) -> list[Any]:
            with self._read_lock:
                return self._reader.execute(query, (*after, page)).fetchall()

        return scan_pages(fetch, since, limit)

    def prune(self, *, max_age_s: float, max_records: int, now: float | None = None) -> int:
        cutoff = (time.time() if now is None else now) - max_age_s
        with self._write_lock:
            connection = self._write()
            deleted = connection.execute(
                "DELETE FROM replay_records WHERE time < ?", (cutoff,)
            ).rowcount
            deleted += connection.execute(
                "DELETE FROM replay_records WHERE id IN (SELECT id FROM replay_records "
                "ORDER BY time DESC, id DESC LIMIT -1 OFFSET ?)",
                (max_records,),
            ).rowcount
        return deleted

    def count(self) -> int:
        """How many records the store holds."""
        with self._read_lock:
            row = self._reader.execute("SELECT count(*) FROM replay_records").fetchone()
        return int(row[0])

    def close(self) -> None:
        with self._write_lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
        with self._read_lock:
            self._reader.close()


def open_store(config: ReplayConfig, *, readonly: bool = False) -> ReplayStore:
    """The store the config names: the PostgreSQL database at ``url``, else the SQLite
    file at ``path`` (``sqlite://`` optional).

    ``readonly`` (the ``replay`` command) opens an existing store without creating or
    migrating anything, and fails at once when it cannot be read.
    """
    if config.url is None:
        return SqliteReplayStore(config.path.removeprefix("sqlite://"), readonly=readonly)
    from vsr_extproc.replay.postgres import PostgresReplayStore

    return PostgresReplayStore(
        config.url.get_secret_value(),
        min_size=config.pool_min_size,
        max_size=config.pool_max_size,
        timeout_s=config.timeout_s,
        readonly=readonly,
    )


_BATCH = 256  # queued items per transaction at most
#: how long a response waits for its record to reach the store, and for how many records
UNMATCHED_WAIT_S = 10.0
UNMATCHED_MAX = 10_000
_UNMATCHED_EVERY_S = 0.2

Build = Callable[[], "ReplayRecord | None"]
#: a queued item: a replay id and, for a response, the response (None: the record itself)
Queued = tuple[str, "dict[str, Any] | None"]


class ReplayRecorder:
    """Records decisions in the background; the request path never waits on the store.

    ``defer(replay_id, build)`` queues a record that ``build`` makes later, on the writer
    thread (``record`` queues a finished one); ``respond(replay_id, response)`` queues the
    response of a record. The writer wakes every ``flush_every_s``, builds what queued up
    and writes it in one transaction, the records of a batch before its responses: no
    thread is woken per request (measured with ``make bench``: the processor's CPU per
    routed request fell from 0.88 to 0.66-0.72 ms over five runs). One queue, in order, so
    a response never overtakes its record. A record or response that is queued but not
    yet written is still served by ``get``.

    ``dropped`` counts records and responses that were not queued (queue full, recorder
    closed or its writer gone); ``failed`` counts those the store refused or could not be
    reached for, and ``lost`` (when given) is told how many each time; ``written`` and
    ``responded`` count the others. A ``build`` that returns None (it could not build its
    record, and said so) counts as none of them.
    """

    def __init__(
        self,
        store: ReplayStore,
        *,
        max_age_s: float,
        max_records: int,
        queue_size: int = 10_000,
        prune_every_s: float = 60.0,
        flush_every_s: float = 0.01,
        lost: Callable[[int], None] | None = None,
    ) -> None:
        self.store = store
        self.max_age_s = max_age_s
        self.max_records = max_records
        self.prune_every_s = prune_every_s
        self.flush_every_s = flush_every_s
        self.queue_size = queue_size
        self.dropped = 0
        self.failed = 0
        self.written = 0
        self.responded = 0
        self._lost = lost
        self._queue: collections.deque[Queued] = collections.deque()
        #: queued and not yet written (built or not), so ``get`` finds a record at once
        self._pending: dict[str, ReplayRecord | Build] = {}
        #: the latest queued response of each record, for ``get``
        self._responses: dict[str, dict[str, Any]] = {}
        #: responses whose record the store did not have yet, with when to give up: on a
        #: shared store another replica may have decided the request and not written it
        self._unmatched: dict[str, tuple[float, dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drain, name="replay-writer", daemon=True)
        self._thread.start()

    def record(self, record: ReplayRecord) -> bool:
        """Queue ``record`` for writing; False (and counted) when it had to be dropped."""
        return self._queue_item(record.id, record)

    def defer(self, replay_id: str, build: Build) -> bool:
        """Queue the record ``build`` will make on the writer thread; False when dropped."""
        return self._queue_item(replay_id, build)

    def respond(self, replay_id: str, response: dict[str, Any]) -> bool:
        """Queue the response of the record ``replay_id`` (queued or already written);
        False (and counted) when dropped. A later response to one record replaces an
        earlier one."""
        with self._lock:
            if not self._accepting():
                self.dropped += 1
                return False
            self._responses[replay_id] = response
            self._queue.append((replay_id, response))
        return True

    def _queue_item(self, replay_id: str, item: ReplayRecord | Build) -> bool:
        with self._lock:
            if not self._accepting():
                self.dropped += 1
                return False
            self._pending[replay_id] = item
            self._queue.append((replay_id, None))
        return True

    def _accepting(self) -> bool:
        return not self._closed and self._thread.is_alive() and len(self._queue) < self.queue_size

    def get(self, replay_id: str) -> ReplayRecord | None:
        """A record by id, whether written or still queued, with its latest response.

        May wait on the store (a database read): call it off an event loop.
        """
        with self._lock:
            pending = self._pending.get(replay_id)
            response = self._responses.get(replay_id)
        record = self.store.get(replay_id) if pending is None else self._built(replay_id, pending)
        if record is None or response is None:
            return record
        return dataclasses.replace(record, response=response)

    def _built(self, replay_id: str, item: ReplayRecord | Build) -> ReplayRecord | None:
        if isinstance(item, ReplayRecord):
            return item
        record = item()
        with self._lock:
            if record is not None and replay_id in self._pending:
                self._pending[replay_id] = record  # built once, whoever asked first
        return record

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued, stop the writer and close the store."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            # the store is still in use by the writer; closing it under the writer would
            # turn a slow write into a crash
            log.warning("replay_writer_unfinished", queued=len(self._queue))
            return
        self.store.close()

    def _drain(self) -> None:
        next_prune = next_retry = time.monotonic()
        while True:
            if time.monotonic() >= next_prune:
                self._prune()
                next_prune = time.monotonic() + self.prune_every_s
            stopping = self._stop.wait(self.flush_every_s)
            while self._queue:
                self._flush()
            if self._unmatched and (stopping or time.monotonic() >= next_retry):
                self._retry_unmatched(final=stopping)
                next_retry = time.monotonic() + _UNMATCHED_EVERY_S
            if stopping:
                return

    def _flush(self) -> None:
        """Build and write up to ``_BATCH`` queued records, then set the queued responses
        among them: a response to a record of the same batch finds it written."""
        with self._lock:
            taken = [self._queue.popleft() for _ in range(min(_BATCH, len(self._queue)))]
            items = [(replay_id, self._pending[replay_id]) for replay_id, r in taken if r is None]
        responses = [(replay_id, r) for replay_id, r in taken if r is not None]
        try:
            records = self._build(items)
            if records:
                self._write(records)
            if responses:
                self._respond(responses)
        finally:
            with self._lock:
                for replay_id, response in taken:
                    if response is None:
                        self._pending.pop(replay_id, None)
                    elif self._responses.get(replay_id) is response:
                        del self._responses[replay_id]

    def _build(self, items: list[tuple[str, ReplayRecord | Build]]) -> list[ReplayRecord]:
        batch: list[ReplayRecord] = []
        for count, (replay_id, item) in enumerate(items, 1):
            if count % 16 == 0:
                time.sleep(0)  # let the request thread have the GIL now and then
            try:
                record = self._built(replay_id, item)
            except Exception:
                self._count_failed(1)
                log.exception("replay_record_failed", replay_id=replay_id)
                continue
            if record is not None:
                batch.append(record)
        return batch

    def _write(self, batch: list[ReplayRecord]) -> None:
        try:
            self.store.put_many(batch)
            self.written += len(batch)
        except ReplayStoreUnavailable:
            # the store said why, once per outage; one by one would wait for it again
            self._count_failed(len(batch))
        except Exception:
            # one by one, so a record the store refuses does not take its batch-mates along
            for record in batch:
                self._write_one(record)

    def _write_one(self, record: ReplayRecord) -> None:
        try:
            self.store.put(record)
            self.written += 1
        except Exception as exc:
            self._refused(record.id, exc)

    def _respond(self, responses: list[tuple[str, dict[str, Any]]]) -> None:
        try:
            found = self.store.put_responses(responses)
            if found < len(responses):
                # one by one, to learn which records are not there yet
                missing = [item for item in responses if not self.store.put_responses([item])]
                self._wait_for_records(missing)
                found = len(responses) - len(missing)
            self.responded += found
        except ReplayStoreUnavailable:
            self._count_failed(len(responses))
        except Exception:
            for item in responses:
                try:
                    self.store.put_responses([item])
                    self.responded += 1
                except Exception as exc:
                    self._refused(item[0], exc)

    def _wait_for_records(self, missing: list[tuple[str, dict[str, Any]]]) -> None:
        """Keep responses whose record is not stored yet, to retry for a while."""
        give_up = time.monotonic() + UNMATCHED_WAIT_S
        for replay_id, response in missing:
            if replay_id in self._unmatched or len(self._unmatched) < UNMATCHED_MAX:
                self._unmatched[replay_id] = (give_up, response)
            else:
                self._count_failed(1)

    def _retry_unmatched(self, *, final: bool) -> None:
        """Set the responses whose records have arrived since; drop those that waited too
        long (a record pruned, or never written), counted as failed."""
        now = time.monotonic()
        for replay_id, (give_up, response) in list(self._unmatched.items()):
            try:
                matched = self.store.put_responses([(replay_id, response)]) > 0
            except Exception:
                matched = False
            if matched:
                self.responded += 1
            elif not final and now < give_up:
                continue
            else:
                self._count_failed(1)
            del self._unmatched[replay_id]

    def _refused(self, replay_id: str, error: Exception) -> None:
        self._count_failed(1)
        if isinstance(error, ReplayStoreUnavailable):
            return
        # the type and message only: a traceback could render the record's content
        log.warning(
            "replay_write_failed",
            replay_id=replay_id,
            error=f"{type(error).__name__}: {error}",
            failed=self.failed,
        )

    def _count_failed(self, count: int) -> None:
        self.failed += count
        if self._lost is not None:
            self._lost(count)

    def _prune(self) -> None:
        try:
            deleted = self.store.prune(max_age_s=self.max_age_s, max_records=self.max_records)
        except ReplayStoreUnavailable:
            return  # said by the store, once per outage
        except Exception as exc:
            log.warning("replay_prune_failed", error=f"{type(exc).__name__}: {exc}")
            return
        if deleted:
            log.info("replay_pruned", deleted=deleted)
