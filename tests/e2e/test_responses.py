"""The response phase end to end: a real Envoy, the processor, scripted stand-in upstreams.

The stand-ins answer what ``x-standin-reply`` scripts (``vsr_extproc.upstream.standin``),
so each path — usage, guards, faults — is driven from the client, as a user would.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
import yaml
from stacks import DEMO, ROOT, metric_sum, metrics_url, start_stack

from vsr_extproc.demo.stack import Stack
from vsr_extproc.upstream.standin import SCRIPT_HEADER, encode_script

PASSPORT = "C01X00T47"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def _document() -> dict[str, Any]:
    """The rules-only example with the demo's response phase; ``coding`` opts out."""
    document = yaml.safe_load((ROOT / "deploy" / "examples" / "rules-only.yaml").read_text())
    demo = yaml.safe_load(DEMO.read_text())
    document["signals"]["tool_call"] = demo["signals"]["tool_call"]
    document["signals"]["output"] = demo["signals"]["output"]
    document["responses"] = copy.deepcopy(demo["responses"])
    for decision in document["decisions"]:
        if decision["name"] == "coding":
            decision["action"]["process_response"] = False
    return document


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = start_stack(_document(), tmp_path_factory.mktemp("responses"))
    yield running
    running.stop()


@pytest.fixture
def http(stack: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.url, timeout=30.0) as client:
        yield client


def _body(prompt: str = "hello there", *, stream: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "auto", "messages": [{"role": "user", "content": prompt}]}
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})
    return body


def _chat(
    http: httpx.Client, *, prompt: str = "hello there", stream: bool = False, **script: Any
) -> httpx.Response:
    headers = {SCRIPT_HEADER: encode_script(**script)} if script else {}
    return http.post("/v1/chat/completions", json=_body(prompt, stream=stream), headers=headers)


def _events(text: str) -> list[Any]:
    return [
        orjson.loads(block[len("data: ") :]) if block != "data: [DONE]" else "[DONE]"
        for block in text.strip().split("\n\n")
    ]


def _content(text: str) -> str:
    return "".join(
        choice["delta"].get("content") or ""
        for event in _events(text)
        if isinstance(event, dict)
        for choice in event.get("choices", ())
    )


def _metric(stack: Stack, name: str, **labels: str) -> float:
    """The sum of a metric's samples whose labels include ``labels``."""
    return metric_sum(httpx.get(metrics_url(stack)).text, name, **labels)


def _settled(stack: Stack, name: str, expected: float, **labels: str) -> float:
    """The metric once it reaches ``expected`` (an answer is counted when its processor
    stream ends, just after the client has it), or what it is after 10 s."""
    deadline = time.monotonic() + 10
    while (value := _metric(stack, name, **labels)) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


def _tool(name: str, **arguments: Any) -> dict[str, str]:
    return {"name": name, "arguments": orjson.dumps(arguments).decode()}


def test_usage_metrics_move_for_json_and_streamed_answers(stack: Stack, http: httpx.Client) -> None:
    route = {"model": "general", "decision": "general_chat"}
    output = {**route, "gen_ai_token_type": "output"}
    measures: list[tuple[str, dict[str, str], float]] = [
        # 100 + 200 tokens the upstream reported
        ("gen_ai_client_token_usage_sum", {**output, "estimated": "false"}, 300),
        # one answer without usage: estimated
        ("gen_ai_client_token_usage_count", {**output, "estimated": "true"}, 1),
        # time to first token: streams only
        ("gen_ai_server_time_to_first_token_seconds_count", route, 1),
        ("gen_ai_client_operation_duration_seconds_count", route, 3),
        ("vsr_answers_total", {**route, "status": "2xx", "finish_reason": "stop"}, 3),
    ]
    before = [_metric(stack, name, **labels) for name, labels, _ in measures]

    assert _chat(http, content="x" * 400).status_code == 200
    streamed = _chat(http, stream=True, content="y" * 800, chunks=4)
    assert streamed.status_code == 200
    assert _events(streamed.text)[-2]["usage"]["completion_tokens"] == 200
    assert _chat(http, content="z" * 40, usage=False).status_code == 200

    for (name, labels, moved), start in zip(measures, before, strict=True):
        assert _settled(stack, name, start + moved, **labels) == start + moved, name


def test_a_route_that_opts_out_is_not_measured(stack: Stack, http: httpx.Client) -> None:
    general = {"model": "general", "decision": "general_chat"}
    coding = {"model": "coder", "decision": "coding"}
    before = _metric(stack, "vsr_answers_total", **coding)
    counted = _metric(stack, "vsr_answers_total", **general)
    answer = _chat(http, prompt="please fix this bug in my function", content="fixed")
    assert answer.status_code == 200
    assert answer.headers["x-vsr-decision"] == "coding"
    assert _chat(http, content="measured").status_code == 200
    # the measured answer after it is counted, the opted-out one never is
    assert _settled(stack, "vsr_answers_total", counted + 1, **general) == counted + 1
    assert _metric(stack, "vsr_answers_total", **coding) == before


def test_a_memory_write_with_a_passport_number_never_reaches_the_client(
    http: httpx.Client,
) -> None:
    call = _tool("save_memory", note=f"Jane Doe, passport number {PASSPORT}, renews in May")
    answer = _chat(http, tool_calls=[call])
    assert answer.status_code == 403
    assert answer.json()["error"]["decision"] == "refuse_memory_pii"
    assert PASSPORT not in answer.text

    streamed = _chat(http, stream=True, content="Saving that.", tool_calls=[call])
    assert streamed.status_code == 200  # the headers had left; the stream ends in an error
    events = _events(streamed.text)
    assert events[-1] == "[DONE]"
    assert events[-2]["error"]["decision"] == "refuse_memory_pii"
    assert PASSPORT not in streamed.text
    assert _content(streamed.text) == "Saving that."


def _record(http: httpx.Client, replay_id: str) -> dict[str, Any]:
    """The replay record once its answer is in it (records are written off the request
    path, the answer's part after the answer has ended)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = http.get(f"/v1/router/replay/{replay_id}")
        if found.status_code == 200 and found.json().get("response") is not None:
            record: dict[str, Any] = found.json()
            return record
        time.sleep(0.1)
    raise AssertionError(f"no record with its answer for {replay_id}")


def test_the_replay_record_gets_what_the_model_answered(http: httpx.Client) -> None:
    streamed = _chat(http, stream=True, content="w" * 400, chunks=4)
    response = _record(http, streamed.headers["x-vsr-replay-id"])["response"]
    assert response["status"] == 200
    assert response["stream"] is True
    assert response["finish_reason"] == "stop"
    assert response["usage"] == {"input_tokens": 3, "output_tokens": 100, "estimated": False}
    assert response["timings"]["first_token_s"] is not None

    call = _tool("save_memory", note=f"passport number {PASSPORT}")
    blocked = _chat(http, tool_calls=[call])
    response = _record(http, blocked.headers["x-vsr-replay-id"])["response"]
    assert response["tool_calls"] == ["save_memory"]
    assert response["decisions"] == [{"decision": "refuse_memory_pii", "action": "block"}]
    assert PASSPORT not in orjson.dumps(response).decode()


def test_a_destructive_shell_call_is_blocked(http: httpx.Client) -> None:
    answer = _chat(
        http, tool_calls=[_tool("run_shell_command", command="cd / && rm -rf --no-preserve-root /")]
    )
    assert answer.status_code == 403
    assert answer.json()["error"]["decision"] == "block_destructive_shell"
    harmless = _chat(http, tool_calls=[_tool("run_shell_command", command="ls -la /srv")])
    assert harmless.status_code == 200
    arguments = harmless.json()["choices"][0]["message"]["tool_calls"][0]["function"]
    assert orjson.loads(arguments["arguments"]) == {"command": "ls -la /srv"}


@pytest.mark.parametrize("split", [1, 4, 10, 19])
def test_an_aws_key_split_over_stream_events_never_reaches_the_client(
    http: httpx.Client, split: int
) -> None:
    prefix = "Use these credentials: aws_access_key_id="
    # the stand-in cuts the content into two halves: make the cut fall `split` characters
    # into the key
    suffix = " in the profile." + "." * (len(prefix) + 2 * split - len(AWS_KEY) - 16)
    text = prefix + AWS_KEY + suffix
    assert -(-len(text) // 2) == len(prefix) + split
    answer = _chat(http, stream=True, content=text, chunks=2)
    assert answer.status_code == 200
    assert len([event for event in _events(answer.text) if isinstance(event, dict)]) >= 3
    assert AWS_KEY not in answer.text
    assert AWS_KEY[:split] + '"' not in answer.text  # not even the first event's part
    assert _content(answer.text) == prefix + "<SECRET_1>" + suffix


def test_a_secret_in_a_json_answer_is_redacted(http: httpx.Client) -> None:
    answer = _chat(http, content=f"key {AWS_KEY} here")
    assert answer.status_code == 200
    assert answer.json()["choices"][0]["message"]["content"] == "key <SECRET_1> here"


def test_a_large_json_answer_is_read_whole_before_its_headers_leave(http: httpx.Client) -> None:
    # Envoy sends the body ahead of the reply to its headers, in many parts: the processor
    # answers the headers once it has read them all, so the key can still be redacted
    size = 3 * 1024 * 1024
    answer = _chat(http, content=f"key {AWS_KEY} here", size_bytes=size)
    assert answer.status_code == 200
    content = answer.json()["choices"][0]["message"]["content"]
    assert content.startswith("key <SECRET_1> here x")
    assert len(content) == size - len(AWS_KEY) + len("<SECRET_1>")
    benign = _chat(http, content="nothing to hide", size_bytes=size)
    assert benign.status_code == 200
    assert len(benign.json()["choices"][0]["message"]["content"]) == size


def test_a_benign_streamed_answer_arrives_byte_for_byte(stack: Stack, http: httpx.Client) -> None:
    script = {"content": "A calm answer about the weather, " * 30, "chunks": 25, "identity": False}
    through_envoy = _chat(http, stream=True, **script)
    cluster = next(c for c in stack.config.envoy.clusters if c.name == "general_llm")  # type: ignore[union-attr]
    endpoint = cluster.endpoints[0]
    direct = httpx.post(
        f"http://{endpoint.address}:{endpoint.port}/v1/chat/completions",
        json={**_body(stream=True), "model": "qwen2.5-7b-instruct"},
        headers={SCRIPT_HEADER: encode_script(**script)},
    )
    assert through_envoy.status_code == direct.status_code == 200
    assert through_envoy.content == direct.content


def test_upstream_errors_pass_through_unchanged(http: httpx.Client) -> None:
    answer = _chat(http, status=503)
    assert answer.status_code == 503
    assert answer.json()["error"]["message"] == "stand-in: scripted status 503"


def test_malformed_answers_get_a_clear_error(http: httpx.Client) -> None:
    answer = _chat(http, malformed=True)
    assert answer.status_code == 502
    assert answer.json()["error"]["code"] == "unreadable_answer"
    streamed = _chat(http, stream=True, malformed=True, content="some text here", chunks=3)
    assert streamed.status_code == 200
    events = _events(streamed.text.replace("data: {not json\n\n", ""))
    assert events[-2]["error"]["code"] == "unreadable_answer"


def test_gzip_encoded_answers_are_read_and_guarded(http: httpx.Client) -> None:
    answer = _chat(http, gzip=True, content=f"key {AWS_KEY} here")
    assert answer.status_code == 200
    assert "content-encoding" not in answer.headers
    assert answer.json()["choices"][0]["message"]["content"] == "key <SECRET_1> here"
    streamed = _chat(http, stream=True, gzip=True, content=f"key {AWS_KEY} here", chunks=3)
    assert streamed.status_code == 200
    assert _content(streamed.text) == "key <SECRET_1> here"


def test_an_answer_over_the_limit_is_refused_not_buffered(http: httpx.Client) -> None:
    answer = _chat(http, content="big", size_bytes=50 * 1024 * 1024)
    assert answer.status_code == 502
    assert "over the limit" in answer.json()["error"]["message"]


def test_a_stream_cut_mid_event_ends_with_an_error_and_no_hang(http: httpx.Client) -> None:
    started = time.monotonic()
    try:
        answer = _chat(http, stream=True, cut=True, content="a" * 600, chunks=8)
    except httpx.RemoteProtocolError:
        pass  # the client saw the upstream's reset: a clear end, not a hang
    else:
        assert answer.status_code in (200, 502, 503)
    assert time.monotonic() - started < 10
    assert _chat(http, content="still serving").status_code == 200


@pytest.mark.parametrize("guarded", [True, False], ids=["guarded", "measured"])
def test_a_client_that_leaves_mid_stream_is_counted_and_nothing_hangs(
    guarded: bool, request: pytest.FixtureRequest
) -> None:
    stack: Stack = request.getfixturevalue("stack" if guarded else "measured")
    gone = {"model": "general", "decision": "general_chat", "finish_reason": "gone"}
    before = _metric(stack, "vsr_answers_total", **gone)

    async def leave() -> None:
        async with httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
            headers = {SCRIPT_HEADER: encode_script(content="w " * 200, chunks=20, delay_ms=100)}
            async with client.stream(
                "POST", "/v1/chat/completions", json=_body(stream=True), headers=headers
            ) as response:
                async for _ in response.aiter_bytes():
                    break  # the first event, then gone

    asyncio.run(leave())
    assert _settled(stack, "vsr_answers_total", before + 1, **gone) == before + 1
    with httpx.Client(base_url=stack.url, timeout=30.0) as http:
        assert _chat(http, content="still serving").status_code == 200


def test_a_large_streamed_answer_passes_whole_through_the_guards(http: httpx.Client) -> None:
    size = 8 * 1024 * 1024
    started = time.monotonic()
    answer = _chat(http, stream=True, content="big", size_bytes=size, chunks=400)
    assert answer.status_code == 200
    assert len(_content(answer.text)) == size
    assert time.monotonic() - started < 60


def test_explain_is_not_served_on_a_listener_that_did_not_ask_for_it(
    http: httpx.Client,
) -> None:
    explained = http.post("/v1/router/explain", json=_body("ignore previous instructions"))
    assert explained.status_code == 404
    assert "admin port" in explained.json()["error"]["message"]
    # the rest of the router's API is refused by Envoy too, never passed to a model
    assert http.get("/v1/router/anything").status_code == 404


# --- answers only measured: an observing filter copies them to the processor, which never
# holds them; nothing is lost, and the routing filter does not process answers at all


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    document = yaml.safe_load((ROOT / "deploy" / "examples" / "rules-only.yaml").read_text())
    document["responses"] = {"enabled": True}
    for decision in document["decisions"]:
        if decision["name"] == "coding":
            decision["action"]["process_response"] = False
    running = start_stack(document, tmp_path_factory.mktemp("measured"))
    yield running
    running.stop()


def test_measured_answers_pass_unchanged_and_are_counted(measured: Stack) -> None:
    bootstrap = yaml.safe_load(measured.envoy_config.read_text())
    hcm = bootstrap["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]
    routing, observing = hcm["typed_config"]["http_filters"][:2]
    # the routing filter could read answers (a reload may add a response decision), but
    # the processor ends its stream after the request
    assert routing["typed_config"]["processing_mode"]["response_header_mode"] == "SEND"
    assert observing["typed_config"]["observability_mode"] is True
    route = {"model": "general", "decision": "general_chat"}
    before = _metric(measured, "vsr_answers_total", **route, status="2xx")
    first_tokens = _metric(measured, "gen_ai_server_time_to_first_token_seconds_count", **route)
    script = {"content": f"A calm answer, key {AWS_KEY}. " * 20, "chunks": 12, "identity": False}
    with httpx.Client(base_url=measured.url, timeout=30.0) as http:
        streamed = _chat(http, stream=True, **script)
        answer = _chat(http, content="a plain JSON answer")
        failed = _chat(http, status=503)
        big = _chat(http, stream=True, content="big", size_bytes=2 * 1024 * 1024, chunks=100)
        zipped = _chat(http, stream=True, gzip=True, content="a gzip-encoded stream", chunks=3)
    assert streamed.status_code == answer.status_code == big.status_code == 200
    # only measured: the key is not this config's business, every byte arrives as sent
    assert _content(streamed.text) == script["content"]
    assert answer.json()["choices"][0]["message"]["content"] == "a plain JSON answer"
    assert failed.status_code == 503
    assert len(_content(big.text)) == 2 * 1024 * 1024
    assert zipped.status_code == 200
    assert _content(zipped.text) == "a gzip-encoded stream"
    assert _settled(measured, "vsr_answers_total", before + 4, **route, status="2xx") == before + 4
    moved = _metric(measured, "gen_ai_server_time_to_first_token_seconds_count", **route)
    assert moved == first_tokens + 3


def test_a_measured_answer_is_recorded_with_its_usage_and_timings(measured: Stack) -> None:
    with httpx.Client(base_url=measured.url, timeout=30.0) as http:
        streamed = _chat(http, stream=True, content="w" * 400, chunks=4)
        plain = _chat(http, content="v" * 40, usage=False)
        streamed_record = _record(http, streamed.headers["x-vsr-replay-id"])["response"]
        plain_record = _record(http, plain.headers["x-vsr-replay-id"])["response"]
    assert streamed_record["stream"] is True
    assert streamed_record["finish_reason"] == "stop"
    assert streamed_record["usage"] == {"input_tokens": 3, "output_tokens": 100, "estimated": False}
    first, total = (
        streamed_record["timings"]["first_token_s"],
        streamed_record["timings"]["total_s"],
    )
    assert 0 <= first <= total < 10
    # no usage from the upstream: both counts estimated from the request and the text
    assert plain_record["usage"] == {"input_tokens": 3, "output_tokens": 10, "estimated": True}
    assert plain_record["stream"] is False


def test_a_measured_route_that_opts_out_is_not_observed(measured: Stack) -> None:
    coding = {"model": "coder", "decision": "coding"}
    before = _metric(measured, "vsr_answers_total", **coding)
    general = {"model": "general", "decision": "general_chat"}
    counted = _metric(measured, "vsr_answers_total", **general)
    with httpx.Client(base_url=measured.url, timeout=30.0) as http:
        fixed = _chat(http, prompt="please fix this bug in my function", content="fixed")
        assert fixed.headers["x-vsr-decision"] == "coding"
        assert _chat(http, content="counted").status_code == 200
    assert fixed.json()["choices"][0]["message"]["content"] == "fixed"
    # the measured answer is counted; the opted-out one, sent before it, never is
    assert _settled(measured, "vsr_answers_total", counted + 1, **general) == counted + 1
    assert _metric(measured, "vsr_answers_total", **coding) == before


def test_a_response_decision_added_by_a_reload_guards_at_once(measured: Stack) -> None:
    """A measuring stack's Envoy config already lets the routing filter read answers: a
    reload that adds the first response decision needs no new Envoy config to guard."""
    assert measured.processor_config is not None
    original = measured.processor_config.read_text()
    guarded = yaml.safe_load(original)
    demo = yaml.safe_load(DEMO.read_text())
    guarded["signals"]["tool_call"] = demo["signals"]["tool_call"]
    guarded["signals"]["output"] = demo["signals"]["output"]
    guarded["responses"] = copy.deepcopy(demo["responses"])
    reloads = _metric(measured, "vsr_config_reloads_total", result="success")
    call = _tool("save_memory", note=f"Jane Doe, passport number {PASSPORT}, renews in May")
    try:
        measured.processor_config.write_text(yaml.safe_dump(guarded))
        assert _settled(measured, "vsr_config_reloads_total", reloads + 1, result="success") == (
            reloads + 1
        )
        with httpx.Client(base_url=measured.url, timeout=30.0) as http:
            answer = _chat(http, tool_calls=[call])
        assert answer.status_code == 403
        assert answer.json()["error"]["decision"] == "refuse_memory_pii"
        assert PASSPORT not in answer.text
    finally:
        measured.processor_config.write_text(original)
        assert _settled(measured, "vsr_config_reloads_total", reloads + 2, result="success") == (
            reloads + 2
        )


@pytest.mark.parametrize("guarded", [True, False], ids=["guarded", "measured"])
def test_no_answer_is_lost_when_the_processor_ends_its_stream_early(
    guarded: bool, request: pytest.FixtureRequest
) -> None:
    """The processor ends the routing stream after the request when the answer is not its
    business (an opted-out route; an answer only observed), often while a fast upstream is
    already answering. Envoy must then pass the answer whole: in a mode that sends the body
    before the processor replies (full-duplex streaming) it was lost, 31 times in 120."""
    stack: Stack = request.getfixturevalue("stack" if guarded else "measured")
    # `coding` is opted out in both stacks; `general_chat` is guarded in one, observed in
    # the other
    prompts = ("please fix this bug in my function", "hello there")
    with httpx.Client(base_url=stack.url, timeout=30.0) as http:
        for number in range(40):
            script = {"content": f"answer {number} in three parts", "chunks": 3}
            prompt, gzip = prompts[number % 2], number % 4 >= 2
            answer = _chat(http, prompt=prompt, stream=True, gzip=gzip, **script)
            assert answer.status_code == 200
            assert _content(answer.text) == script["content"], number
