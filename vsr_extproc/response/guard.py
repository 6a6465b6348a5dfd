"""Apply the response policy to one answer: a JSON completion at once, a stream event by
event.

No protobuf here: the Envoy edge hands in headers and body bytes and turns the plans
returned here into ext_proc messages.

**JSON answers** are read whole. A block answers the client with an OpenAI-style error
instead; a redaction rewrites the message text and the tool-call arguments (still valid
JSON); an annotation adds headers.

**Streams** (server-sent events) go through in Envoy's streamed mode: each chunk Envoy
hands over is answered with the bytes the client gets now. An event passes at once unless
a guard still has to see what follows it:

* while an ``output`` signal guards the text, an event's text waits until
  ``window_chars`` more characters of that choice have arrived, or the stream ends — so a
  value of up to that length split over several events is seen whole before any of it
  leaves, and can be redacted;
* while any response decision exists, the events of a tool call wait until the call is
  complete (the next call, the ``finish_reason``, or the end).

Held events leave unchanged, byte for byte, unless a redaction rewrote them; a block
replaces what is held by an error event and ``data: [DONE]``, and everything after it is
dropped. The added latency is therefore the time the model takes to write
``window_chars`` characters (about 60 tokens at the default 256), and nothing on streams
whose decisions read only tool calls and carry none.
"""

from __future__ import annotations

import re
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, Literal

import orjson

from vsr_extproc.core.answer import Answer, rewrite_arguments
from vsr_extproc.core.policy import estimate_tokens
from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.core.responses import (
    AnnotateAnswer,
    BlockAnswer,
    ResponsePolicy,
    ResponseVerdict,
)
from vsr_extproc.core.signals import SignalResult
from vsr_extproc.detectors import FindingType, Redactor, find_pii

Mode = Literal["json", "sse", "pass"]
#: what the client is told when a guard cannot read the answer it must check
UNREADABLE = "the model's answer could not be checked by the router ({why})"


def response_error(message: str, *, decision: str, error_type: str = "response_blocked") -> bytes:
    """The OpenAI-style error a client gets instead of an answer; ``code`` names the
    response decision, as a request decision's block names its decision."""
    error = {
        "message": message,
        "type": error_type,
        "code": decision,
        "param": None,
        "decision": decision,
    }
    return orjson.dumps({"error": error})


@dataclass(frozen=True, slots=True)
class HeadersPlan:
    """What to do once the answer's headers are known."""

    mode: Mode
    #: buffer the whole body before answering (JSON that a decision reads)
    buffered: bool = False
    remove: tuple[str, ...] = ()
    #: answer the client with this error instead (status, JSON body)
    refuse: tuple[int, bytes] | None = None


@dataclass(frozen=True, slots=True)
class BodyPlan:
    """What to do with (the rest of) the body."""

    #: the bytes to send instead of the ones received; None: unchanged
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()
    #: answer the client with this error instead (status, JSON body)
    refuse: tuple[int, bytes] | None = None


@dataclass(slots=True)
class _Piece:
    choice: int
    #: position of the choice in the event's ``choices`` list
    slot: int
    offset: int
    text: str


@dataclass(slots=True)
class _Event:
    raw: bytes
    document: Any = None
    pieces: list[_Piece] = field(default_factory=list)
    calls: list[tuple[int, int]] = field(default_factory=list)
    changed: bool = False

    def rewrite(self) -> None:
        """Serialise the event again after a redaction changed its document."""
        ending = b"\r\n\r\n" if self.raw.endswith(b"\r\n\r\n") else b"\n\n"
        self.raw = b"data: " + orjson.dumps(self.document) + ending


class ResponseExchange:
    """The response phase of one request."""

    def __init__(
        self,
        policy: ResponsePolicy,
        request: NormalizedRequest | None,
        *,
        released_at: float | None = None,
        clock: Callable[[], float] = perf_counter,
        input_estimate: int = 0,
    ) -> None:
        """``request`` None: only the answer is known (an observed answer, whose request
        another stream decided); its input tokens are then ``input_estimate`` unless the
        answer's usage says."""
        self.policy = policy
        self.request = request
        self.input_estimate = (
            estimate_tokens(request.text_chars, len(request.images))
            if request is not None
            else input_estimate
        )
        self.clock = clock
        self.released_at = clock() if released_at is None else released_at
        self.answer = Answer()
        self.status: int | None = None
        self.mode: Mode = "pass"
        self.first_token_at: float | None = None
        self.last_token_at: float | None = None
        self.ended_at: float | None = None
        self.verdicts: dict[str, ResponseVerdict] = {}
        self.results: dict[str, SignalResult] = {}
        #: why the answer went unchecked or was refused unread, if it did
        self.unreadable: str | None = None
        self.bytes_in = 0
        self._decoder: Any = None
        self._json = bytearray()
        self._buffered = False
        self._pending = bytearray()
        self._held: deque[_Event] = deque()
        self._released: dict[int, int] = {}
        self._stopped = False
        self._redactor: Redactor | None = None
        # read for every event of a stream
        self._guards = policy.guards
        self._guards_text = policy.guards_text

    @property
    def buffered(self) -> bool:
        """The answer is read whole before any of it leaves (JSON that a decision reads)."""
        return self._buffered

    # --- headers ------------------------------------------------------------------------

    def on_headers(self, headers: dict[str, str]) -> HeadersPlan:
        status = headers.get(":status", "")
        self.status = int(status) if status.isdigit() else None
        content_type = headers.get("content-type", "").partition(";")[0].strip().lower()
        guards = self.policy.guards
        if self.status is None or not 200 <= self.status < 300:
            return HeadersPlan("pass")  # an upstream error is passed on as it is
        if content_type == "text/event-stream":
            self.mode = "sse"
        elif content_type == "application/json" or content_type.endswith("+json"):
            self.mode = "json"
        else:
            return HeadersPlan("pass")
        remove: tuple[str, ...] = ()
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding in ("gzip", "x-gzip", "deflate"):
            # decoded here, so a guard can read it; the client then gets it decoded
            self._decoder = zlib.decompressobj(wbits=47 if encoding != "deflate" else 15)
            remove = ("content-encoding", "content-length")
        elif encoding not in ("", "identity"):
            return self._cannot_read(f"content encoding {encoding!r}")
        length = headers.get("content-length", "")
        if self.mode == "json" and length.isdigit() and int(length) > self.policy.max_answer_bytes:
            return self._cannot_read(f"{int(length)} bytes, over the limit")
        self._buffered = self.mode == "json" and guards
        if self._buffered:
            remove = (*remove, "content-length")
        return HeadersPlan(self.mode, buffered=self._buffered, remove=remove)

    def headers_failed(self) -> HeadersPlan:
        """The guard itself failed on the headers: as for an answer it cannot read."""
        return self._cannot_read("the router's guard failed")

    def _cannot_read(self, why: str) -> HeadersPlan:
        self.unreadable = why
        self.mode = "pass"
        if self.policy.guards and self.policy.block_unreadable:
            return HeadersPlan("pass", refuse=(502, self._unreadable_error(why)))
        return HeadersPlan("pass")

    @staticmethod
    def _unreadable_error(why: str) -> bytes:
        return response_error(
            UNREADABLE.format(why=why),
            decision="unreadable_answer",
            error_type="response_unreadable",
        )

    # --- body ---------------------------------------------------------------------------

    def on_body(self, chunk: bytes, end: bool) -> BodyPlan:
        self.bytes_in += len(chunk)
        if end:
            self.ended_at = self.clock()
        if self._stopped:
            return BodyPlan(b"")
        if self.mode == "pass":
            return BodyPlan()
        data = chunk
        if self._decoder is not None:
            try:
                data = self._decoder.decompress(chunk) + (self._decoder.flush() if end else b"")
            except zlib.error:
                return self._unreadable_body("the content encoding does not decode")
        if self.mode == "json":
            plan = self._json_chunk(data, end)
        else:
            out = self._sse(data, end)
            plan = BodyPlan(None if out == chunk else out)
        if plan.body is None and self._decoder is not None and plan.refuse is None:
            plan = BodyPlan(data, plan.headers)  # the client gets what was decoded
        return plan

    def _unreadable_body(self, why: str) -> BodyPlan:
        self.unreadable = why
        if self.policy.guards and self.policy.block_unreadable:
            return self._refuse(502, self._unreadable_error(why))
        self.mode = "pass"
        return BodyPlan()

    def _refuse(self, status: int, error: bytes) -> BodyPlan:
        """Refuse what is left of the answer: a buffered answer is replaced by the error;
        a stream, whose headers have left, ends with the error as its last event."""
        mode, self.mode = self.mode, "pass"
        self._held.clear()
        self._stopped = True
        if mode == "sse":
            return BodyPlan(b"data: " + error + b"\n\ndata: [DONE]\n\n")
        return BodyPlan(refuse=(status, error))

    def failed(self) -> BodyPlan:
        """The guard itself failed on this answer: fail closed when a decision had to read
        it (as ``on_unreadable`` says), pass on otherwise."""
        return self._unreadable_body("the router's guard failed")

    def _json_chunk(self, data: bytes, end: bool) -> BodyPlan:
        if len(self._json) + len(data) > self.policy.max_answer_bytes:
            if self._buffered:
                return self._unreadable_body("the answer is over the size limit")
            self.mode = "pass"  # only measured: stop reading, pass the rest on
            self.unreadable = "the answer is over the size limit"
            return BodyPlan()
        self._json += data
        if not end:
            # Buffered mode hands the body over once, at its end. An Envoy whose config
            # predates the response decisions streams it instead: hold every part back
            # until the guards have read the whole.
            return BodyPlan(b"" if self._buffered else None)
        now = self.clock()
        self.first_token_at = self.last_token_at = now
        try:
            document = orjson.loads(self._json)
        except orjson.JSONDecodeError:
            return self._unreadable_body("the answer is not valid JSON")
        self.answer = Answer.of_completion(document)
        if not self.policy.guards:
            return BodyPlan()
        verdicts, self.results = self.policy.decide(self.answer, self.request)
        if not verdicts:
            return BodyPlan(bytes(self._json) if self._buffered else None)
        self._note(verdicts)
        first = verdicts[0]
        if isinstance(first.action, BlockAnswer):
            error = response_error(first.action.message, decision=first.name)
            return BodyPlan(refuse=(first.action.status, error))
        headers = tuple(
            header
            for verdict in verdicts
            if isinstance(verdict.action, AnnotateAnswer)
            for header in verdict.action.headers
        )
        types = self.policy.redact_types(verdicts)
        changed = bool(types) and self._redact_completion(document, types)
        if changed:
            self.answer = Answer.of_completion(document)
        return BodyPlan(orjson.dumps(document) if changed else bytes(self._json), headers)

    def _note(self, verdicts: list[ResponseVerdict]) -> None:
        """Remember the decisions that acted: the winner first, each once."""
        for verdict in verdicts:
            if isinstance(verdicts[0].action, BlockAnswer) and verdict is not verdicts[0]:
                continue  # a block is all that happened
            self.verdicts.setdefault(verdict.name, verdict)

    def _redact_completion(self, document: Any, types: frozenset[str]) -> bool:
        redact = self._redact_text(types)
        changed = False
        for choice in document.get("choices") or ():
            message = choice.get("message") if isinstance(choice, dict) else None
            if not isinstance(message, dict):
                continue
            if isinstance(message.get("content"), str):
                new = redact(message["content"])
                changed |= new != message["content"]
                message["content"] = new
            for call in message.get("tool_calls") or ():
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                    new = rewrite_arguments(function["arguments"], redact)
                    if new != function["arguments"]:
                        function["arguments"] = new
                        changed = True
        return changed

    def _redact_text(self, types: frozenset[str]) -> Callable[[str], str]:
        kinds = frozenset(FindingType(kind) for kind in types)
        if self._redactor is None or self._redactor.types != kinds:
            self._redactor = Redactor(kinds, min_confidence=0.5)
        redactor = self._redactor

        def redact(text: str) -> str:
            return redactor.redact(text)[0] if text else text

        return redact

    # --- streams ------------------------------------------------------------------------

    def _sse(self, data: bytes, end: bool) -> bytes:
        self._pending += data
        for raw in take_events(self._pending):
            self._take(raw)
        if end:
            if self._pending:
                self._take(bytes(self._pending))  # a last event without its blank line
                self._pending.clear()
            self.answer.end()
        return self._release(end)

    def _take(self, raw: bytes) -> None:
        event = _Event(raw)
        payload = event_data(raw)
        if payload == b"[DONE]":
            self.answer.end()
        elif payload is not None:
            try:
                event.document = orjson.loads(payload)
            except orjson.JSONDecodeError:
                event.document = None
                self.unreadable = "a stream event is not valid JSON"
            fragments, event.calls = self.answer.add_chunk(event.document)
            if len(fragments) == 1:  # one choice's text, as nearly every event
                choice, text = fragments[0]
                offset = self.answer.written(choice) - len(text)
                choices = event.document["choices"]  # a list, or there were no fragments
                slot = 0 if len(choices) == 1 else _choice_slots(event.document).get(choice, 0)
                event.pieces = [_Piece(choice, slot, offset, text)]
            elif fragments:
                slots = _choice_slots(event.document)
                # a fragment ends where its choice's text ends, less the fragments of the
                # same choice after it in this event
                ends = {choice: self.answer.written(choice) for choice, _ in fragments}
                pieces = []
                for choice, text in reversed(fragments):
                    ends[choice] -= len(text)
                    pieces.append(_Piece(choice, slots.get(choice, 0), ends[choice], text))
                event.pieces = pieces[::-1]
            if fragments or event.calls:
                now = self.clock()
                if self.first_token_at is None:
                    self.first_token_at = now
                self.last_token_at = now
        self._held.append(event)

    def _release(self, end: bool) -> bytes:
        if self.unreadable is not None and self.policy.guards and self.policy.block_unreadable:
            plan = self._refuse(502, self._unreadable_error(self.unreadable))
            return plan.body or b""
        if self.policy.guards and self._held:
            blocked = self._check()
            if blocked is not None:
                return blocked
        out: list[bytes] = []
        while self._held and (end or self._releasable(self._held[0])):
            event = self._held.popleft()
            for piece in event.pieces:
                self._released[piece.choice] = piece.offset + len(piece.text)
            out.append(event.raw)
        for choice, released in self._released.items():
            keep_from = released - self.policy.window_chars
            if keep_from - self.answer.dropped.get(choice, 0) > _KEEP_CHARS:
                self.answer.drop_before(choice, keep_from)
        return b"".join(out)

    def _releasable(self, event: _Event) -> bool:
        if not self._guards:
            return True
        if event.calls and not all(self.answer.call_complete(key) for key in event.calls):
            return False
        if not self._guards_text or not event.pieces:
            return True
        window = self.policy.window_chars
        for piece in event.pieces:
            written = self.answer.written(piece.choice)
            if written - (piece.offset + len(piece.text)) < window and not self.answer.ended:
                return False
        return True

    def _check(self) -> bytes | None:
        window = self.policy.window_chars
        for choice in self.answer.texts:
            self.answer.scan_from[choice] = max(0, self._released.get(choice, 0) - window)
        verdicts, self.results = self.policy.decide(self.answer, self.request)
        if not verdicts:
            return None
        self._note(verdicts)
        first = verdicts[0]
        if isinstance(first.action, BlockAnswer):
            error = response_error(first.action.message, decision=first.name)
            return self._checked_text() + b"data: " + error + b"\n\ndata: [DONE]\n\n"
        types = self.policy.redact_types(verdicts)
        if types:
            self._redact_held(types)
        return None

    def _checked_text(self) -> bytes:
        """On a block: the held events before the first tool call, when no ``output``
        signal objects to the text (the stream ends here, so that text has been read
        whole); nothing else that was held leaves."""
        self._stopped = True
        passed: list[bytes] = []
        text_clean = not any(
            result.matched or result.failed
            for result in self.results.values()
            if result.family == "output"
        )
        while text_clean and self._held and not self._held[0].calls:
            passed.append(self._held.popleft().raw)
        self._held.clear()
        return b"".join(passed)

    def _redact_held(self, types: frozenset[str]) -> None:
        redact = self._redact_text(types)
        kinds = [FindingType(kind) for kind in types]
        for choice in list(self.answer.texts):
            self._redact_choice(choice, kinds)
        for key in self.answer.call_keys():
            holders = [event for event in self._held if key in event.calls]
            if not holders or not self.answer.call_complete(key):
                continue
            call = self.answer.call_at(key)
            new = rewrite_arguments(call.arguments, redact)
            if new == call.arguments:
                continue
            for position, event in enumerate(holders):
                _set_arguments(event, key, new if position == 0 else "")
            self.answer.replace_arguments(key, new)

    def _redact_choice(self, choice: int, kinds: list[FindingType]) -> None:
        pieces = [piece for event in self._held for piece in event.pieces if piece.choice == choice]
        if not pieces or self._redactor is None:
            return
        dropped = self.answer.dropped.get(choice, 0)
        text = self.answer.texts[choice]  # from ``dropped`` on
        base = self._released.get(choice, 0)
        start = max(dropped, base - self.policy.window_chars)
        scanned = text[start - dropped :]
        redactor = self._redactor
        cuts = [
            (
                max(finding.start + start, base),
                finding.end + start,
                redactor.placeholder(finding.type, scanned[finding.start : finding.end]),
            )
            for finding in find_pii(scanned, kinds)
            if finding.confidence >= 0.5 and finding.end + start > base
        ]
        if not cuts:
            return
        position = base
        for piece in pieces:
            new = _cut(piece.offset, piece.text, cuts)
            piece.offset = position
            position += len(new)
            if new != piece.text:
                piece.text = new
        events = [event for event in self._held if any(p.choice == choice for p in event.pieces)]
        for event in events:
            for piece in event.pieces:
                if piece.choice == choice:
                    _set_content(event, piece)
        self.answer.texts[choice] = text[: base - dropped] + "".join(p.text for p in pieces)
        for key in [key for key in self.answer.memo if key.startswith("output.")]:
            del self.answer.memo[key]

    # --- the outcome --------------------------------------------------------------------

    def outcome(self) -> dict[str, Any]:
        """Usage, timings and what the guards did, for the metrics and the replay record."""
        answer = self.answer
        usage = answer.usage or {}
        input_tokens = usage.get("prompt_tokens", usage.get("input_tokens"))
        output_tokens = usage.get("completion_tokens", usage.get("output_tokens"))
        estimated = not isinstance(input_tokens, int) or not isinstance(output_tokens, int)
        if not isinstance(input_tokens, int):
            input_tokens = self.input_estimate
        if not isinstance(output_tokens, int):
            output_tokens = (answer.chars + 3) // 4
        end = self.ended_at
        timings: dict[str, float | None] = {
            "first_token_s": _since(self.released_at, self.first_token_at)
            if self.mode == "sse"
            else None,
            "total_s": _since(self.released_at, end),
            "per_output_token_s": None,
        }
        if (
            self.mode == "sse"
            and self.first_token_at is not None
            and self.last_token_at is not None
            and output_tokens > 1
        ):
            timings["per_output_token_s"] = (self.last_token_at - self.first_token_at) / (
                output_tokens - 1
            )
        verdict = next(iter(self.verdicts.values()), None)
        return {
            "status": self.status,
            "stream": self.mode == "sse",
            "finish_reason": answer.finish_reason,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "estimated": estimated,
            },
            "timings": timings,
            "tool_calls": [call.name for call in answer.calls(complete_only=False)],
            "decisions": [
                {"decision": name, "action": v.action.kind} for name, v in self.verdicts.items()
            ],
            "decision": verdict.name if verdict else None,
            "unreadable": self.unreadable,
            "ended": self.ended_at is not None,
        }


#: a stream keeps at most this much text behind what its guards may still read
_KEEP_CHARS = 65_536


def _since(start: float, end: float | None) -> float | None:
    return None if end is None else max(0.0, end - start)


#: the blank line that ends an event, whichever line ending the stream uses (the leftmost
#: match is also the one that ends first: none of them holds another)
_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


def take_events(buffer: bytearray) -> list[bytes]:
    """The complete events at the start of ``buffer`` (each with its blank line), taken out
    of it in one pass: a chunk may hold dozens of events."""
    if b"\r" not in buffer:
        # one line ending throughout, as nearly every stream: a split is one C loop
        # (leftmost and non-overlapping, as the search below)
        parts = bytes(buffer).split(b"\n\n")
        buffer[:] = parts.pop()
        return [part + b"\n\n" for part in parts]
    events: list[bytes] = []
    start = 0
    for match in _EVENT_END.finditer(buffer):
        events.append(bytes(buffer[start : match.end()]))
        start = match.end()
    del buffer[:start]
    return events


def event_data(raw: bytes) -> bytes | None:
    """The ``data`` of one event (several data lines joined), or None when it has none."""
    if raw.startswith(b"data:") and raw.find(b"\n") == len(raw) - 2 and b"\r" not in raw:
        return raw[5:-2].strip()  # one data line and its blank line, as nearly every event
    if b"\r" in raw:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    lines = [line[5:].removeprefix(b" ") for line in raw.split(b"\n") if line.startswith(b"data:")]
    return b"\n".join(lines).strip() if lines else None


def _choice_slots(document: Any) -> dict[int, int]:
    choices = document.get("choices") if isinstance(document, dict) else None
    slots: dict[int, int] = {}
    for slot, choice in enumerate(choices if isinstance(choices, list) else ()):
        index = choice.get("index") if isinstance(choice, dict) else None
        slots[index if isinstance(index, int) else slot] = slot
    return slots


def _cut(offset: int, text: str, cuts: list[tuple[int, int, str]]) -> str:
    """``text`` (at ``offset`` in its choice) with the spans of ``cuts`` removed and each
    placeholder written where its span starts."""
    end = offset + len(text)
    out: list[str] = []
    position = offset
    for start, stop, placeholder in cuts:
        if stop <= offset or start >= end:
            continue
        if start > position:
            out.append(text[position - offset : start - offset])
        if start >= offset:
            out.append(placeholder)
        position = max(position, min(stop, end))
    if position < end:
        out.append(text[position - offset :])
    return "".join(out)


def _set_content(event: _Event, piece: _Piece) -> None:
    choices = event.document["choices"]
    delta = choices[piece.slot]["delta"]
    if delta.get("content") != piece.text:
        delta["content"] = piece.text
        event.changed = True
        event.rewrite()


def _set_arguments(event: _Event, key: tuple[int, int], arguments: str) -> None:
    for slot, choice in enumerate(event.document.get("choices") or ()):
        if choice.get("index", slot) != key[0]:
            continue
        for order, call in enumerate((choice.get("delta") or {}).get("tool_calls") or ()):
            if call.get("index", order) == key[1] and isinstance(call.get("function"), dict):
                call["function"]["arguments"] = arguments
                event.changed = True
    event.rewrite()
