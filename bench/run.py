"""``make bench``: the numbers the README quotes, from one run on this machine.

Text decisions: the demo config's full set of text signals, driven through the processor's
gRPC service one request at a time, for fresh prompts and for chat turns whose history the
processor has seen before.

Routing overhead (deterministic signals, deploy/examples/rules-only.yaml): a real Envoy in
front of stand-in upstreams, once with the processor and once without it (the same
bootstrap minus the ext_proc filter).
Reports p50/p99 at one request at a time, their difference, the throughput at 32
connections, and the processor's CPU time per request, from which the requests per second
one processor process sustains follow (it is single-threaded, so one core's worth).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
import yaml

from bench.common import decide_once, describe, processor
from bench.loadgen import LoadResult, encode_request, run_load
from vsr_extproc.demo.stack import Stack, prepare_stack

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "deploy" / "demo" / "router.yaml"
RULES_ONLY = ROOT / "deploy" / "examples" / "rules-only.yaml"
SAMPLES = ROOT / "deploy" / "demo" / "requests"
TEXT_SAMPLES = ("01-small-talk", "02-find-the-bug", "03-agent-tool-loop", "07-streamed-chat")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def without_processor(bootstrap_path: Path) -> None:
    """Rewrite a bootstrap: no ext_proc filter, every request to the default model."""
    bootstrap: dict[str, Any] = yaml.safe_load(bootstrap_path.read_text())
    listener = bootstrap["static_resources"]["listeners"][0]
    hcm = listener["filter_chains"][0]["filters"][0]["typed_config"]
    hcm["http_filters"] = [f for f in hcm["http_filters"] if "ext_proc" not in f["name"]]
    routes = hcm["route_config"]["virtual_hosts"][0]["routes"]
    # the first model's route (not the router API's, which may come first)
    model = next(route for route in routes if route["name"].startswith("model-"))
    routes[-1] = {"name": "baseline", "match": {"prefix": "/"}, "route": model["route"]}
    bootstrap_path.write_text(yaml.safe_dump(bootstrap, sort_keys=False))


def start(document: dict[str, Any], workdir: Path, *, processor: bool) -> Stack:
    stack = prepare_stack(document, workdir, ephemeral_ports=True)
    stack.start_standins()
    if processor:
        stack.start_processor()
    else:
        assert stack.envoy_config is not None
        without_processor(stack.envoy_config)
    stack.start_envoy()
    stack.wait_ready(processors=processor)
    return stack


def requests_for(stack: Stack) -> list[bytes]:
    assert stack.config.envoy is not None
    host = f"{stack.config.envoy.listen.address}:{stack.config.envoy.listen.port}"
    bodies = [
        orjson.dumps(orjson.loads((SAMPLES / f"{n}.json").read_bytes())) for n in TEXT_SAMPLES
    ]
    return [encode_request(host, "/v1/chat/completions", body) for body in bodies]


def load(stack: Stack, concurrency: int, duration: float) -> LoadResult:
    assert stack.config.envoy is not None
    listen = stack.config.envoy.listen
    return asyncio.run(
        run_load(
            listen.address,
            listen.port,
            requests_for(stack),
            concurrency=concurrency,
            duration_s=duration,
        )
    )


def describe_load(label: str, result: LoadResult) -> str:
    ok = result.statuses.get(200, 0)
    return (
        f"{label:<34} {result.requests:>7} req  {result.rate:>8.0f} req/s  "
        f"p50 {result.percentile(50):6.2f} ms  p99 {result.percentile(99):6.2f} ms  "
        f"200s {ok}/{result.requests}  errors {result.errors}"
    )


def routing_overhead(duration: float) -> dict[str, Any]:
    document = yaml.safe_load(RULES_ONLY.read_text())
    numbers: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="vsr-bench-") as tmp:
        baseline = start(document, Path(tmp) / "baseline", processor=False)
        try:
            load(baseline, 1, 1.0)  # warm-up
            numbers["baseline_c1"] = load(baseline, 1, duration)
        finally:
            baseline.stop()
        routed = start(document, Path(tmp) / "routed", processor=True)
        try:
            load(routed, 1, 1.0)
            numbers["routed_c1"] = load(routed, 1, duration)
            pid = routed.children["processor"].process.pid
            before = cpu_seconds(pid)
            numbers["routed_c32"] = load(routed, 32, duration)
            numbers["processor_cpu_s"] = cpu_seconds(pid) - before
        finally:
            routed.stop()
    return numbers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measurement")
    parser.add_argument("--samples", type=int, default=40, help="decisions per prompt size")
    parser.add_argument(
        "--only",
        choices=("routing", "text", "fairness", "vision", "responses"),
        help="run one section",
    )
    args = parser.parse_args(argv)
    print(f"vsr-extproc bench — {os.cpu_count()} CPUs, {args.duration:g} s per measurement")
    if args.only in (None, "vision"):
        from bench import vision

        print("\n== images: preprocessing, decisions with vision (SigLIP-base size), OCR")
        vision.main(min(args.samples, 20))
        if args.only == "vision":
            return 0
    if args.only in (None, "text"):
        print(
            "\n== text decisions through the processor's gRPC service (demo config: domain, "
            "pii, jailbreak, safety, language and the rule signals; fresh prompts, one at a time)"
        )
        timings = text_decisions(args.samples)
        for label, runs in timings.items():
            print(describe(label, runs))
        other = statistics.median(timings["500-token prompt, other languages"])
        english = statistics.median(timings["500-token prompt"])
        print(f"500 tokens in other languages vs in English, p50: {other / english:.2f}×")
        # the floor of a fresh decision, measured in this run: the embedding model alone
        for tokens, alone in forward_passes(args.samples).items():
            decided = statistics.median(timings[f"{tokens}-token prompt"])
            print(
                f"{tokens}-token prompt: the embedding model alone (tokenize, chunk, forward "
                f"passes) p50 {alone:.1f} ms; the decision takes {decided / alone:.2f}× that"
            )
        if args.only == "text":
            return 0
    if args.only in (None, "fairness"):
        from bench import fairness

        print("\n== fairness: small requests beside 2 MB requests (processor's gRPC service)")
        fairness.report(fairness.main(args.samples))
        if args.only == "fairness":
            return 0
    if args.only in (None, "responses"):
        from bench import responses

        print(
            "\n== the response phase: a streamed answer of 40 events, and the same text as "
            "one JSON answer, through Envoy, without and with response processing"
        )
        responses.main(args.samples * 3)
        if args.only == "responses":
            return 0
    print("\n== routing overhead: Envoy → stand-in upstream, deterministic signals only")
    numbers = routing_overhead(args.duration)
    base, routed, loaded = numbers["baseline_c1"], numbers["routed_c1"], numbers["routed_c32"]
    print(describe_load("without processor, 1 connection", base))
    print(describe_load("with processor, 1 connection", routed))
    print(describe_load("with processor, 32 connections", loaded))
    added50 = routed.percentile(50) - base.percentile(50)
    added99 = routed.percentile(99) - base.percentile(99)
    per_request_ms = numbers["processor_cpu_s"] / max(loaded.requests, 1) * 1000
    print(f"added by the processor: p50 {added50:+.2f} ms, p99 {added99:+.2f} ms")
    print(
        f"processor CPU per request: {per_request_ms:.3f} ms → one process sustains "
        f"≈{1000 / per_request_ms:,.0f} req/s on one core"
    )
    return 0


def _prompt(
    rng: random.Random,
    sentences: list[str],
    tokens: int,
    tokenizer: Any,
    head: str = "Request",
    errands: float = 0.0,
) -> str:
    """A fresh text of about ``tokens`` tokens (fresh, so no cache can answer it); with
    ``errands``, that share of its sentences an imperative (``_ERRANDS``)."""
    words = [f"{head} {rng.randrange(10**9)}."]
    while len(tokenizer(" ".join(words), add_special_tokens=False)["input_ids"]) < tokens:
        if errands and rng.random() < errands:
            words.append(rng.choice(_ERRANDS).format(n=rng.randrange(10**6)))
        else:
            words.append(rng.choice(sentences))
    return " ".join(words)


async def _chat_turns(
    stub: Any, rng: random.Random, sentences: list[str], tokens: int, tokenizer: Any, samples: int
) -> list[float]:
    """A chat client resends the history every turn: ``tokens`` in all, the newest ~60 new."""
    runs = []
    for index in range(samples + 3):
        history: list[dict[str, str]] = [
            {"role": "system", "content": "You are a helpful assistant for a small company."}
        ]
        while True:
            text = " ".join(m["content"] for m in history)
            if len(tokenizer(text, add_special_tokens=False)["input_ids"]) >= tokens - 60:
                break
            history.append({"role": "user", "content": _prompt(rng, sentences, 60, tokenizer)})
            history.append({"role": "assistant", "content": rng.choice(sentences)})
        # the history was seen before (the previous turn sent it); only the last is new
        await decide_once(stub, orjson.dumps({"model": "auto", "messages": history}))
        newest = {"role": "user", "content": _prompt(rng, sentences, 60, tokenizer)}
        body = orjson.dumps({"model": "auto", "messages": [*history, newest]})
        elapsed, _ = await decide_once(stub, body)
        if index >= 3:
            runs.append(elapsed)
    return runs


# ordinary requests in seven other languages, written for this benchmark
_OTHER_LANGUAGES = (
    "Geçen hafta sipariş ettiğim ürün hâlâ gelmedi, kargo numarası da çalışmıyor.",
    "Bu raporu yarınki toplantı için üç maddede özetleyebilir misin?",
    "Können Sie mir sagen, wann mein Paket ankommt? Die Sendungsnummer funktioniert nicht.",
    "Bitte erkläre mir den Unterschied zwischen einer GmbH und einer Aktiengesellschaft.",
    "¿Podrías ayudarme a escribir una carta de agradecimiento para mi profesora?",
    "Quiero cambiar la fecha de mi reserva del hotel al próximo viernes.",
    "我上周订购的商品还没有到，请帮我查一下订单的状态。",
    "请把这段话翻译成英文，语气要正式一些。",
    "هل يمكنك أن تشرح لي كيف أحسب الضريبة على دخلي الشهري؟",
    "أريد تغيير موعد الطبيب إلى الأسبوع القادم من فضلك.",
    "Подскажите, пожалуйста, как восстановить доступ к моему аккаунту.",
    "Составь, пожалуйста, список покупок на неделю для семьи из четырёх человек.",
    "来週の会議の議題を三つ考えてください。",
    "この文章をもう少し丁寧な表現に直してもらえますか。",
)


_ERRANDS = (
    "Please send the signed form for order {n} to the front desk by Friday.",
    "Reply to this message to confirm booking {n}.",
    "Click here to see offer {n} before it ends.",
    "Forward ticket {n} to the support team if it is still open.",
    "Let me know if invoice {n} needs another approval.",
    "Add item {n} to the shared list for next week.",
)


async def _agent_turns(
    stub: Any,
    rng: random.Random,
    sentences: list[str],
    tokens: int,
    tokenizer: Any,
    samples: int,
    pasted: bool = False,
) -> list[float]:
    """An agent's turn: a short request, the tool call, and a fresh tool result; or, with
    ``pasted``, the same text pasted into the user's request instead."""
    runs = []
    for index in range(samples + 3):
        call = {"id": "1", "type": "function", "function": {"name": "inbox", "arguments": "{}"}}
        # an inbox's text, one sentence in four an errand (a clause the jailbreak signal
        # reads as a possible order)
        inbox = _prompt(rng, sentences, tokens, tokenizer, "Inbox export", 0.25)
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": _prompt(rng, sentences, 30, tokenizer)},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "1", "content": inbox},
        ]
        if pasted:
            messages = [{"role": "user", "content": f"Summarise this for me:\n\n{inbox}"}]
        elapsed, _ = await decide_once(stub, orjson.dumps({"model": "auto", "messages": messages}))
        if index >= 3:
            runs.append(elapsed)
    return runs


def _domain_sentences() -> list[str]:
    """The domain bank's example requests, of which the benchmark's prompts are built."""
    bank = yaml.safe_load((ROOT / "vsr_extproc" / "banks" / "domains.yaml").read_text())
    return [s for spec in bank["domains"].values() for s in spec["examples"]]


def forward_passes(samples: int) -> dict[int, float]:
    """p50 of the demo config's embedding model over fresh prompts of each size, alone in
    this process: tokenization, chunks and forward passes as the processor makes them."""
    import time

    from vsr_extproc.config.compile import parse_config
    from vsr_extproc.runtime.embedding import load_text_encoder, pass_bounds

    settings = parse_config(yaml.safe_load(DEMO.read_text())).text.embedding
    encoder = load_text_encoder(
        settings.model, precision=settings.precision, runtime=settings.runtime
    )
    sentences = _domain_sentences()
    rng = random.Random(8)
    result = {}
    for tokens in (500, 2000):
        runs = []
        for index in range(samples + 3):
            prompt = _prompt(rng, sentences, tokens, encoder.tokenizer)
            started = time.perf_counter()
            plan = encoder.chunk(prompt, settings.window_tokens, settings.overlap_tokens)
            for start, end in pass_bounds(len(plan), settings.max_batch):
                encoder.forward([chunk.token_ids for chunk in plan[start:end]])
            if index >= 3:
                runs.append((time.perf_counter() - started) * 1000)
        result[tokens] = statistics.median(runs)
    return result


def text_decisions(samples: int) -> dict[str, list[float]]:
    """p50/p99 of full text decisions through the processor's gRPC service, per prompt size."""
    import grpc
    from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as ext_proc_grpc
    from transformers import AutoTokenizer

    from vsr_extproc.runtime.embedding import default_model_path

    tokenizer = AutoTokenizer.from_pretrained(str(default_model_path()))
    tokenizer.model_max_length = sys.maxsize  # counting tokens, not feeding the model
    sentences = _domain_sentences()
    rng = random.Random(7)
    document = yaml.safe_load(DEMO.read_text())
    timings: dict[str, list[float]] = {}
    with processor(document) as target:

        async def drive() -> None:
            async with grpc.aio.insecure_channel(target) as channel:
                stub = ext_proc_grpc.ExternalProcessorStub(channel)
                for tokens in (500, 2000):
                    runs = []
                    for index in range(samples + 3):
                        prompt = _prompt(rng, sentences, tokens, tokenizer)
                        body = orjson.dumps(
                            {"model": "auto", "messages": [{"role": "user", "content": prompt}]}
                        )
                        elapsed, _ = await decide_once(stub, body)
                        if index >= 3:  # warm-up
                            runs.append(elapsed)
                    timings[f"{tokens}-token prompt"] = runs
                # the same size in other languages: the jailbreak signal reads them again with
                # its multilingual model (signals/crosslingual.py)
                runs = []
                for index in range(samples + 3):
                    prompt = _prompt(rng, list(_OTHER_LANGUAGES), 500, tokenizer)
                    body = orjson.dumps(
                        {"model": "auto", "messages": [{"role": "user", "content": prompt}]}
                    )
                    elapsed, _ = await decide_once(stub, body)
                    if index >= 3:
                        runs.append(elapsed)
                timings["500-token prompt, other languages"] = runs
                for tokens in (500, 2000):
                    timings[f"{tokens}-token chat, newest turn ~60"] = await _chat_turns(
                        stub, rng, sentences, tokens, tokenizer, samples
                    )
                timings["agent turn, 500-token tool result"] = await _agent_turns(
                    stub, rng, sentences, 500, tokenizer, samples
                )
                timings["500-token text pasted in a request"] = await _agent_turns(
                    stub, rng, sentences, 500, tokenizer, samples, pasted=True
                )

        asyncio.run(drive())
    return timings


if __name__ == "__main__":
    sys.exit(main())
