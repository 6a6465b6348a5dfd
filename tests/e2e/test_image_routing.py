"""Images end to end through Envoy, without a SigLIP checkpoint: OCR still routes them."""

from __future__ import annotations

import base64

import httpx
import pytest
from builders import chat, image_part, text_part, user
from stacks import ROOT, post_chat

pytestmark = pytest.mark.e2e

IMAGES = ROOT / "tests" / "data" / "images"


def _ask(http: httpx.Client, text: str, image: str) -> httpx.Response:
    path = IMAGES / image
    kind = "jpeg" if path.suffix == ".jpg" else "png"
    url = f"data:image/{kind};base64,{base64.b64encode(path.read_bytes()).decode()}"
    return post_chat(http, chat(user([text_part(text), image_part(url)])))


@pytest.mark.parametrize("image", ["passport.png", "passport_photo.jpg"])
def test_a_passport_page_reaches_the_restricted_model(http: httpx.Client, image: str) -> None:
    response = _ask(http, "Summarize this.", image)
    assert response.headers["x-vsr-decision"] == "identity_document"
    assert response.headers["x-standin-cluster"] == "restricted_vlm"


@pytest.mark.parametrize("prompt", ["Find the bug in this code.", "Review this"])
def test_a_code_screenshot_showing_a_key_is_flagged(http: httpx.Client, prompt: str) -> None:
    response = _ask(http, prompt, "code_with_key.png")
    assert response.headers["x-vsr-decision"] == "security_review"
    assert response.headers["x-vsr-secret-leak"] == "true"
    received = response.json()["vsr_standin"]
    assert received["received_headers"]["x-vsr-secret-leak"] == "true"
    assert received["received_messages"][0]["role"] == "system"


def test_a_clean_code_screenshot_is_reviewed_without_a_flag(http: httpx.Client) -> None:
    response = _ask(http, "Find the bug in this code.", "code_clean.png")
    assert response.headers["x-vsr-decision"] == "security_review"
    assert "x-vsr-secret-leak" not in response.headers


def test_a_photo_without_text_is_just_an_image_question(http: httpx.Client) -> None:
    response = _ask(http, "What is in this picture?", "photo_car.jpg")
    assert response.headers["x-vsr-decision"] == "image_understanding"
