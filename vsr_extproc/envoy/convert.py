"""Conversions between Envoy's ext_proc messages and the router's own values.

Protobuf never leaves this package. Header values travel in ``raw_value`` (bytes): Envoy
ignores ``value`` when it sets a header from an external processor.
"""

from __future__ import annotations

from collections.abc import Iterable

from envoy.config.core.v3 import base_pb2
from envoy.extensions.filters.http.ext_proc.v3 import processing_mode_pb2
from envoy.service.ext_proc.v3 import external_processor_pb2 as ext_proc
from envoy.type.v3 import http_status_pb2
from google.protobuf import struct_pb2

from vsr_extproc.core.answers import Answer
from vsr_extproc.core.headers import (
    DEBUG_REASON_HEADER,
    DEBUG_SIGNALS_HEADER,
    DECISION_HEADER,
    METADATA_NAMESPACE,
    MODEL_HEADER,
    NO_MODEL,
    OBSERVE_HEADER,
    REDACTED_HEADER,
    REPLAY_HEADER,
    ROUTER_HEADER_PREFIX,
    SOURCE_ADDRESS,
)

__all__ = [
    "DEBUG_REASON_HEADER",
    "DEBUG_SIGNALS_HEADER",
    "DECISION_HEADER",
    "METADATA_NAMESPACE",
    "MODEL_HEADER",
    "NO_MODEL",
    "REDACTED_HEADER",
    "REPLAY_HEADER",
    "ROUTER_HEADER_PREFIX",
    "SOURCE_ADDRESS",
]

_OVERWRITE = base_pb2.HeaderValueOption.OVERWRITE_IF_EXISTS_OR_ADD


def header_map(headers: ext_proc.HttpHeaders) -> dict[str, str]:
    """Envoy's header list as a dict (lower-case names; the last value wins)."""
    return {
        header.key: (header.raw_value or header.value.encode()).decode("utf-8", "replace")
        for header in headers.headers.headers
    }


def _set(headers: Iterable[tuple[str, str]]) -> list[base_pb2.HeaderValueOption]:
    return [
        base_pb2.HeaderValueOption(
            header=base_pb2.HeaderValue(key=key, raw_value=value.encode()),
            append_action=_OVERWRITE,
        )
        for key, value in headers
    ]


def headers_response(
    set_headers: Iterable[tuple[str, str]] = (),
    remove: Iterable[str] = (),
    *,
    clear_route_cache: bool = False,
) -> ext_proc.ProcessingResponse:
    """Continue after the request headers, optionally changing them."""
    common = ext_proc.CommonResponse(
        header_mutation=ext_proc.HeaderMutation(
            set_headers=_set(set_headers), remove_headers=list(remove)
        ),
        clear_route_cache=clear_route_cache,
    )
    return ext_proc.ProcessingResponse(request_headers=ext_proc.HeadersResponse(response=common))


def client_address(message: ext_proc.ProcessingRequest) -> str | None:
    """The client's IP from the ``source.address`` attribute (``ip:port`` or ``[ip]:port``)."""
    for attributes in message.attributes.values():
        field = attributes.fields.get(SOURCE_ADDRESS)
        value = str(field.string_value) if field is not None else ""
        if value:
            host = value.rpartition(":")[0] or value
            return host.strip("[]")
    return None


def body_response(
    set_headers: Iterable[tuple[str, str]], body: bytes | None, remove: Iterable[str] = ()
) -> ext_proc.ProcessingResponse:
    """Continue to the upstream with new routing headers and, when given, a new body.

    A changed body needs its ``content-length`` in the same response, and
    ``clear_route_cache`` only takes effect beside a header mutation; both are done here.
    """
    headers = list(set_headers)
    mutation = None
    if body is not None:
        headers.append(("content-length", str(len(body))))
        mutation = ext_proc.BodyMutation(body=body)
    common = ext_proc.CommonResponse(
        header_mutation=ext_proc.HeaderMutation(
            set_headers=_set(headers), remove_headers=list(remove)
        ),
        body_mutation=mutation,
        clear_route_cache=True,
    )
    return ext_proc.ProcessingResponse(request_body=ext_proc.BodyResponse(response=common))


#: the ``vsr`` metadata key that carries an observed answer's decision
OBSERVED_KEY = "answer"


def observe_answer(response: ext_proc.ProcessingResponse, decided: dict[str, object]) -> None:
    """Send this routed request's answer to the observing filter: set the header its
    route matches, and hand what was decided on as dynamic metadata (``vsr.answer``),
    which that filter forwards to the processor with the answer."""
    common = response.request_body.response
    common.header_mutation.set_headers.extend(_set([(OBSERVE_HEADER, "1")]))
    response.dynamic_metadata.update({METADATA_NAMESPACE: {OBSERVED_KEY: decided}})


def observed_decision(message: ext_proc.ProcessingRequest) -> dict[str, object] | None:
    """What ``observe_answer`` handed on, as the observing filter forwards it; None when
    the message carries none."""
    namespace = message.metadata_context.filter_metadata.get(METADATA_NAMESPACE)
    if namespace is None or OBSERVED_KEY not in namespace.fields:
        return None
    value = namespace.fields[OBSERVED_KEY]
    if value.WhichOneof("kind") != "struct_value":
        return None
    return dict(value.struct_value.items())


def immediate_response(
    answer: Answer, headers: Iterable[tuple[str, str]], details: str
) -> ext_proc.ProcessingResponse:
    """Answer the client directly; the request never reaches an upstream.

    The dynamic metadata ``vsr.immediate = true`` tells Envoy's local-reply mappers (which
    turn Envoy's own errors into JSON) to leave this answer as it is.
    """
    all_headers = [("content-type", answer.content_type), *headers]
    metadata = struct_pb2.Struct()
    metadata.update({METADATA_NAMESPACE: {"immediate": True}})
    return ext_proc.ProcessingResponse(
        dynamic_metadata=metadata,
        immediate_response=ext_proc.ImmediateResponse(
            status=http_status_pb2.HttpStatus(code=answer.status),
            headers=ext_proc.HeaderMutation(set_headers=_set(all_headers)),
            body=answer.body,
            details=details,
        ),
    )


def response_headers(
    remove: Iterable[str] = (),
    *,
    buffered: bool = False,
    set_headers: Iterable[tuple[str, str]] = (),
) -> ext_proc.ProcessingResponse:
    """Continue after the answer's headers; ``buffered``: hand over the whole body at once
    (the filter allows the processor to override its streamed default)."""
    common = ext_proc.CommonResponse(
        header_mutation=ext_proc.HeaderMutation(
            remove_headers=list(remove), set_headers=_set(set_headers)
        )
    )
    response = ext_proc.ProcessingResponse(
        response_headers=ext_proc.HeadersResponse(response=common)
    )
    if buffered:
        response.mode_override.response_body_mode = processing_mode_pb2.ProcessingMode.BUFFERED
    return response


def response_body(
    body: bytes | None, set_headers: Iterable[tuple[str, str]] = ()
) -> ext_proc.ProcessingResponse:
    """Continue with this part of the answer: unchanged (``body`` None) or replaced.

    Headers can still change only while Envoy holds them (a buffered answer).
    """
    headers = list(set_headers)
    common = ext_proc.CommonResponse()
    if body is not None:
        common.body_mutation.body = body
    if headers:
        common.header_mutation.set_headers.extend(_set(headers))
    return ext_proc.ProcessingResponse(response_body=ext_proc.BodyResponse(response=common))


def response_refusal(status: int, error: bytes, *, phase: str) -> ext_proc.ProcessingResponse:
    """Answer the client with an error instead of the model's answer."""
    answer = Answer(status, "application/json", error)
    return immediate_response(answer, (), details=f"vsr_response_refused_{phase}")
