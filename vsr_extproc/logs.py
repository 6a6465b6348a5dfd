"""structlog set-up: JSON lines when not on a terminal, readable lines on one.

The standard library's logging (transformers, grpc, asyncio) goes through the same
renderer, so a JSON log stream stays JSON. Loggers never receive raw image bytes, PII
values or secrets; callers log counts, types and names only.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import orjson
import structlog


def _dumps(value: Any, **_: Any) -> str:
    return orjson.dumps(value, default=str).decode()


class _Stderr:
    """Whatever ``sys.stderr`` is when a line is written (a test harness swaps it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure(level: str = "info", *, json: bool | None = None, cache: bool = True) -> None:
    """Configure structlog and stdlib logging once per process.

    ``json`` defaults to "stderr is not a terminal". ``cache`` binds each logger to this
    configuration at its first use (the server's hot path); a short command leaves it off,
    so a later ``configure`` in the same process still takes effect.
    """
    as_json = not sys.stderr.isatty() if json is None else json
    renderer: Any = (
        structlog.processors.JSONRenderer(serializer=_dumps)
        if as_json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(file=_Stderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=cache,
    )
    handler = logging.StreamHandler(_Stderr())
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
