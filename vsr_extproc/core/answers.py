"""Payloads the router sends itself: OpenAI-style errors and confirmation completions.

These are HTTP bodies, independent of how they travel (an Envoy immediate response, the
admin API); the Envoy edge wraps them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import orjson

from vsr_extproc.core.decision import RequestOutcome, RoutingDecision
from vsr_extproc.core.policy import BlockAction, ConfirmAction

#: the ``model`` the router names in answers it writes itself
ROUTER_MODEL = "vsr-router"


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    content_type: str
    body: bytes


def error_answer(
    status: int, message: str, *, error_type: str, code: str, decision: str | None = None
) -> Answer:
    """An OpenAI-style error: ``{"error": {"message", "type", "code", "param"}}``."""
    error: dict[str, object] = {
        "message": message,
        "type": error_type,
        "code": code,
        "param": None,
    }
    if decision is not None:
        error["decision"] = decision
    return Answer(status, "application/json", orjson.dumps({"error": error}))


def confirm_answer(question: str, *, decision: str, stream: bool) -> Answer:
    """A ``chat.completion`` from the router asking the client to confirm.

    With ``stream`` it is a server-sent event stream of ``chat.completion.chunk`` objects
    ending in ``data: [DONE]``, as an OpenAI client expects.
    """
    identifier = f"chatcmpl-vsr-{uuid.uuid4().hex[:24]}"
    created = int(time.time())
    if stream:
        events = b"".join(
            b"data: " + orjson.dumps(chunk) + b"\n\n"
            for chunk in _chunks(identifier, created, question, decision)
        )
        return Answer(200, "text/event-stream", events + b"data: [DONE]\n\n")
    completion = {
        "id": identifier,
        "object": "chat.completion",
        "created": created,
        "model": ROUTER_MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": question},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        "system_fingerprint": f"vsr:{decision}",
    }
    return Answer(200, "application/json", orjson.dumps(completion))


def _chunks(identifier: str, created: int, text: str, decision: str) -> Iterator[dict[str, object]]:
    base = {
        "id": identifier,
        "object": "chat.completion.chunk",
        "created": created,
        "model": ROUTER_MODEL,
        "system_fingerprint": f"vsr:{decision}",
    }
    deltas: tuple[tuple[dict[str, str], str | None], ...] = (
        ({"role": "assistant", "content": ""}, None),
        ({"content": text}, None),
        ({}, "stop"),
    )
    for delta, finish in deltas:
        yield {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def decision_answer(decision: RoutingDecision, *, stream: bool) -> Answer | None:
    """The router's own answer for a decision, or None when the request is routed."""
    action = decision.decision.action
    if decision.outcome is RequestOutcome.BLOCKED and isinstance(action, BlockAction):
        return error_answer(
            action.status,
            action.message,
            error_type="request_blocked",
            code="blocked_by_policy",
            decision=decision.name,
        )
    if decision.outcome is RequestOutcome.CONFIRMED and isinstance(action, ConfirmAction):
        return confirm_answer(action.question, decision=decision.name, stream=stream)
    if decision.outcome is RequestOutcome.REFUSED:
        return error_answer(
            503,
            f"the router could not evaluate a required check ({decision.problem}); try again later",
            error_type="router_unavailable",
            code="signal_failed",
            decision=decision.name,
        )
    if decision.outcome is RequestOutcome.UNROUTABLE:
        return error_answer(
            422,
            f"no configured model can serve this request ({decision.problem})",
            error_type="invalid_request_error",
            code="no_model_available",
            decision=decision.name,
        )
    return None
