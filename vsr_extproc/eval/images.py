"""``vsr-extproc eval images``: the ``image_text`` detections on the generated image corpus.

Each image of one split (``eval.imagegen``) is decoded and read by the router's own OCR
engine under the configured per-image budget, then every detection runs on what OCR read,
as the ``image_text`` signals of the demo config do. Reported per scenario and detection:
recall (of the images that should match), precision (over the images where the detection
is scored), OCR+detection latency p50/p95, and every miss and false alarm with the stage
that failed:

* ``budget``: OCR stopped at its budget before reading everything;
* ``detector``: the detection fails even on the exact text drawn on the image;
* ``ocr``: the detection works on the drawn text, not on what OCR read (characters lost
  or confused, lines split, merged or out of order).
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from vsr_extproc.eval import imagegen

DETECTIONS = ("mrz", "document", "code", "secrets")
MORE_FROM = 100  # the first index of the images drawn beyond the corpus (``--more``)


@dataclass(frozen=True)
class Outcome:
    sample: imagegen.Sample
    matched: dict[str, bool]
    on_truth: dict[str, bool]
    complete: bool
    seconds: float
    lines: int


def detectors() -> dict[str, Any]:
    """One detector per detection, configured as in the demo config."""
    from vsr_extproc.signals.image_text import ImageTextEntry, TextDetector

    entries = {
        "mrz": ImageTextEntry(name="passport_mrz", detect="mrz"),
        "document": ImageTextEntry(name="identity_document_text", detect="document"),
        "code": ImageTextEntry(name="code_screenshot", detect="code", min_score=0.5),
        "secrets": ImageTextEntry(name="secrets_in_image", detect="secrets"),
    }
    return {name: TextDetector(entry) for name, entry in entries.items()}


def run_samples(
    samples: list[imagegen.Sample], budget_s: float | None = 2.5, engine: Any = None
) -> list[Outcome]:
    """OCR and every detection on each sample; ``budget_s`` is the per-image OCR budget
    (None: read everything, to measure the detectors apart from the machine's speed)."""
    from vsr_extproc.runtime.images import decode_image
    from vsr_extproc.runtime.ocr import OcrEngine
    from vsr_extproc.signals.image_text import verified_mrz

    engine = engine or OcrEngine(mrz_check=verified_mrz)
    detect = detectors()
    outcomes = []
    for sample in samples:
        started = time.perf_counter()
        decoded = decode_image(sample.data)
        result = engine.read(
            decoded.image,
            orientation=decoded.exif_orientation,
            deadline=None if budget_s is None else time.perf_counter() + budget_s,
        )
        matched = {name: bool(detector(result.text).matched) for name, detector in detect.items()}
        seconds = time.perf_counter() - started
        on_truth = {name: bool(detector(sample.truth).matched) for name, detector in detect.items()}
        outcomes.append(
            Outcome(sample, matched, on_truth, result.complete, seconds, len(result.lines))
        )
    return outcomes


def _stage(outcome: Outcome, name: str, wanted: bool) -> str:
    if wanted and not outcome.complete:
        return "budget"
    return "detector" if outcome.on_truth[name] != wanted else "ocr"


def _ratio(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 3) if denominator else None


def report(outcomes: list[Outcome]) -> dict[str, Any]:
    scenarios: dict[str, Any] = {}
    by_scenario: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        by_scenario[outcome.sample.scenario].append(outcome)
    problems = []
    for scenario, group in by_scenario.items():
        millis = np.array([outcome.seconds * 1000 for outcome in group])
        rows: dict[str, Any] = {}
        for name in DETECTIONS:
            wanted = [o for o in group if name in o.sample.expected]
            unwanted = [o for o in group if name in o.sample.absent]
            if not wanted and not unwanted:
                continue
            hits = sum(o.matched[name] for o in wanted)
            alarms = sum(o.matched[name] for o in unwanted)
            rows[name] = {
                "recall": _ratio(hits, len(wanted)),
                "found": f"{hits}/{len(wanted)}",
                "false_alarms": f"{alarms}/{len(unwanted)}",
            }
            for o in wanted:
                if not o.matched[name]:
                    problems.append(_problem(o, name, "miss", _stage(o, name, True)))
            for o in unwanted:
                if o.matched[name]:
                    problems.append(_problem(o, name, "false alarm", _stage(o, name, False)))
        scenarios[scenario] = {
            "images": len(group),
            "detections": rows,
            "p50_ms": round(float(np.percentile(millis, 50)), 1),
            "p95_ms": round(float(np.percentile(millis, 95)), 1),
            "incomplete": sum(not o.complete for o in group),
        }
    precision = {}
    for name in DETECTIONS:
        scored = [o for o in outcomes if name in o.sample.expected | o.sample.absent]
        true = sum(o.matched[name] for o in scored if name in o.sample.expected)
        false = sum(o.matched[name] for o in scored if name in o.sample.absent)
        precision[name] = _ratio(true, true + false)
    return {
        "images": len(outcomes),
        "split": outcomes[0].sample.split if outcomes else None,
        "scenarios": scenarios,
        "precision": precision,
        "problems": problems,
    }


def _problem(outcome: Outcome, name: str, what: str, stage: str) -> dict[str, Any]:
    return {
        "image": outcome.sample.name,
        "detection": name,
        "what": what,
        "stage": stage,
        "conditions": list(outcome.sample.conditions),
        "ms": round(outcome.seconds * 1000),
        "lines": outcome.lines,
    }


def evaluate(
    split: str = "test",
    limit_per_kind: int | None = None,
    budget_ms: int | None = None,
    more: tuple[str, int] | None = None,
) -> dict[str, Any]:
    """The report for one split, OCR under ``budget_ms`` per image (default: the config's
    ``ocr.timeout_ms``; 0: no budget, which measures OCR and detectors apart from the
    machine's speed). ``more`` (a scenario and a scale) measures images of that scenario
    beyond the corpus instead (``imagegen.more``, from index 100)."""
    if budget_ms is None:
        from vsr_extproc.config.schema import OcrConfig

        budget_ms = OcrConfig().timeout_ms
    if more is None:
        samples = list(imagegen.generate(split, limit_per_kind))
    else:
        samples = list(imagegen.more(split, more[0], MORE_FROM, more[1]))
    result = report(run_samples(samples, budget_ms / 1000 if budget_ms else None))
    result["budget_ms"] = budget_ms
    if more is not None:
        result["more"] = {"scenario": more[0], "scale": more[1], "from": MORE_FROM}
    return result


def summary(result: dict[str, Any]) -> str:
    budget = result.get("budget_ms")
    read = f"OCR budget {budget} ms per image" if budget else "no OCR budget"
    drawn = result.get("more")
    corpus = "image corpus" if drawn is None else f"{drawn['scenario']} images beyond the corpus"
    out = [f"{corpus}, {result['split']} split, {result['images']} images, {read}"]
    width = max([11, *map(len, result["scenarios"])]) + 1
    out.append(
        f"{'scenario':<{width}}{'detection':<10}{'recall':>8}{'found':>9}{'false alarms':>14}"
    )
    for scenario, row in result["scenarios"].items():
        for name, values in row["detections"].items():
            recall = "-" if values["recall"] is None else f"{values['recall']:.3f}"
            out.append(
                f"{scenario:<{width}}{name:<10}{recall:>8}{values['found']:>9}"
                f"{values['false_alarms']:>14}"
            )
        out.append(
            f"{'':<{width}}latency p50 {row['p50_ms']:.0f} ms, p95 {row['p95_ms']:.0f} ms; "
            f"{row['incomplete']} of {row['images']} stopped by the budget"
        )
    precision = ", ".join(
        f"{name} {value:.3f}" for name, value in result["precision"].items() if value is not None
    )
    out.append(f"precision: {precision}")
    stages: dict[str, int] = defaultdict(int)
    for problem in result["problems"]:
        stages[f"{problem['detection']} {problem['what']} at {problem['stage']}"] += 1
    for key, count in sorted(stages.items()):
        out.append(f"  {count:>3} × {key}")
    return "\n".join(out)
