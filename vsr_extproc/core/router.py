"""The routing pipeline: normalize → (fetch images) → signals → decision.

``Router`` holds the current ``Policy`` behind one reference. A request reads the reference
once when it starts and keeps that policy to the end, so a reload never mixes policies
within one request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from vsr_extproc.core.decision import RequestOutcome, RoutingDecision, decide, settled
from vsr_extproc.core.normalize import normalize
from vsr_extproc.core.policy import Policy, RouteAction
from vsr_extproc.core.request import NormalizedRequest
from vsr_extproc.core.runner import SignalRunner
from vsr_extproc.core.signals import SignalResult
from vsr_extproc.errors import RequestTooLarge

#: fills in the bytes of remote images before signals run (the opt-in fetcher)
ImageFetcher = Callable[[NormalizedRequest], Awaitable[None]]


class Router:
    def __init__(
        self,
        policy: Policy,
        runner: SignalRunner | None = None,
        fetcher: ImageFetcher | None = None,
    ) -> None:
        self._policy = policy
        self.runner = runner or SignalRunner()
        self.fetcher = fetcher

    @property
    def policy(self) -> Policy:
        return self._policy

    def swap(self, policy: Policy) -> Policy:
        """Install a new policy; returns the one it replaced."""
        previous, self._policy = self._policy, policy
        return previous

    def parse(self, body: bytes, policy: Policy) -> NormalizedRequest:
        """Parse a body within the policy's limits (``RequestError`` when it is not one)."""
        limit = policy.limits.max_body_bytes
        if len(body) > limit:
            raise RequestTooLarge(
                f"the request body is {len(body)} bytes; this router accepts at most {limit}"
            )
        return normalize(body, max_parts=policy.limits.max_content_parts)

    async def decide(
        self, request: NormalizedRequest, policy: Policy, *, settle: bool = True
    ) -> RoutingDecision:
        """The request's decision; with ``settle``, signals still running once the
        decision is certain are stopped (``decision.settled``), else every one finishes
        (``explain``: the whole trace)."""
        if self.fetcher is not None and any(image.is_remote for image in request.images):
            await self.fetcher(request)

        def certain(known: Mapping[str, SignalResult]) -> bool:
            return settled(policy, request, known)

        results = await self.runner.run(policy.signals, request, certain if settle else None)
        decision = decide(policy, request, results)
        _check_redactable(decision, request, policy.limits.max_redact_chars)
        return decision

    async def explain(self, body: bytes, policy: Policy | None = None) -> RoutingDecision:
        """Decide a raw request body without forwarding it anywhere, every signal run to
        its end so that the trace is whole."""
        policy = policy or self._policy
        return await self.decide(self.parse(body, policy), policy, settle=False)


def _check_redactable(decision: RoutingDecision, request: NormalizedRequest, limit: int) -> None:
    """Refuse to route a request whose decision redacts more text than ``limit``.

    Redaction reads every character (nothing may slip through unredacted), so its work
    cannot be bounded by reading less; it is bounded by refusing what is too large.
    """
    action = decision.decision.action
    if decision.outcome is not RequestOutcome.ROUTED or not isinstance(action, RouteAction):
        return
    if not action.redact:
        return
    size = request.text_chars
    if size > limit:
        raise RequestTooLarge(
            f"decision {decision.name!r} redacts personal data, and this request has {size} "
            f"characters of text; this router redacts at most {limit}"
        )
