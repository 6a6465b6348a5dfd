"""The answer to a routed request reaches its decision record through the recorder, and
an answer that could not be queued is counted like a record that could not."""

from __future__ import annotations

from pathlib import Path
from time import perf_counter

import orjson
import pytest

from vsr_extproc.core.normalize import normalize
from vsr_extproc.core.responses import ResponsePolicy
from vsr_extproc.metrics import Metrics
from vsr_extproc.observe import Observer, Seen
from vsr_extproc.replay import ReplayRecord, ReplayRecorder, SqliteReplayStore
from vsr_extproc.response.guard import ResponseExchange

REQUEST = normalize(orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))


def answered() -> ResponseExchange:
    exchange = ResponseExchange(ResponsePolicy(), REQUEST)
    exchange.on_headers({":status": "200", "content-type": "application/json"})
    body = {
        "choices": [{"message": {"content": "hello"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    exchange.on_body(orjson.dumps(body), True)
    return exchange


def record(replay_id: str) -> ReplayRecord:
    return ReplayRecord(replay_id, 1.0, "req", "0" * 64, "p", "coding", "routed", "coder", {}, {})


def dropped(metrics: Metrics) -> float:
    for line in metrics.exposition().decode().splitlines():
        if line.startswith("vsr_replay_dropped_total "):
            return float(line.split()[1])
    return 0.0


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "replay.sqlite3"


def test_the_answer_is_kept_in_the_record_of_its_request(store_path: Path) -> None:
    recorder = ReplayRecorder(SqliteReplayStore(store_path), max_age_s=60, max_records=10)
    observer = Observer(Metrics(), recorder)
    seen = Seen("req", "r1", "p", perf_counter())
    assert recorder.record(record("r1"))
    observer.responded(seen, "coding", "coder", answered())
    recorder.close()
    reader = SqliteReplayStore(store_path, readonly=True)
    try:
        kept = reader.get("r1")
    finally:
        reader.close()
    assert kept is not None
    assert kept.response is not None
    assert (kept.response["status"], kept.response["finish_reason"]) == (200, "stop")
    assert kept.response["usage"]["output_tokens"] == 1


def test_an_answer_the_full_queue_cannot_take_is_counted(store_path: Path) -> None:
    recorder = ReplayRecorder(SqliteReplayStore(store_path), max_age_s=60, max_records=10,
                              queue_size=1, flush_every_s=60)  # fmt: skip
    metrics = Metrics()
    observer = Observer(metrics, recorder)
    try:
        assert recorder.record(record("r1"))  # the queue is full now
        observer.responded(Seen("req", "r1", "p", perf_counter()), "coding", "coder", answered())
        assert dropped(metrics) == 1
    finally:
        recorder.close()
