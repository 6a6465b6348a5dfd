"""One decision as a replay record: what was decided, why, and (opt-in) what was asked.

A record always holds the verdict, a summary of each signal (matched, confidence, error)
and the decision's trace (``explain_data``, which carries no PII values). With
``keep_content`` it also holds the request, made safe to keep:

- every text (message content, text parts, tool-call arguments) has every PII type and
  secret replaced by ``<EMAIL_1>``-style placeholders; names of people and organisations
  too when the named-entity model is loaded (``entities``), else the trace says they were
  kept;
- every image is replaced by its SHA-256, its format, where it came from (``data`` or
  ``remote``; the URL itself may carry identifiers, so it is not kept) and, per image, what
  the image-family signals inspected (``features``: format, size, greyscale, OCR counts…
  never pixels or text);
- only the fields the router reads are kept (model, messages, tools' names, stream):
  ``user``, ``metadata`` and opaque parts (audio, files) may identify people.

That redacted body is what ``replay`` re-evaluates, so decisions that depend on a PII
value see its placeholder instead.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from vsr_extproc.core.decision import RoutingDecision
from vsr_extproc.core.explain import explain_data
from vsr_extproc.core.request import ImagePart, NormalizedRequest
from vsr_extproc.core.rewrite import Redaction
from vsr_extproc.core.signals import SignalResult
from vsr_extproc.detectors import Detector, FindingType
from vsr_extproc.errors import ImageError

#: signal families that look at image pixels (``SignalFamily.reads_images``); replay cannot
#: run them again (images are not kept), so their stored results stand in. Named here, not
#: read from the registry: the request path records without importing every family and
#: its runtimes (a test holds the two equal)
IMAGE_FAMILIES = frozenset({"vision", "image", "image_text"})

#: the outcome and decision of a request that could not be parsed
ERROR_OUTCOME = "error"
INVALID_REQUEST = "invalid_request"

#: the top-level request fields a record keeps; the router reads nothing else
_KEPT_FIELDS = ("model", "messages", "tools", "stream")
_KEPT_MESSAGE_FIELDS = ("role", "content", "tool_calls", "tool_call_id")
_ALL_TYPES = tuple(kind.value for kind in FindingType)


@dataclass(frozen=True)
class ReplayRecord:
    """One recorded decision (see the module docstring for what ``content`` holds)."""

    id: str
    #: unix time of the decision
    time: float
    request_id: str
    #: SHA-256 of the raw request body, to find repeats without keeping the body
    request_hash: str
    #: the fingerprint of the policy that decided
    policy: str
    decision: str
    #: routed, blocked, confirmed, refused, unroutable, error or passthrough
    outcome: str
    model: str | None
    #: ``{signal key: {"matched", "confidence", "error"}}``
    signals: dict[str, Any]
    #: ``explain_data`` of the decision
    trace: dict[str, Any]
    #: the redacted request, only when ``keep_content``
    content: dict[str, Any] | None = None
    #: what came back from the upstream, set after the record is written
    #: (``ReplayRecorder.respond``); None until then
    response: dict[str, Any] | None = None


_id_lock = threading.Lock()
_last_micros = 0


def new_replay_id() -> str:
    """A short, URL-safe id that sorts by creation time.

    14 hex digits of microseconds since the epoch (strictly increasing within a process)
    and 6 random hex digits (distinct across processes writing one store).
    """
    global _last_micros
    with _id_lock:
        micros = max(time.time_ns() // 1000, _last_micros + 1)
        _last_micros = micros
    return f"{micros:014x}{os.urandom(3).hex()}"


def make_record(
    replay_id: str,
    request_id: str,
    body: bytes,
    request: NormalizedRequest | None,
    decision: RoutingDecision | None,
    *,
    outcome: str | None = None,
    keep_content: bool,
    max_content_chars: int | None = None,
    entities: Detector | None = None,
    policy_fingerprint: str,
    error: str | None = None,
    at: float | None = None,
) -> ReplayRecord:
    """The record of one request.

    ``at`` is when it was decided (default: now). ``outcome`` overrides the decision's
    own (``passthrough``); without a decision it defaults to ``error``. A request that
    could not be parsed has neither ``request`` nor ``decision``: its decision is the
    error code given, else ``invalid_request``.

    With ``keep_content`` this scans every text for PII and hashes every image: CPU work
    that grows with the request, so a caller on an event loop should run it off the loop.
    A request with more than ``max_content_chars`` of text keeps no content (its trace
    says so): the record's work stays bounded whatever a client sends.
    """
    if decision is not None:
        name = decision.name
        verdict = outcome or decision.outcome.value
        model = decision.model.name if decision.model is not None else None
        signals = _signal_summary(decision.results)
        trace = explain_data(decision)
    else:
        verdict = outcome or ERROR_OUTCOME
        name = error or (INVALID_REQUEST if verdict == ERROR_OUTCOME else verdict)
        model = None
        signals = {}
        trace = {"error": error} if error else {}
    content = None
    if keep_content and request is not None:
        size = request.text_chars
        if max_content_chars is not None and size > max_content_chars:
            trace = {**trace, "content": f"not kept: {size} characters of text"}
        else:
            results = decision.results if decision is not None else {}
            content = kept_content(request, results, entities)
            if entities is None:
                trace = {**trace, "content": "names not redacted: no named-entity model"}
    return ReplayRecord(
        id=replay_id,
        time=time.time() if at is None else at,
        request_id=request_id,
        request_hash=hashlib.sha256(body).hexdigest(),
        policy=policy_fingerprint,
        decision=name,
        outcome=verdict,
        model=model,
        signals=signals,
        trace=trace,
        content=content,
    )


def _signal_summary(results: Mapping[str, SignalResult]) -> dict[str, Any]:
    return {
        key: {
            "matched": result.matched,
            "confidence": round(result.confidence, 6),
            "error": result.error,
            **({"skipped": True} if result.skipped else {}),
        }
        for key, result in results.items()
    }


def kept_content(
    request: NormalizedRequest,
    results: Mapping[str, SignalResult],
    entities: Detector | None = None,
) -> dict[str, Any]:
    """The request as a record keeps it: PII redacted (names with ``entities``), images as
    hashes and features."""
    document = {key: request.body[key] for key in _KEPT_FIELDS if key in request.body}
    messages = [message for message in document.get("messages", []) if isinstance(message, dict)]
    Redaction(_ALL_TYPES, entities)(messages)
    images = iter(request.images)
    features = _image_features(results)
    document["messages"] = [_kept_message(message, images, features) for message in messages]
    if isinstance(document.get("tools"), list):
        document["tools"] = [_tool_name(tool) for tool in document["tools"]]
    return document


def _kept_message(
    message: dict[str, Any],
    images: Iterator[ImagePart],
    features: Mapping[int, dict[str, Any]],
) -> dict[str, Any]:
    """A message without what the router never reads (a participant's ``name``, audio)."""
    kept = {key: message[key] for key in _KEPT_MESSAGE_FIELDS if key in message}
    content = message.get("content")
    if isinstance(content, list):
        kept["content"] = _kept_parts(content, images, features)
    return kept


def _kept_parts(
    content: list[Any],
    images: Iterator[ImagePart],
    features: Mapping[int, dict[str, Any]],
) -> list[Any]:
    parts: list[Any] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "image_url":
            image = next(images)
            parts.append({"type": "image_url", "image_url": _image_stub(image, features)})
        elif kind == "text":
            parts.append(part)
        else:
            # audio, files, refusals: the router reads only their type
            parts.append({"type": kind} if isinstance(kind, str) else {})
    return parts


def _image_stub(image: ImagePart, features: Mapping[int, dict[str, Any]]) -> dict[str, Any]:
    try:
        digest = image.digest()
    except ImageError:  # bad base64: there are no bytes to hash
        digest = hashlib.sha256(b"").hexdigest()
    stub: dict[str, Any] = {
        "sha256": digest,
        "format": image.format,
        "source": image.source.value,
        "features": features.get(image.index, {}),
    }
    if image.detail is not None:
        stub["detail"] = image.detail
    return stub


def _image_features(results: Mapping[str, SignalResult]) -> dict[int, dict[str, Any]]:
    """Image index → {signal key: that image's row of the signal's value}."""
    features: dict[int, dict[str, Any]] = {}
    for key, result in results.items():
        if result.family not in IMAGE_FAMILIES or not isinstance(result.value, Mapping):
            continue
        rows = result.value.get("images")
        if not isinstance(rows, list):
            continue
        for row in rows:
            if isinstance(row, Mapping) and isinstance(row.get("image"), int):
                summary = {name: value for name, value in row.items() if name != "image"}
                features.setdefault(row["image"], {})[key] = summary
    return features


def _tool_name(tool: Any) -> dict[str, Any]:
    """A tool definition reduced to what the router reads: its name."""
    function = tool.get("function") if isinstance(tool, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str):
        return {"type": "function"}
    return {"type": "function", "function": {"name": name}}
