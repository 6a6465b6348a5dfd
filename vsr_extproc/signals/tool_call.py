"""``tool_call``: what an agent does or did — tool calls by kind of tool and by what their
arguments carry.

    signals:
      tool_call:
        - name: memory_write_pii
          tools: [memory_write]                 # kinds of tool, by name
          finds: [passport, ssn, card, email]   # in the arguments, by the PII detectors
        - name: destructive_shell
          tools: [shell]
          destructive: true                     # rm -rf, DROP TABLE, dd of=/dev/…
        - name: exfiltration
          tools: [messaging]
          allowed_hosts: ["*.example.com"]      # a URL to any other host matches
        - name: many_payments
          tools: [payments]
          min_count: 3
          source: answer                        # answer | history | any

A call matches when its name is of one of ``tools`` or matches one of ``names`` (any tool
when both are empty) **and** every argument condition given holds. The signal matches
when at least ``min_count`` calls match. In a request decision it reads the assistant tool
calls already in the conversation (``history``); in a response decision it also reads the
calls in the model's answer.

Kinds of tool are recognised from the words of the tool's name (``save_memory``,
``memory.add``, ``runShellCommand``, ``send_email``, ``stripe_charge``, ``write_file``), so
they cover the names real agent frameworks use without listing each. ``names`` takes
regular expressions for anything else.
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from vsr_extproc.core.answer import Answer, argument_text
from vsr_extproc.core.request import NormalizedRequest, ToolCall
from vsr_extproc.core.signals import InlineSignal, Outcome
from vsr_extproc.detectors import FindingType, find_pii
from vsr_extproc.detectors.commands import find_destructive
from vsr_extproc.signals.base import (
    Resources,
    SignalEntry,
    SignalFamily,
    answer_finding_types,
)


class ToolKind(StrEnum):
    MEMORY_WRITE = "memory_write"
    SHELL = "shell"
    MESSAGING = "messaging"
    PAYMENTS = "payments"
    FILE_WRITE = "file_write"
    HTTP = "http"


_WRITES = {
    "write",
    "save",
    "store",
    "add",
    "put",
    "set",
    "update",
    "upsert",
    "insert",
    "create",
    "append",
    "remember",
    "memorize",
    "memorise",
    "edit",
    "patch",
    "delete",
    "remove",
    "replace",
    "overwrite",
    "move",
    "rename",
    "upload",
    "mkdir",
}
# (all of these words, any of these words)
_KINDS: dict[ToolKind, tuple[tuple[frozenset[str], ...], ...]] = {
    ToolKind.MEMORY_WRITE: (
        (frozenset({"memory", "memories", "mem0", "longterm", "recall"}), frozenset(_WRITES)),
        (frozenset({"remember", "memorize", "memorise"}),),
    ),
    ToolKind.SHELL: (
        (
            frozenset(
                {
                    "shell",
                    "bash",
                    "sh",
                    "zsh",
                    "terminal",
                    "powershell",
                    "cmd",
                    "subprocess",
                    "exec",
                    "execute",
                    "command",
                    "commands",
                    "console",
                }
            ),
        ),
    ),
    ToolKind.MESSAGING: (
        (
            frozenset(
                {
                    "email",
                    "mail",
                    "gmail",
                    "smtp",
                    "sms",
                    "slack",
                    "teams",
                    "telegram",
                    "whatsapp",
                    "discord",
                    "message",
                    "messages",
                    "notify",
                    "notification",
                    "tweet",
                    "post",
                    "reply",
                    "dm",
                }
            ),
        ),
    ),
    ToolKind.PAYMENTS: (
        (
            frozenset(
                {
                    "payment",
                    "payments",
                    "pay",
                    "payout",
                    "transfer",
                    "charge",
                    "refund",
                    "invoice",
                    "stripe",
                    "paypal",
                    "wire",
                    "purchase",
                    "checkout",
                    "buy",
                    "order",
                    "withdraw",
                    "remit",
                }
            ),
        ),
    ),
    ToolKind.FILE_WRITE: (
        (
            frozenset(
                {
                    "file",
                    "files",
                    "fs",
                    "filesystem",
                    "path",
                    "disk",
                    "document",
                    "dir",
                    "directory",
                    "folder",
                }
            ),
            frozenset(_WRITES),
        ),
        (frozenset({"str_replace_editor", "apply_patch", "write_to_file"}),),
    ),
    ToolKind.HTTP: (
        (
            frozenset(
                {
                    "http",
                    "https",
                    "fetch",
                    "request",
                    "curl",
                    "webhook",
                    "url",
                    "browse",
                    "browser",
                    "web",
                    "api",
                }
            ),
        ),
    ),
}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")
_URL = re.compile(r"\b(?:https?|ftp|wss?)://[^\s\"'<>\\]+", re.IGNORECASE)


def name_words(name: str) -> frozenset[str]:
    """The lower-case words of a tool name: ``runShellCommand`` → run, shell, command."""
    words = _SEPARATORS.split(_CAMEL.sub(" ", name))
    lowered = name.lower()
    return frozenset(word.lower() for word in words if word) | {lowered}


def tool_kinds(name: str) -> set[ToolKind]:
    """The kinds of tool a name says (none, one or several)."""
    words = name_words(name)
    return {
        kind
        for kind, alternatives in _KINDS.items()
        if any(all(words & group for group in alternative) for alternative in alternatives)
    }


def url_hosts(text: str) -> list[str]:
    hosts = []
    for match in _URL.finditer(text):
        try:
            host = urlsplit(match.group()).hostname
        except ValueError:
            continue
        if host:
            hosts.append(host.lower())
    return hosts


class ToolCallEntry(SignalEntry):
    tools: tuple[ToolKind, ...] = Field(
        default=(),
        description="kinds of tool, recognised from the tool's name: memory_write, shell, "
        "messaging, payments, file_write, http",
    )
    names: tuple[str, ...] = Field(
        default=(), description="regular expressions a tool name must match (whole, any case)"
    )
    finds: tuple[FindingType, ...] = Field(
        default=(), description="the arguments carry a finding of one of these types"
    )
    min_confidence: float = Field(default=0.5, ge=0, le=1, description="weaker findings ignored")
    destructive: bool = Field(
        default=False, description="the arguments hold a destructive command (rm -rf, DROP …)"
    )
    hosts: tuple[str, ...] = Field(
        default=(), description="a URL in the arguments has one of these hosts (glob patterns)"
    )
    allowed_hosts: tuple[str, ...] = Field(
        default=(), description="a URL in the arguments has a host outside these (glob patterns)"
    )
    min_count: int = Field(default=1, ge=1, description="how many matching calls make a match")
    source: Literal["answer", "history", "any"] = Field(
        default="any",
        description="answer: the model's answer; history: assistant calls in the request",
    )

    @field_validator("names")
    @classmethod
    def _regexes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
        return value

    @field_validator("finds")
    @classmethod
    def _detectable(cls, value: tuple[FindingType, ...]) -> tuple[FindingType, ...]:
        return answer_finding_types(value, "a tool call's arguments")


class ToolCallSignal(InlineSignal):
    family: ClassVar[str] = "tool_call"

    def __init__(self, entry: ToolCallEntry) -> None:
        self.name = entry.name
        self.entry = entry
        self.kinds = frozenset(entry.tools)
        self.names = tuple(re.compile(pattern, re.IGNORECASE) for pattern in entry.names)
        self.sought = frozenset(kind.value for kind in entry.finds)

    def evaluate_now(self, request: NormalizedRequest) -> Outcome:
        if self.entry.source == "answer":
            return Outcome(False, 0.0, {"calls": 0, "read": "no answer in the request phase"})
        return self._outcome(history_calls(request))

    def on_answer(self, answer: Answer, request: NormalizedRequest | None) -> Outcome:
        calls: list[ToolCall] = []
        if self.entry.source != "answer" and request is not None:
            calls += history_calls(request)
        if self.entry.source != "history":
            calls += answer.calls()
        return self._outcome(calls)

    def _outcome(self, calls: Iterable[ToolCall]) -> Outcome:
        matched: list[str] = []
        findings: Counter[str] = Counter()
        for call in calls:
            found = self.matches(call)
            if found is not None:
                matched.append(call.name)
                findings.update(found)
        value: dict[str, Any] = {"calls": len(matched)}
        if matched:
            value["tools"] = sorted(set(matched))
        if findings:
            value["found"] = dict(findings)
        return Outcome.of(len(matched) >= self.entry.min_count, value)

    def of_kind(self, name: str) -> bool:
        if not self.kinds and not self.names:
            return True
        if self.kinds & tool_kinds(name):
            return True
        return any(pattern.fullmatch(name) for pattern in self.names)

    def matches(self, call: ToolCall) -> list[str] | None:
        """What made ``call`` match (finding types, command kinds, hosts), or None."""
        if not self.of_kind(call.name):
            return None
        entry = self.entry
        if not (entry.finds or entry.destructive or entry.hosts or entry.allowed_hosts):
            return []
        text = argument_text(call.arguments)
        why: list[str] = []
        if entry.finds:
            found = [
                finding.type.value
                for finding in find_pii(text, entry.finds)
                if finding.confidence >= entry.min_confidence
            ]
            if not found:
                return None
            why += found
        if entry.destructive:
            commands = [match.kind for match in find_destructive(text)]
            if not commands:
                return None
            why += commands
        if entry.hosts or entry.allowed_hosts:
            hosts = url_hosts(text)
            listed = [host for host in hosts if _host_in(host, entry.hosts)]
            foreign = [host for host in hosts if not _host_in(host, entry.allowed_hosts)]
            if entry.hosts and not listed:
                return None
            if entry.allowed_hosts and not foreign:
                return None
            why += ["host"] * max(len(listed), len(foreign) if entry.allowed_hosts else 0)
        return why


def _host_in(host: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(host, pattern.lower()) for pattern in patterns)


def history_calls(request: NormalizedRequest) -> list[ToolCall]:
    return [call for message in request.messages for call in message.calls]


def build(entry: ToolCallEntry, resources: Resources) -> ToolCallSignal:
    return ToolCallSignal(entry)


FAMILY = SignalFamily(
    "tool_call",
    ToolCallEntry,
    build,
    "tool calls by kind of tool (memory writes, shell, messaging, payments, files) and by "
    "what their arguments carry (PII, secrets, destructive commands, URL hosts)",
)
