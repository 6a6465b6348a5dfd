"""A guard model served beside the router, asked over HTTP.

Llama Guard 3 and 4 (and any model that answers in their format) behind an
OpenAI-compatible chat endpoint — vLLM, SGLang, TGI, llama.cpp's server. The text is sent
as one user turn; the model's chat template wraps it in the guard's task prompt with the
hazard categories, and the model answers ``safe`` or ``unsafe`` with the codes of the
categories it found on the next line (``unsafe\\nS1,S9``).

``P(unsafe)`` is read from the probabilities of the answer's first word where the server
returns them (``logprobs``): the guard's own confidence, the classifier score Llama
Guard's model cards describe for thresholding. A server that returns no probabilities
gives 1 or 0 by the verdict.

Answers are remembered by a digest of the model and the text (a chat resends its earlier
turns). After ``FAILURES_TO_REST`` failures in a row the guard is not asked for
``REST_S`` seconds, then asked again. Every failure — a timeout, a refused connection,
an HTTP error, an answer in another format — raises ``GuardUnavailable`` with a short
reason the trace can carry.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import ssl
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import httpx
import structlog

from vsr_extproc import __version__
from vsr_extproc.errors import GuardUnavailable

log = structlog.get_logger(__name__)

_CODE = re.compile(r"^S\d{1,2}$")
#: tokens read as the answer's first word: the verdict's probability is theirs
_TOP_LOGPROBS = 5
_MAX_TOKENS = 24  # "unsafe", a newline and up to a dozen codes
#: after this many failures in a row the guard is left to rest, not asked for ``REST_S``
#: seconds: a guard that times out would otherwise add its whole timeout to every request
FAILURES_TO_REST = 5
REST_S = 5.0


@dataclass(frozen=True, slots=True)
class GuardVerdict:
    """What the guard said of one text."""

    #: P(unsafe): from the first word's probabilities, else 1 or 0 by the verdict
    unsafe: float
    #: the hazard codes it named (``S1`` …), in its order
    codes: tuple[str, ...]
    #: whether ``unsafe`` came from the model's probabilities
    calibrated: bool


def parse_verdict(answer: dict[str, Any]) -> GuardVerdict:
    """The verdict in an OpenAI chat completion from a Llama Guard model.

    Raises ``GuardUnavailable`` for an answer that is not ``safe`` or ``unsafe`` with
    codes: a model of another kind, or a template that was not the guard's.
    """
    try:
        choice = answer["choices"][0]
        content = choice["message"]["content"] or ""
    except (KeyError, IndexError, TypeError) as error:
        raise GuardUnavailable("the answer is not a chat completion") from error
    lines = [line.strip() for line in str(content).strip().splitlines() if line.strip()]
    verdict = lines[0].lower() if lines else ""
    if verdict not in ("safe", "unsafe"):
        raise GuardUnavailable(f"unexpected answer {str(content)[:40]!r}")
    codes: tuple[str, ...] = ()
    if verdict == "unsafe" and len(lines) > 1:
        codes = tuple(code.strip().upper() for code in lines[1].split(",") if code.strip())
        if not all(_CODE.match(code) for code in codes):
            raise GuardUnavailable(f"unexpected hazard codes {lines[1][:40]!r}")
    probability = _first_word_probability(choice.get("logprobs"))
    if probability is None:
        return GuardVerdict(1.0 if verdict == "unsafe" else 0.0, codes, calibrated=False)
    return GuardVerdict(probability, codes, calibrated=True)


def _first_word_probability(logprobs: Any) -> float | None:
    """P(unsafe) from the first answer token that is not white space: the mass of its
    alternatives that begin ``unsafe`` against those that begin ``safe``."""
    entries = logprobs.get("content") if isinstance(logprobs, dict) else None
    for entry in entries or ():
        if not isinstance(entry, dict) or not str(entry.get("token", "")).strip():
            continue
        alternatives = entry.get("top_logprobs") or [entry]
        mass = {"unsafe": 0.0, "safe": 0.0}
        for alternative in alternatives:
            word = str(alternative.get("token", "")).strip().lower()
            logprob = alternative.get("logprob")
            if not word or not isinstance(logprob, int | float):
                continue
            for verdict in mass:  # "u…" and "s…": a token begins one word or neither
                if verdict.startswith(word):
                    mass[verdict] += math.exp(logprob)
        total = mass["unsafe"] + mass["safe"]
        return mass["unsafe"] / total if total > 0 else None
    return None


class GuardClient:
    """Asks one guard model for verdicts, one request per text, remembered by digest."""

    def __init__(
        self,
        url: str,
        model: str,
        *,
        timeout_s: float,
        api_key: str | None = None,
        ca_file: str | None = None,
        max_chars: int = 8000,
        cache_size: int = 4096,
    ) -> None:
        self.url = url
        self.model = model
        self.timeout_s = timeout_s
        self.max_chars = max_chars
        self.cache_size = cache_size
        self._headers = {"user-agent": f"vsr-extproc/{__version__}"}
        if api_key:
            self._headers["authorization"] = f"Bearer {api_key}"
        self._verify: ssl.SSLContext | bool = True
        if ca_file is not None:
            try:
                self._verify = ssl.create_default_context(cafile=ca_file)
            except (OSError, ssl.SSLError) as error:
                raise ValueError(f"ca_file {ca_file}: {error}") from error
        self._memory: OrderedDict[bytes, GuardVerdict] = OrderedDict()
        self._failures = 0  # in a row
        self._resting_until = 0.0  # time.monotonic()
        # one connection pool per event loop: a client cannot outlive the loop it was made in
        self._clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}

    def request_body(self, text: str) -> dict[str, Any]:
        """What the guard is sent for ``text``: one user turn, its head when it is longer
        than ``max_chars``, the first word's probabilities asked for."""
        return {
            "model": self.model,
            "messages": [{"role": "user", "content": text[: self.max_chars]}],
            "max_tokens": _MAX_TOKENS,
            "temperature": 0,
            "logprobs": True,
            "top_logprobs": _TOP_LOGPROBS,
        }

    async def verdict(self, text: str) -> GuardVerdict:
        """The guard's verdict on ``text``; raises ``GuardUnavailable`` when it gives none
        within ``timeout_s``."""
        key = hashlib.blake2b(
            f"{self.model}\0{text[: self.max_chars]}".encode("utf-8", "surrogatepass"),
            digest_size=16,
        ).digest()
        known = self._memory.get(key)
        if known is not None:
            self._memory.move_to_end(key)
            return known
        now = time.monotonic()
        if now < self._resting_until:
            raise GuardUnavailable(
                f"not asked after {self._failures} failures in a row "
                f"(asked again in {self._resting_until - now:.1f} s)"
            )
        try:
            found = await self._ask(text)
        except GuardUnavailable as error:
            self._failures += 1
            if self._failures == 1:
                log.warning("guard_unavailable", url=self.url, reason=str(error))
            if self._failures >= FAILURES_TO_REST:
                self._resting_until = time.monotonic() + REST_S
            raise
        if self._failures:
            log.info("guard_available", url=self.url, after_failures=self._failures)
        self._failures = 0
        self._memory[key] = found
        if len(self._memory) > self.cache_size:
            self._memory.popitem(last=False)
        return found

    async def _ask(self, text: str) -> GuardVerdict:
        client = self._client()
        try:
            response = await client.post(
                self.url, json=self.request_body(text), timeout=self.timeout_s
            )
        except httpx.TimeoutException as error:
            raise GuardUnavailable(f"no answer within {self.timeout_s * 1000:.0f} ms") from error
        except httpx.HTTPError as error:
            raise GuardUnavailable(f"unreachable: {type(error).__name__}") from error
        if response.status_code != 200:
            raise GuardUnavailable(f"HTTP {response.status_code}")
        try:
            answer = response.json()
        except ValueError as error:
            raise GuardUnavailable("the answer is not JSON") from error
        return parse_verdict(answer)

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            for old in [other for other in self._clients if other.is_closed()]:
                del self._clients[old]
            client = httpx.AsyncClient(
                headers=self._headers,
                verify=self._verify,
                trust_env=False,  # no proxy from the environment between router and guard
            )
            self._clients[loop] = client
        return client

    async def close(self) -> None:
        """Close the connection pool of the running loop (the others went with theirs)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()
