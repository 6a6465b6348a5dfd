"""The model's answer as far as it has arrived: text per choice, tool calls, usage.

A JSON ``chat.completion`` fills an ``Answer`` at once (``Answer.of_completion``); a stream
fills it chunk by chunk (``Answer.add_chunk``), where a tool call's arguments arrive in
fragments and are complete only when the next call, the choice's ``finish_reason`` or the
end of the stream arrives.

Tool-call arguments are JSON text written by a model. The detectors read the string values
of that JSON (``argument_text``), so that escaping (``\\n``, ``\\u00e9``) hides nothing and
keys are not mistaken for values; text that is not JSON is read as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from vsr_extproc.core.request import ToolCall


@dataclass(slots=True)
class _CallBuilder:
    choice: int
    index: int
    id: str | None = None
    name: str = ""
    fragments: list[str] = field(default_factory=list)
    complete: bool = False

    def call(self) -> ToolCall:
        return ToolCall(self.name, "".join(self.fragments), self.id)


@dataclass(slots=True)
class Answer:
    """What the model has said so far."""

    #: the text of each choice, by choice index (in a long stream, its tail: see
    #: ``dropped``)
    texts: dict[int, str] = field(default_factory=dict)
    #: characters of each choice's text already dropped from the front of ``texts``
    #: (positions elsewhere count from the start of the whole answer)
    dropped: dict[int, int] = field(default_factory=dict)
    #: tool calls by (choice, index)
    _calls: dict[tuple[int, int], _CallBuilder] = field(default_factory=dict)
    finish_reasons: dict[int, str] = field(default_factory=dict)
    #: the upstream's ``usage`` object, when it sent one
    usage: dict[str, Any] | None = None
    model: str | None = None
    #: the answer ended (a JSON answer, or ``[DONE]`` / the end of the stream)
    ended: bool = False
    #: where each choice's text has not yet been scanned by the guards (streams)
    scan_from: dict[int, int] = field(default_factory=dict)
    #: guards' memory across the chunks of one stream, by key
    memo: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of_completion(cls, document: Any) -> Answer:
        """A whole ``chat.completion`` (anything that is not one gives an empty answer)."""
        answer = cls(ended=True)
        if not isinstance(document, dict):
            return answer
        answer._meta(document)
        for position, choice in enumerate(_list(document.get("choices"))):
            if not isinstance(choice, dict):
                continue
            index = _int(choice.get("index"), position)
            message = choice.get("message")
            message = message if isinstance(message, dict) else {}
            answer.texts[index] = content_text(message.get("content"))
            for order, raw in enumerate(_list(message.get("tool_calls"))):
                builder = answer._call(index, order)
                builder.complete = True
                _fill_call(builder, raw, whole=True)
            if isinstance(choice.get("finish_reason"), str):
                answer.finish_reasons[index] = choice["finish_reason"]
        return answer

    def add_chunk(self, chunk: Any) -> tuple[list[tuple[int, str]], list[tuple[int, int]]]:
        """One ``chat.completion.chunk``; returns its text fragments as (choice, text) and
        the (choice, index) of the tool calls it carries."""
        fragments: list[tuple[int, str]] = []
        touched: list[tuple[int, int]] = []
        if not isinstance(chunk, dict):
            return fragments, touched
        self._meta(chunk)
        for position, choice in enumerate(_list(chunk.get("choices"))):
            if not isinstance(choice, dict):
                continue
            index = _int(choice.get("index"), position)
            delta = choice.get("delta")
            delta = delta if isinstance(delta, dict) else {}
            text = content_text(delta.get("content"))
            if text:
                self.texts[index] = self.texts.get(index, "") + text
                fragments.append((index, text))
            for order, raw in enumerate(_list(delta.get("tool_calls"))):
                position_in_list = _int(raw.get("index"), order) if isinstance(raw, dict) else order
                for key, other in self._calls.items():
                    if key[0] == index and key[1] != position_in_list:
                        other.complete = True  # a later call has begun
                _fill_call(self._call(index, position_in_list), raw, whole=False)
                touched.append((index, position_in_list))
            if isinstance(choice.get("finish_reason"), str):
                self.finish_reasons[index] = choice["finish_reason"]
                for key, builder in self._calls.items():
                    if key[0] == index:
                        builder.complete = True
        return fragments, touched

    def written(self, choice: int) -> int:
        """Characters of a choice's text so far, dropped ones included."""
        return self.dropped.get(choice, 0) + len(self.texts.get(choice, ""))

    @property
    def chars(self) -> int:
        """Characters of text and of tool-call arguments so far."""
        calls = sum(len(fragment) for call in self._calls.values() for fragment in call.fragments)
        return sum(self.written(choice) for choice in self.texts) + calls

    def drop_before(self, choice: int, position: int) -> None:
        """Forget a choice's text before ``position`` (a stream keeps only what its guards
        may still read)."""
        cut = position - self.dropped.get(choice, 0)
        if cut > 0:
            self.texts[choice] = self.texts[choice][cut:]
            self.dropped[choice] = position

    def end(self) -> None:
        self.ended = True
        for builder in self._calls.values():
            builder.complete = True

    def _meta(self, document: dict[str, Any]) -> None:
        if isinstance(document.get("usage"), dict):
            self.usage = document["usage"]
        if isinstance(document.get("model"), str):
            self.model = document["model"]

    def _call(self, choice: int, index: int) -> _CallBuilder:
        builder = self._calls.get((choice, index))
        if builder is None:
            builder = self._calls[(choice, index)] = _CallBuilder(choice, index)
        return builder

    def calls(self, *, complete_only: bool = True) -> list[ToolCall]:
        """The tool calls, in order; only those whose arguments are whole by default."""
        return [
            builder.call()
            for _, builder in sorted(self._calls.items())
            if builder.complete or not complete_only
        ]

    def call_keys(self) -> list[tuple[int, int]]:
        return sorted(self._calls)

    def call_complete(self, key: tuple[int, int]) -> bool:
        builder = self._calls.get(key)
        return builder is not None and builder.complete

    def call_at(self, key: tuple[int, int]) -> ToolCall:
        return self._calls[key].call()

    def replace_arguments(self, key: tuple[int, int], arguments: str) -> None:
        """After a redaction rewrote a call's arguments."""
        self._calls[key].fragments = [arguments]

    @property
    def text(self) -> str:
        """The text of every choice (of a long stream: what is still kept)."""
        return "\n".join(self.texts[index] for index in sorted(self.texts))

    @property
    def finish_reason(self) -> str | None:
        return self.finish_reasons.get(0) or next(iter(self.finish_reasons.values()), None)


def content_text(content: Any) -> str:
    """A message's or delta's ``content``: a string, or text parts (others ignored)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def argument_text(arguments: str) -> str:
    """The string values (and numbers) of a tool call's JSON arguments, one per line; the
    text itself when it is not JSON."""
    try:
        document = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments
    return "\n".join(_leaves(document))


def rewrite_arguments(arguments: str, rewrite: Callable[[str], str]) -> str:
    """``arguments`` with every string value passed through ``rewrite``, still valid JSON
    when it was; text that is not JSON is rewritten as a whole."""
    try:
        document = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return rewrite(arguments)
    return orjson.dumps(_rewrite(document, rewrite)).decode()


def _rewrite(value: Any, rewrite: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return rewrite(value)
    if isinstance(value, list):
        return [_rewrite(item, rewrite) for item in value]
    if isinstance(value, dict):
        return {key: _rewrite(item, rewrite) for key, item in value.items()}
    return value


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        yield str(value)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)


def _fill_call(builder: _CallBuilder, raw: Any, *, whole: bool) -> None:
    if not isinstance(raw, dict):
        return
    if isinstance(raw.get("id"), str):
        builder.id = raw["id"]
    function = raw.get("function")
    if not isinstance(function, dict):
        return
    if isinstance(function.get("name"), str):
        builder.name = function["name"] if whole else builder.name + function["name"]
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        builder.fragments.append(arguments)
    elif arguments is not None:
        builder.fragments.append(orjson.dumps(arguments).decode())


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
