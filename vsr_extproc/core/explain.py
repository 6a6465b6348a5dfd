"""Explain a routing decision: as plain data (JSON) or as a readable table.

Both views come from the one ``RoutingDecision``; nothing is evaluated again here.
"""

from __future__ import annotations

from typing import Any

from vsr_extproc.core.decision import DecisionTrace, RoutingDecision
from vsr_extproc.core.rules import NodeTrace


def explain_data(decision: RoutingDecision) -> dict[str, Any]:
    """Everything about one decision as JSON-able data."""
    return {
        "decision": decision.name,
        "outcome": decision.outcome.value,
        "model": decision.model.name if decision.model else None,
        "upstream_model": decision.model.upstream_model if decision.model else None,
        "cluster": decision.model.cluster if decision.model else None,
        "confidence": round(decision.confidence, 6),
        "reason": decision.reason,
        "problem": decision.problem,
        "fallthrough": list(decision.fallthrough),
        "skipped_models": [
            {"decision": s.decision, "model": s.model, "reason": s.reason} for s in decision.skipped
        ],
        "signals": [
            {
                "signal": key,
                "family": result.family,
                "name": result.name,
                "matched": result.matched,
                "confidence": round(result.confidence, 6),
                "value": result.value,
                "latency_ms": round(result.latency_ms, 3),
                "error": result.error,
                **({"skipped": True} if result.skipped else {}),
            }
            for key, result in decision.results.items()
        ],
        "decisions": [_trace_data(trace) for trace in decision.traces],
    }


def _trace_data(trace: DecisionTrace) -> dict[str, Any]:
    return {
        "name": trace.name,
        "priority": trace.priority,
        "matched": trace.matched,
        "confidence": round(trace.confidence, 6),
        "decided_by": trace.decided_by,
        "rule": node_data(trace.rule) if trace.rule is not None else None,
    }


def node_data(node: NodeTrace) -> dict[str, Any]:
    data: dict[str, Any] = {
        "path": node.path,
        "kind": node.kind,
        "matched": node.matched,
        "confidence": round(node.confidence, 6),
    }
    if node.signal is not None:
        data["signal"] = node.signal
    if node.error is not None:
        data["error"] = node.error
    if node.children:
        data["children"] = [node_data(child) for child in node.children]
    return data


def explain_table(decision: RoutingDecision, title: str = "") -> str:
    """A readable, fixed-width rendering of ``explain_data``."""
    data = explain_data(decision)
    lines = [title] if title else []
    model = data["model"] or "-"
    lines.append(
        f"decision  {data['decision']}  ({data['outcome']}, model {model}, "
        f"confidence {data['confidence']:.3f})"
    )
    lines.append(f"why       {data['reason']}")
    if data["problem"]:
        lines.append(f"problem   {data['problem']}")
    for skipped in data["skipped_models"]:
        lines.append(f"skipped   {skipped['model']} of {skipped['decision']}: {skipped['reason']}")
    lines.append("")
    lines.append(
        _table(
            ("signal", "matched", "conf", "ms", "value / error"),
            [
                (
                    s["signal"],
                    "yes" if s["matched"] else "no",
                    f"{s['confidence']:.3f}",
                    f"{s['latency_ms']:.2f}",
                    s["error"] or _short(s["value"]),
                )
                for s in data["signals"]
            ],
        )
    )
    lines.append("")
    lines.append(
        _table(
            ("decision", "priority", "matched", "conf", "decided by"),
            [
                (
                    d["name"],
                    str(d["priority"]),
                    "yes" if d["matched"] else "no",
                    f"{d['confidence']:.3f}",
                    d["decided_by"] or "-",
                )
                for d in data["decisions"]
            ],
        )
    )
    return "\n".join(lines)


def _short(value: Any, width: int = 60) -> str:
    text = "-" if value is None else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    if not rows:
        return f"({header[0]}s: none evaluated)"
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    render = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
        for row in (header, *rows)
    ]
    render.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(render)
