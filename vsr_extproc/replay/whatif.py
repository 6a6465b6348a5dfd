"""What if this config had been live: decide recorded requests again and count the changes.

Only records that kept their content (``replay.keep_content``) can be decided again; the
others are counted as skipped. The content is the redacted request, so text signals run
on text whose PII values are placeholders (``<EMAIL_1>``): a decision that depends on a
PII value sees the placeholder, not the value.

Images are not kept, only their hash, format and inspected features. Request-level image
facts (how many, which format, inline or linked) are rebuilt from those, so ``modality``
and ``context`` run again as they did. Signals of the image families (``vision``,
``image``, ``image_text``) cannot: ``StoredImageRunner`` answers them with the result the
record holds for the same signal key — computed under the recorded config's definition of
that key — or, for a key the record never evaluated, with an error, so the rule's
``on_error`` applies.
"""

from __future__ import annotations

import asyncio
import base64
import fnmatch
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from vsr_extproc.core.policy import Policy
from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.core.router import Router
from vsr_extproc.core.runner import SignalRunner
from vsr_extproc.core.signals import Signal, SignalResult
from vsr_extproc.errors import RequestError
from vsr_extproc.replay.record import ReplayRecord
from vsr_extproc.signals import FAMILIES

IMAGE_NOT_KEPT = "image not kept; only its hash and inspected features are stored"
#: an image signal the live decision did not wait for: its answer is unknown, so a what-if
#: applies the rule's on_error to it rather than taking it for "no match"
SKIPPED_LIVE = "not evaluated live: the decision was certain without it"

#: the fewest leading bytes each format is recognised by (``core.request.sniff_format``)
_MAGIC = {
    "png": b"\x89PNG\r\n\x1a\n",
    "jpeg": b"\xff\xd8\xff",
    "gif": b"GIF89a",
    "webp": b"RIFF\x00\x00\x00\x00WEBP",
    "bmp": b"BM",
    "tiff": b"II*\x00",
}
_EXAMPLES = 3
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class StoredImageRunner(SignalRunner):
    """Runs every signal again except the image families', which come from the record."""

    def __init__(self, stored: Mapping[str, SignalResult]) -> None:
        super().__init__()
        self._stored = stored

    async def run(
        self,
        signals: Mapping[str, Signal],
        request: NormalizedRequest,
        settled: Callable[[Mapping[str, SignalResult]], bool] | None = None,
    ) -> dict[str, SignalResult]:
        """Every signal (a what-if decides with the whole trace: ``settled`` is ignored)."""
        if not request.images:
            # nothing to decode: image signals answer "no images" as they did live
            return await super().run(signals, request)
        fresh = {key: s for key, s in signals.items() if not FAMILIES[s.family].reads_images}
        computed = await super().run(fresh, request)
        return {
            key: computed[key] if key in computed else self._stored_result(key, signal)
            for key, signal in signals.items()
        }

    def _stored_result(self, key: str, signal: Signal) -> SignalResult:
        stored = self._stored.get(key)
        if stored is not None:
            return stored
        return SignalResult(signal.family, signal.name, False, 0.0, None, 0.0, IMAGE_NOT_KEPT)


def stored_image_results(record: ReplayRecord) -> dict[str, SignalResult]:
    """The image-family results of a record, rebuilt from its trace."""
    results = {}
    for entry in record.trace.get("signals", ()):
        family = FAMILIES.get(str(entry.get("family")))
        if family is not None and family.reads_images:
            results[entry["signal"]] = SignalResult(
                entry["family"],
                entry["name"],
                bool(entry["matched"]),
                float(entry["confidence"]),
                entry.get("value"),
                0.0,
                SKIPPED_LIVE if entry.get("skipped") else entry.get("error"),
            )
    return results


def replay_body(content: Mapping[str, Any]) -> bytes:
    """A request body the router accepts, rebuilt from a record's content.

    Each image stub becomes an image of the same source and format with no pixels: a
    data URL holding only the format's magic bytes, or an unfetchable ``.invalid`` URL.
    """
    document = dict(content)
    document["messages"] = [_message(message) for message in content.get("messages", [])]
    return orjson.dumps(document)


def _message(message: Any) -> Any:
    parts = message.get("content") if isinstance(message, dict) else None
    if not isinstance(parts, list):
        return message
    return {**message, "content": [_part(part) for part in parts]}


def _part(part: Any) -> Any:
    if not isinstance(part, dict) or part.get("type") != "image_url":
        return part
    stub = part.get("image_url")
    if not isinstance(stub, dict) or "sha256" not in stub:
        return part
    image_format = stub.get("format")
    if stub.get("source") == "remote":
        suffix = f".{image_format}" if image_format else ""
        url = f"https://replay.invalid/{stub['sha256']}{suffix}"
    elif image_format in _MAGIC:
        url = f"data:image/{image_format};base64,{base64.b64encode(_MAGIC[image_format]).decode()}"
    else:
        url = "data:application/octet-stream;base64,"
    image_url: dict[str, Any] = {"url": url}
    if "detail" in stub:
        image_url["detail"] = stub["detail"]
    return {"type": "image_url", "image_url": image_url}


@dataclass(frozen=True)
class Change:
    """Records that the recorded policy decided as ``source`` and the new one as ``target``."""

    source: str
    target: str
    count: int
    #: the first few replay ids, to look up with the admin port or ``explain``
    examples: tuple[str, ...]


@dataclass(frozen=True)
class WhatIfReport:
    """The outcome of deciding recorded requests under another policy."""

    read: int
    evaluated: int
    #: records that kept no content, so cannot be decided again
    skipped: int
    unchanged: int
    changed: int
    #: most frequent first
    changes: tuple[Change, ...]

    def data(self) -> dict[str, Any]:
        """The report as JSON-able data."""
        return {
            "read": self.read,
            "evaluated": self.evaluated,
            "skipped_without_content": self.skipped,
            "unchanged": self.unchanged,
            "changed": self.changed,
            "changes": [
                {
                    "from": change.source,
                    "to": change.target,
                    "count": change.count,
                    "examples": list(change.examples),
                }
                for change in self.changes
            ],
        }


async def redecide(record: ReplayRecord, policy: Policy) -> str:
    """The decision ``policy`` makes for a record's content (an error code if rejected)."""
    if record.content is None:
        raise ValueError(f"record {record.id} kept no content")
    router = Router(policy, runner=StoredImageRunner(stored_image_results(record)))
    try:
        decision = await router.explain(replay_body(record.content))
    except RequestError as exc:  # e.g. under a smaller limit than before
        return exc.code
    return decision.name


async def whatif_async(records: Iterable[ReplayRecord], policy: Policy) -> WhatIfReport:
    """Decide each record that kept its content again under ``policy``."""
    read = skipped = unchanged = 0
    counts: dict[tuple[str, str], int] = {}
    examples: dict[tuple[str, str], list[str]] = {}
    for record in records:
        read += 1
        if record.content is None:
            skipped += 1
            continue
        target = await redecide(record, policy)
        if target == record.decision:
            unchanged += 1
            continue
        pair = (record.decision, target)
        counts[pair] = counts.get(pair, 0) + 1
        chosen = examples.setdefault(pair, [])
        if len(chosen) < _EXAMPLES:
            chosen.append(record.id)
    changes = tuple(
        Change(source, target, count, tuple(examples[source, target]))
        for (source, target), count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    )
    changed = sum(counts.values())
    return WhatIfReport(read, read - skipped, skipped, unchanged, changed, changes)


def whatif(records: Iterable[ReplayRecord], policy: Policy) -> WhatIfReport:
    """``whatif_async`` for callers without an event loop (the command line)."""
    return asyncio.run(whatif_async(records, policy))


def format_whatif(report: WhatIfReport) -> str:
    """The report as a readable table: totals, then each change with example ids."""
    totals = (
        ("records read", report.read),
        ("re-evaluated", report.evaluated),
        ("skipped (no content kept)", report.skipped),
        ("unchanged", report.unchanged),
        ("changed", report.changed),
    )
    width = max(len(label) for label, _ in totals)
    lines = [f"{label.ljust(width)}  {value}" for label, value in totals]
    lines.append("")
    if not report.changes:
        lines.append("no decision would change")
        return "\n".join(lines)
    rows = [
        (change.source, change.target, str(change.count), ", ".join(change.examples))
        for change in report.changes
    ]
    header = ("from", "to", "count", "examples")
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    for position, row in enumerate((header, *rows)):
        cells = [
            cell.rjust(widths[i]) if i == 2 else cell.ljust(widths[i]) for i, cell in enumerate(row)
        ]
        lines.append("  ".join(cells).rstrip())
        if position == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def parse_since(text: str, now: float | None = None) -> float:
    """A unix time from ISO-8601 (a time without zone is local) or an age: 30m, 2h, 7d."""
    age = _AGE.match(text)
    if age is not None:
        current = time.time() if now is None else now
        return current - float(age.group(1)) * _UNIT_S[age.group(2)]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise ValueError(
            f"{text!r} is neither an ISO-8601 time nor an age such as 30m, 2h or 7d"
        ) from None


@dataclass(frozen=True)
class RecordFilter:
    """Which records a replay reads, by their decision and by what the model answered
    (the ``response`` the response phase recorded). Every given criterion must hold; a
    record without a response fails every answer criterion."""

    decision: str | None = None
    #: an HTTP status (``200``) or a class (``5xx``)
    status: str | None = None
    finish_reason: str | None = None
    response_decision: str | None = None
    #: a tool the model called, a shell-style pattern (``*memory*``)
    tool: str | None = None

    def __post_init__(self) -> None:
        if self.status is not None and not re.fullmatch(r"[1-5](?:xx|\d\d)", self.status):
            raise ValueError(f"expected a status such as 200 or 5xx, got {self.status!r}")

    @property
    def reads_answers(self) -> bool:
        return any((self.status, self.finish_reason, self.response_decision, self.tool))

    def __call__(self, record: ReplayRecord) -> bool:
        if self.decision is not None and record.decision != self.decision:
            return False
        if not self.reads_answers:
            return True
        response = record.response
        if not isinstance(response, dict):
            return False
        if self.status is not None and not _status_is(response.get("status"), self.status):
            return False
        if self.finish_reason is not None and response.get("finish_reason") != self.finish_reason:
            return False
        acted = [item.get("decision") for item in response.get("decisions") or ()]
        if self.response_decision is not None and self.response_decision not in acted:
            return False
        tools = response.get("tool_calls") or ()
        return self.tool is None or any(fnmatch.fnmatchcase(str(t), self.tool) for t in tools)

    def select(self, records: Iterable[ReplayRecord]) -> Iterator[ReplayRecord]:
        return (record for record in records if self(record))


def _status_is(status: Any, wanted: str) -> bool:
    if not isinstance(status, int):
        return False
    if wanted.endswith("xx"):
        return status // 100 == int(wanted[0])
    return status == int(wanted)
