"""structlog set-up: JSON lines when not on a terminal, readable lines on one.

Loggers never receive raw image bytes, PII values or secrets; callers log counts, types
and names only.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import orjson
import structlog


def _dumps(value: Any, **_: Any) -> str:
    return orjson.dumps(value, default=str).decode()


def configure(level: str = "info", *, json: bool | None = None) -> None:
    """Configure structlog once per process; ``json`` defaults to "stderr is not a tty"."""
    as_json = not sys.stderr.isatty() if json is None else json
    renderer: Any = (
        structlog.processors.JSONRenderer(serializer=_dumps)
        if as_json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
