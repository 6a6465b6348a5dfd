"""Replay records in PostgreSQL: one database that every replica of the processor writes,
so ``GET /v1/router/replay/{id}`` finds a record whichever replica Envoy asks.

Connections come from a pool (psycopg_pool) shared by the writer thread and the readers.
The schema is brought up to date when the store is first reached: each step of
``_MIGRATIONS`` runs once, in one transaction, under an advisory lock, and is written down
in ``replay_schema``; replicas starting together take turns, and the later ones find
nothing to do. A database at a newer version than this code knows (during a rolling
update, say) is used as it is: steps only add.

A database that cannot be reached — at start or later — never stops the processor: the
operation raises ``ReplayStoreUnavailable`` after ``timeout_s``, the recorder drops and
counts the records, and for a pause that grows to ``_RETRY_MAX_S`` every operation fails
at once instead of waiting again. The first connection after the pause ends the outage.
What is logged names the database without its password, and a database error is reduced
to its class and primary message: PostgreSQL's details can quote the record.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
import structlog
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from vsr_extproc.errors import ConfigError, ReplayStoreError, ReplayStoreUnavailable
from vsr_extproc.replay.record import ReplayRecord
from vsr_extproc.replay.store import (
    COLUMNS,
    ReplayStore,
    as_row,
    from_row,
    scan_pages,
    to_json,
)

log = structlog.get_logger("vsr_extproc.replay")

T = TypeVar("T")

#: keys of ``pg_advisory_xact_lock``: "VSR_RPL1" (the schema) and "VSR_PRNE" (pruning)
_SCHEMA_LOCK = 0x5653525F52504C31
_PRUNE_LOCK = 0x5653525F50524E45

#: each step brings the database to the next version (its position, from 1)
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE replay_records (
            id text PRIMARY KEY,
            time double precision NOT NULL,
            request_id text NOT NULL,
            request_hash text NOT NULL,
            policy text NOT NULL,
            decision text NOT NULL,
            outcome text NOT NULL,
            model text,
            signals jsonb NOT NULL,
            trace jsonb NOT NULL,
            content jsonb,
            response jsonb
        )""",
        "CREATE INDEX replay_records_time ON replay_records (time, id)",
    ),
)
SCHEMA_VERSION = len(_MIGRATIONS)

_JSON_COLUMNS = frozenset({"signals", "trace", "content", "response"})
# JSON read back as text, so both stores decode rows alike (and with orjson)
_SELECT = ", ".join(f"{name}::text" if name in _JSON_COLUMNS else name for name in COLUMNS)
_VALUES = ", ".join("%s::jsonb" if name in _JSON_COLUMNS else "%s" for name in COLUMNS)
_UPSERT = (
    f"INSERT INTO replay_records ({', '.join(COLUMNS)}) VALUES ({_VALUES}) "
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{name} = EXCLUDED.{name}" for name in COLUMNS if name != "id")
)
_JSON_POSITIONS = tuple(i for i, name in enumerate(COLUMNS) if name in _JSON_COLUMNS)

# the escape of U+0000 (not preceded by an escaped backslash), which jsonb refuses
_NUL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")

_RETRY_FIRST_S = 1.0
_RETRY_MAX_S = 15.0


def redacted(url: str) -> str:
    """The URL with its password (in the user part or the query) replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not even a URL: say only what kind
        return f"{url.partition('://')[0]}://…"
    userinfo, at, hostport = parts.netloc.rpartition("@")
    netloc = parts.netloc
    if at and ":" in userinfo:
        netloc = f"{userinfo.partition(':')[0]}:***@{hostport}"
    query = urlencode(
        [(key, "***" if key == "password" else value) for key, value in parse_qsl(parts.query)],
        safe="*",
    )
    return urlunsplit(parts._replace(netloc=netloc, query=query))


_USERINFO = re.compile(r"(?<=://)[^/@\s\"]*@")
_PASSWORD_PARAMETER = re.compile(r"(?<=password=)[^&\s\"]*")


def _without_secrets(text: str, url: str) -> str:
    """``text`` (a libpq message that may quote the URL) with the URL's secrets masked."""
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    if password:
        text = text.replace(password, "***")
    return _PASSWORD_PARAMETER.sub("***", _USERINFO.sub("***@", text))


def _jsonb(text: str | None) -> str | None:
    """JSON text jsonb accepts: U+0000 (a request may hold one) becomes U+FFFD."""
    if text is None or "\\u0000" not in text:
        return text
    return _NUL_ESCAPE.sub(r"\1\\ufffd", text)


def _jsonb_row(record: ReplayRecord) -> tuple[Any, ...]:
    row = list(as_row(record))
    for position in _JSON_POSITIONS:
        row[position] = _jsonb(row[position])
    return tuple(row)


def _reason(error: Exception, url: str) -> str:
    """The class and primary message of a database error, never its detail or context
    (which can quote a record) nor the URL's secrets (libpq may quote the URL)."""
    primary = getattr(getattr(error, "diag", None), "message_primary", None)
    text = primary or (str(error).strip().splitlines() or [""])[0]
    return _without_secrets(f"{type(error).__name__}: {text}", url)


class PostgresReplayStore(ReplayStore):
    """Replay records in a PostgreSQL database shared by every replica.

    ``url`` is a libpq URL (``postgresql://user@host:port/db?sslmode=…``); whatever it
    leaves out comes from libpq's environment (``PGPASSWORD``, ``PGSSLROOTCERT``…).
    ``min_size``/``max_size`` bound the connection pool; ``timeout_s`` is how long an
    operation waits for a connection. ``readonly`` (the ``replay`` command) connects at
    once, creates nothing and raises when the records table is missing.
    """

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 4,
        timeout_s: float = 2.0,
        readonly: bool = False,
    ) -> None:
        self.where = redacted(url)
        self._url = url
        self._timeout_s = timeout_s
        try:
            given = conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            reason = _without_secrets(str(exc), url)
            raise ConfigError([f"replay.url: libpq cannot read it: {reason}"]) from None
        # libpq waits at least 2 s for a connection, whatever it is told
        self._options: dict[str, Any] = {
            key: value
            for key, value in (
                ("connect_timeout", max(2, math.ceil(timeout_s))),
                ("application_name", "vsr-extproc"),
            )
            if key not in given
        }
        self._state = threading.Lock()  # the outage's pause
        self._migrating = threading.Lock()
        self._migrated = readonly
        self._retry_at = 0.0
        self._retry_s = 0.0
        self._pool: ConnectionPool[psycopg.Connection[tuple[Any, ...]]] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={**self._options, "autocommit": True},
            open=False,
            name="vsr-replay",
            timeout=timeout_s,
            # give up a failing background connect soon: the next demand starts a fresh one
            reconnect_timeout=max(10.0, 5 * timeout_s),
            check=ConnectionPool.check_connection,
        )
        if readonly:
            self._first_contact(self._require_table)
        self._pool.open(wait=False)

    def _require_table(self, connection: psycopg.Connection[tuple[Any, ...]]) -> None:
        row = connection.execute("SELECT to_regclass('replay_records')").fetchone()
        if row is None or row[0] is None:
            raise ReplayStoreError(f"no replay records in {self.where}")

    # --- connections, outages and the schema ---------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """A pooled connection to a migrated database; database errors translated."""
        if time.monotonic() < self._retry_at:
            raise ReplayStoreUnavailable(f"{self.where} is unreachable; trying again soon")
        if not self._migrated:
            self._migrate()
        try:
            with self._pool.connection() as connection:
                self._reached()
                yield connection
        except PoolTimeout as exc:
            raise self._unreachable(f"no connection within {self._timeout_s:g} s") from exc
        except psycopg.Error as exc:
            raise ReplayStoreError(_reason(exc, self._url)) from None

    def _migrate(self) -> None:
        """Run the steps this database has not seen yet (once per store)."""
        with self._migrating:
            if self._migrated:
                return
            version = self._first_contact(self._migrate_on)
            self._migrated = True
        if version > SCHEMA_VERSION:
            log.info("replay_schema_newer", store=self.where, version=version)

    def _first_contact(self, work: Callable[[psycopg.Connection[tuple[Any, ...]]], T]) -> T:
        """``work`` on a connection of its own, outside the pool: when it cannot connect,
        libpq says why (refused, unknown host, bad password), which a pool timeout cannot."""
        try:
            with psycopg.connect(self._url, autocommit=True, **self._options) as connection:
                return work(connection)
        except psycopg.OperationalError as exc:
            raise self._unreachable(_reason(exc, self._url)) from None
        except psycopg.Error as exc:
            log.error("replay_store_refused", store=self.where, error=_reason(exc, self._url))
            raise ReplayStoreError(_reason(exc, self._url)) from None

    @staticmethod
    def _migrate_on(connection: psycopg.Connection[tuple[Any, ...]]) -> int:
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            connection.execute(
                "CREATE TABLE IF NOT EXISTS replay_schema ("
                "version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())"
            )
            row = connection.execute("SELECT coalesce(max(version), 0) FROM replay_schema")
            (version,) = row.fetchone() or (0,)
            for number, statements in enumerate(_MIGRATIONS, 1):
                if number <= version:
                    continue
                for statement in statements:
                    connection.execute(statement)
                connection.execute("INSERT INTO replay_schema (version) VALUES (%s)", (number,))
                log.info("replay_schema_migrated", version=number)
        return int(version)

    def _unreachable(self, reason: str) -> ReplayStoreUnavailable:
        with self._state:
            self._retry_s = min(_RETRY_MAX_S, self._retry_s * 2 or _RETRY_FIRST_S)
            self._retry_at = time.monotonic() + self._retry_s
        log.warning(
            "replay_store_unreachable", store=self.where, error=reason, retry_in_s=self._retry_s
        )
        return ReplayStoreUnavailable(f"{self.where} is unreachable: {reason}")

    def _reached(self) -> None:
        if self._retry_s:
            with self._state:
                self._retry_s = 0.0
            log.info("replay_store_reachable", store=self.where)

    # --- the store -------------------------------------------------------------------------

    def put(self, record: ReplayRecord) -> None:
        self.put_many([record])

    def put_many(self, records: Sequence[ReplayRecord]) -> None:
        rows = [_jsonb_row(record) for record in records]
        with self._connection() as connection, connection.transaction():
            connection.cursor().executemany(_UPSERT, rows)

    def put_responses(self, items: Sequence[tuple[str, dict[str, Any]]]) -> int:
        rows = [(_jsonb(to_json(response)), replay_id) for replay_id, response in items]
        with self._connection() as connection, connection.transaction():
            cursor = connection.cursor()
            cursor.executemany("UPDATE replay_records SET response = %s::jsonb WHERE id = %s", rows)
            return max(cursor.rowcount, 0)

    def get(self, replay_id: str) -> ReplayRecord | None:
        with self._connection() as connection:
            row = connection.execute(
                f"SELECT {_SELECT} FROM replay_records WHERE id = %s", (replay_id,)
            ).fetchone()
        return from_row(row) if row is not None else None

    def scan(
        self, since: float | None = None, *, with_content: bool = False, limit: int | None = None
    ) -> Iterator[ReplayRecord]:
        where = "(time, id) > (%s, %s)"
        if with_content:
            where += " AND content IS NOT NULL"
        query = f"SELECT {_SELECT} FROM replay_records WHERE {where} ORDER BY time, id LIMIT %s"

        def fetch(after: tuple[float, str], page: int) -> list[Any]:
            with self._connection() as connection:
                return connection.execute(query, (*after, page)).fetchall()

        return scan_pages(fetch, since, limit)

    def prune(self, *, max_age_s: float, max_records: int, now: float | None = None) -> int:
        """As the interface says; one replica at a time (the others find the lock taken
        and delete nothing this round)."""
        cutoff = (time.time() if now is None else now) - max_age_s
        with self._connection() as connection, connection.transaction():
            row = connection.execute("SELECT pg_try_advisory_xact_lock(%s)", (_PRUNE_LOCK,))
            if not (row.fetchone() or (False,))[0]:
                return 0
            deleted = connection.execute(
                "DELETE FROM replay_records WHERE time < %s", (cutoff,)
            ).rowcount
            deleted += connection.execute(
                "DELETE FROM replay_records WHERE id IN (SELECT id FROM replay_records "
                "ORDER BY time DESC, id DESC OFFSET %s)",
                (max_records,),
            ).rowcount
        return deleted

    def count(self) -> int:
        """How many records the store holds."""
        with self._connection() as connection:
            row = connection.execute("SELECT count(*) FROM replay_records").fetchone()
        return int(row[0]) if row is not None else 0

    def close(self) -> None:
        self._pool.close(timeout=self._timeout_s)
