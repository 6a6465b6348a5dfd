"""The micro-batcher: coalescing, isolation of failures and cancellations, off-loop execution.

Pure asyncio and threads — this module must not import torch (checked below).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import subprocess
import sys
import threading
import time
import weakref

import pytest

from vsr_extproc.runtime.batcher import FairQueue, MicroBatcher


class Recorder:
    """A run_batch that records each batch and the thread it ran on."""

    def __init__(self, fail_on: object = None, gate: threading.Event | None = None) -> None:
        self.batches: list[list[int]] = []
        self.threads: set[int] = set()
        self.fail_on = fail_on
        self.gate = gate
        self.started = threading.Event()

    def __call__(self, items: list[int]) -> list[int]:
        self.started.set()
        self.threads.add(threading.get_ident())
        self.batches.append(list(items))
        if self.gate is not None:
            assert self.gate.wait(timeout=5), "test gate never opened"
        if self.fail_on in items:
            raise ValueError(f"cannot process {self.fail_on}")
        return [item * 10 for item in items]


async def test_concurrent_callers_share_one_batch_and_get_their_own_results() -> None:
    run = Recorder()
    batcher = MicroBatcher(run, max_batch=8, max_wait_ms=50)
    results = await asyncio.gather(*(batcher.submit(i) for i in range(8)))
    await batcher.close()
    assert results == [i * 10 for i in range(8)]
    assert run.batches == [list(range(8))]


async def test_batches_never_exceed_max_batch() -> None:
    run = Recorder()
    batcher = MicroBatcher(run, max_batch=4, max_wait_ms=50)
    results = await asyncio.gather(*(batcher.submit(i) for i in range(10)))
    await batcher.close()
    assert results == [i * 10 for i in range(10)]
    assert [len(batch) for batch in run.batches] == [4, 4, 2]


async def test_a_lone_item_waits_at_most_max_wait() -> None:
    run = Recorder()
    batcher = MicroBatcher(run, max_batch=64, max_wait_ms=30)
    started = time.monotonic()
    assert await batcher.submit(7) == 70
    elapsed = time.monotonic() - started
    await batcher.close()
    assert 0.025 <= elapsed < 1.0
    assert run.batches == [[7]]


async def test_items_after_the_wait_window_form_the_next_batch() -> None:
    run = Recorder()
    batcher = MicroBatcher(run, max_batch=64, max_wait_ms=20)
    first = asyncio.ensure_future(batcher.submit(1))
    # the window closed on [1] alone: its batch is running
    assert await asyncio.to_thread(run.started.wait, 5)
    second = await batcher.submit(2)
    await batcher.close()
    assert (await first, second) == (10, 20)
    assert run.batches == [[1], [2]]


async def test_run_batch_runs_on_one_worker_thread_never_the_loop() -> None:
    run = Recorder()
    batcher = MicroBatcher(run, max_batch=2, max_wait_ms=1)
    await asyncio.gather(*(batcher.submit(i) for i in range(6)))
    await batcher.close()
    assert len(run.threads) == 1
    assert threading.get_ident() not in run.threads


async def test_the_loop_keeps_running_while_a_batch_computes() -> None:
    def slow(items: list[int]) -> list[int]:
        time.sleep(0.3)
        return items

    batcher = MicroBatcher(slow, max_batch=4, max_wait_ms=0)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    ticking = asyncio.ensure_future(ticker())
    assert await batcher.submit(1) == 1
    ticking.cancel()
    await batcher.close()
    assert ticks >= 10


async def test_an_exception_fails_exactly_the_futures_of_its_batch() -> None:
    run = Recorder(fail_on=666)
    batcher = MicroBatcher(run, max_batch=8, max_wait_ms=20)
    doomed = await asyncio.gather(*(batcher.submit(i) for i in (1, 666, 3)), return_exceptions=True)
    survivors = await asyncio.gather(*(batcher.submit(i) for i in (4, 5)))
    await batcher.close()
    assert [type(result) for result in doomed] == [ValueError] * 3
    assert "cannot process 666" in str(doomed[0])
    assert survivors == [40, 50]
    assert run.batches == [[1, 666, 3], [4, 5]]


async def test_a_wrong_number_of_results_fails_the_batch_clearly() -> None:
    batcher: MicroBatcher[int, int] = MicroBatcher(
        lambda items: items[:-1], max_batch=4, max_wait_ms=20
    )
    outcomes = await asyncio.gather(*(batcher.submit(i) for i in range(3)), return_exceptions=True)
    await batcher.close()
    assert all(isinstance(o, RuntimeError) for o in outcomes)
    assert "returned 2 results for 3 items" in str(outcomes[0])


async def test_a_cancelled_caller_is_dropped_without_breaking_the_batch() -> None:
    gate = threading.Event()
    run = Recorder(gate=gate)
    batcher = MicroBatcher(run, max_batch=8, max_wait_ms=0)
    running = asyncio.ensure_future(batcher.submit(1))
    # Wait (off the loop) until batch [1] is blocked inside the worker thread.
    assert await asyncio.to_thread(run.started.wait, 5)
    queued = [asyncio.ensure_future(batcher.submit(i)) for i in (2, 3, 4)]
    await asyncio.sleep(0)
    queued[1].cancel()  # waiting in the queue: its item must not be computed
    running.cancel()  # already computing: its result is discarded
    gate.set()
    assert await queued[0] == 20
    assert await queued[2] == 40
    with pytest.raises(asyncio.CancelledError):
        await running
    with pytest.raises(asyncio.CancelledError):
        await queued[1]
    await batcher.close()
    assert run.batches == [[1], [2, 4]]


async def test_the_owner_served_least_goes_first_so_a_big_request_cannot_starve_others() -> None:
    gate = threading.Event()
    run = Recorder(gate=gate)
    batcher = MicroBatcher(run, max_batch=2, max_wait_ms=0)
    first = asyncio.ensure_future(batcher.submit(0, owner="big"))
    assert await asyncio.to_thread(run.started.wait, 5)
    big = [asyncio.ensure_future(batcher.submit(i, owner="big")) for i in range(1, 41)]
    await asyncio.sleep(0)
    small = asyncio.ensure_future(batcher.submit(100, owner="small"))
    later = asyncio.ensure_future(batcher.submit(200, owner="late"))
    await asyncio.sleep(0)
    gate.set()
    assert (await small, await later) == (1000, 2000)
    await asyncio.gather(first, *big)
    await batcher.close()
    # one batch of the big request was running; the owners not served yet go next
    assert run.batches[:3] == [[0], [100, 200], [1, 2]]
    assert sum(len(batch) for batch in run.batches) == 43


def test_owners_served_alike_take_turns_in_the_order_they_first_queued() -> None:
    queue: FairQueue[str] = FairQueue()
    for item in ("a1", "a2", "a3"):
        queue.put("a", item)
    for item in ("b1", "b2"):
        queue.put("b", item)
    queue.put("c", "c1", weight=5)
    order = [queue.pop() for _ in range(6)]
    # a, b, c each once; then c has been served 5 and waits for a and b
    assert order == ["a1", "b1", "c1", "a2", "b2", "a3"]
    assert queue.empty()


def test_the_queue_remembers_service_without_keeping_an_owner_alive() -> None:
    class Request:
        """Stands for a request: weakly referable, like the router's ``Evaluation``."""

    queue: FairQueue[int] = FairQueue()
    owner = Request()
    queue.put(owner, 1, weight=3)
    queue.pop()
    assert queue.served(owner) == 3
    gone = weakref.ref(owner)
    del owner
    gc.collect()
    assert gone() is None


async def test_a_cancelled_owners_queued_items_leave_the_queue_at_once() -> None:
    gate = threading.Event()
    run = Recorder(gate=gate)
    batcher = MicroBatcher(run, max_batch=4, max_wait_ms=0)
    running = asyncio.ensure_future(batcher.submit(0, owner="other"))
    assert await asyncio.to_thread(run.started.wait, 5)
    doomed = [asyncio.ensure_future(batcher.submit(i, owner="timed-out")) for i in range(1, 500)]
    await asyncio.sleep(0)
    assert batcher.queued == 499
    for task in doomed:
        task.cancel()
    await asyncio.gather(*doomed, return_exceptions=True)
    assert batcher.queued == 0
    gate.set()
    assert await running == 0
    assert await batcher.submit(7, owner="next") == 70
    await batcher.close()
    assert run.batches == [[0], [7]]


async def test_a_batch_is_full_by_weight_and_a_heavy_item_runs_alone() -> None:
    gate = threading.Event()
    run = Recorder(gate=gate)
    batcher = MicroBatcher(run, max_batch=8, max_wait_ms=0, weigh=lambda item: item)
    first = asyncio.ensure_future(batcher.submit(1))
    assert await asyncio.to_thread(run.started.wait, 5)
    rest = [asyncio.ensure_future(batcher.submit(weight)) for weight in (3, 4, 2, 20, 1)]
    await asyncio.sleep(0)
    gate.set()
    await asyncio.gather(first, *rest)
    await batcher.close()
    assert run.batches == [[1], [3, 4], [2], [20], [1]]


async def test_close_serves_queued_items_then_refuses_new_ones() -> None:
    run = Recorder()
    batcher = MicroBatcher(run, max_batch=2, max_wait_ms=10)
    pending = [asyncio.ensure_future(batcher.submit(i)) for i in range(5)]
    await asyncio.sleep(0)
    await batcher.close()
    assert [await p for p in pending] == [0, 10, 20, 30, 40]
    assert batcher.closed
    with pytest.raises(RuntimeError, match="closed"):
        await batcher.submit(9)
    await batcher.close()  # idempotent


async def test_a_caller_supplied_executor_is_used_and_left_open() -> None:
    executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="caller-owned")
    names: list[str] = []

    def run(items: list[int]) -> list[int]:
        names.append(threading.current_thread().name)
        return items

    batcher = MicroBatcher(run, max_batch=4, max_wait_ms=0, executor=executor)
    assert await batcher.submit(3) == 3
    await batcher.close()
    assert names[0].startswith("caller-owned")
    assert executor.submit(lambda: 5).result(timeout=5) == 5  # still usable
    executor.shutdown()


def test_invalid_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="max_batch"):
        MicroBatcher(Recorder(), max_batch=0, max_wait_ms=1)
    with pytest.raises(ValueError, match="max_wait_ms"):
        MicroBatcher(Recorder(), max_batch=1, max_wait_ms=-1)


def test_the_batcher_does_not_import_torch() -> None:
    code = (
        "import sys, vsr_extproc.runtime.batcher; "
        "sys.exit('torch' in sys.modules or 'numpy' in sys.modules)"
    )
    completed = subprocess.run([sys.executable, "-c", code], check=False, timeout=60)
    assert completed.returncode == 0
