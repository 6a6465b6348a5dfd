"""The names the router uses on the wire: its headers, the Envoy attribute it reads and the
dynamic-metadata namespace it writes. The ext_proc edge sets them and the Envoy bootstrap
routes on them; both read them from here.
"""

from __future__ import annotations

DECISION_HEADER = "x-vsr-decision"
MODEL_HEADER = "x-vsr-selected-model"
#: tells the upstream how many values of each PII type were replaced (never which)
REDACTED_HEADER = "x-vsr-redacted"
#: links every response to its decision record (GET /v1/router/replay/{id})
REPLAY_HEADER = "x-vsr-replay-id"
#: set on routed requests whose answers are only measured: their route turns on the
#: observing ext_proc filter, which copies the answer to the processor without holding it
OBSERVE_HEADER = "x-vsr-observe-answer"
#: debug headers, only for callers that ask and are trusted
DEBUG_SIGNALS_HEADER = "x-vsr-debug-signals"
DEBUG_REASON_HEADER = "x-vsr-debug-reason"
#: the Envoy attribute that carries the client's address, requested in the bootstrap
SOURCE_ADDRESS = "source.address"
ROUTER_HEADER_PREFIX = "x-vsr-"
#: what ``x-vsr-selected-model`` says when the router answered itself
NO_MODEL = "none"
#: the dynamic metadata namespace Envoy accepts from the processor
METADATA_NAMESPACE = "vsr"
