"""The signal runner: concurrency, per-signal timeouts, and failures as values."""

from __future__ import annotations

import asyncio
import time
from typing import ClassVar

import pytest
from builders import body, chat, user

from vsr_extproc.core.answers import decision_answer
from vsr_extproc.core.decision import RequestOutcome, decide
from vsr_extproc.core.normalize import normalize
from vsr_extproc.core.policy import (
    BlockAction,
    DecisionSpec,
    Limits,
    ModelSpec,
    Policy,
    RouteAction,
)
from vsr_extproc.core.router import Router
from vsr_extproc.core.rules import Leaf, OnError
from vsr_extproc.core.runner import SignalRunner
from vsr_extproc.core.signals import AsyncSignal, Evaluation, Outcome, SignalResult
from vsr_extproc.errors import RequestTooLarge

REQUEST = normalize(body(chat(user("hello"))))


class Sleeper(AsyncSignal):
    family: ClassVar[str] = "test"

    def __init__(self, name: str, seconds: float, timeout_s: float = 1.0) -> None:
        self.name = name
        self.seconds = seconds
        self.timeout_s = timeout_s
        self.started = asyncio.Event()

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        self.started.set()
        await asyncio.sleep(self.seconds)
        return Outcome(True, 0.8, {"slept": self.seconds})


class Crasher(AsyncSignal):
    family: ClassVar[str] = "test"
    name = "crash"
    timeout_s = 1.0

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        raise RuntimeError("model exploded")


class SharedWork(AsyncSignal):
    """Two of these share one computation through ``Evaluation.once``."""

    family: ClassVar[str] = "test"
    timeout_s = 1.0
    calls = 0

    def __init__(self, name: str) -> None:
        self.name = name

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        async def compute() -> int:
            SharedWork.calls += 1
            await asyncio.sleep(0.01)
            return 42

        return Outcome(await evaluation.once("shared", compute) == 42)


async def test_signals_run_concurrently() -> None:
    signals = {f"test.s{i}": Sleeper(f"s{i}", 0.2) for i in range(5)}
    started = time.perf_counter()
    results = await SignalRunner().run(signals, REQUEST)
    elapsed = time.perf_counter() - started
    assert all(result.matched for result in results.values())
    assert elapsed < 0.6  # five 200 ms signals cost about one, not one second


async def test_a_slow_signal_times_out_as_a_value() -> None:
    signals = {"test.slow": Sleeper("slow", 5.0, timeout_s=0.05), "test.fast": Sleeper("fast", 0)}
    started = time.perf_counter()
    results = await SignalRunner().run(signals, REQUEST)
    assert time.perf_counter() - started < 1.0
    assert results["test.slow"].error == "timed out after 50 ms"
    assert results["test.slow"].matched is False
    assert results["test.fast"].matched is True


async def test_a_crashing_signal_is_a_value_and_is_observed() -> None:
    seen: list[tuple[str, bool]] = []

    def observe(result: SignalResult, *, timed_out: bool) -> None:
        seen.append((result.key, timed_out))

    results = await SignalRunner(observe).run(
        {"test.crash": Crasher(), "test.slow": Sleeper("slow", 1, 0.01)}, REQUEST
    )
    assert results["test.crash"].error == "RuntimeError: model exploded"
    assert sorted(seen) == [("test.crash", False), ("test.slow", True)]


async def test_shared_work_runs_once_per_request() -> None:
    SharedWork.calls = 0
    signals = {"test.a": SharedWork("a"), "test.b": SharedWork("b")}
    results = await SignalRunner().run(signals, REQUEST)
    assert all(result.matched for result in results.values())
    assert SharedWork.calls == 1


def _policy(on_error: OnError) -> Policy:
    models = {"m": ModelSpec("m", "c", "up")}
    decisions = (
        DecisionSpec(
            "guard",
            100,
            Leaf("test.crash", "d[0].rules", on_error=on_error),
            BlockAction("blocked"),
            0,
        ),
    )
    return Policy(
        models,
        {"test.crash": Crasher()},
        decisions,
        DecisionSpec("default", -1, None, RouteAction(("m",)), 1),
    )


@pytest.mark.parametrize(
    ("on_error", "outcome", "decision", "status"),
    [
        (OnError.NO_MATCH, RequestOutcome.ROUTED, "default", None),
        (OnError.MATCH, RequestOutcome.BLOCKED, "guard", 403),
        (OnError.FAIL, RequestOutcome.REFUSED, "guard", 503),
    ],
)
async def test_on_error_decides_what_a_failed_signal_means(
    on_error: OnError, outcome: RequestOutcome, decision: str, status: int | None
) -> None:
    policy = _policy(on_error)
    results = await SignalRunner().run(policy.signals, REQUEST)
    verdict = decide(policy, REQUEST, results)
    assert verdict.outcome is outcome
    assert verdict.name == decision
    answer = decision_answer(verdict, stream=False)
    assert (answer.status if answer else None) == status
    if on_error is OnError.FAIL:
        assert "test.crash: RuntimeError: model exploded" in (verdict.problem or "")


class StoppedUnderneath(AsyncSignal):
    """Waits on shared work that something else cancels (a batcher shutting down)."""

    family: ClassVar[str] = "test"
    name = "stopped"
    timeout_s = 1.0

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        shared: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(shared.cancel)
        return Outcome(await shared == 1)


async def test_shared_work_cancelled_by_someone_else_is_this_signals_failure() -> None:
    results = await SignalRunner().run(
        {"test.stopped": StoppedUnderneath(), "test.fast": Sleeper("fast", 0)}, REQUEST
    )
    assert results["test.stopped"].error == "cancelled: shared work was stopped"
    assert results["test.fast"].matched


async def test_a_cancelled_request_still_ends_as_cancelled() -> None:
    slow = Sleeper("slow", 5)
    task = asyncio.ensure_future(SignalRunner().run({"test.slow": slow}, REQUEST))
    await asyncio.wait_for(slow.started.wait(), 5)  # the signal runs: cancel it mid-way
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_decision_that_redacts_more_text_than_the_limit_is_refused_with_413() -> None:
    policy = Policy(
        {"m": ModelSpec("m", "c", "up")},
        {},
        (),
        DecisionSpec("default", -1, None, RouteAction(("m",), redact=("email",)), 1),
        limits=Limits(max_redact_chars=1_000),
    )
    router = Router(policy)
    small = router.parse(body(chat(user("mail me at a@example.com"))), policy)
    assert (await router.decide(small, policy)).name == "default"
    large = router.parse(body(chat(user("mail me at a@example.com " + "x" * 2_000))), policy)
    with pytest.raises(RequestTooLarge, match="redacts at most 1000"):
        await router.decide(large, policy)


# --- stopping once the decision is certain -------------------------------------------------


class Flag(AsyncSignal):
    """Answers ``matched`` after ``seconds``; counts the times it ran to the end."""

    family: ClassVar[str] = "test"

    def __init__(self, name: str, matched: bool, seconds: float) -> None:
        self.name = name
        self.matched = matched
        self.seconds = seconds
        self.timeout_s = 5.0
        self.finished = 0

    async def evaluate(self, evaluation: Evaluation) -> Outcome:
        await asyncio.sleep(self.seconds)
        self.finished += 1
        return Outcome(self.matched, 0.9)


def _settling_policy(signals: dict[str, Flag], header: str | None = None) -> Policy:
    models = {"m": ModelSpec("m", "c", "up"), "r": ModelSpec("r", "c", "restricted")}
    headers = ((header, "x-found", "true"),) if header else ()
    decisions = (
        DecisionSpec("guard", 300, Leaf("test.guard", "d[0]", on_error=OnError.FAIL),
                     BlockAction("no"), 0),
        DecisionSpec("passport", 200, Leaf("test.passport", "d[1]"),
                     RouteAction(("r",), signal_headers=headers), 1),
        DecisionSpec("code", 100, Leaf("test.code", "d[2]"), RouteAction(("m",)), 2),
    )  # fmt: skip
    return Policy(models, dict(signals), decisions, DecisionSpec("default", -1, None,
                  RouteAction(("m",)), 3))  # fmt: skip


async def test_signals_still_running_once_the_decision_is_certain_are_stopped() -> None:
    signals = {
        "test.guard": Flag("guard", False, 0.0),
        "test.passport": Flag("passport", True, 0.05),
        "test.code": Flag("code", True, 3.0),  # the rest of a slow OCR
    }
    policy = _settling_policy(signals)
    started = time.perf_counter()
    decision = await Router(policy).decide(REQUEST, policy)
    assert time.perf_counter() - started < 2.0  # not the 3 s of the signal it did not need
    assert decision.name == "passport"
    assert decision.results["test.code"].skipped
    assert decision.results["test.code"].error is None
    await asyncio.sleep(0)
    assert signals["test.code"].finished == 0  # its work was cancelled, not left running
    # explain waits for every signal: the whole trace, and the same decision
    full = await Router(policy).explain(body(chat(user("hello"))))
    assert full.name == "passport"
    assert not any(result.skipped for result in full.results.values())


@pytest.mark.parametrize(
    ("why", "passport", "guard_seconds", "header"),
    [
        ("a higher decision may still match", False, 0.0, None),
        ("a signal whose failure refuses the request is still running", True, 0.3, None),
        ("the decision's header needs the slow signal", True, 0.0, "test.code"),
    ],
)
async def test_nothing_is_stopped_while_the_decision_can_still_change(
    why: str, passport: bool, guard_seconds: float, header: str | None
) -> None:
    signals = {
        "test.guard": Flag("guard", False, guard_seconds),
        "test.passport": Flag("passport", passport, 0.0),
        "test.code": Flag("code", True, 0.2),
    }
    policy = _settling_policy(signals, header)
    decision = await Router(policy).decide(REQUEST, policy)
    assert not any(result.skipped for result in decision.results.values()), why
    assert decision.name == ("passport" if passport else "code")
