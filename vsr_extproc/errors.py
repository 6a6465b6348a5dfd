"""The router's error tree.

Every error the router raises on purpose derives from ``RouterError``. Foreign exceptions
(pydantic, YAML, gRPC, torch, psycopg) are translated into these at exactly one boundary each.

    RouterError
    ├── ConfigError            the YAML could not be read, validated or compiled
    ├── RequestError           a client's request cannot be routed (answered with 4xx)
    │   ├── InvalidRequest     not JSON, or not an OpenAI chat request       → 400
    │   └── RequestTooLarge    over a configured limit                      → 413
    ├── SignalError            a signal failed; the runner records it, the rule's
    │                          ``on_error`` decides what it means
    ├── ImageError             an image could not be fetched, decoded or inspected
    ├── ModelUnavailable       a model runtime could not be loaded
    ├── GuardUnavailable       a guard model served beside the router gave no verdict
    └── ReplayStoreError       the replay store refused an operation
        └── ReplayStoreUnavailable  no connection to it (down, unreachable, refused us):
                                    records are dropped and counted, it is tried again later

A signal failure is a value, not an exception that ends a stream: the runner turns any
exception a signal raises into a ``SignalResult`` with ``error`` set. Decisions that cannot
be served (no model fits) or that a failed signal refuses are outcomes of the decision,
answered 422 and 503 by the edge.
"""

from __future__ import annotations


class RouterError(Exception):
    """Base of every error the router raises on purpose."""


class ConfigError(RouterError):
    """The configuration is invalid; ``problems`` lists each one with its path."""

    def __init__(self, problems: list[str], source: str | None = None) -> None:
        self.problems = problems
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(where + "; ".join(problems))


class RequestError(RouterError):
    """A request that gets a deliberate client-error answer instead of a route."""

    status = 400
    error_type = "invalid_request_error"
    code = "invalid_request"


class InvalidRequest(RequestError):
    """Not JSON, or not an OpenAI chat completion request."""


class RequestTooLarge(RequestError):
    status = 413
    code = "request_too_large"


class SignalError(RouterError):
    """A signal could not compute its answer (raised by signals, caught by the runner)."""


class ImageError(RouterError):
    """An image could not be fetched, decoded or inspected."""


class ModelUnavailable(RouterError):
    """A model runtime could not be loaded (missing offline, corrupt, wrong type)."""


class GuardUnavailable(RouterError):
    """A guard model gave no verdict: a timeout, no connection, an HTTP error or an answer
    in another format (``runtime.guard``); the message is a short reason for the trace."""


class ReplayStoreError(RouterError):
    """The replay store refused an operation (its message never holds record content)."""


class ReplayStoreUnavailable(ReplayStoreError):
    """No connection to the replay store; it is tried again after a pause."""
