"""Where replay records live, and the asynchronous recorder in front of the store.

``ReplayStore`` is the small interface a database implements. ``SqliteReplayStore`` is
the one shipped: one file, WAL mode, so the ``replay`` command and the admin port can
read it while the processor writes. The interface exists so that a shared database
(Postgres, for several processors) can be added as one more class and one more branch
in ``open_store``.

``ReplayRecorder`` is what the request path talks to. ``record`` only puts the record on
a bounded queue and returns; one writer thread drains the queue into the store and prunes
old records. A slow or failing store therefore never delays or fails routing: the record
is dropped and counted instead.
"""

from __future__ import annotations

import contextlib
import queue
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson
import structlog

from vsr_extproc.errors import ConfigError
from vsr_extproc.replay.record import ReplayRecord

if TYPE_CHECKING:
    from vsr_extproc.config.schema import ReplayConfig

log = structlog.get_logger("vsr_extproc.replay")


class ReplayStore(Protocol):
    """A database of replay records."""

    def put(self, record: ReplayRecord) -> None:
        """Store one record; may block briefly (called from the writer thread only)."""
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


_SCHEMA = """
CREATE TABLE IF NOT EXISTS replay_records (
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
);
CREATE INDEX IF NOT EXISTS replay_records_time ON replay_records (time, id);
"""

_COLUMNS = (
    "id, time, request_id, request_hash, policy, decision, outcome, model, signals, trace, content"
)
#: rows fetched per query while scanning, so no cursor stays open between yields
_PAGE = 256


def _json(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


def _record(row: tuple[Any, ...]) -> ReplayRecord:
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
    )


class SqliteReplayStore(ReplayStore):
    """Replay records in one SQLite file (WAL mode).

    Writes (``put``, ``prune``) and reads (``get``, ``scan``) use separate connections,
    each behind its own lock, so a read never waits for the writer thread and another
    process can read the file while this one writes. ``readonly`` opens an existing file
    without creating it or its table (the ``replay`` command).
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
            self._writer.execute("PRAGMA journal_mode=WAL")
            self._writer.execute("PRAGMA synchronous=NORMAL")
            self._writer.executescript(_SCHEMA)
        self._reader = self._connect()

    def _connect(self) -> sqlite3.Connection:
        # autocommit (isolation_level None): each statement is its own transaction, so a
        # reader never holds a snapshot open between calls
        return sqlite3.connect(
            self.path, timeout=5.0, isolation_level=None, check_same_thread=False
        )

    def _write(self) -> sqlite3.Connection:
        if self._writer is None:
            raise RuntimeError(f"the replay store {self.path} was opened read-only")
        return self._writer

    def put(self, record: ReplayRecord) -> None:
        row = (
            record.id,
            record.time,
            record.request_id,
            record.request_hash,
            record.policy,
            record.decision,
            record.outcome,
            record.model,
            _json(record.signals),
            _json(record.trace),
            _json(record.content) if record.content is not None else None,
        )
        with self._write_lock:
            self._write().execute(
                f"INSERT OR REPLACE INTO replay_records ({_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )

    def get(self, replay_id: str) -> ReplayRecord | None:
        with self._read_lock:
            row = self._reader.execute(
                f"SELECT {_COLUMNS} FROM replay_records WHERE id = ?", (replay_id,)
            ).fetchone()
        return _record(row) if row is not None else None

    def scan(
        self, since: float | None = None, *, with_content: bool = False, limit: int | None = None
    ) -> Iterator[ReplayRecord]:
        where = "(time, id) > (?, ?)"
        if with_content:
            where += " AND content IS NOT NULL"
        # ids are never empty, so (since, "") starts at ``since`` itself
        after: tuple[float, str] = (since if since is not None else float("-inf"), "")
        remaining = limit
        while remaining is None or remaining > 0:
            page = _PAGE if remaining is None else min(_PAGE, remaining)
            with self._read_lock:
                rows = self._reader.execute(
                    f"SELECT {_COLUMNS} FROM replay_records WHERE {where} "
                    "ORDER BY time, id LIMIT ?",
                    (*after, page),
                ).fetchall()
            for row in rows:
                yield _record(row)
            if len(rows) < page:
                return
            after = (rows[-1][1], rows[-1][0])
            if remaining is not None:
                remaining -= len(rows)

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


def open_store(config: ReplayConfig) -> ReplayStore:
    """The store ``config.path`` names: a SQLite file (``sqlite:///`` optional).

    Other databases get a branch here when they get a class (Postgres is the next one).
    """
    path = config.path
    if "://" in path and not path.startswith("sqlite://"):
        scheme = path.partition("://")[0]
        raise ConfigError([f"replay.path: no replay store for {scheme!r} yet; use a file"])
    return SqliteReplayStore(path.removeprefix("sqlite://"))


_STOP = object()


class ReplayRecorder:
    """Records decisions in the background; the request path never waits on the store.

    ``dropped`` counts records that were not queued (queue full, recorder closed or its
    writer gone); ``failed`` counts records the store refused; ``written`` the others.
    """

    def __init__(
        self,
        store: ReplayStore,
        *,
        max_age_s: float,
        max_records: int,
        queue_size: int = 10_000,
        prune_every_s: float = 60.0,
    ) -> None:
        self.store = store
        self.max_age_s = max_age_s
        self.max_records = max_records
        self.prune_every_s = prune_every_s
        self.dropped = 0
        self.failed = 0
        self.written = 0
        self._queue: queue.Queue[object] = queue.Queue(maxsize=queue_size)
        #: queued and not yet written, so ``get`` finds a record at once
        self._pending: dict[str, ReplayRecord] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._drain, name="replay-writer", daemon=True)
        self._thread.start()

    def record(self, record: ReplayRecord) -> bool:
        """Queue ``record`` for writing; False (and counted) when it had to be dropped."""
        with self._lock:
            if self._closed or not self._thread.is_alive():
                self.dropped += 1
                return False
            self._pending[record.id] = record
            try:
                self._queue.put_nowait(record)
            except queue.Full:
                del self._pending[record.id]
                self.dropped += 1
                return False
        return True

    def get(self, replay_id: str) -> ReplayRecord | None:
        """A record by id, whether written or still queued."""
        with self._lock:
            pending = self._pending.get(replay_id)
        return pending if pending is not None else self.store.get(replay_id)

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued, stop the writer and close the store."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        deadline = time.monotonic() + timeout
        with contextlib.suppress(queue.Full):  # a stuck writer: the join below gives up
            self._queue.put(_STOP, timeout=timeout)
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread.is_alive():
            # the store is still in use by the writer; closing it under the writer would
            # turn a slow write into a crash
            log.warning("replay_writer_unfinished", queued=self._queue.qsize())
            return
        self.store.close()

    def _drain(self) -> None:
        next_prune = time.monotonic()
        while True:
            now = time.monotonic()
            if now >= next_prune:
                self._prune()
                next_prune = now + self.prune_every_s
            try:
                item = self._queue.get(timeout=max(0.0, next_prune - time.monotonic()))
            except queue.Empty:
                continue
            if item is _STOP:
                return
            assert isinstance(item, ReplayRecord)
            self._write(item)

    def _write(self, record: ReplayRecord) -> None:
        try:
            self.store.put(record)
            self.written += 1
        except Exception as exc:
            self.failed += 1
            # the type and message only: a traceback could render the record's content
            log.warning(
                "replay_write_failed",
                replay_id=record.id,
                error=f"{type(exc).__name__}: {exc}",
                failed=self.failed,
            )
        finally:
            with self._lock:
                self._pending.pop(record.id, None)

    def _prune(self) -> None:
        try:
            deleted = self.store.prune(max_age_s=self.max_age_s, max_records=self.max_records)
        except Exception as exc:
            log.warning("replay_prune_failed", error=f"{type(exc).__name__}: {exc}")
            return
        if deleted:
            log.info("replay_pruned", deleted=deleted)
