from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExplainRequest(_message.Message):
    __slots__ = ("request",)
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    request: _struct_pb2.Struct
    def __init__(self, request: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class SignalResult(_message.Message):
    __slots__ = ("signal", "family", "name", "matched", "confidence", "value", "latency_ms", "error", "images")
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    signal: str
    family: str
    name: str
    matched: bool
    confidence: float
    value: _struct_pb2.Value
    latency_ms: float
    error: str
    images: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, signal: _Optional[str] = ..., family: _Optional[str] = ..., name: _Optional[str] = ..., matched: _Optional[bool] = ..., confidence: _Optional[float] = ..., value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., latency_ms: _Optional[float] = ..., error: _Optional[str] = ..., images: _Optional[_Iterable[int]] = ...) -> None: ...

class RuleNode(_message.Message):
    __slots__ = ("path", "kind", "matched", "confidence", "signal", "error", "children")
    PATH_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    path: str
    kind: str
    matched: bool
    confidence: float
    signal: str
    error: str
    children: _containers.RepeatedCompositeFieldContainer[RuleNode]
    def __init__(self, path: _Optional[str] = ..., kind: _Optional[str] = ..., matched: _Optional[bool] = ..., confidence: _Optional[float] = ..., signal: _Optional[str] = ..., error: _Optional[str] = ..., children: _Optional[_Iterable[_Union[RuleNode, _Mapping]]] = ...) -> None: ...

class DecisionTrace(_message.Message):
    __slots__ = ("name", "priority", "matched", "confidence", "decided_by", "rule")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    DECIDED_BY_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    name: str
    priority: int
    matched: bool
    confidence: float
    decided_by: str
    rule: RuleNode
    def __init__(self, name: _Optional[str] = ..., priority: _Optional[int] = ..., matched: _Optional[bool] = ..., confidence: _Optional[float] = ..., decided_by: _Optional[str] = ..., rule: _Optional[_Union[RuleNode, _Mapping]] = ...) -> None: ...

class SkippedModel(_message.Message):
    __slots__ = ("decision", "model", "reason")
    DECISION_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    decision: str
    model: str
    reason: str
    def __init__(self, decision: _Optional[str] = ..., model: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ExplainResponse(_message.Message):
    __slots__ = ("decision", "outcome", "model", "upstream_model", "cluster", "confidence", "reason", "problem", "fallthrough", "skipped_models", "signals", "decisions")
    DECISION_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    UPSTREAM_MODEL_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_FIELD_NUMBER: _ClassVar[int]
    FALLTHROUGH_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_MODELS_FIELD_NUMBER: _ClassVar[int]
    SIGNALS_FIELD_NUMBER: _ClassVar[int]
    DECISIONS_FIELD_NUMBER: _ClassVar[int]
    decision: str
    outcome: str
    model: str
    upstream_model: str
    cluster: str
    confidence: float
    reason: str
    problem: str
    fallthrough: _containers.RepeatedScalarFieldContainer[str]
    skipped_models: _containers.RepeatedCompositeFieldContainer[SkippedModel]
    signals: _containers.RepeatedCompositeFieldContainer[SignalResult]
    decisions: _containers.RepeatedCompositeFieldContainer[DecisionTrace]
    def __init__(self, decision: _Optional[str] = ..., outcome: _Optional[str] = ..., model: _Optional[str] = ..., upstream_model: _Optional[str] = ..., cluster: _Optional[str] = ..., confidence: _Optional[float] = ..., reason: _Optional[str] = ..., problem: _Optional[str] = ..., fallthrough: _Optional[_Iterable[str]] = ..., skipped_models: _Optional[_Iterable[_Union[SkippedModel, _Mapping]]] = ..., signals: _Optional[_Iterable[_Union[SignalResult, _Mapping]]] = ..., decisions: _Optional[_Iterable[_Union[DecisionTrace, _Mapping]]] = ...) -> None: ...
