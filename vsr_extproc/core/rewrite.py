"""Rewrite a routed request's body: the upstream's model id, an added system prompt.

The body is re-serialised only when something changed; an unchanged body is forwarded
byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from vsr_extproc.core.policy import ModelSpec, RouteAction
from vsr_extproc.core.request import NormalizedRequest

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
