"""Explain response decisions for a request and an answer, without a model or Envoy.

The answer comes from a file: a recorded ``chat.completion`` (JSON), a recorded stream
(server-sent events, ``data: …`` lines), or a scripted reply in the stand-ins' format
(``{"content": …, "tool_calls": [{"name", "arguments"}]}``).
"""

from __future__ import annotations

from typing import Any

import orjson

from vsr_extproc.core.answer import Answer
from vsr_extproc.core.explain import node_data
from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.core.responses import ResponsePolicy
from vsr_extproc.core.rules import evaluate
from vsr_extproc.response.guard import event_data, take_events


def answer_from_bytes(data: bytes) -> Answer:
    """An ``Answer`` from a recorded completion, a recorded stream or a scripted reply."""
    text = data.strip()
    if text.startswith((b"data:", b":")) or b"\ndata:" in text[:4096]:
        answer = Answer()
        for raw in take_events(bytearray(text + b"\n\n")):
            payload = event_data(raw)
            if payload is None or payload == b"[DONE]":
                continue
            try:
                answer.add_chunk(orjson.loads(payload))
            except orjson.JSONDecodeError as exc:
                raise ValueError(f"a stream event is not JSON: {exc}") from None
        answer.end()
        return answer
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not JSON and not a stream of events: {exc}") from None
    if not isinstance(document, dict):
        raise ValueError("expected a JSON object")
    if "choices" in document:
        return Answer.of_completion(document)
    calls = [
        {"id": f"call_{order}", "type": "function",
         "function": {"name": call.get("name", ""), "arguments": call.get("arguments", "")}}
        for order, call in enumerate(document.get("tool_calls") or ())
        if isinstance(call, dict)
    ]  # fmt: skip
    message: dict[str, Any] = {"role": "assistant", "content": document.get("content")}
    if calls:
        message["tool_calls"] = calls
    finish = "tool_calls" if calls else "stop"
    return Answer.of_completion(
        {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    )


def explain_answer(
    policy: ResponsePolicy, answer: Answer, request: NormalizedRequest | None
) -> dict[str, Any]:
    """Every response signal and every response decision on this answer, and what would
    happen to it."""
    verdicts, results = policy.decide(answer, request)
    first = verdicts[0] if verdicts else None
    if first is None:
        happens = "passes unchanged"
    elif first.action.kind == "block":
        happens = f"blocked by {first.name}"
    else:
        acting = ", ".join(f"{verdict.action.kind} by {verdict.name}" for verdict in verdicts)
        happens = acting
    return {
        "enabled": policy.enabled,
        "outcome": happens,
        "winner": first.name if first else None,
        "acting": [{"decision": v.name, "action": v.action.kind} for v in verdicts],
        "tool_calls": [call.name for call in answer.calls()],
        "signals": [
            {
                "signal": key,
                "matched": result.matched,
                "confidence": round(result.confidence, 6),
                "value": result.value,
                "error": result.error,
            }
            for key, result in results.items()
        ],
        "decisions": [
            {
                "name": decision.name,
                "priority": decision.priority,
                "action": decision.action.kind,
                **_verdict(evaluate(decision.rule, results)),
            }
            for decision in policy.decisions
        ],
    }


def _verdict(trace: Any) -> dict[str, Any]:
    return {"matched": trace.matched, "rule": node_data(trace)}


def answer_table(data: dict[str, Any]) -> str:
    """The response part of ``vsr-extproc explain``, for people."""
    lines = [f"answer: {data['outcome']}"]
    if data["tool_calls"]:
        lines.append(f"  tool calls: {', '.join(data['tool_calls'])}")
    for signal in data["signals"]:
        state = "error" if signal["error"] else ("match" if signal["matched"] else "-")
        lines.append(f"  {signal['signal']:<32} {state:<6} {_short(signal['value'])}")
    for decision in data["decisions"]:
        mark = "✓" if decision["matched"] else " "
        lines.append(
            f"  {mark} {decision['name']:<30} priority {decision['priority']:<6} "
            f"{decision['action']}"
        )
    return "\n".join(lines)


def _short(value: Any, width: int = 50) -> str:
    text = "" if value is None else orjson.dumps(value).decode()
    return text if len(text) <= width else text[: width - 1] + "…"
