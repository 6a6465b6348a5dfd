"""A throwaway PostgreSQL server for the tests: ``initdb`` in a temporary directory, one
server on a free loopback port, stopped at the end of the session.

The binaries are looked for on PATH, then in Debian's ``/usr/lib/postgresql/*/bin``
(``make test`` installs Debian's ``postgresql`` package when neither has them). PostgreSQL
refuses to run as root, so under root the server runs as the ``postgres`` system user
(created when missing) from a directory that user owns.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

#: the superuser initdb creates; trust authentication on 127.0.0.1 only
SUPERUSER = "vsr"
SYSTEM_USER = "postgres"
MISSING = (
    "PostgreSQL is not installed: no initdb and pg_ctl on PATH or in "
    "/usr/lib/postgresql/*/bin. `make test` installs Debian's postgresql package with "
    "apt-get; without apt-get, install PostgreSQL 13 or newer and run the tests again."
)


class PostgresMissing(RuntimeError):
    """No PostgreSQL server binaries on this machine."""


def server_binaries() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl`` (the newest version found)."""
    on_path = shutil.which("pg_ctl")
    candidates = [Path(on_path).resolve().parent] if on_path else []
    versions = Path("/usr/lib/postgresql").glob("*/bin")
    candidates += sorted(versions, key=lambda path: _version(path.parent.name), reverse=True)
    for directory in candidates:
        if (directory / "initdb").is_file() and (directory / "pg_ctl").is_file():
            return directory
    raise PostgresMissing(MISSING)


def _version(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", name)) or (0,)


@dataclass
class PostgresServer:
    """A running server; ``database()`` makes a fresh, empty database on it."""

    binaries: Path
    directory: Path
    port: int
    as_user: str | None
    _databases: int = 0

    @property
    def data(self) -> Path:
        return self.directory / "data"

    def url(self, database: str = "postgres", *, port: int | None = None) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{port or self.port}/{database}"

    def database(self) -> str:
        """The URL of a new database, so no test sees another's tables."""
        self._databases += 1
        name = f"test_{os.getpid()}_{self._databases}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        self._run([str(self.binaries / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                   "-w", "stop"], check=False)  # fmt: skip
        shutil.rmtree(self.directory, ignore_errors=True)

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = (self.directory / "server.log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _run(self, command: Sequence[str], *, check: bool = True) -> None:
        if self.as_user is not None:
            command = ["runuser", "-u", self.as_user, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if check and result.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} failed ({result.returncode}):\n"
                f"{result.stdout}{result.stderr}\n{self.log_tail()}"
            )


def start_server() -> PostgresServer:
    """initdb and start a server on a free port of 127.0.0.1 (tried a few times: a port
    can be taken between choosing and binding it)."""
    from vsr_extproc.demo.stack import free_port  # after conftest's environment settings

    binaries = server_binaries()
    as_user = _system_user() if os.geteuid() == 0 else None
    directory = Path(tempfile.mkdtemp(prefix="vsr-postgres-"))
    if as_user is not None:
        record = pwd.getpwnam(as_user)
        os.chown(directory, record.pw_uid, record.pw_gid)
    server = PostgresServer(binaries, directory, 0, as_user)
    try:
        server._run([str(binaries / "initdb"), "-D", str(server.data), "-U", SUPERUSER,
                     "--auth=trust", "-E", "UTF8", "--no-sync"])  # fmt: skip
        for attempt in range(5):
            server.port = free_port()
            options = (
                f"-p {server.port} -c listen_addresses=127.0.0.1 -k {server.data} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                "-c max_connections=200"
            )
            try:
                log = str(directory / "server.log")
                server._run([str(binaries / "pg_ctl"), "-D", str(server.data), "-o", options,
                             "-l", log, "-w", "-t", "60", "start"])  # fmt: skip
            except RuntimeError:
                if attempt == 4:
                    raise
                time.sleep(0.2)
                continue
            return server
    except BaseException:
        server.stop()
        raise
    raise AssertionError("unreachable")


def _system_user() -> str:
    """The unprivileged user the server runs as under root (created when missing)."""
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--user-group", "--no-create-home",
             "--shell", "/usr/sbin/nologin", SYSTEM_USER],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
    return SYSTEM_USER


class Forwarder:
    """A TCP port that forwards to the server once ``open`` is called: a database that
    cannot be reached at first and can be later, without stopping the shared server."""

    def __init__(self, target_port: int) -> None:
        from vsr_extproc.demo.stack import free_port

        self.port = free_port()
        self.target_port = target_port
        self._listener: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._closed = threading.Event()

    def open(self) -> None:
        listener = socket.create_server(("127.0.0.1", self.port))
        listener.settimeout(0.1)
        self._listener = listener
        self._spawn(self._accept)

    def close(self) -> None:
        self._closed.set()
        for thread in self._threads:
            thread.join(5)
        for opened in self._sockets:
            opened.close()
        if self._listener is not None:
            self._listener.close()

    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            server = socket.create_connection(("127.0.0.1", self.target_port))
            for opened in (client, server):
                opened.settimeout(0.1)
                self._sockets.append(opened)
            self._spawn(self._pipe, client, server)
            self._spawn(self._pipe, server, client)

    def _pipe(self, source: socket.socket, target: socket.socket) -> None:
        while not self._closed.is_set():
            try:
                data = source.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not data:
                with contextlib.suppress(OSError):
                    target.shutdown(socket.SHUT_WR)
                return
            try:
                target.sendall(data)
            except OSError:
                return
