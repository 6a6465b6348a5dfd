"""The one place that runs signals: concurrency, timeouts, timing and error capture.

Only the signals some decision references are in the policy, so only those run. Cheap
inline signals run straight away; the others run concurrently, each under its own timeout,
so a decision costs about its slowest signal. A failure or timeout becomes a
``SignalResult`` with ``error`` set, never an exception that ends the stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from time import perf_counter
from typing import Protocol

from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.core.signals import Evaluation, Outcome, Signal, SignalResult
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


def _result(signal: Signal, outcome: Outcome, started: float) -> SignalResult:
    return SignalResult(
        signal.family,
        signal.name,
        outcome.matched,
        outcome.confidence,
        outcome.value,
        (perf_counter() - started) * 1000.0,
    )


def _failure(signal: Signal, error: str, started: float) -> SignalResult:
    return SignalResult(
        signal.family, signal.name, False, 0.0, None, (perf_counter() - started) * 1000.0, error
    )


class SignalRunner:
    """Evaluates a policy's signals for one request."""

    def __init__(self, observer: SignalObserver = _ignore) -> None:
        self._observer = observer

    async def run(
        self, signals: Mapping[str, Signal], request: NormalizedRequest
    ) -> dict[str, SignalResult]:
        results: dict[str, SignalResult] = {}
        waiting: list[tuple[str, Signal]] = []
        for key, signal in signals.items():
            if signal.inline:
                results[key] = self._run_inline(signal, request)
            else:
                waiting.append((key, signal))
        if waiting:
            evaluation = Evaluation(request)
            try:
                finished = await asyncio.gather(
                    *(self._run_async(signal, evaluation) for _, signal in waiting)
                )
            finally:
                evaluation.cancel()
            for (key, _), result in zip(waiting, finished, strict=True):
                results[key] = result
        return results

    def _run_inline(self, signal: Signal, request: NormalizedRequest) -> SignalResult:
        started = perf_counter()
        try:
            result = _result(signal, signal.evaluate_now(request), started)
        except Exception as exc:
            result = _failure(signal, _describe(exc), started)
        self._observer(result, timed_out=False)
        return result

    async def _run_async(self, signal: Signal, evaluation: Evaluation) -> SignalResult:
        started = perf_counter()
        timed_out = False
        try:
            async with asyncio.timeout(signal.timeout_s):
                outcome = await signal.evaluate(evaluation)
            result = _result(signal, outcome, started)
        except TimeoutError:
            timed_out = True
            result = _failure(signal, f"timed out after {signal.timeout_s * 1000:.0f} ms", started)
        except Exception as exc:
            result = _failure(signal, _describe(exc), started)
        except asyncio.CancelledError:
            if _cancelling():
                raise  # this request is being cancelled: let it end
            # shared work was cancelled under this signal: its failure, not the request's
            result = _failure(signal, "cancelled: shared work was stopped", started)
        self._observer(result, timed_out=timed_out)
        return result


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
