"""An asyncio-native micro-batcher: concurrent callers' items are coalesced into one call.

Model forward passes cost nearly the same for one item as for a few, so requests that arrive
together should share a pass. Each ``submit`` puts (item, future) on an asyncio queue and
awaits the future; one worker task takes the first waiting item, keeps collecting until
``max_batch`` items or until ``max_wait_ms`` after that first item was *submitted*, then runs
``run_batch`` on an executor thread — never on the event loop — and resolves the futures.

Properties callers rely on:

* one batch runs at a time, on a single-thread executor by default, so ``run_batch`` needs no
  locking and torch keeps its own intra-op threads; items that arrive meanwhile form the next
  batch immediately (their wait already happened);
* an exception from ``run_batch`` fails exactly the futures of that batch; later batches run;
* a caller cancelled while waiting is dropped: its item is skipped if not yet started, its
  result discarded if it was — the rest of its batch is unaffected;
* no polling and no background threads of its own: an idle batcher is a task blocked on an
  empty queue.

Generic in the item and result types: the SigLIP runtime batches pixel arrays, the text
embedding runtime batches strings.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")


@dataclass(eq=False)
class _Pending(Generic[In, Out]):
    item: In
    future: asyncio.Future[Out]
    submitted_at: float


class _Stop:
    """Queued by ``close``: everything before it is still served."""


_STOP = _Stop()


class MicroBatcher(Generic[In, Out]):
    """Coalesce concurrent ``submit`` calls into batched ``run_batch`` calls.

    ``run_batch`` receives a list of items and must return one result per item, in order.
    ``executor`` defaults to a private single-thread pool that ``close`` shuts down; a pool
    passed in is the caller's to shut down.
    """

    def __init__(
        self,
        run_batch: Callable[[list[In]], Sequence[Out]],
        *,
        max_batch: int,
        max_wait_ms: float,
        executor: concurrent.futures.Executor | None = None,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        if max_wait_ms < 0:
            raise ValueError(f"max_wait_ms must not be negative, got {max_wait_ms}")
        self._run_batch = run_batch
        self._max_batch = max_batch
        self._max_wait = max_wait_ms / 1000.0
        self._owns_executor = executor is None
        self._executor = executor or concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="micro-batcher"
        )
        self._queue: asyncio.Queue[_Pending[In, Out] | _Stop] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    async def submit(self, item: In) -> Out:
        """Queue ``item`` and wait for its result from the batch it joins."""
        if self._closed:
            raise RuntimeError("MicroBatcher is closed")
        loop = asyncio.get_running_loop()
        if self._worker is None or self._loop is not loop:
            # first use, or a new event loop (a process that runs several in turn): the
            # queue and worker of a finished loop cannot serve this one
            self._loop = loop
            self._queue = asyncio.Queue()
            self._worker = loop.create_task(self._work(), name="micro-batcher")
        pending = _Pending[In, Out](item, loop.create_future(), loop.time())
        self._queue.put_nowait(pending)
        return await pending.future

    async def close(self) -> None:
        """Stop accepting items, finish every item already queued, then release the executor."""
        if self._closed:
            return
        self._closed = True
        if self._worker is not None and self._loop is asyncio.get_running_loop():
            self._queue.put_nowait(_STOP)
            await self._worker
        if self._owns_executor:
            self._executor.shutdown(wait=False)

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        stopping = False
        while not stopping:
            first = await self._queue.get()
            if isinstance(first, _Stop):
                return
            batch, stopping = await self._collect(first, loop)
            await self._run(batch, loop)

    async def _collect(
        self, first: _Pending[In, Out], loop: asyncio.AbstractEventLoop
    ) -> tuple[list[_Pending[In, Out]], bool]:
        """Gather items after ``first`` until the batch is full or its wait is over."""
        batch = [first]
        deadline = first.submitted_at + self._max_wait
        while len(batch) < self._max_batch:
            if self._queue.empty():
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    entry = await asyncio.wait_for(self._queue.get(), remaining)
                except TimeoutError:
                    break
            else:
                entry = self._queue.get_nowait()
            if isinstance(entry, _Stop):
                return batch, True
            batch.append(entry)
        return batch, False

    async def _run(self, batch: list[_Pending[In, Out]], loop: asyncio.AbstractEventLoop) -> None:
        live = [pending for pending in batch if not pending.future.done()]
        if not live:
            return
        try:
            results = await loop.run_in_executor(
                self._executor, self._run_batch, [pending.item for pending in live]
            )
            if len(results) != len(live):
                raise RuntimeError(
                    f"run_batch returned {len(results)} results for {len(live)} items"
                )
        except Exception as exc:
            for pending in live:
                if not pending.future.done():
                    pending.future.set_exception(exc)
            return
        except asyncio.CancelledError:
            # The worker itself is being torn down: its callers must not wait forever.
            for pending in live:
                pending.future.cancel()
            raise
        for pending, result in zip(live, results, strict=True):
            if not pending.future.done():
                pending.future.set_result(result)
