"""Load, validate and compile the router config into an immutable ``Policy``.

Every problem names its path in the file: ``decisions[3].rules.all[1]: unknown signal
'vision.xray'``. Compilation does the work once (regexes compiled, models loaded, label
texts embedded) so the request path never branches on configuration.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from vsr_extproc.config.schema import (
    POSTGRESQL_SCHEMES,
    ActionConfig,
    AllRule,
    AnyRule,
    BlockActionConfig,
    ConfirmActionConfig,
    DecisionConfig,
    DefaultDecisionConfig,
    LeafRule,
    NotRule,
    ReplayConfig,
    ResponseBlockConfig,
    ResponseDecisionConfig,
    ResponseRedactConfig,
    RouterConfig,
    RuleNode,
    family_entries,
)
from vsr_extproc.core.policy import (
    Action,
    BlockAction,
    ConfirmAction,
    DecisionSpec,
    Limits,
    ModelSpec,
    Policy,
    RouteAction,
)
from vsr_extproc.core.responses import (
    AnnotateAnswer,
    AnswerSignal,
    BlockAnswer,
    RedactAnswer,
    ResponseAction,
    ResponseDecisionSpec,
    ResponsePolicy,
)
from vsr_extproc.core.rules import AllOf, AnyOf, Leaf, Not, Rule, leaves
from vsr_extproc.core.signals import Signal
from vsr_extproc.errors import ConfigError, ModelUnavailable
from vsr_extproc.signals import FAMILIES
from vsr_extproc.signals.base import Resources

# pydantic puts the tag of a tagged union into error locations; the file has no such key
_TAGS = frozenset(
    {"all", "any", "not", "signal", "route", "block", "confirm", "redact", "annotate"}
)
#: families whose signals read the model's answer, and those that read nothing else
_ANSWER_FAMILIES = frozenset({"tool_call", "output"})
_ANSWER_ONLY = frozenset({"output"})
_UNION_FIELDS = frozenset({"rules", "action", "not"})


def format_location(location: Iterable[int | str]) -> str:
    """``('decisions', 3, 'rules', 'all', 'all', 1)`` → ``decisions[3].rules.all[1]``."""
    items = list(location)
    parts: list[str] = []
    dropped_tag = False
    for position, item in enumerate(items):
        if isinstance(item, int):
            parts.append(f"[{item}]")
            dropped_tag = False
            continue
        before = items[position - 1] if position else None
        in_list = isinstance(before, int) and position > 1 and items[position - 2] in {"all", "any"}
        if item in _TAGS and not dropped_tag and (before in _UNION_FIELDS or in_list):
            dropped_tag = True
            continue
        dropped_tag = False
        parts.append(f".{item}" if parts else item)
    return "".join(parts)


def _problems(error: ValidationError) -> list[str]:
    details = error.errors()
    locations = [tuple(detail["loc"]) for detail in details]
    problems = []
    for detail, location in zip(details, locations, strict=True):
        # a container that failed only because its item failed adds nothing
        if any(other[: len(location)] == location and other != location for other in locations):
            continue
        where = format_location(location)
        message = detail["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    return problems


def parse_config(document: Any, source: str | None = None) -> RouterConfig:
    """Validate a parsed YAML document."""
    if not isinstance(document, Mapping):
        raise ConfigError(["the config must be a YAML mapping"], source)
    try:
        return RouterConfig.model_validate(document)
    except ValidationError as exc:
        raise ConfigError(_problems(exc), source) from None


def replay_store_config(location: str) -> ReplayConfig:
    """The replay settings of the store a SQLite path or a ``postgresql://`` URL names
    (``replay --store``), the rest default."""
    scheme, separator, _ = location.partition("://")
    field = "url" if separator and scheme in POSTGRESQL_SCHEMES else "path"
    try:
        return ReplayConfig.model_validate({field: location})
    except ValidationError as exc:
        raise ConfigError(_problems(exc), "--store") from None


def read_config(path: str | Path) -> tuple[RouterConfig, str]:
    """Read and validate a config file; returns it with the digest of its text."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"cannot read the config: {exc.strerror}"], str(path)) from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError([f"invalid YAML: {exc}"], str(path)) from None
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return parse_config(document, str(path)), digest


def load_policy(
    path: str | Path, resources: Resources | None = None
) -> tuple[RouterConfig, Policy]:
    """Read, validate and compile a config file."""
    config, digest = read_config(path)
    return config, compile_policy(config, resources or Resources(), fingerprint=digest)


def compile_policy(config: RouterConfig, resources: Resources, *, fingerprint: str = "") -> Policy:
    """Check cross-references, build the referenced signals, and freeze a ``Policy``."""
    problems = _check_names(config)
    entries = _signal_entries(config)
    decisions = []
    for index, decision in enumerate(config.decisions):
        where = f"decisions[{index}]"
        rule = _rule(decision.rules, f"{where}.rules")
        problems += [
            f"{leaf.path}: unknown signal {leaf.signal!r}"
            for leaf in leaves(rule)
            if leaf.signal not in entries
        ]
        problems += [
            f"{leaf.path}: {leaf.signal!r} reads the model's answer; use it in responses.decisions"
            for leaf in leaves(rule)
            if leaf.signal.partition(".")[0] in _ANSWER_ONLY
        ]
        problems += _check_action(config, decision.action, f"{where}.action", entries)
        decisions.append(_decision(decision, rule, index))
    problems += _check_action(config, config.default.action, "default.action", entries)
    answer_decisions = []
    for index, response in enumerate(config.responses.decisions):
        where = f"responses.decisions[{index}]"
        rule = _rule(response.rules, f"{where}.rules")
        for leaf in leaves(rule):
            if leaf.signal not in entries:
                problems.append(f"{leaf.path}: unknown signal {leaf.signal!r}")
            elif leaf.signal.partition(".")[0] not in _ANSWER_FAMILIES:
                problems.append(
                    f"{leaf.path}: {leaf.signal!r} reads the request; response decisions "
                    f"use {' and '.join(sorted(_ANSWER_FAMILIES))} signals"
                )
        answer_decisions.append(_response_decision(response, rule, index))
    problems += _duplicates(
        "responses.decisions", (decision.name for decision in config.responses.decisions)
    )
    if problems:
        raise ConfigError(problems)
    referenced = _referenced(decisions)
    resources.begin_compile(config)
    signals = _build_signals(entries, referenced, resources)
    answer_signals = _build_signals(entries, _referenced_by(answer_decisions), resources)
    decisions = [_with_entities(decision, resources) for decision in decisions]
    models = {
        model.name: ModelSpec(
            model.name,
            model.cluster,
            model.upstream_model,
            frozenset(model.modalities),
            frozenset(model.capabilities),
            model.context_window,
        )
        for model in config.models
    }
    default = _with_entities(_decision(config.default, None, len(decisions)), resources)
    return Policy(
        models=models,
        signals=signals,
        decisions=tuple(decisions),
        default=default,
        chat_paths=frozenset(config.routing.chat_paths),
        passthrough_model=config.routing.passthrough_model or _first_model(default),
        limits=Limits(
            config.limits.max_body_bytes,
            config.limits.max_content_parts,
            config.limits.max_redact_chars,
        ),
        fingerprint=fingerprint,
        responses=ResponsePolicy(
            enabled=config.responses.enabled,
            decisions=tuple(answer_decisions),
            signals={key: _answer_signal(signal) for key, signal in answer_signals.items()},
            window_chars=config.responses.guard_window_chars,
            max_answer_bytes=config.responses.max_answer_bytes,
            block_unreadable=config.responses.on_unreadable == "block",
        ),
    )


def _answer_signal(signal: Signal) -> AnswerSignal:
    if not callable(getattr(signal, "on_answer", None)):
        raise TypeError(f"{signal.family}.{signal.name} cannot read an answer")
    return signal  # type: ignore[return-value]


def _referenced_by(decisions: list[ResponseDecisionSpec]) -> list[str]:
    return list(dict.fromkeys(leaf.signal for d in decisions for leaf in leaves(d.rule)))


def _response_decision(
    config: ResponseDecisionConfig, rule: Rule, order: int
) -> ResponseDecisionSpec:
    action: ResponseAction
    if isinstance(config.action, ResponseBlockConfig):
        action = BlockAnswer(config.action.message, config.action.status)
    elif isinstance(config.action, ResponseRedactConfig):
        action = RedactAnswer(frozenset(kind.value for kind in config.action.types))
    else:
        action = AnnotateAnswer(tuple(config.action.headers.items()))
    return ResponseDecisionSpec(
        config.name, config.priority, rule, action, order, config.description
    )


def _first_model(default: DecisionSpec) -> str | None:
    action = default.action
    return action.models[0] if isinstance(action, RouteAction) else None


def _signal_entries(config: RouterConfig) -> dict[str, tuple[str, Any]]:
    """``family.name`` → (its path in the file, its entry)."""
    return {
        f"{family}.{entry.name}": (f"signals.{family}[{index}]", entry)
        for family in FAMILIES
        for index, entry in enumerate(family_entries(config, family))
    }


def _referenced(decisions: list[DecisionSpec]) -> list[str]:
    keys: dict[str, None] = {}
    for decision in decisions:
        if decision.rule is not None:
            keys.update((leaf.signal, None) for leaf in leaves(decision.rule))
        if isinstance(decision.action, RouteAction):
            keys.update((signal, None) for signal, _, _ in decision.action.signal_headers)
    return list(keys)


def _with_entities(decision: DecisionSpec, resources: Resources) -> DecisionSpec:
    """A decision whose route action redacts names gets the named-entity model."""
    action = decision.action
    if not isinstance(action, RouteAction) or not {"person", "organization"} & set(action.redact):
        return decision
    from vsr_extproc.signals.pii import entity_model

    model = entity_model(resources)
    found = model.find if model is not None else None
    return dataclasses.replace(decision, action=dataclasses.replace(action, entities=found))


def _build_signals(
    entries: Mapping[str, tuple[str, Any]], referenced: list[str], resources: Resources
) -> dict[str, Signal]:
    """Build each referenced signal; a model that cannot load is a config error."""
    signals = {}
    problems = []
    for key in referenced:
        family = FAMILIES[key.partition(".")[0]]
        path, entry = entries[key]
        try:
            signals[key] = family.build(entry, resources)
        except (ValueError, ModelUnavailable) as exc:
            problems.append(f"{path}: {exc}")
    if problems:
        raise ConfigError(problems)
    return signals


def _check_names(config: RouterConfig) -> list[str]:
    problems = _duplicates("models", (model.name for model in config.models))
    problems += _duplicates("decisions", (decision.name for decision in config.decisions))
    if config.default.name in {decision.name for decision in config.decisions}:
        problems.append(f"default.name: {config.default.name!r} is also a decision's name")
    for family in FAMILIES:
        names = (entry.name for entry in family_entries(config, family))
        problems += _duplicates(f"signals.{family}", names)
    model_names = {model.name for model in config.models}
    passthrough = config.routing.passthrough_model
    if passthrough is not None and passthrough not in model_names:
        problems.append(f"routing.passthrough_model: unknown model {passthrough!r}")
    if config.envoy is not None:
        clusters = {cluster.name for cluster in config.envoy.clusters}
        problems += _duplicates("envoy.clusters", (c.name for c in config.envoy.clusters))
        problems += [
            f"models[{index}].cluster: no cluster {model.cluster!r} in envoy.clusters"
            for index, model in enumerate(config.models)
            if model.cluster not in clusters
        ]
    return problems


def _duplicates(where: str, names: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    problems = []
    for index, name in enumerate(names):
        if name in seen:
            problems.append(f"{where}[{index}].name: {name!r} is defined twice")
        seen.add(name)
    return problems


def _check_action(
    config: RouterConfig, action: ActionConfig, where: str, entries: Mapping[str, Any]
) -> list[str]:
    if isinstance(action, BlockActionConfig | ConfirmActionConfig):
        return []
    known = {model.name for model in config.models}
    problems = [
        f"{where}.models[{index}]: unknown model {name!r}"
        for index, name in enumerate(action.models)
        if name not in known
    ]
    problems += [
        f"{where}.signal_headers[{index}].signal: unknown signal {header.signal!r}"
        for index, header in enumerate(action.signal_headers)
        if header.signal not in entries
    ]
    return problems


def _rule(node: RuleNode, path: str) -> Rule:
    if isinstance(node, LeafRule):
        return Leaf(node.signal, path, node.threshold, node.on_error)
    if isinstance(node, NotRule):
        return Not(_rule(node.not_, f"{path}.not"), path)
    if isinstance(node, AllRule):
        children = tuple(_rule(child, f"{path}.all[{i}]") for i, child in enumerate(node.all))
        return AllOf(children, path)
    if isinstance(node, AnyRule):
        children = tuple(_rule(child, f"{path}.any[{i}]") for i, child in enumerate(node.any))
        return AnyOf(children, path)
    raise TypeError(f"not a rule node: {node!r}")


def _decision(
    config: DecisionConfig | DefaultDecisionConfig, rule: Rule | None, order: int
) -> DecisionSpec:
    priority = config.priority if isinstance(config, DecisionConfig) else -(2**31)
    return DecisionSpec(
        config.name, priority, rule, _action(config.action), order, config.description
    )


def _action(action: ActionConfig) -> Action:
    if isinstance(action, BlockActionConfig):
        return BlockAction(action.message, action.status)
    if isinstance(action, ConfirmActionConfig):
        return ConfirmAction(action.question)
    return RouteAction(
        models=action.models,
        system_prompt=action.system_prompt,
        headers=tuple(action.headers.items()),
        redact=tuple(kind.value for kind in action.redact),
        signal_headers=tuple((h.signal, h.header, h.value) for h in action.signal_headers),
        process_response=action.process_response,
    )
