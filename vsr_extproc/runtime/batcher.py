"""An asyncio-native micro-batcher: concurrent callers' items are coalesced into one call.

Model forward passes cost nearly the same for one item as for a few, so requests that arrive
together should share a pass. Each ``submit`` queues (item, future) and awaits the future;
one worker task takes the first waiting item, keeps collecting until the batch weighs
``max_batch`` or until ``max_wait_ms`` after that first item was *submitted*, then runs
``run_batch`` on an executor thread — never on the event loop — and resolves the futures.

Properties callers rely on:

* **fair by owner**: an item is submitted for an owner (a request); the worker takes
  the owner served least so far first, so an owner with a thousand items queued delays
  another owner's one item by about the batch already running, not by a thousand items;
* one batch runs at a time, on a single-thread executor by default, so ``run_batch`` needs no
  locking and torch keeps its own intra-op threads; items that arrive meanwhile form the next
  batch immediately (their wait already happened);
* an exception from ``run_batch`` fails exactly the futures of that batch; later batches run;
* a caller cancelled while waiting leaves the queue at once; if its item already runs, its
  result is discarded — the rest of its batch is unaffected;
* no polling and no background threads of its own: an idle batcher is a task blocked on an
  empty queue.

Generic in the item and result types: the SigLIP runtime batches pixel arrays, the text
embedding runtime batches forward passes of token windows. ``FairWorker`` runs jobs one at
a time through the same queue: OCR, one image a job, and the signals' CPU work.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")
T = TypeVar("T")


@dataclass(eq=False)
class _Pending(Generic[In, Out]):
    item: In
    owner: Hashable
    weight: int
    future: asyncio.Future[Out]
    submitted_at: float


class FairQueue(Generic[T]):
    """Items queued per owner; the owner served least so far goes next.

    "Served" is the weight of the items an owner has had taken: a request with thousands
    of items queued waits while one with a single item gets its turn, so the small one
    waits only for what is already running, and owners that have had equal service are
    taken in the order they first queued (round robin among large owners). What an owner
    was served is remembered as long as the owner lives (weakly: the queue never keeps a
    request alive), so work submitted in waves (a text's first pass, then the rest) keeps
    its account; owners that cannot be weakly referenced (strings, numbers) are
    remembered for the last ``memory`` of them.
    """

    def __init__(self, memory: int = 4096) -> None:
        self._owners: OrderedDict[Hashable, deque[tuple[T, int]]] = OrderedDict()
        self._served: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._served_plain: OrderedDict[Hashable, int] = OrderedDict()
        self._memory = memory
        self._nonempty = asyncio.Event()

    def __len__(self) -> int:
        return sum(len(items) for items in self._owners.values())

    def empty(self) -> bool:
        return not self._owners

    def put(self, owner: Hashable, item: T, weight: int = 1) -> None:
        self._owners.setdefault(owner, deque()).append((item, weight))
        self._nonempty.set()

    def served(self, owner: Hashable) -> int:
        """The weight of ``owner``'s items taken so far."""
        try:
            return self._served.get(owner, 0)
        except TypeError:  # cannot be weakly referenced
            return self._served_plain.get(owner, 0)

    def _account(self, owner: Hashable, weight: int) -> None:
        try:
            self._served[owner] = self._served.get(owner, 0) + weight
        except TypeError:
            self._served_plain[owner] = self._served_plain.pop(owner, 0) + weight
            if len(self._served_plain) > self._memory:
                self._served_plain.popitem(last=False)

    def _next_owner(self) -> Hashable:
        return min(self._owners, key=self.served)

    def peek(self) -> T:
        """The item ``pop`` would return."""
        return self._owners[self._next_owner()][0][0]

    def pop(self) -> T:
        owner = self._next_owner()
        items = self._owners[owner]
        item, weight = items.popleft()
        self._account(owner, weight)
        if not items:
            del self._owners[owner]
            if not self._owners:
                self._nonempty.clear()
        return item

    def discard(self, owner: Hashable, item: T) -> None:
        """Remove ``item`` if it is still queued."""
        items = self._owners.get(owner)
        if items is None:
            return
        for entry in items:
            if entry[0] is item:
                items.remove(entry)
                break
        else:
            return
        if not items:
            del self._owners[owner]
            if not self._owners:
                self._nonempty.clear()

    async def wait(self, seconds: float | None = None) -> bool:
        """Wait until something is queued (or ``wake`` is called); False after ``seconds``."""
        try:
            async with asyncio.timeout(seconds):
                await self._nonempty.wait()
        except TimeoutError:
            return False
        return True

    def wake(self) -> None:
        self._nonempty.set()


def _one(item: object) -> int:
    return 1


class MicroBatcher(Generic[In, Out]):
    """Coalesce concurrent ``submit`` calls into batched ``run_batch`` calls.

    ``run_batch`` receives a list of items and must return one result per item, in order.
    A batch weighs at most ``max_batch``: each item weighs ``weigh(item)`` (1 by default;
    an item heavier than ``max_batch`` forms a batch of its own). ``executor`` defaults to
    a private single-thread pool that ``close`` shuts down; a pool passed in is the
    caller's to shut down.
    """

    def __init__(
        self,
        run_batch: Callable[[list[In]], Sequence[Out]],
        *,
        max_batch: int,
        max_wait_ms: float,
        executor: concurrent.futures.Executor | None = None,
        weigh: Callable[[In], int] = _one,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        if max_wait_ms < 0:
            raise ValueError(f"max_wait_ms must not be negative, got {max_wait_ms}")
        self._run_batch = run_batch
        self._max_batch = max_batch
        self._max_wait = max_wait_ms / 1000.0
        self._weigh = weigh
        self._owns_executor = executor is None
        self._executor = executor or concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="micro-batcher"
        )
        self._queue: FairQueue[_Pending[In, Out]] = FairQueue()
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._stopping = False

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def queued(self) -> int:
        """Items waiting for a batch (not counting the batch that runs)."""
        return len(self._queue)

    async def submit(self, item: In, *, owner: Hashable | None = None) -> Out:
        """Queue ``item`` for ``owner`` and wait for its result from the batch it joins.

        Items without an owner are each their own owner: they are served in order.
        """
        if self._closed:
            raise RuntimeError("MicroBatcher is closed")
        loop = asyncio.get_running_loop()
        if self._worker is None or self._loop is not loop:
            # first use, or a new event loop (a process that runs several in turn): the
            # queue and worker of a finished loop cannot serve this one
            self._loop = loop
            self._queue = FairQueue()
            self._worker = loop.create_task(self._work(), name="micro-batcher")
        key = object() if owner is None else owner
        pending = _Pending[In, Out](item, key, self._weigh(item), loop.create_future(), loop.time())
        self._queue.put(key, pending, pending.weight)
        try:
            return await pending.future
        except asyncio.CancelledError:
            self._queue.discard(key, pending)  # a cancelled caller's work leaves at once
            raise

    async def close(self) -> None:
        """Stop accepting items, finish every item already queued, then release the executor."""
        if self._closed:
            return
        self._closed = True
        if self._worker is not None and self._loop is asyncio.get_running_loop():
            self._stopping = True
            self._queue.wake()
            await self._worker
        if self._owns_executor:
            self._executor.shutdown(wait=False)

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if self._queue.empty():
                if self._stopping:
                    return
                await self._queue.wait()
                continue
            batch = await self._collect(self._queue.pop(), loop)
            await self._run(batch, loop)

    async def _collect(
        self, first: _Pending[In, Out], loop: asyncio.AbstractEventLoop
    ) -> list[_Pending[In, Out]]:
        """Gather items after ``first`` until the batch is full or its wait is over."""
        batch = [first]
        weight = first.weight
        deadline = first.submitted_at + self._max_wait
        while weight < self._max_batch:
            if self._queue.empty():
                remaining = deadline - loop.time()
                if self._stopping or remaining <= 0 or not await self._queue.wait(remaining):
                    break
                continue
            if weight + self._queue.peek().weight > self._max_batch:
                break
            entry = self._queue.pop()
            batch.append(entry)
            weight += entry.weight
        return batch

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


def _run_each(jobs: list[Callable[[], Out]]) -> list[Out]:
    return [job() for job in jobs]


class FairWorker:
    """One worker thread that runs jobs one at a time, the owner served least first.

    For work that cannot be batched (OCR of one image, a signal's CPU work): the queue
    and its cancellation rules are the ``MicroBatcher``'s, with one job per batch.
    """

    def __init__(self, name: str) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=name)
        self._queue: MicroBatcher[Callable[[], Any], Any] = MicroBatcher(
            _run_each, max_batch=1, max_wait_ms=0, executor=self._executor
        )

    async def run(self, function: Callable[..., T], *args: Any, owner: Hashable | None = None) -> T:
        """``function(*args)`` on the worker thread, queued for ``owner``."""
        result: T = await self._queue.submit(functools.partial(function, *args), owner=owner)
        return result

    def shutdown(self) -> None:
        """Stop the thread once its current job is done; queued jobs then fail."""
        self._executor.shutdown(wait=False, cancel_futures=True)
