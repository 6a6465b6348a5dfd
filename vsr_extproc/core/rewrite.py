"""Rewrite a routed request's body: the upstream's model id, an added system prompt, and
PII replaced by typed placeholders.

The body is re-serialised only when something changed; an unchanged body is forwarded
byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson

from vsr_extproc.core.policy import ModelSpec, RouteAction
from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.detectors import Detector, FindingType, Redactor

#: rewrites message contents in place on a copy of the body (redaction); returns True
#: when it changed something
ContentRewriter = Callable[[list[Any]], bool]


def rewrite_body(
    request: NormalizedRequest,
    model: ModelSpec,
    action: RouteAction,
    rewriter: ContentRewriter | None = None,
) -> bytes | None:
    """The new body for the upstream, or None when the original can go as it is."""
    body = dict(request.body)
    changed = body.get("model") != model.upstream_model
    body["model"] = model.upstream_model
    messages = list(body["messages"])
    if rewriter is not None and rewriter(messages):
        changed = True
    if action.system_prompt:
        messages.insert(0, {"role": "system", "content": action.system_prompt})
        changed = True
    if not changed:
        return None
    body["messages"] = messages
    return orjson.dumps(body)


class Redaction:
    """Replaces the chosen PII types in every text of a request's messages.

    Text content (a string, or the ``text`` of content parts) and tool-call arguments are
    rewritten on copies; the parsed request is never mutated. ``counts`` tells how many of
    each type were replaced (never which values).
    """

    def __init__(self, types: Sequence[str], entities: Detector | None = None) -> None:
        self._redactor = Redactor([FindingType(kind) for kind in types], entities=entities)

    @property
    def counts(self) -> dict[str, int]:
        counts = sorted(self._redactor.counts.items())
        return {kind.value: count for kind, count in counts if count}

    def __call__(self, messages: list[Any]) -> bool:
        changed = False
        for index, message in enumerate(messages):
            if isinstance(message, dict):
                rewritten = self._message(message)
                if rewritten is not message:
                    messages[index] = rewritten
                    changed = True
        return changed

    def _text(self, text: str) -> str:
        return self._redactor.redact(text)[0]

    def _message(self, message: dict[str, Any]) -> dict[str, Any]:
        updated: dict[str, Any] = {}
        content = message.get("content")
        if isinstance(content, str):
            redacted = self._text(content)
            if redacted != content:
                updated["content"] = redacted
        elif isinstance(content, list):
            parts = [self._part(part) for part in content]
            if any(new is not old for new, old in zip(parts, content, strict=True)):
                updated["content"] = parts
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            new_calls = [self._tool_call(call) for call in calls]
            if any(new is not old for new, old in zip(new_calls, calls, strict=True)):
                updated["tool_calls"] = new_calls
        return {**message, **updated} if updated else message

    def _part(self, part: Any) -> Any:
        if (
            isinstance(part, dict)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        ):
            redacted = self._text(part["text"])
            if redacted != part["text"]:
                return {**part, "text": redacted}
        return part

    def _tool_call(self, call: Any) -> Any:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
            return call
        redacted = self._text(function["arguments"])
        if redacted == function["arguments"]:
            return call
        return {**call, "function": {**function, "arguments": redacted}}
