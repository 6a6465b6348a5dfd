"""Decision replay: every decision recorded, and past traffic decided again by a new config.

record.py   ReplayRecord, make_record, new_replay_id: one decision, PII-safe
store.py    ReplayStore (the interface), SqliteReplayStore, open_store, and
            ReplayRecorder: the bounded queue and writer thread the request path uses
postgres.py PostgresReplayStore: one database for every replica (imported by open_store
            only when replay.url names one, so a SQLite processor never loads psycopg)
whatif.py   whatif, format_whatif: which decisions a new policy would change
"""

from vsr_extproc.replay.record import ReplayRecord, make_record, new_replay_id
from vsr_extproc.replay.store import ReplayRecorder, ReplayStore, SqliteReplayStore, open_store
from vsr_extproc.replay.whatif import WhatIfReport, format_whatif, whatif

__all__ = [
    "ReplayRecord",
    "ReplayRecorder",
    "ReplayStore",
    "SqliteReplayStore",
    "WhatIfReport",
    "format_whatif",
    "make_record",
    "new_replay_id",
    "open_store",
    "whatif",
]
