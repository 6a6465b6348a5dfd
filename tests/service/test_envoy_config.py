"""The Envoy bootstrap derived from the router config: current and safe (Envoy validates
every config in the repository, this one included, in tests/e2e/test_deploy.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vsr_extproc.config.compile import read_config
from vsr_extproc.config.envoy import build_bootstrap, render_bootstrap
from vsr_extproc.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
DEMO = "deploy/demo/router.yaml"


def test_root_envoy_yaml_is_what_envoy_config_prints_for_the_demo() -> None:
    config, _ = read_config(ROOT / DEMO)
    assert (ROOT / "envoy.yaml").read_text() == render_bootstrap(config, source=DEMO), (
        "envoy.yaml is stale: run `make envoy-config`"
    )


def _demo_bootstrap(**envoy: object) -> dict:
    document = yaml.safe_load((ROOT / DEMO).read_text())
    document["envoy"].update(envoy)
    from vsr_extproc.config.compile import parse_config

    return build_bootstrap(parse_config(document))


def _hcm(bootstrap: dict) -> dict:
    listener = bootstrap["static_resources"]["listeners"][0]
    return listener["filter_chains"][0]["filters"][0]["typed_config"]


def test_one_route_per_model_and_a_closed_catch_all() -> None:
    routes = _hcm(_demo_bootstrap())["route_config"]["virtual_hosts"][0]["routes"]
    selected = {
        route["match"]["headers"][0]["string_match"]["exact"]: route["route"]["cluster"]
        for route in routes
        if route["name"].startswith("model-")
    }
    assert selected == {
        "general": "general_llm",
        "long_context": "long_llm",
        "coder": "code_llm",
        "vision": "general_vlm",
        "medical": "medical_vlm",
        "restricted": "restricted_vlm",
        "multilingual": "multilingual_llm",
        "code_review": "code_vlm",
    }
    assert routes[-1]["direct_response"]["status"] == 503


def test_fail_open_sends_undecided_requests_to_the_default_model() -> None:
    bootstrap = _demo_bootstrap(failure_mode_allow=True)
    hcm = _hcm(bootstrap)
    catch_all = hcm["route_config"]["virtual_hosts"][0]["routes"][-1]
    assert catch_all["route"]["cluster"] == "general_llm"
    # the spoofing protection stays: client x-vsr-* headers are removed before routing
    mutation = hcm["early_header_mutation_extensions"][0]["typed_config"]["mutations"][0]
    assert mutation == {"remove_on_match": {"key_matcher": {"prefix": "x-vsr-"}}}
    ext_proc = hcm["http_filters"][0]["typed_config"]
    assert ext_proc["failure_mode_allow"] is True


def test_buffer_limits_cover_large_image_bodies() -> None:
    bootstrap = _demo_bootstrap()
    listener = bootstrap["static_resources"]["listeners"][0]
    assert listener["per_connection_buffer_limit_bytes"] >= 32 * 1024 * 1024
    ext_proc = _hcm(bootstrap)["http_filters"][0]["typed_config"]
    assert (
        ext_proc["grpc_service"]["envoy_grpc"]["max_receive_message_length"]
        > (listener["per_connection_buffer_limit_bytes"])
    )
    assert ext_proc["processing_mode"]["request_body_mode"] == "BUFFERED"


def test_a_misspelt_field_is_caught_before_envoy_sees_it() -> None:
    from vsr_extproc.config.envoy import check_bootstrap

    bootstrap = _demo_bootstrap()
    _hcm(bootstrap)["http_filters"][0]["typed_config"]["failure_mode_alow"] = True
    with pytest.raises(ConfigError, match="failure_mode_alow"):
        check_bootstrap(bootstrap)


def test_a_model_on_an_undefined_cluster_is_a_config_error() -> None:
    document = yaml.safe_load((ROOT / DEMO).read_text())
    document["models"][0]["cluster"] = "nowhere"
    from vsr_extproc.config.compile import compile_policy, parse_config
    from vsr_extproc.signals.base import Resources

    with pytest.raises(ConfigError, match=r"models\[0\].cluster: no cluster 'nowhere'"):
        compile_policy(parse_config(document), Resources())


def _routes(**envoy: object) -> dict[str, dict[str, object]]:
    config, _ = read_config(DEMO)
    changed = config.model_copy(
        update={"envoy": config.envoy.model_copy(update=envoy)}  # type: ignore[union-attr]
    )
    hcm = _hcm(build_bootstrap(changed))
    return {route["name"]: route for route in hcm["route_config"]["virtual_hosts"][0]["routes"]}


def test_explain_is_not_served_on_the_listener_unless_asked_for() -> None:
    default = _routes(expose_explain=False)
    assert "router-api-explain" not in default
    assert default["router-api-replay"]["match"] == {"prefix": "/v1/router/replay/"}
    # the rest of the router's API is refused by Envoy itself, never sent to a model
    assert default["router-api-not-exposed"]["direct_response"]["status"] == 404
    names = list(default)
    assert names.index("router-api-not-exposed") < names.index("no-model-selected")
    asked = _routes(expose_explain=True)
    assert asked["router-api-explain"]["match"] == {"path": "/v1/router/explain"}
    closed = _routes(expose_explain=False, expose_router_api=False)
    assert [name for name in closed if name.startswith("router-api")] == ["router-api-not-exposed"]


def _filters(bootstrap: dict) -> dict[str, dict]:
    return {f["name"]: f["typed_config"] for f in _hcm(bootstrap)["http_filters"]}


def test_answers_only_measured_go_to_an_observing_filter_on_twin_routes() -> None:
    document = yaml.safe_load((ROOT / DEMO).read_text())
    document["responses"] = {"enabled": True}
    from vsr_extproc.config.compile import parse_config

    bootstrap = build_bootstrap(parse_config(document))
    filters = _filters(bootstrap)
    routing, observing = filters["envoy.filters.http.ext_proc"], filters["vsr.observe_answers"]
    # the routing filter can still read answers, for a response decision a reload adds;
    # the observing one never holds them
    assert routing["processing_mode"]["response_body_mode"] == "STREAMED"
    assert routing["allow_mode_override"] is True
    # a stream's first tokens wait for one round trip to the processor, not two
    assert routing["send_body_without_waiting_for_header_response"] is True
    assert observing["observability_mode"] is True
    assert observing["processing_mode"]["request_header_mode"] == "SKIP"
    assert observing["processing_mode"]["response_body_mode"] == "STREAMED"
    assert observing["metadata_options"] == {"forwarding_namespaces": {"untyped": ["vsr"]}}
    routes = _hcm(bootstrap)["route_config"]["virtual_hosts"][0]["routes"]
    names = [route["name"] for route in routes]
    for model in ("general", "medical", "code_review"):
        twin = routes[names.index(f"model-{model}-observed")]
        assert names.index(f"model-{model}-observed") < names.index(f"model-{model}")
        assert {"name": "x-vsr-observe-answer", "present_match": True} in twin["match"]["headers"]
        assert "vsr.observe_answers" not in twin.get("typed_per_filter_config", {})
    # every other route, the catch-all and the router API included, turns it off
    for route in routes:
        if not route["name"].endswith("-observed"):
            assert route["typed_per_filter_config"]["vsr.observe_answers"]["disabled"] is True


def test_answers_that_a_decision_reads_are_processed_in_line() -> None:
    filters = _filters(_demo_bootstrap())  # the demo has response decisions
    assert "vsr.observe_answers" not in filters
    routing = filters["envoy.filters.http.ext_proc"]
    assert routing["processing_mode"]["response_body_mode"] == "STREAMED"
    assert routing["allow_mode_override"] is True


def test_an_answer_limit_over_envoys_buffer_is_a_config_error() -> None:
    # Envoy holds a JSON answer while the guards read it whole: an answer larger than its
    # buffer would stall until the message timeout instead of being refused at the limit
    from vsr_extproc.config.compile import parse_config

    document = yaml.safe_load((ROOT / DEMO).read_text())
    document["envoy"]["buffer_limit_bytes"] = 4 * 1024 * 1024
    with pytest.raises(ConfigError, match=r"max_answer_bytes \(8388608\) is above envoy"):
        parse_config(document)
    document["responses"]["max_answer_bytes"] = 4 * 1024 * 1024
    assert parse_config(document).responses.max_answer_bytes == 4 * 1024 * 1024
