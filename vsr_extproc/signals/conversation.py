"""``conversation``: the agentic shape of a request.

Every condition given must hold:

    signals:
      conversation:
        - name: agentic
          tools_offered: true      # the request offers tools
        - name: tool_loop
          tool_results: true       # a tool result is present (a ``tool`` message)
        - name: long_chat
          min_turns: 6             # user turns
          max_turns: null
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, model_validator

from vsr_extproc.core.request import NormalizedRequest, Role
from vsr_extproc.core.signals import InlineSignal, Outcome
from vsr_extproc.signals.base import Resources, SignalEntry, SignalFamily


class ConversationEntry(SignalEntry):
    tools_offered: bool | None = Field(
        default=None, description="the request offers tools (true) or none (false)"
    )
    tool_calls: bool | None = Field(
        default=None, description="an assistant message in the history called a tool"
    )
    tool_results: bool | None = Field(
        default=None, description="a tool result (a `tool` message) is present"
    )
    min_turns: int | None = Field(default=None, ge=0, description="at least this many user turns")
    max_turns: int | None = Field(default=None, ge=0, description="at most this many user turns")

    @model_validator(mode="after")
    def _something(self) -> ConversationEntry:
        conditions = (
            self.tools_offered,
            self.tool_calls,
            self.tool_results,
            self.min_turns,
            self.max_turns,
        )
        if all(condition is None for condition in conditions):
            raise ValueError("give at least one condition")
        if (
            self.min_turns is not None
            and self.max_turns is not None
            and self.max_turns < self.min_turns
        ):
            raise ValueError("max_turns must be at least min_turns")
        return self


class ConversationSignal(InlineSignal):
    family: ClassVar[str] = "conversation"

    def __init__(self, entry: ConversationEntry) -> None:
        self.name = entry.name
        self.entry = entry

    def evaluate_now(self, request: NormalizedRequest) -> Outcome:
        entry = self.entry
        facts = {
            "turns": request.user_turns,
            "tools": len(request.tools),
            "tool_calls": sum(message.tool_calls for message in request.messages),
            "tool_results": sum(1 for _ in request.messages_with(Role.TOOL)),
        }
        checks = (
            entry.tools_offered is None or entry.tools_offered == (facts["tools"] > 0),
            entry.tool_calls is None or entry.tool_calls == (facts["tool_calls"] > 0),
            entry.tool_results is None or entry.tool_results == (facts["tool_results"] > 0),
            entry.min_turns is None or facts["turns"] >= entry.min_turns,
            entry.max_turns is None or facts["turns"] <= entry.max_turns,
        )
        return Outcome.of(all(checks), facts)


def build(entry: ConversationEntry, resources: Resources) -> ConversationSignal:
    return ConversationSignal(entry)


FAMILY = SignalFamily(
    "conversation", ConversationEntry, build, "tools offered, tool results, number of turns"
)
