"""The ``vsr-extproc`` command line."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from vsr_extproc.errors import ConfigError, RequestError


def main(argv: Sequence[str] | None = None) -> int:
    # OpenMP threads that spin while waiting steal the cores other threads need (measured:
    # loading the models on a busy 2-core machine took minutes instead of seconds)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # numpy's and scipy's BLAS only see small products here (chunks × domain examples); the
    # model runtimes own the cores. Threaded, waking its sleeping workers turned a 0.1 ms
    # domain score into 2 ms (median; up to 11) at the end of a 2,000-token decision.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    if args.run is not _serve:
        from vsr_extproc import logs

        # a command's own output (JSON reports, tables) owns stdout; warnings go to stderr
        logs.configure("warning", json=False, cache=False)
    try:
        return int(args.run(args))
    except ConfigError as exc:
        _print_config_error(exc)
        return 2
    except KeyboardInterrupt:
        return 130


def _print_config_error(exc: ConfigError, path: Path | None = None) -> None:
    source = exc.source or path
    where = f"{source}: " if source else ""
    print(f"{where}invalid config:", file=sys.stderr)
    for problem in exc.problems:
        print(f"  {problem}", file=sys.stderr)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vsr-extproc",
        description="A multimodal semantic router that runs as an Envoy external processor.",
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the ext_proc gRPC service")
    serve.add_argument("--config", required=True, type=Path)
    serve.add_argument("--listen", help="host:port (overrides server.listen)")
    serve.add_argument("--admin-listen", help="host:port of the HTTP admin port (admin.listen)")
    _logging_options(serve)
    serve.set_defaults(run=_serve)

    validate = commands.add_parser(
        "validate",
        help="check config files and say what each holds (the models load once for all)",
    )
    validate.add_argument("config", type=Path, nargs="+")
    validate.set_defaults(run=_validate)

    explain = commands.add_parser(
        "explain", help="decide requests without forwarding them, and say why"
    )
    explain.add_argument("--config", required=True, type=Path)
    explain.add_argument("--json", action="store_true", help="one JSON object per request")
    explain.add_argument(
        "--answer",
        type=Path,
        help="also decide the response phase on this answer: a recorded chat.completion, a "
        "recorded stream (data: lines) or a scripted reply {content, tool_calls}",
    )
    explain.add_argument(
        "files", nargs="+", help="OpenAI request JSON files, or - for JSON Lines on stdin"
    )
    explain.set_defaults(run=_explain)

    replay = commands.add_parser(
        "replay",
        help="decide recorded requests again with another config; show what would change",
        description="Decide every recorded request that kept its content (replay.keep_content) "
        "again with another config, and count which decisions would change. Records keep "
        "only redacted text, so PII-sensitive decisions see placeholders (<EMAIL_1>), not "
        "values; images are kept as hashes, so vision, image and image_text signals reuse "
        "the recorded result for the same signal key (or fail, and on_error applies).",
    )
    replay.add_argument(
        "--store",
        required=True,
        help="the replay SQLite file, or the shared database: postgresql://user@host:port/db "
        "(PGPASSWORD and libpq's other variables fill in the rest)",
    )
    replay.add_argument("--config", type=Path, help="the config to try (not with --list)")
    replay.add_argument(
        "--since", help="only records from this time: ISO-8601, or an age such as 2h, 30m, 7d"
    )
    replay.add_argument("--decision", help="only records of this request decision")
    replay.add_argument(
        "--status", help="only records whose answer had this status: 200, or a class: 5xx"
    )
    replay.add_argument(
        "--finish-reason", help="only records whose answer ended so: stop, length, tool_calls"
    )
    replay.add_argument(
        "--response-decision", help="only records whose answer this response decision acted on"
    )
    replay.add_argument(
        "--tool", help="only records whose answer called a tool matching this pattern: *memory*"
    )
    replay.add_argument(
        "--list",
        action="store_true",
        help="list the chosen records (id, time, decision, model, answer) instead of a what-if",
    )
    replay.add_argument("--json", action="store_true", help="print the report as JSON")
    replay.set_defaults(run=_replay)

    envoy = commands.add_parser(
        "envoy-config", help="print the Envoy bootstrap derived from a router config"
    )
    envoy.add_argument("config", type=Path)
    envoy.add_argument("--out", type=Path, help="write to this file instead of stdout")
    envoy.set_defaults(run=_envoy_config)

    standin = commands.add_parser(
        "standin", help="run stand-in upstream model servers for a config's clusters"
    )
    standin.add_argument("--config", required=True, type=Path)
    standin.set_defaults(run=_standin)

    evaluate = commands.add_parser(
        "eval", help="measure a signal on its evaluation sets; print and write a report"
    )
    evaluate.add_argument(
        "task",
        choices=("domain", "pii", "names", "jailbreak", "safety", "images", "decisions"),
        help="decisions: what a config (--config, default the demo's) decides for the "
        "split's ordinary requests to an assistant",
    )
    evaluate.add_argument("--data", type=Path, help="JSON Lines (default: the shipped set)")
    evaluate.add_argument(
        "--split",
        choices=("dev", "test"),
        default="test",
        help="domain (MMLU's questions), pii (its credentials in sentences), names, "
        "jailbreak, safety, images, decisions: which frozen split (default: test)",
    )
    evaluate.add_argument(
        "--budget-ms",
        type=int,
        help="images: OCR budget per image (default: ocr.timeout_ms; 0: none)",
    )
    evaluate.add_argument(
        "--more",
        nargs=2,
        metavar=("SCENARIO", "SCALE"),
        help="images: SCALE times the split's images of SCENARIO (mrz, code, …), drawn the "
        "same way beyond the corpus, instead of the corpus",
    )
    evaluate.add_argument("--config", type=Path, help="take banks and settings from a config")
    evaluate.add_argument("--precision", choices=("fp32", "bf16", "int8"))
    evaluate.add_argument("--runtime", choices=("torch", "onnxruntime"))
    evaluate.add_argument("--report", type=Path, help="JSON report path (default: eval-TASK.json)")
    evaluate.set_defaults(run=_eval)

    embed = commands.add_parser(
        "embed-images",
        help="write the production path's L2-normalised SigLIP image embeddings (.npy)",
    )
    embed.add_argument("--model", required=True, help="SigLIP checkpoint directory or hub id")
    embed.add_argument("--precision", choices=("fp32", "bf16", "int8"), default="fp32")
    embed.add_argument("--out", required=True, type=Path, help="FILE.npy")
    embed.add_argument("images", nargs="+", type=Path, help="one row per image, in this order")
    embed.set_defaults(run=_embed_images)

    parity = commands.add_parser(
        "parity", help="compare the production vision path with the transformers reference"
    )
    parity.add_argument("--model", required=True, help="SigLIP checkpoint directory or hub id")
    parity.add_argument("--images", required=True, type=Path, help="a directory of images")
    parity.add_argument("--precision", choices=("fp32", "bf16", "int8"), default="fp32")
    parity.add_argument("--exif-orientation", action="store_true", help="rotate by EXIF first")
    parity.set_defaults(run=_parity)

    probe = commands.add_parser(
        "probe", help="inversion rate of labels grouped by vertical (for real checkpoints)"
    )
    probe.add_argument("--model", required=True, help="SigLIP checkpoint directory or hub id")
    probe.add_argument("--probes", required=True, type=Path, help="YAML or JSON probe file")
    probe.add_argument("--precision", choices=("fp32", "bf16", "int8"), default="fp32")
    probe.set_defaults(run=_probe)

    demo = commands.add_parser(
        "demo", help="start Envoy, the processor and stand-in upstreams; send sample requests"
    )
    demo.add_argument(
        "--config", type=Path, help="a router config (default: the demo's, deploy/demo/router.yaml)"
    )
    demo.add_argument("--port", type=int, help="Envoy's listener port (default from config)")
    demo.add_argument(
        "--once", action="store_true", help="exit after printing the table (no serving)"
    )
    demo.add_argument(
        "--vision-model",
        help="a SigLIP checkpoint (directory or hub id) for the vision scenarios",
    )
    demo.set_defaults(run=_demo)
    return parser


def _logging_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-level", default="info")
    style = parser.add_mutually_exclusive_group()
    style.add_argument("--log-json", dest="log_json", action="store_true", default=None)
    style.add_argument("--log-pretty", dest="log_json", action="store_false")


def _serve(args: argparse.Namespace) -> int:
    from vsr_extproc import logs
    from vsr_extproc.service import serve

    logs.configure(args.log_level, json=args.log_json)
    # Signal work in Python threads hands results to the event loop and the model thread;
    # a thread that is ready waits for the GIL up to the switch interval while another
    # runs Python code. At Python's default 5 ms a 2,000-token decision lost up to 5 ms
    # at each of its hand-offs (measured p50 109-118 ms; at 0.5 ms, 102 ms).
    sys.setswitchinterval(0.0005)
    asyncio.run(serve(args.config, args.listen, args.admin_listen))
    return 0


def _validate(args: argparse.Namespace) -> int:
    """Each config compiled in turn on one set of resources, as a reload compiles the next
    config: a model two configs share loads once. A config that fails is reported and the
    others are still checked."""
    from vsr_extproc.config.compile import load_policy
    from vsr_extproc.signals.base import Resources

    resources = Resources()
    failed = 0
    for path in args.config:
        try:
            config, policy = load_policy(path, resources)
        except ConfigError as exc:
            _print_config_error(exc, path)
            failed += 1
            continue
        defined = sum(len(entries) for _, entries in config.signals)
        print(
            f"{path}: ok — {len(policy.models)} models, {defined} signals "
            f"({len(policy.signals)} referenced), {len(policy.decisions)} decisions, "
            f"default {policy.default.name!r}"
        )
    return 2 if failed else 0


def _requests(files: Sequence[str]) -> Iterator[tuple[str, bytes]]:
    for name in files:
        if name == "-":
            for number, line in enumerate(sys.stdin.buffer, start=1):
                if line.strip():
                    yield f"stdin:{number}", line
        else:
            yield name, Path(name).read_bytes()


def _explain(args: argparse.Namespace) -> int:
    from vsr_extproc.config.compile import load_policy
    from vsr_extproc.core.explain import explain_data, explain_table
    from vsr_extproc.core.router import Router

    _, policy = load_policy(args.config)
    router = Router(policy)
    failures = 0
    answer = None
    if args.answer is not None:
        from vsr_extproc.response.explain import answer_from_bytes

        try:
            answer = answer_from_bytes(args.answer.read_bytes())
        except (OSError, ValueError) as exc:
            print(f"--answer {args.answer}: {exc}", file=sys.stderr)
            return 2

    async def run() -> None:
        nonlocal failures
        for source, body in _requests(args.files):
            try:
                decision = await router.explain(body)
                response = _explain_answer(policy, answer, body)
            except RequestError as exc:
                failures += 1
                error = {"source": source, "error": str(exc), "status": exc.status}
                if args.json:
                    print(orjson.dumps(error).decode())
                else:
                    print(f"== {source}\nrejected ({exc.status}): {exc}\n")
                continue
            if args.json:
                data: dict[str, Any] = {"source": source, **explain_data(decision)}
                if response is not None:
                    data["response"] = response
                print(orjson.dumps(data, default=str).decode())
            else:
                print(explain_table(decision, title=f"== {source}"))
                if response is not None:
                    from vsr_extproc.response.explain import answer_table

                    print(answer_table(response))
                print()

    asyncio.run(run())
    return 1 if failures else 0


def _explain_answer(policy: Any, answer: Any, body: bytes) -> dict[str, Any] | None:
    """The response phase on ``answer`` for this request (None without an answer)."""
    if answer is None:
        return None
    from vsr_extproc.core.normalize import normalize
    from vsr_extproc.response.explain import explain_answer

    answer.memo.clear()  # one answer, explained for each request afresh
    return explain_answer(policy.responses, answer, normalize(body))


def _replay(args: argparse.Namespace) -> int:
    from vsr_extproc.config.compile import load_policy, replay_store_config
    from vsr_extproc.errors import ReplayStoreError
    from vsr_extproc.replay.store import open_store
    from vsr_extproc.replay.whatif import RecordFilter, format_whatif, parse_since, whatif

    try:
        since = parse_since(args.since) if args.since else None
        chosen = RecordFilter(
            args.decision, args.status, args.finish_reason, args.response_decision, args.tool
        )
    except ValueError as exc:
        print(f"replay: {exc}", file=sys.stderr)
        return 2
    if (args.config is None) != args.list:
        print("replay: give --config for a what-if, or --list", file=sys.stderr)
        return 2
    settings = replay_store_config(args.store)
    policy = load_policy(args.config)[1] if args.config is not None else None
    try:
        store = open_store(settings, readonly=True)
    except (FileNotFoundError, ReplayStoreError) as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        records = chosen.select(store.scan(since))
        if policy is None:
            return _list_records(records, as_json=args.json)
        report = whatif(records, policy)
    except ReplayStoreError as exc:
        print(f"reading the replay store failed: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()
    print(orjson.dumps(report.data()).decode() if args.json else format_whatif(report))
    return 0


def _list_records(records: Any, *, as_json: bool) -> int:
    """One line per record: its id, time, decision, model and how it was answered."""
    import datetime

    for record in records:
        response = record.response or {}
        usage = response.get("usage") or {}
        summary = {
            "id": record.id,
            "time": datetime.datetime.fromtimestamp(record.time, datetime.UTC).isoformat(),
            "decision": record.decision,
            "outcome": record.outcome,
            "model": record.model,
            "status": response.get("status"),
            "finish_reason": response.get("finish_reason"),
            "output_tokens": usage.get("output_tokens"),
            "response_decision": response.get("decision"),
            "tool_calls": response.get("tool_calls") or [],
        }
        if as_json:
            print(orjson.dumps(summary).decode())
        else:
            print("  ".join("-" if value in (None, []) else str(value)
                            for value in summary.values()))  # fmt: skip
    return 0


def _envoy_config(args: argparse.Namespace) -> int:
    from vsr_extproc.config.compile import read_config
    from vsr_extproc.config.envoy import render_bootstrap

    config, _ = read_config(args.config)
    text = render_bootstrap(config, source=str(args.config))
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def _standin(args: argparse.Namespace) -> int:
    from vsr_extproc.config.compile import read_config
    from vsr_extproc.upstream.standin import run_forever, specs_for

    config, _ = read_config(args.config)
    asyncio.run(run_forever(specs_for(config)))
    return 0


def _eval(args: argparse.Namespace) -> int:
    from vsr_extproc import eval as evaluation

    more = None
    if args.more is not None:
        scenario, scale = args.more
        from vsr_extproc.eval.imagegen import COUNTS, STRESS_SETS

        if scenario not in (*COUNTS, *STRESS_SETS):
            raise SystemExit(
                f"--more: SCENARIO must be one of {', '.join([*COUNTS, *STRESS_SETS])}, "
                f"not {scenario!r}"
            )
        if args.split not in STRESS_SETS.get(scenario, (args.split,)):
            raise SystemExit(
                f"--more: {scenario} is drawn for --split {' or '.join(STRESS_SETS[scenario])} only"
            )
        if not scale.isdigit() or int(scale) < 1:
            raise SystemExit(f"--more: SCALE must be a whole number of at least 1, not {scale!r}")
        more = (scenario, int(scale))
    config = args.config
    if args.task == "decisions" and config is None:
        from vsr_extproc.demo import demo_files

        config = demo_files() / "router.yaml"
    report = evaluation.run(
        args.task, args.data, config, args.precision, args.runtime, args.split,
        args.budget_ms, more,
    )  # fmt: skip
    path = args.report or Path(f"eval-{args.task}.json")
    path.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    print(evaluation.summary(report))
    print(f"report: {path}")
    return 0


def _embed_images(args: argparse.Namespace) -> int:
    from vsr_extproc.runtime.parity import embed_images_to_file

    rows = embed_images_to_file(args.model, args.images, args.out, args.precision)
    print(f"{args.out}: {rows.shape[0]} × {rows.shape[1]} ({args.precision})")
    return 0


def _parity(args: argparse.Namespace) -> int:
    from vsr_extproc.runtime.parity import format_parity, run_parity

    report = run_parity(
        args.model, args.images, args.precision, apply_exif_orientation=args.exif_orientation
    )
    print(format_parity(report))
    return 0 if report.passed else 1


def _probe(args: argparse.Namespace) -> int:
    from vsr_extproc.runtime.parity import format_probe, run_probe

    print(format_probe(run_probe(args.model, args.probes, args.precision)))
    return 0


def _demo(args: argparse.Namespace) -> int:
    from vsr_extproc.demo import demo_files
    from vsr_extproc.demo.run import run_demo

    config = args.config or demo_files() / "router.yaml"
    return run_demo(config, port=args.port, once=args.once, vision_model=args.vision_model)


if __name__ == "__main__":
    raise SystemExit(main())
