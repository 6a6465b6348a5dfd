"""The config reference in Markdown, generated from the pydantic schema itself.

The README embeds this text between markers, and a test keeps the two equal, so the
reference can never drift from what the validator accepts.
"""

from __future__ import annotations

import inspect
import types
import typing
from enum import Enum
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from vsr_extproc.config.schema import (
    BlockActionConfig,
    ConfirmActionConfig,
    DecisionConfig,
    DefaultDecisionConfig,
    LeafRule,
    ResponseAnnotateConfig,
    ResponseBlockConfig,
    ResponseDecisionConfig,
    ResponseRedactConfig,
    RouteActionConfig,
    RouterConfig,
    SignalHeader,
)
from vsr_extproc.signals import FAMILIES

START = "<!-- config-reference:start -->"
END = "<!-- config-reference:end -->"


_NAMES = {"_LeafInput": "rule", "AllRule": "rule", "AnyRule": "rule", "NotRule": "rule"}


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(arguments[0])
    if origin is typing.Literal:
        return " \\| ".join(f"`{value}`" for value in arguments)
    if origin in (typing.Union, types.UnionType):
        names = dict.fromkeys(_type_name(argument) for argument in arguments)
        if {"route action", "block action", "confirm action"} <= set(names):
            return "action"
        return " \\| ".join(names)
    if origin is tuple:
        return f"list of {_type_name(arguments[0])}"
    if origin is dict:
        return f"map of {_type_name(arguments[0])} → {_type_name(arguments[1])}"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return " \\| ".join(f"`{member.value}`" for member in annotation)
    if annotation is type(None):
        return "null"
    name = getattr(annotation, "__name__", str(annotation))
    if name in _NAMES:
        return _NAMES[name]
    if name.endswith("ActionConfig"):
        return name.removesuffix("ActionConfig").lower() + " action"
    return {
        "str": "string",
        "int": "integer",
        "float": "number",
        "bool": "boolean",
        "SecretStr": "secret string",
    }.get(name, name.removesuffix("Config"))


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    return value


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "**required**"
    value = field.default
    if value is PydanticUndefined and field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    if isinstance(value, BaseModel):
        return "see its table"
    value = _plain(value)
    if value is None:
        return "—"
    if value in ([], {}, ""):
        return "empty"
    if isinstance(value, list):
        return "`[" + ", ".join(str(item) for item in value) + "]`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def _table(model: type[BaseModel]) -> str:
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        key = field.alias or name
        description = (field.description or "").replace("|", "\\|")
        rows.append(
            f"| `{key}` | {_type_name(field.annotation)} | {_default(field)} | {description} |"
        )
    return "\n".join(rows)


def _section(title: str, model: type[BaseModel], note: str | None = None) -> str:
    if note is None:
        # the docstring's first paragraph, as one line of Markdown
        first = inspect.cleandoc(model.__doc__ or "").split("\n\n")[0]
        note = " ".join(first.split()).replace("``", "`")
    text = note
    parts = [f"#### `{title}`"]
    if text:
        parts.append(text)
    parts.append(_table(model))
    return "\n\n".join(parts)


def _model_in(annotation: Any) -> type[BaseModel]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in typing.get_args(annotation):
        try:
            return _model_in(argument)
        except LookupError:
            continue
    raise LookupError(annotation)


def _field_model(model: type[BaseModel], name: str) -> type[BaseModel]:
    return _model_in(model.model_fields[name].annotation)


def config_reference() -> str:
    """The whole reference, one table per section, signal family and action."""
    envoy = _field_model(RouterConfig, "envoy")
    images = _field_model(RouterConfig, "images")
    sections: list[tuple[str, type[BaseModel], str | None]] = [
        ("(top level)", RouterConfig, "The file's top-level keys."),
        ("models[]", _field_model(RouterConfig, "models"), "One entry per upstream model."),
        ("decisions[]", DecisionConfig, "Every decision is evaluated on every request."),
        ("default", DefaultDecisionConfig, "Applies when no decision matched or could serve."),
        (
            "rules",
            LeafRule,
            "A rule is a signal name (`keyword.code_words`), a leaf object with the keys "
            "below, or `all: [rule, …]`, `any: [rule, …]`, `not: rule`.",
        ),
        ("action (type: route)", RouteActionConfig, ""),
        ("action (type: block)", BlockActionConfig, ""),
        ("action (type: confirm)", ConfirmActionConfig, ""),
        ("action.signal_headers[]", SignalHeader, ""),
    ]
    sections += [
        (f"signals.{name}[]", family.entry, family.summary + ".")
        for name, family in FAMILIES.items()
    ]
    text = _field_model(RouterConfig, "text")
    sections += [
        ("server", _field_model(RouterConfig, "server"), None),
        ("routing", _field_model(RouterConfig, "routing"), None),
        ("limits", _field_model(RouterConfig, "limits"), None),
        ("images", images, "How request images are read."),
        ("images.fetch", _field_model(images, "fetch"), None),
        ("vision", _field_model(RouterConfig, "vision"), None),
        ("ocr", _field_model(RouterConfig, "ocr"), None),
        ("text", text, "The text models shared by the text signals."),
        ("text.guard", _field_model(text, "guard"), None),
        ("text.entities", _field_model(text, "entities"), None),
        ("text.embedding", _field_model(text, "embedding"), None),
        ("text.reading", _field_model(text, "reading"), None),
        ("admin", _field_model(RouterConfig, "admin"), None),
        ("debug", _field_model(RouterConfig, "debug"), None),
        ("responses", _field_model(RouterConfig, "responses"), "The response phase."),
        (
            "responses.decisions[]",
            ResponseDecisionConfig,
            "Evaluated on the model's answer, over `tool_call` and `output` signals.",
        ),
        ("responses action (type: block)", ResponseBlockConfig, ""),
        ("responses action (type: redact)", ResponseRedactConfig, ""),
        ("responses action (type: annotate)", ResponseAnnotateConfig, ""),
        ("replay", _field_model(RouterConfig, "replay"), None),
        ("reload", _field_model(RouterConfig, "reload"), None),
        ("envoy", envoy, None),
        ("envoy.clusters[]", _field_model(envoy, "clusters"), None),
        (
            "endpoints (listen, admin, processor[], clusters[].endpoints[])",
            _field_model(envoy, "listen"),
            "",
        ),
    ]
    return "\n\n".join(_section(*section) for section in sections) + "\n"


def embed(document: str) -> str:
    """``document`` with the text between the reference markers replaced by a fresh one."""
    head, start, rest = document.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        raise ValueError(f"the document has no {START} … {END} markers")
    return f"{head}{START}\n{config_reference()}{END}{tail}"


if __name__ == "__main__":
    import sys
    from pathlib import Path

    target = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    target.write_text(embed(target.read_text()))
