"""The one place that runs signals: concurrency, timeouts, timing and error capture.

Only the signals some decision references are in the policy, so only those run. Cheap
inline signals run straight away; the others run concurrently, each under its own timeout,
so a decision costs about its slowest signal. A failure or timeout becomes a
``SignalResult`` with ``error`` set, never an exception that ends the stream.

Given ``settled`` (``decision.settled``), the runner stops waiting as soon as the decision
can no longer change: a passport page whose MRZ verified is a restricted-path request
whatever the rest of its OCR says, so the rest is not read. The signals it stopped are
reported ``skipped``, their work is cancelled and leaves the queues.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from time import perf_counter
from typing import Protocol

from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.core.signals import Evaluation, Signal, SignalResult
from vsr_extproc.errors import SignalError


class SignalObserver(Protocol):
    """Told about every signal result (metrics hook)."""

    def __call__(self, result: SignalResult, *, timed_out: bool) -> None: ...


def _ignore(result: SignalResult, *, timed_out: bool) -> None:
    return None


def _describe(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, SignalError) and text:
        return text  # a signal's own, deliberate explanation
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class SignalRunner:
    """Evaluates a policy's signals for one request."""

    def __init__(self, observer: SignalObserver = _ignore) -> None:
        self._observer = observer

    async def run(
        self,
        signals: Mapping[str, Signal],
        request: NormalizedRequest,
        settled: Callable[[Mapping[str, SignalResult]], bool] | None = None,
    ) -> dict[str, SignalResult]:
        """Every signal's result; with ``settled``, those still running once it says the
        results so far decide the request are stopped and reported ``skipped``."""
        results: dict[str, SignalResult] = {}
        waiting: dict[str, Signal] = {}
        for key, signal in signals.items():
            if signal.inline:
                results[key] = self._run_inline(signal, request)
            else:
                waiting[key] = signal
        if waiting:
            evaluation = Evaluation(request)
            tasks = {
                key: asyncio.ensure_future(self._run_async(signal, evaluation))
                for key, signal in waiting.items()
            }
            try:
                await self._wait(tasks, results, settled)
            finally:
                for task in tasks.values():
                    task.cancel()
                evaluation.cancel()
            for key in tasks:
                if key not in results:
                    results[key] = _skipped(waiting[key])
        return {key: results[key] for key in signals}

    @staticmethod
    async def _wait(
        tasks: Mapping[str, asyncio.Future[SignalResult]],
        results: dict[str, SignalResult],
        settled: Callable[[Mapping[str, SignalResult]], bool] | None,
    ) -> None:
        pending = set(tasks.values())
        while pending:
            if settled is not None and settled(results):
                break
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for key, task in tasks.items():
                if task in done:
                    results[key] = task.result()
        for key, task in tasks.items():
            if task in pending and task.done() and not task.cancelled():
                results[key] = task.result()  # finished while the last check ran: keep it
        stopped = [task for task in pending if not task.done()]
        for task in stopped:
            task.cancel()
        await asyncio.gather(*stopped, return_exceptions=True)

    def _run_inline(self, signal: Signal, request: NormalizedRequest) -> SignalResult:
        started = perf_counter()
        try:
            result = SignalResult.of(signal, signal.evaluate_now(request), started)
        except Exception as exc:
            result = SignalResult.failure(signal, _describe(exc), started)
        self._observer(result, timed_out=False)
        return result

    async def _run_async(self, signal: Signal, evaluation: Evaluation) -> SignalResult:
        started = perf_counter()
        timed_out = False
        try:
            async with asyncio.timeout(signal.timeout_s):
                outcome = await signal.evaluate(evaluation)
            result = SignalResult.of(signal, outcome, started)
        except TimeoutError:
            timed_out = True
            timeout = f"timed out after {signal.timeout_s * 1000:.0f} ms"
            result = SignalResult.failure(signal, timeout, started)
        except Exception as exc:
            result = SignalResult.failure(signal, _describe(exc), started)
        except asyncio.CancelledError:
            if _cancelling():
                raise  # this request is being cancelled: let it end
            # shared work was cancelled under this signal: its failure, not the request's
            result = SignalResult.failure(signal, "cancelled: shared work was stopped", started)
        self._observer(result, timed_out=timed_out)
        return result


def _skipped(signal: Signal) -> SignalResult:
    return SignalResult(
        signal.family,
        signal.name,
        False,
        0.0,
        {"skipped": "the decision was certain without it"},
        0.0,
        skipped=True,
    )


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
