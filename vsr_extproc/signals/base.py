"""What a signal family provides: a config entry model and a builder.

Adding a family is one module that defines a ``SignalFamily`` and one line in
``vsr_extproc.signals.FAMILIES``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from vsr_extproc.core.signals import Signal
from vsr_extproc.detectors import ENTITY_TYPES, FindingType
from vsr_extproc.runtime.batcher import FairWorker


class SignalEntry(BaseModel):
    """Fields every signal entry has."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="unique within the family")
    description: str = Field(default="", description="for people reading the config")


class AsyncSignalEntry(SignalEntry):
    timeout_ms: int = Field(
        default=1000, gt=0, le=120_000, description="the signal's own time budget"
    )


class Resources:
    """Shared, lazily created runtime objects (models, OCR engines) for signal builders.

    One ``Resources`` lives across policy compiles, so a reload reuses loaded models;
    ``release_unused`` drops those the new policy no longer asked for.
    """

    def __init__(self) -> None:
        self._objects: dict[Any, Any] = {}
        self._labels: dict[Any, tuple[str, str]] = {}
        self._used: set[Any] = set()
        #: the config being compiled (a ``RouterConfig``), for runtime-wide settings
        self.config: Any = None

    def get(
        self, key: Any, factory: Callable[[], Any], *, runtime: tuple[str, str] | None = None
    ) -> Any:
        """The object for ``key``, made by ``factory`` the first time. ``runtime`` names a
        model runtime for the metrics: (kind, model), e.g. ("ocr", "pp-ocrv4")."""
        self._used.add(key)
        if key not in self._objects:
            self._objects[key] = factory()
        if runtime is not None:
            self._labels[key] = runtime
        return self._objects[key]

    def runtimes(self) -> list[tuple[str, str, bool]]:
        """(kind, model, loaded) of each model runtime held: loaded unless its object says
        why it is not (a ``reason``)."""
        return [
            (*label, getattr(self._objects[key], "reason", None) is None)
            for key, label in self._labels.items()
            if key in self._objects
        ]

    def begin_compile(self, config: Any) -> None:
        self._used = set()
        self.config = config

    def release_unused(self) -> list[Any]:
        """Drop what the last compile did not ask for.

        Returns what their ``close`` returned; a caller in an event loop awaits the
        awaitables among them (an async runtime's close).
        """
        released = [key for key in self._objects if key not in self._used]
        results = []
        for key in released:
            self._labels.pop(key, None)
            closer = getattr(self._objects.pop(key), "close", None)
            results.append(closer() if callable(closer) else None)
        return results

    def items(self) -> list[tuple[Any, Any]]:
        return list(self._objects.items())


def answer_finding_types(value: tuple[FindingType, ...], read: str) -> tuple[FindingType, ...]:
    """``value``, if the pattern detectors find every type in it: the response phase reads
    ``read`` with them alone (names need the named-entity model, which it does not run)."""
    named = sorted(kind.value for kind in set(value) & ENTITY_TYPES)
    if named:
        raise ValueError(
            f"{', '.join(named)}: {read} is read by the pattern detectors; names need the "
            "named-entity model, which the response phase does not run"
        )
    return value


EntryT = TypeVar("EntryT", bound=SignalEntry)
T = TypeVar("T")


@dataclass(frozen=True)
class SignalFamily(Generic[EntryT]):
    name: str
    entry: type[EntryT]
    build: Callable[[EntryT, Resources], Signal]
    summary: str
    #: its signals look at the request's images (a replay record keeps their results, since
    #: it does not keep the images)
    reads_images: bool = False
    #: findings by type in one of its results' values, for the metrics (each type counted
    #: once per request: the most any of the family's signals reports)
    counts: Callable[[Any], dict[str, int]] | None = None


_CPU: FairWorker | None = None


async def run_cpu(function: Callable[..., T], *args: Any, owner: Hashable | None = None) -> T:
    """Run a signal's CPU-bound Python work off the event loop, one job at a time.

    One thread, not a pool: the model runtimes' own threads use the cores, and several
    GIL-bound threads beside them only slow every forward pass down (measured on two
    cores: a 500-token decision went from about 45 ms to 65 ms with a pool).

    Jobs wait in a queue where the ``owner`` (request) served least goes first, so a small
    request's job waits for about the job already running; signals keep their jobs short
    (tens of milliseconds) by splitting long work, and a job of a cancelled request
    leaves the queue.
    """
    global _CPU
    if _CPU is None:
        _CPU = FairWorker("signal-cpu")
    return await _CPU.run(function, *args, owner=owner)
