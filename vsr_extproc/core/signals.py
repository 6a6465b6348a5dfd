"""The contract every signal family implements, and the one result shape they return.

A signal answers one typed question about a request (``keyword.code_words``,
``modality.has_image``, ``pii.identity``). It returns an ``Outcome``; the runner adds the
timing, the timeout and the error handling, and records a ``SignalResult``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from time import perf_counter
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from vsr_extproc.core.request import NormalizedRequest

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a signal computed: did it match, how sure is it, and what did it see.

    ``value`` is a small JSON-able summary for traces and logs. It must never hold a PII
    value, a secret or image bytes.
    """

    matched: bool
    confidence: float = 1.0
    value: Any = None

    @classmethod
    def of(cls, matched: bool, value: Any = None) -> Outcome:
        """A deterministic outcome: confidence 1 when matched, 0 otherwise."""
        return cls(matched, 1.0 if matched else 0.0, value)


@dataclass(frozen=True, slots=True)
class SignalResult:
    """A signal's outcome as recorded in the trace."""

    family: str
    name: str
    matched: bool
    confidence: float
    value: Any
    latency_ms: float
    error: str | None = None
    #: not waited for: the decision was certain without it (``decision.settled``)
    skipped: bool = False

    @property
    def key(self) -> str:
        return f"{self.family}.{self.name}"

    @property
    def failed(self) -> bool:
        return self.error is not None

    @classmethod
    def of(cls, signal: Named, outcome: Outcome, started: float) -> SignalResult:
        """``signal``'s ``outcome``, timed from ``started`` (a ``perf_counter()`` value)."""
        elapsed = (perf_counter() - started) * 1000.0
        return cls(
            signal.family, signal.name, outcome.matched, outcome.confidence, outcome.value, elapsed
        )

    @classmethod
    def failure(cls, signal: Named, error: str, started: float) -> SignalResult:
        """``signal`` failed with ``error`` (its rule's ``on_error`` decides)."""
        elapsed = (perf_counter() - started) * 1000.0
        return cls(signal.family, signal.name, False, 0.0, None, elapsed, error)


class Named(Protocol):
    """What names a signal in the trace: request signals and answer signals alike."""

    @property
    def family(self) -> str: ...

    @property
    def name(self) -> str: ...


class Evaluation:
    """Per-request scratch space shared by the signals of one request.

    Work that several signals need (one embedding pass, one OCR per image) is computed
    once through ``once``: the first caller starts it, the others await the same future.
    Cheap synchronous work (which excerpts a scope reads) is shared through ``memo``.

    The evaluation also stands for its request in the runtimes' queues: work queued with
    it as the owner competes fairly with other requests' work (the one served least goes
    first), and leaves the queues when ``cancel`` ends it.
    """

    __slots__ = ("__weakref__", "_memos", "_shared", "request")

    def __init__(self, request: NormalizedRequest) -> None:
        self.request = request
        self._shared: dict[Hashable, asyncio.Future[Any]] = {}
        self._memos: dict[Hashable, Any] = {}

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        if key not in self._memos:
            self._memos[key] = compute()
        value: T = self._memos[key]
        return value

    async def once(self, key: Hashable, compute: Callable[[], Awaitable[T]]) -> T:
        future = self._shared.get(key)
        if future is None:
            future = asyncio.ensure_future(compute())
            self._shared[key] = future
        return await asyncio.shield(future)

    def cancel(self) -> None:
        for future in self._shared.values():
            future.cancel()


@runtime_checkable
class Signal(Protocol):
    """One configured signal.

    ``inline`` signals are cheap and synchronous (a regex, a count): the runner calls
    ``evaluate_now`` directly, with no task and no timeout. The others implement
    ``evaluate`` as a coroutine and run concurrently, each under ``timeout_s``.
    """

    family: ClassVar[str]
    name: str
    inline: ClassVar[bool]
    timeout_s: float

    def evaluate_now(self, request: NormalizedRequest) -> Outcome: ...

    async def evaluate(self, evaluation: Evaluation) -> Outcome: ...


class InlineSignal:
    """Base for cheap synchronous signals."""

    family: ClassVar[str]
    inline: ClassVar[bool] = True
    name: str
    timeout_s: float = 0.0

    def evaluate_now(self, request: NormalizedRequest) -> Outcome:
        raise NotImplementedError

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        return self.evaluate_now(evaluation.request)


class AsyncSignal:
    """Base for signals that wait on a model, a fetch or another process."""

    family: ClassVar[str]
    inline: ClassVar[bool] = False
    name: str
    timeout_s: float

    def evaluate_now(self, request: NormalizedRequest) -> Outcome:
        raise TypeError(f"{self.family}.{self.name} is asynchronous")

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        raise NotImplementedError
