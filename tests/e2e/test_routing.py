"""End to end through a real Envoy: every request reaches an upstream or gets an answer."""

from __future__ import annotations

import base64

import httpx
import orjson
import pytest
from builders import PNG_1X1, chat, data_url, image_part, text_part, user
from stacks import ROOT, post_chat

from vsr_extproc.demo.stack import Stack

pytestmark = pytest.mark.e2e

SAMPLES = ROOT / "deploy" / "demo" / "requests"


@pytest.mark.parametrize(
    ("sample", "status", "decision", "model", "cluster"),
    [
        ("01-small-talk", 200, "general_chat", "general", "general_llm"),
        ("02-find-the-bug", 200, "coding", "coder", "code_llm"),
        ("03-agent-tool-loop", 200, "coding", "coder", "code_llm"),
        ("04-describe-image", 200, "image_understanding", "vision", "general_vlm"),
        ("05-linked-image", 200, "confirm_remote_images", "none", None),
        ("06-forbidden", 403, "refuse_forbidden", "none", None),
        ("08-medical-question", 200, "medical_question", "medical", "medical_vlm"),
        ("09-personal-data", 200, "protect_pii", "restricted", "restricted_vlm"),
        ("10-jailbreak", 403, "block_jailbreak", "none", None),
        ("11-german", 200, "not_english", "multilingual", "multilingual_llm"),
        ("12-passport", 200, "identity_document", "restricted", "restricted_vlm"),
        ("13-chest-xray", 200, "image_understanding", "vision", "general_vlm"),
        ("14-code-screenshot", 200, "security_review", "code_review", "code_vlm"),
        ("16-harmful-request", 403, "refuse_unsafe", "none", None),
    ],
)
def test_demo_requests_route_per_decision(
    http: httpx.Client, sample: str, status: int, decision: str, model: str, cluster: str | None
) -> None:
    response = http.post(
        "/v1/chat/completions",
        content=(SAMPLES / f"{sample}.json").read_bytes(),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == status
    assert response.headers["x-vsr-decision"] == decision
    assert response.headers["x-vsr-selected-model"] == model
    assert response.headers.get("x-standin-cluster") == cluster


def test_the_upstream_sees_the_rewritten_model_and_a_correct_length(http: httpx.Client) -> None:
    response = post_chat(http, chat(user("Find the bug in my regex")))
    received = response.json()["vsr_standin"]
    assert received["received_model"] == "qwen2.5-coder-7b-instruct"
    assert received["received_messages"][0]["role"] == "system"
    forwarded = orjson.dumps(
        {"model": "qwen2.5-coder-7b-instruct", "messages": received["received_messages"]}
    )
    assert int(received["received_headers"]["content-length"]) == len(forwarded)


def test_a_spoofed_routing_header_is_ignored(http: httpx.Client) -> None:
    response = post_chat(
        http,
        chat(user("Can you suggest a name for my cat?")),
        **{"x-vsr-selected-model": "coder", "x-vsr-decision": "coding"},
    )
    assert response.status_code == 200
    assert response.headers["x-vsr-selected-model"] == "general"
    assert response.headers["x-standin-cluster"] == "general_llm"


def test_block_answers_an_openai_error(http: httpx.Client) -> None:
    response = post_chat(http, chat(user("how to make a bomb at home")))
    assert response.status_code == 403
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == "blocked_by_policy"
    assert error["decision"] == "refuse_forbidden"


def test_confirm_streams_sse_ending_in_done(http: httpx.Client) -> None:
    request = chat(
        user([text_part("what is in this?"), image_part("https://img.example.com/a.jpg")]),
        stream=True,
    )
    response = post_chat(http, request)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    events = response.text.strip().split("\n\n")
    assert events[-1] == "data: [DONE]"
    first = orjson.loads(events[0].removeprefix("data: "))
    assert first["object"] == "chat.completion.chunk"


def test_streamed_chat_reaches_the_upstream_as_sse(http: httpx.Client) -> None:
    response = post_chat(http, chat(user("a haiku about rain"), stream=True))
    assert response.status_code == 200
    assert response.headers["x-vsr-decision"] == "general_chat"
    assert response.text.rstrip().endswith("data: [DONE]")


def test_a_5_mb_image_body_is_routed(http: httpx.Client) -> None:
    big = PNG_1X1 + bytes(5 * 1024 * 1024)
    response = post_chat(http, chat(user([text_part("look"), image_part(data_url(big))])))
    assert response.status_code == 200
    assert response.headers["x-vsr-selected-model"] == "vision"
    parts = response.json()["vsr_standin"]["received_messages"][0]["content"]
    url = parts[1]["image_url"]["url"]
    assert base64.b64decode(url.partition(",")[2]) == big  # the image arrived intact


def test_invalid_json_is_a_400_json_error(http: httpx.Client) -> None:
    response = http.post(
        "/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert "not valid JSON" in response.json()["error"]["message"]
    assert response.headers["x-vsr-decision"] == "invalid_request"


def test_a_body_over_the_limit_is_a_413_json_error(http: httpx.Client) -> None:
    response = http.post(
        "/v1/chat/completions",
        content=b'{"messages": "' + b"x" * (33 * 1024 * 1024) + b'"}',
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "request_too_large"
    assert "32 MiB" in error["message"]


def test_other_paths_pass_through(http: httpx.Client) -> None:
    response = http.get("/v1/models")
    assert response.status_code == 200
    assert response.headers["x-vsr-decision"] == "passthrough"
    assert response.headers["x-standin-cluster"] == "general_llm"


def test_processor_stopped_gives_a_clear_5xx_and_recovery(stack: Stack, http: httpx.Client) -> None:
    """Fail-closed: with the processor down Envoy answers 500 JSON; restarted, it routes."""
    stack.children["processor"].stop()
    response = post_chat(http, chat(user("hello")))
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "router_error"
    stack.start_processor()
    stack.wait_ready()
    stack.wait_until("routing again", lambda: post_chat(http, chat(user("hi"))).status_code == 200)
    assert post_chat(http, chat(user("hi"))).headers["x-vsr-decision"] == "general_chat"
