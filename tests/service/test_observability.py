"""Seeing every decision: the Explain API, metrics, logs, debug headers and hot reload."""

from __future__ import annotations

import asyncio
import gc
import io
import json
import weakref
from pathlib import Path, PosixPath

import grpc
import httpx
import orjson
import pytest
import structlog
import yaml
from builders import body, chat, until, user
from extproc_client import Client, body_message, headers_message
from google.protobuf import json_format, struct_pb2

from vsr_extproc._proto.vsr.v1 import router_pb2, router_pb2_grpc
from vsr_extproc.service import Service, start
from vsr_extproc.signals.base import Resources


def _admin(service: Service) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=f"http://127.0.0.1:{service.admin_port}", timeout=30)


async def test_explain_over_grpc_matches_the_routed_decision(
    service: Service, client: Client
) -> None:
    document = chat(user("Find the bug in my sorting function, it drops the last element"))
    routed = await client.route(body(document))
    request = router_pb2.ExplainRequest(
        request=json_format.ParseDict(document, struct_pb2.Struct())
    )
    async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        answer = await router_pb2_grpc.RouterStub(channel).Explain(request)
    assert answer.decision == routed.set_headers()["x-vsr-decision"] == "coding"
    assert answer.model == "coder"
    assert answer.reason
    signals = {signal.signal: signal for signal in answer.signals}
    assert signals["keyword.code_words"].matched
    assert signals["domain.software"].latency_ms > 0
    coding = next(trace for trace in answer.decisions if trace.name == "coding")
    assert coding.matched
    assert coding.decided_by.startswith("decisions[")
    assert coding.rule.kind == "any"


async def test_explain_rejects_a_bad_request_with_invalid_argument(service: Service) -> None:
    request = router_pb2.ExplainRequest(
        request=json_format.ParseDict({"messages": []}, struct_pb2.Struct())
    )
    async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        with pytest.raises(grpc.aio.AioRpcError) as failure:
            await router_pb2_grpc.RouterStub(channel).Explain(request)
    assert failure.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "messages" in (failure.value.details() or "")


async def test_explain_over_http_on_the_admin_port(service: Service) -> None:
    async with _admin(service) as admin:
        answer = await admin.post("/v1/router/explain", content=body(chat(user("hi there"))))
        assert answer.status_code == 200
        data = answer.json()
        assert data["decision"] == "general_chat"
        assert {"signals", "decisions", "reason", "skipped_models"} <= set(data)
        bad = await admin.post("/v1/router/explain", content=b"{oops")
        assert bad.status_code == 400
        assert "not valid JSON" in bad.json()["error"]["message"]


async def test_metrics_move_as_requests_flow(service: Service, client: Client) -> None:
    await client.route(body(chat(user("Find the bug in this function"))))
    await client.route(body(chat(user("how to make a bomb"))))
    await client.route(b"{not json")
    await client.route(body(chat(user("mail ann@example.com about card 4111 1111 1111 1111"))))
    async with _admin(service) as admin:
        text = (await admin.get("/metrics")).text
    assert 'vsr_requests_total{decision="coding",model="coder",outcome="routed"} 1.0' in text
    assert 'vsr_requests_total{decision="refuse_forbidden",model="none",outcome="blocked"} 1.0' in (
        text
    )
    assert 'vsr_requests_total{decision="invalid_request",model="none",outcome="error"} 1.0' in (
        text
    )
    assert 'vsr_pii_findings_total{type="email"} 1.0' in text
    assert 'vsr_pii_findings_total{type="card"} 1.0' in text
    assert 'vsr_signal_seconds_count{family="domain",name="medical"}' in text
    assert "vsr_decision_seconds_bucket" in text
    assert 'vsr_model_loaded{model="all-MiniLM-L6-v2",runtime="text_embedding"} 1.0' in text
    assert 'vsr_model_loaded{model="lingua",runtime="language"} 1.0' in text
    assert "vsr_inflight_streams 0.0" in text


async def test_replay_record_behind_every_response(service: Service, client: Client) -> None:
    reply = await client.route(body(chat(user("mail ann@example.com the minutes"))))
    replay_id = reply.set_headers()["x-vsr-replay-id"]
    async with _admin(service) as admin:
        for _ in range(50):  # recording is asynchronous; the reader also sees queued ones
            answer = await admin.get(f"/v1/router/replay/{replay_id}")
            if answer.status_code == 200:
                break
            await asyncio.sleep(0.05)
        record = answer.json()
        missing = await admin.get("/v1/router/replay/nope")
    assert record["decision"] == "protect_pii"
    assert record["model"] == "restricted"
    assert "ann@example.com" not in answer.text
    assert missing.status_code == 404


async def test_one_summary_line_per_request_without_pii(client: Client) -> None:
    stream = io.StringIO()
    structlog.reset_defaults()  # whatever an earlier test configured (a level filter)
    structlog.configure(
        processors=[structlog.contextvars.merge_contextvars, structlog.processors.JSONRenderer()],
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )
    try:
        await client.route(
            body(chat(user("my card is 4111 1111 1111 1111, email ann@example.com"))),
            extra={"x-request-id": "req-42"},
        )
    finally:
        structlog.reset_defaults()
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    decided = [line for line in lines if line["event"] == "decided"]
    assert len(decided) == 1
    assert decided[0]["request_id"] == "req-42"
    assert decided[0]["decision"] == "protect_pii"
    assert "pii.personal_data" in decided[0]["matched"]
    assert "4111" not in stream.getvalue()
    assert "ann@example.com" not in stream.getvalue()


@pytest.mark.parametrize(
    ("extra", "shown"),
    [
        ({}, False),
        ({"x-router-debug": "1"}, False),  # asked, not trusted
        ({"x-router-debug": "1", "x-router-debug-token": "wrong-token-wrong-token"}, False),
        ({"x-router-debug": "1", "x-router-debug-token": "s3cret-debug-token-1"}, True),
    ],
)
async def test_debug_headers_only_when_asked_and_trusted(
    client: Client, service: Service, extra: dict[str, str], shown: bool
) -> None:
    reply = await client.route(body(chat(user("Find the bug in this function"))), extra=extra)
    headers = reply.set_headers()
    assert ("x-vsr-debug-signals" in headers) is shown
    if shown:
        assert "keyword.code_words" in headers["x-vsr-debug-signals"]
        assert "x-vsr-debug-reason" in headers
    response = reply.last.request_body.response
    removed = list(response.header_mutation.remove_headers)
    assert ("x-router-debug-token" in removed) is ("x-router-debug-token" in extra)


async def test_in_flight_requests_finish_on_the_policy_they_started_with(
    service: Service, config_path: Path
) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        call = Client(channel).stub.Process()
        await call.write(headers_message())
        await call.read()
        _reprioritise(config_path, "refuse_forbidden", drop=True)
        assert await service.reload("test")
        await call.write(body_message(body(chat(user("how to make a bomb")))))
        answer = await call.read()
        await call.done_writing()
    assert answer.immediate_response.status.code == 403  # the old policy still blocks


async def test_reload_switches_policy_and_an_invalid_file_keeps_the_old(
    service: Service, client: Client, config_path: Path
) -> None:
    before = service.router.policy.fingerprint
    original = _original(config_path)
    config_path.write_text("models: [\n")  # broken YAML
    assert not await service.reload("test")
    assert service.router.policy.fingerprint == before
    document = yaml.safe_load(original)
    document["decisions"] = [d for d in document["decisions"] if d["name"] != "refuse_forbidden"]
    config_path.write_text(yaml.safe_dump(document))
    assert await service.reload("test")
    assert service.router.policy.fingerprint != before
    reply = await client.route(body(chat(user("how to make a bomb"))))
    assert reply.last.WhichOneof("response") != "immediate_response" or (
        reply.set_headers()["x-vsr-decision"] != "refuse_forbidden"
    )
    async with _admin(service) as admin:
        text = (await admin.get("/metrics")).text
    assert 'vsr_config_reloads_total{result="invalid"} 1.0' in text
    assert 'vsr_config_reloads_total{result="success"} 1.0' in text


async def test_the_watcher_reloads_a_changed_file(service: Service, config_path: Path) -> None:
    before = service.router.policy.fingerprint
    _reprioritise(config_path, "refuse_forbidden", drop=True)
    await until(lambda: service.router.policy.fingerprint != before, "the policy changes")
    assert "refuse_forbidden" not in {d.name for d in service.router.policy.decisions}


_ORIGINALS: dict[Path, str] = {}


def _original(path: Path) -> str:
    return _ORIGINALS.setdefault(path, path.read_text())


def _reprioritise(path: Path, decision: str, *, drop: bool) -> None:
    document = yaml.safe_load(_original(path))
    if drop:
        document["decisions"] = [d for d in document["decisions"] if d["name"] != decision]
    path.write_text(yaml.safe_dump(document))


def test_explain_message_keeps_image_indexes() -> None:
    from vsr_extproc.envoy.api import explain_message

    data = {
        "decision": "d", "outcome": "routed", "model": None, "confidence": 1.0, "reason": "r",
        "problem": None, "fallthrough": [], "skipped_models": [], "decisions": [],
        "signals": [{"signal": "vision.x", "family": "vision", "name": "x", "matched": True,
                     "confidence": 0.9, "value": {"images": [{"image": 0}, {"image": 2}]},
                     "latency_ms": 1.0, "error": None}],
    }  # fmt: skip
    message = explain_message(orjson.loads(orjson.dumps(data)))
    assert list(message.signals[0].images) == [0, 2]
    assert message.model == ""


async def test_a_reload_releases_models_the_new_policy_does_not_use(
    service: Service, config_path: Path
) -> None:
    document = yaml.safe_load(_original(config_path))
    document["signals"].pop("language")
    document["decisions"] = [d for d in document["decisions"] if d["name"] != "not_english"]
    config_path.write_text(yaml.safe_dump(document))
    assert await service.reload("test")
    kinds = {key[0] for key, _ in service.resources.items() if isinstance(key, tuple)}
    assert "language" not in kinds
    assert "text-embedder" in kinds  # still used by domain and jailbreak
    async with _admin(service) as admin:
        text = (await admin.get("/metrics")).text
    assert 'runtime="language"' not in text


async def test_models_a_reload_releases_are_freed_though_the_heap_was_frozen(
    config_path: Path, resources: Resources
) -> None:
    document = yaml.safe_load(config_path.read_text())
    document["server"]["grace_period_s"] = 0.05
    config_path.write_text(yaml.safe_dump(document))
    service = await start(config_path, resources=resources, freeze=True)  # as `serve` does
    try:
        assert gc.get_freeze_count() > 0
        (detector,) = [v for k, v in resources.items() if k[0] == "language"]
        detector.itself = detector  # only a garbage collection can free it now
        released = weakref.ref(detector)
        del detector
        document["signals"].pop("language")
        document["decisions"] = [d for d in document["decisions"] if d["name"] != "not_english"]
        config_path.write_text(yaml.safe_dump(document))
        assert await service.reload("test")
        assert gc.get_freeze_count() == 0  # thawed while the old policy finishes
        assert service._settling is not None
        await service._settling
        assert released() is None
        assert gc.get_freeze_count() > 0  # and frozen again
    finally:
        gc.unfreeze()
        await service.stop(0, 0)


async def _reloads(service: Service, result: str) -> float:
    async with _admin(service) as admin:
        text = (await admin.get("/metrics")).text
    line = f'vsr_config_reloads_total{{result="{result}"}} '
    found = [row for row in text.splitlines() if row.startswith(line)]
    return float(found[0].rsplit(" ", 1)[1]) if found else 0.0


async def _reported(service: Service, result: str) -> bool:
    return await _reloads(service, result) >= 1


class _WatchedPath(PosixPath):
    """The config file's path, counting the watcher's looks: each look reads its bytes
    (a reload reads the text, through a path of its own)."""

    looks = 0

    def read_bytes(self) -> bytes:
        self.looks += 1
        return super().read_bytes()


async def test_an_invalid_file_is_reported_once_not_on_every_look(
    service: Service, config_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watched = _WatchedPath(config_path)
    monkeypatch.setattr(service, "config_path", watched)
    _original(config_path)
    config_path.write_text("models: [\n")
    await until(lambda: _reported(service, "invalid"), "the broken file is reported")
    looked = watched.looks
    await until(lambda: watched.looks >= looked + 5, "the watcher looks five more times")
    assert await _reloads(service, "invalid") == 1
    _reprioritise(config_path, "refuse_forbidden", drop=True)  # fixed: loaded at once
    await until(lambda: _reported(service, "success"), "the fixed file is loaded")
    assert await _reloads(service, "success") == 1


async def test_a_reload_that_fails_outside_the_config_keeps_watching(
    service: Service, config_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vsr_extproc.service as module

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the checkpoint does not match its config")

    monkeypatch.setattr(module, "compile_policy", broken)
    _reprioritise(config_path, "refuse_forbidden", drop=True)
    await until(lambda: _reported(service, "invalid"), "the failed reload is reported")
    assert await _reloads(service, "invalid") == 1
    monkeypatch.undo()
    document = yaml.safe_load(_original(config_path))
    document["decisions"] = document["decisions"][1:]
    config_path.write_text(yaml.safe_dump(document))
    await until(lambda: _reported(service, "success"), "the next change is loaded")
    assert await _reloads(service, "success") == 1  # the watcher outlived the error
    assert service._watcher is not None
    assert not service._watcher.done()


async def test_debug_and_reload_settings_apply_on_reload_the_rest_is_named(
    service: Service, config_path: Path
) -> None:
    from vsr_extproc.service import needs_restart

    assert service.processor is not None
    assert service.processor.debug.token == "s3cret-debug-token-1"
    document = yaml.safe_load(_original(config_path))
    document["debug"] = {"token": "an0ther-debug-token-2"}
    document["reload"] = {"interval_ms": 300}
    document["server"]["grace_period_s"] = 3
    config_path.write_text(yaml.safe_dump(document))
    assert await service.reload("test")
    assert service.processor.debug.token == "an0ther-debug-token-2"
    assert service.live_config.reload.interval_ms == 300
    loaded = service.live_config
    assert needs_restart(service.config, loaded) == ["server"]
    disabled = loaded.model_copy(
        update={"responses": loaded.responses.model_copy(update={"enabled": False})}
    )
    assert needs_restart(service.config, disabled) == [
        "server",
        "responses.enabled (regenerate the Envoy config)",
    ]
    measured = loaded.model_copy(
        update={"responses": loaded.responses.model_copy(update={"decisions": ()})}
    )
    assert needs_restart(service.config, measured) == [
        "server",
        "responses.decisions (regenerate the Envoy config)",
    ]
