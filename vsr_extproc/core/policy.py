"""The compiled, immutable routing policy: models, signals, decisions and settings.

A ``Policy`` is built once from a validated config (see ``vsr_extproc.config``) and never
changes; a reload builds a new one and swaps the reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.core.responses import ResponsePolicy
from vsr_extproc.core.rules import Rule
from vsr_extproc.core.signals import Signal
from vsr_extproc.detectors import Detector


class Modality(StrEnum):
    TEXT = "text"
    IMAGE = "image"


class Capability(StrEnum):
    TOOLS = "tools"


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A model the router can send requests to."""

    name: str
    cluster: str
    upstream_model: str
    modalities: frozenset[Modality] = frozenset({Modality.TEXT})
    capabilities: frozenset[Capability] = frozenset()
    context_window: int | None = None


@dataclass(frozen=True, slots=True)
class Requirements:
    """What a request needs from the model that serves it."""

    modalities: frozenset[Modality]
    capabilities: frozenset[Capability]
    tokens: int

    def unmet_by(self, model: ModelSpec) -> str | None:
        """Why ``model`` cannot serve this request, or None if it can."""
        missing = self.modalities - model.modalities
        if missing:
            return f"modality: it does not accept {', '.join(sorted(missing))} input"
        lacking = self.capabilities - model.capabilities
        if lacking:
            return f"capability: it does not support {', '.join(sorted(lacking))}"
        if model.context_window is not None and self.tokens > model.context_window:
            return (
                f"context: about {self.tokens} tokens exceed its window of {model.context_window}"
            )
        return None


def estimate_tokens(text_chars: int, images: int) -> int:
    """A cheap token estimate: about four characters a token, a flat cost per image."""
    return (text_chars + 3) // 4 + 256 * images


def requirements_of(request: NormalizedRequest) -> Requirements:
    modalities = {Modality.TEXT}
    if request.images:
        modalities.add(Modality.IMAGE)
    capabilities = {Capability.TOOLS} if request.tools else set()
    tokens = estimate_tokens(request.text_chars, len(request.images))
    return Requirements(frozenset(modalities), frozenset(capabilities), tokens)


class ActionKind(StrEnum):
    ROUTE = "route"
    BLOCK = "block"
    CONFIRM = "confirm"


@dataclass(frozen=True, slots=True)
class RouteAction:
    models: tuple[str, ...]
    system_prompt: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    #: PII types replaced by placeholders before the body is forwarded
    redact: tuple[str, ...] = ()
    #: headers added when a signal matched: (signal key, header, value)
    signal_headers: tuple[tuple[str, str, str], ...] = ()
    #: finds person and organization names for ``redact`` (a named-entity model)
    entities: Detector | None = field(default=None, compare=False)
    #: the answer goes through the response phase (when the policy has one)
    process_response: bool = True
    kind: ActionKind = ActionKind.ROUTE


@dataclass(frozen=True, slots=True)
class BlockAction:
    message: str
    status: int = 403
    kind: ActionKind = ActionKind.BLOCK


@dataclass(frozen=True, slots=True)
class ConfirmAction:
    question: str
    kind: ActionKind = ActionKind.CONFIRM


Action = RouteAction | BlockAction | ConfirmAction


@dataclass(frozen=True, slots=True)
class DecisionSpec:
    name: str
    priority: int
    rule: Rule | None
    action: Action
    #: declaration order, the last tie-breaker
    order: int
    description: str = ""


@dataclass(frozen=True, slots=True)
class Limits:
    max_body_bytes: int = 32 * 1024 * 1024
    max_content_parts: int = 10_000
    max_redact_chars: int = 262_144


@dataclass(frozen=True, slots=True)
class Policy:
    models: Mapping[str, ModelSpec]
    #: the signals some decision references, keyed ``family.name``
    signals: Mapping[str, Signal]
    decisions: tuple[DecisionSpec, ...]
    default: DecisionSpec
    chat_paths: frozenset[str] = frozenset({"/v1/chat/completions"})
    #: the model that non-chat paths (``GET /v1/models``, …) are sent to
    passthrough_model: str | None = None
    limits: Limits = field(default_factory=Limits)
    #: a digest of the source config, reported in traces and reloads
    fingerprint: str = ""
    #: what happens to the answers of routed requests
    responses: ResponsePolicy = field(default_factory=ResponsePolicy)
