"""Settings and fixtures every test tier shares."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from postgres import PostgresMissing, PostgresServer, start_server

# the same as the command line sets (set before numpy and torch are imported anywhere):
# OpenMP threads wait passively, so a busy 2-core machine does not spend its time spinning;
# numpy's and scipy's BLAS run in the calling thread (threaded, the safety model's fit took
# 32 s instead of 12.5 s beside the other test worker, most of it in L-BFGS-B's steps)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the session (tests/postgres.py). Missing binaries fail
    the tests that need it, saying what to install: they are never skipped."""
    try:
        server = start_server()
    except PostgresMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of a fresh, empty database on the session's server."""
    return postgres_server.database()
