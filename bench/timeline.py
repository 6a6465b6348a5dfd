"""Where a fresh text decision's time goes: ``python -m bench.timeline [--tokens N]``.

Decides fresh prompts with the demo config in this process (no gRPC, no Envoy; every
signal run to its end, as ``vsr-extproc explain`` runs them: an ordinary prompt's decision
is the default, which waits for every signal in the service too) and times,
inside each decision, the embedding model's forward passes (on the model's thread) and the
named-entity model's reads (on the signals' thread), from the moment the decision starts.
Prints the p50 of each, how many passes a decision made, and the timelines of a few
decisions. The two models are wrapped here, for this measurement only: a wrapper adds a
clock read and a list append to each call, microseconds against milliseconds.

The README's "Benchmarks" quotes it: the decision is a multiple of the model's own time
(``bench.run``'s text section), and this says what fills the difference.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from bench.run import DEMO, _domain_sentences, _prompt


@dataclass(frozen=True)
class Span:
    """One call of a model inside a decision, in ms from the decision's start."""

    what: str  # "pass" (embedding model) or "names" (named-entity model)
    start: float
    end: float
    size: int  # a pass's tokens; the characters handed to the names model


class Recorder:
    """The spans of the decision being timed (one decision at a time)."""

    def __init__(self) -> None:
        self.origin = time.perf_counter()
        self.spans: list[Span] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            self.origin = time.perf_counter()
            self.spans = []

    def timed(self, what: str, size: Callable[..., int], call: Callable[..., Any]) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            result = call(*args, **kwargs)
            ended = time.perf_counter()
            with self._lock:
                self.spans.append(
                    Span(
                        what,
                        (began - self.origin) * 1000,
                        (ended - self.origin) * 1000,
                        size(*args, **kwargs),
                    )
                )
            return result

        return wrapper


def _tokens(_: Any, batch: Sequence[Sequence[int]]) -> int:
    return sum(len(row) for row in batch)


def _characters(_: Any, texts: Any) -> int:
    return sum(len(text) for text in texts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=500, help="prompt size")
    parser.add_argument("--samples", type=int, default=30, help="decisions timed")
    parser.add_argument("--show", type=int, default=5, help="timelines printed")
    args = parser.parse_args(argv)

    from transformers import AutoTokenizer

    from vsr_extproc.config.compile import load_policy
    from vsr_extproc.core.router import Router
    from vsr_extproc.runtime import embedding, entities

    recorder = Recorder()
    embedding.TextEncoder.forward = recorder.timed(  # type: ignore[method-assign]
        "pass", _tokens, embedding.TextEncoder.forward
    )
    entities.EntityModel.read_many = recorder.timed(  # type: ignore[method-assign]
        "names", _characters, entities.EntityModel.read_many
    )
    _, policy = load_policy(DEMO)
    router = Router(policy)
    tokenizer = AutoTokenizer.from_pretrained(str(embedding.default_model_path()))
    tokenizer.model_max_length = sys.maxsize  # counting tokens, not feeding the model
    rng = random.Random(11)
    sentences = _domain_sentences()

    async def decide_all() -> list[tuple[float, list[Span]]]:
        timed = []
        for index in range(args.samples + 3):
            prompt = _prompt(rng, sentences, args.tokens, tokenizer)
            body = orjson.dumps(
                {"model": "auto", "messages": [{"role": "user", "content": prompt}]}
            )
            recorder.start()
            await router.explain(body)
            elapsed = (time.perf_counter() - recorder.origin) * 1000
            if index >= 3:  # warm-up
                timed.append((elapsed, list(recorder.spans)))
        return timed

    timed = asyncio.run(decide_all())

    def p50(values: list[float]) -> float:
        return statistics.median(values) if values else 0.0

    def total(spans: list[Span], what: str) -> float:
        return sum(span.end - span.start for span in spans if span.what == what)

    passes = [[span for span in spans if span.what == "pass"] for _, spans in timed]
    print(f"{args.tokens}-token prompts, fresh, {len(timed)} decisions in one process")
    print(f"decision                        p50 {p50([t for t, _ in timed]):7.1f} ms")
    print(f"first pass starts at            p50 {p50([p[0].start for p in passes if p]):7.1f} ms")
    print(
        f"forward passes, all             p50 {p50([total(s, 'pass') for _, s in timed]):7.1f} ms"
    )
    print(
        f"names model, all reads          p50 {p50([total(s, 'names') for _, s in timed]):7.1f} ms"
    )
    tails = [elapsed - p[-1].end for (elapsed, _), p in zip(timed, passes, strict=True) if p]
    print(f"after the last pass             p50 {p50(tails):7.1f} ms")
    counts = [len(p) for p in passes]
    print(
        f"passes a decision: p50 {p50([float(c) for c in counts]):.0f}, most {max(counts)}; "
        f"decisions with more passes than the fewest (risky sentences read alone, a pass "
        f"each): {sum(c > min(counts) for c in counts)} of {len(counts)}"
    )
    for elapsed, spans in timed[: args.show]:
        line = ", ".join(f"{s.what} {s.start:.0f}-{s.end:.0f} ({s.size})" for s in spans)
        print(f"  {elapsed:6.1f} ms: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
