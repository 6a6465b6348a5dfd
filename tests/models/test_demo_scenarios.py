"""The demo policy's four image scenarios, decided from given signal results.

The demo ships without a SigLIP checkpoint, so its vision signals fail there; these cases
show what the same policy decides when they work, and when they do not.
"""

from __future__ import annotations

from typing import Any

import pytest
from builders import PNG_1X1, body, chat, data_url, image_part, text_part, user
from stacks import DEMO, demo_document

from vsr_extproc.config.compile import compile_policy, parse_config
from vsr_extproc.core.decision import decide
from vsr_extproc.core.normalize import normalize
from vsr_extproc.core.policy import Policy
from vsr_extproc.core.signals import SignalResult
from vsr_extproc.signals.base import Resources

pytestmark = pytest.mark.models

FAILED = "no SigLIP checkpoint is configured"


@pytest.fixture(scope="module")
def policy() -> Policy:
    assert DEMO.exists()
    return compile_policy(parse_config(demo_document()), Resources())


def _results(policy: Policy, matched: set[str], failed: set[str]) -> dict[str, SignalResult]:
    results = {}
    for key in policy.signals:
        family, name = key.split(".")
        error = FAILED if key in failed else None
        hit = key in matched
        results[key] = SignalResult(family, name, hit, 1.0 if hit else 0.0, None, 1.0, error)
    return results


CASES: list[tuple[str, str, set[str], set[str], str]] = [
    ("passport, no checkpoint", "Summarize this.",
     {"modality.has_image", "image_text.passport_mrz"},
     {"vision.identity_document", "vision.medical_image"}, "identity_document"),
    ("passport seen by vision only", "Summarize this.",
     {"modality.has_image", "vision.identity_document"}, set(), "identity_document"),
    ("chest x-ray with a checkpoint", "What does this show?",
     {"modality.has_image", "vision.medical_image"}, set(), "medical_imaging"),
    ("chest x-ray, no checkpoint", "What does this show?",
     {"modality.has_image"}, {"vision.identity_document", "vision.medical_image"},
     "image_understanding"),
    ("code screenshot", "Find the bug in this code.",
     {"modality.has_image", "image_text.code_screenshot", "keyword.code_words"},
     {"vision.identity_document", "vision.medical_image"}, "security_review"),
    ("code screenshot, a prompt without a word about code", "Review this",
     {"modality.has_image", "image_text.code_screenshot"},
     {"vision.identity_document", "vision.medical_image"}, "security_review"),
    ("a credential in an image that is not code", "Thoughts?",
     {"modality.has_image", "image_text.secrets_in_image"},
     {"vision.identity_document", "vision.medical_image"}, "security_review"),
    ("code screenshot whose OCR ran out after a secret was read", "Find the bug in this code.",
     {"modality.has_image", "image_text.code_screenshot", "keyword.code_words",
      "image_text.secrets_in_image"},
     {"vision.identity_document", "vision.medical_image"}, "security_review"),
    ("driving licence photo, no checkpoint", "Summarize this.",
     {"modality.has_image", "image_text.document_photo"},
     {"vision.identity_document", "vision.medical_image"}, "identity_document"),
    ("medical question + car photo", "My chest hurts when I breathe in. Is it serious?",
     {"modality.has_image", "domain.medical"}, set(), "out_of_domain_image"),
    ("medical question + x-ray", "My chest hurts when I breathe in. Is it serious?",
     {"modality.has_image", "domain.medical", "vision.medical_image"}, set(),
     "medical_imaging"),
    ("medical question + car photo, no checkpoint",
     "My chest hurts when I breathe in. Is it serious?",
     {"modality.has_image", "domain.medical"}, {"vision.medical_image"},
     "image_understanding"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("prompt", "matched", "failed", "decision"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_scenario(
    policy: Policy, prompt: str, matched: set[str], failed: set[str], decision: str
) -> None:
    request = normalize(body(chat(user([text_part(prompt), image_part(data_url(PNG_1X1))]))))
    verdict = decide(policy, request, _results(policy, matched, failed))
    assert verdict.name == decision


def test_security_review_flags_a_secret_for_the_upstream_and_the_client(
    policy: Policy,
) -> None:
    action: Any = next(d for d in policy.decisions if d.name == "security_review").action
    assert ("image_text.secrets_in_image", "x-vsr-secret-leak", "true") in action.signal_headers
