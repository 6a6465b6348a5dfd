"""The deployment files: the image, compose, the Kubernetes overlays and their Envoy configs.

All of it is checked offline, with the tools a CI machine has: ``kubectl kustomize``
renders every overlay and each manifest is validated against the Kubernetes 1.32 schemas
(``kubernetes-validate``, strict: unknown fields fail); every Envoy config in the repository
passes ``envoy --mode validate`` and is what ``vsr-extproc envoy-config`` prints for its
router config; every router config passes ``vsr-extproc validate``; compose.yaml and the
Dockerfile are checked for the facts a user relies on. What needs a Docker engine or a
cluster (``docker build``, ``docker compose config``, ``kubectl apply``) runs only where
one exists, and says so when skipped.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import SplitResult, parse_qsl, urlsplit

import grpc
import pytest
import yaml
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from vsr_extproc.config.compile import read_config
from vsr_extproc.config.envoy import PROCESSOR_CLUSTER, ROUTER_API_CLUSTER, render_bootstrap
from vsr_extproc.config.schema import ClusterConfig
from vsr_extproc.demo.stack import envoy_binary

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBERNETES_VERSION = "1.32.0"

DEMO_ROUTER = "deploy/demo/router.yaml"
COMPOSE_ROUTER = "deploy/compose/router.yaml"
BASE_ROUTER = "deploy/k8s/base/router.yaml"
DEV_ROUTER = "deploy/k8s/overlays/dev/router.yaml"
DEV_STANDINS = "deploy/k8s/overlays/dev/standin-config.yaml"
PROD_ROUTER = "deploy/k8s/overlays/prod/router.yaml"
VLLM_ROUTER = "deploy/examples/vllm/router.yaml"

# each generated Envoy config and the router config it is generated from
GENERATED = {
    "deploy/compose/envoy.yaml": COMPOSE_ROUTER,
    "deploy/k8s/base/envoy.yaml": BASE_ROUTER,
    "deploy/k8s/overlays/dev/envoy.yaml": DEV_ROUTER,
    "deploy/k8s/overlays/prod/envoy.yaml": PROD_ROUTER,
    "deploy/examples/vllm/envoy.yaml": VLLM_ROUTER,
}
ROUTER_CONFIGS = [COMPOSE_ROUTER, BASE_ROUTER, DEV_ROUTER, DEV_STANDINS, PROD_ROUTER, VLLM_ROUTER]
# what differs with where the router runs (addresses, paths); the rest must be the demo's
DEPLOYMENT_SECTIONS = ("server", "admin", "replay", "envoy")
# where things listen, and what a public listener must not serve (the demo's is loopback)
ADDRESSES = ("listen", "admin", "processor", "router_api", "clusters", "expose_explain")


def _yaml(path: str | Path) -> Any:
    return yaml.safe_load((ROOT / path).read_text())


# --- generated Envoy configs ---------------------------------------------------------------


@pytest.mark.parametrize(("envoy_config", "router_config"), sorted(GENERATED.items()))
def test_envoy_config_is_what_envoy_config_prints(envoy_config: str, router_config: str) -> None:
    config, _ = read_config(ROOT / router_config)
    assert (ROOT / envoy_config).read_text() == render_bootstrap(config, source=router_config), (
        f"{envoy_config} is stale: run "
        f"`vsr-extproc envoy-config {router_config} --out {envoy_config}`"
    )


def _envoy_configs() -> list[str]:
    found = [ROOT / "envoy.yaml", *sorted(DEPLOY.rglob("envoy.yaml"))]
    return [str(path.relative_to(ROOT)) for path in found]


ENVOY_FLAGS = ("--disable-hot-restart", "--log-level", "error")


def test_every_envoy_config_in_the_repository_is_covered() -> None:
    assert set(_envoy_configs()) == {"envoy.yaml", *GENERATED}


@pytest.mark.parametrize("envoy_config", _envoy_configs())
def test_envoy_accepts_the_config(envoy_config: str) -> None:
    # validate mode builds every cluster without resolving DNS names, so the compose and
    # Kubernetes service names are fine here
    result = subprocess.run(
        [envoy_binary(), "--mode", "validate", "-c", str(ROOT / envoy_config), *ENVOY_FLAGS],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "OK" in result.stdout


# --- router configs --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def validated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess]:
    """`vsr-extproc validate` on every router config: the vLLM config in a process of its
    own (what it says offline is its own), the others together in one (the models load
    once for all, as a reload would keep them), the two processes side by side.

    HF_HUB_OFFLINE keeps the vLLM config's hub-id SigLIP checkpoint from being downloaded:
    the router reports it unavailable and the config is still valid. One OpenMP thread per
    process: spinning OpenMP threads on a shared machine turn 15 s into minutes.
    """
    hf_home = tmp_path_factory.mktemp("hf-home")
    cwd = tmp_path_factory.mktemp("validate")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(hf_home), "OMP_NUM_THREADS": "1"}

    def validate(paths: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "vsr_extproc.cli", "validate", *(str(ROOT / p) for p in paths)],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            env=env,
            cwd=cwd,
        )

    together = [path for path in ROUTER_CONFIGS if path != VLLM_ROUTER]
    with futures.ThreadPoolExecutor(max_workers=2) as pool:
        alone, shared = pool.map(validate, [[VLLM_ROUTER], together])
    assert not any(hf_home.rglob("*.safetensors")), "validate downloaded a checkpoint"
    return dict.fromkeys(together, shared) | {VLLM_ROUTER: alone}


@pytest.mark.parametrize("router_config", ROUTER_CONFIGS)
def test_router_config_passes_validate(
    validated: dict[str, subprocess.CompletedProcess], router_config: str
) -> None:
    result = validated[router_config]
    assert result.returncode == 0, result.stdout + result.stderr
    said = [
        line for line in result.stdout.splitlines() if line.startswith(f"{ROOT / router_config}: ")
    ]
    assert len(said) == 1, result.stdout
    assert ": ok — " in said[0]


def test_the_vllm_config_starts_without_its_checkpoint_offline(
    validated: dict[str, subprocess.CompletedProcess],
) -> None:
    result = validated[VLLM_ROUTER]
    said = result.stdout + result.stderr
    assert "vision_unavailable" in said
    assert "google/siglip-base-patch16-224" in said


def _without(document: dict[str, Any], *sections: str) -> dict[str, Any]:
    return {key: value for key, value in document.items() if key not in sections}


@pytest.mark.parametrize("router_config", [COMPOSE_ROUTER, BASE_ROUTER])
def test_decisions_and_signals_are_the_demos(router_config: str) -> None:
    demo, deployed = _yaml(DEMO_ROUTER), _yaml(router_config)
    assert _without(deployed, *DEPLOYMENT_SECTIONS) == _without(demo, *DEPLOYMENT_SECTIONS)
    assert _without(deployed["envoy"], *ADDRESSES) == _without(demo["envoy"], *ADDRESSES)
    assert [c["name"] for c in deployed["envoy"]["clusters"]] == [
        c["name"] for c in demo["envoy"]["clusters"]
    ]


def test_dev_router_config_is_the_base_with_stand_in_clusters_and_a_shared_store() -> None:
    base, dev = _yaml(BASE_ROUTER), _yaml(DEV_ROUTER)
    assert _without(dev, "envoy", "replay") == _without(base, "envoy", "replay")
    assert _without(dev["replay"], "url") == _without(base["replay"], "path")
    assert _without(dev["envoy"], "clusters") == _without(base["envoy"], "clusters")
    assert [c["name"] for c in dev["envoy"]["clusters"]] == [
        c["name"] for c in base["envoy"]["clusters"]
    ]


def test_prod_runs_the_vllm_example_unchanged() -> None:
    assert (ROOT / PROD_ROUTER).read_text() == (ROOT / VLLM_ROUTER).read_text()


def test_vllm_example_uses_tls_timeouts_and_retries_on_every_model_cluster() -> None:
    config, _ = read_config(ROOT / VLLM_ROUTER)
    default_timeout = ClusterConfig.model_fields["timeout_ms"].default
    assert config.envoy is not None
    assert config.vision.model == "google/siglip-base-patch16-224"
    for cluster in config.envoy.clusters:
        assert cluster.tls, cluster.name
        assert cluster.retries > 0, cluster.name
        assert cluster.timeout_ms != default_timeout, f"{cluster.name}: no timeout of its own"


@pytest.mark.parametrize("router_config", [COMPOSE_ROUTER, BASE_ROUTER, DEV_ROUTER, VLLM_ROUTER])
def test_processor_listens_on_every_interface_of_its_container(router_config: str) -> None:
    config, _ = read_config(ROOT / router_config)
    assert config.server.listen == "0.0.0.0:50051"
    assert config.admin.listen == "0.0.0.0:9190"
    assert config.envoy is not None
    assert (config.envoy.listen.address, config.envoy.listen.port) == ("0.0.0.0", 8080)
    assert (config.envoy.admin.address, config.envoy.admin.port) == ("0.0.0.0", 9901)
    # the replay store lives in a database or on a volume, not in the read-only image
    if config.replay.url is None:
        assert PurePosixPath(config.replay.path).parent == PurePosixPath("/var/lib/vsr")


@pytest.mark.parametrize("router_config", ROUTER_CONFIGS)
def test_a_replay_database_url_holds_no_password(router_config: str) -> None:
    """These files become ConfigMaps or sit in the repository: libpq takes the password
    from PGPASSWORD, which the pod or container gets from a Secret or its environment."""
    config, _ = read_config(ROOT / router_config)
    if config.replay.url is not None:
        parts = urlsplit(config.replay.url.get_secret_value())
        assert parts.password is None
        assert "password" not in parts.query


# --- Kubernetes --------------------------------------------------------------------------------

OVERLAYS = {
    "base": DEPLOY / "k8s" / "base",
    "dev": DEPLOY / "k8s" / "overlays" / "dev",
    "prod": DEPLOY / "k8s" / "overlays" / "prod",
}
ROUTER_OF = {"base": BASE_ROUTER, "dev": DEV_ROUTER, "prod": PROD_ROUTER}
# replicas, HPA min and max, PDB minAvailable (None: no PDB), Envoy Service type
SHAPE = {
    "base": (2, 2, 10, 1, "ClusterIP"),
    "dev": (1, 1, 3, None, "ClusterIP"),
    "prod": (3, 3, 20, 2, "LoadBalancer"),
}
PROCESSOR = "vsr-extproc"
HEADLESS = "vsr-extproc-grpc"


@functools.cache
def _rendered(overlay: str) -> tuple[dict[str, Any], ...]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: cannot render the kustomize overlays")
    result = subprocess.run(
        [kubectl, "kustomize", str(OVERLAYS[overlay])],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


def _one(overlay: str, kind: str, name: str) -> dict[str, Any]:
    # a generated ConfigMap's name ends in a content hash
    pattern = re.compile(re.escape(name) + (r"(-[a-z0-9]{10})?" if kind == "ConfigMap" else ""))
    found = [
        doc
        for doc in _rendered(overlay)
        if doc["kind"] == kind and pattern.fullmatch(doc["metadata"]["name"])
    ]
    assert len(found) == 1, f"{overlay}: {len(found)} {kind} named {name}*"
    return found[0]


def _container(deployment: dict[str, Any], name: str) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    return next(container for container in containers if container["name"] == name)


def _port(container: dict[str, Any], name: str) -> int:
    return next(p["containerPort"] for p in container["ports"] if p["name"] == name)


def _mounted_config(overlay: str, deployment: dict[str, Any], path: str) -> str:
    """The ConfigMap a pod sees at ``path``: its mount, then its name, then its key."""
    spec = deployment["spec"]["template"]["spec"]
    directory, key = str(PurePosixPath(path).parent), PurePosixPath(path).name
    mounts = [m for c in spec["containers"] for m in c.get("volumeMounts", ())]
    mount = next(m for m in mounts if m["mountPath"] == directory)
    assert "subPath" not in mount, "a subPath mount is never updated: no hot reload"
    volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
    config_map = _one(overlay, "ConfigMap", volume["configMap"]["name"])
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    data: str = config_map["data"][key]
    return data


def _kubernetes_validate() -> Any:
    try:
        import kubernetes_validate
    except ImportError:
        pytest.fail("kubernetes-validate is not installed: it belongs in the dev extras")
    return kubernetes_validate


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_manifests_match_the_kubernetes_schemas(overlay: str) -> None:
    kubernetes_validate = _kubernetes_validate()
    documents = _rendered(overlay)
    for document in documents:
        where = f"{overlay}: {document['kind']} {document['metadata']['name']}"
        try:
            kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{where}: {error}")
    kinds = {(doc["apiVersion"], doc["kind"]) for doc in documents}
    expected = {
        ("apps/v1", "Deployment"),
        ("v1", "Service"),
        ("v1", "ConfigMap"),
        ("autoscaling/v2", "HorizontalPodAutoscaler"),
        ("policy/v1", "PodDisruptionBudget"),
    }
    if overlay != "base":
        expected.add(("v1", "Namespace"))
    if overlay == "dev":
        expected.remove(("policy/v1", "PodDisruptionBudget"))
        expected |= {("apps/v1", "StatefulSet"), ("v1", "Secret")}  # components/postgres
    assert kinds == expected


def test_schema_validation_rejects_a_misspelt_probe() -> None:
    kubernetes_validate = _kubernetes_validate()
    deployment = copy.deepcopy(_one("base", "Deployment", PROCESSOR))
    _container(deployment, "processor")["readinessProbe"]["grpc"]["prot"] = 50051
    with pytest.raises(kubernetes_validate.ValidationError, match="prot"):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_processor_probes_ask_the_grpc_health_service(overlay: str) -> None:
    container = _container(_one(overlay, "Deployment", PROCESSOR), "processor")
    grpc_port = _port(container, "grpc")
    assert grpc_port == 50051
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"] == {"port": grpc_port, "service": ""}, probe
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300, "models load at start"


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_processor_service_is_headless_and_envoy_resolves_it(overlay: str) -> None:
    deployment = _one(overlay, "Deployment", PROCESSOR)
    container = _container(deployment, "processor")
    service = _one(overlay, "Service", HEADLESS)
    assert service["spec"]["clusterIP"] == "None"
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    ports = {p["name"]: p for p in service["spec"]["ports"]}
    assert ports["grpc"]["port"] == _port(container, "grpc")
    assert ports["admin"]["port"] == _port(container, "admin")

    envoy = _one(overlay, "Deployment", "vsr-envoy")
    args = _container(envoy, "envoy")["args"]
    bootstrap_text = _mounted_config(overlay, envoy, args[args.index("-c") + 1])
    envoy_file = str(OVERLAYS[overlay].relative_to(ROOT) / "envoy.yaml")
    assert bootstrap_text == (ROOT / envoy_file).read_text()
    clusters = {
        c["name"]: c for c in yaml.safe_load(bootstrap_text)["static_resources"]["clusters"]
    }
    for cluster, port in ((PROCESSOR_CLUSTER, "grpc"), (ROUTER_API_CLUSTER, "admin")):
        assert clusters[cluster]["type"] == "STRICT_DNS"
        endpoints = clusters[cluster]["load_assignment"]["endpoints"][0]["lb_endpoints"]
        addresses = [e["endpoint"]["address"]["socket_address"] for e in endpoints]
        assert addresses == [{"address": HEADLESS, "port_value": ports[port]["port"]}]


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_router_config_is_mounted_where_the_processor_reads_it(overlay: str) -> None:
    deployment = _one(overlay, "Deployment", PROCESSOR)
    args = _container(deployment, "processor")["args"]
    assert args[0] == "serve"
    path = args[args.index("--config") + 1]
    assert _mounted_config(overlay, deployment, path) == (ROOT / ROUTER_OF[overlay]).read_text()
    # edited in place, so the processor hot-reloads it instead of every pod restarting
    assert _one(overlay, "ConfigMap", "vsr-router-config")["metadata"]["name"] == (
        "vsr-router-config"
    )


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_processor_pod_is_non_root_read_only_and_drains_in_time(overlay: str) -> None:
    config, _ = read_config(ROOT / ROUTER_OF[overlay])
    deployment = _one(overlay, "Deployment", PROCESSOR)
    spec = deployment["spec"]["template"]["spec"]
    container = _container(deployment, "processor")
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert spec["terminationGracePeriodSeconds"] > config.server.grace_period_s
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    writable = {
        m["mountPath"]
        for m in container["volumeMounts"]
        if "emptyDir" in next(v for v in spec["volumes"] if v["name"] == m["name"])
    }
    replay = [] if config.replay.url else [str(PurePosixPath(config.replay.path).parent)]
    assert writable == {"/tmp", env["HF_HOME"], *replay}
    assert float(env["OMP_NUM_THREADS"]) <= _cpu(container["resources"]["requests"]["cpu"])


def _cpu(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_every_container_has_requests_and_limits(overlay: str) -> None:
    for document in _rendered(overlay):
        if document["kind"] not in {"Deployment", "StatefulSet"}:
            continue
        for container in document["spec"]["template"]["spec"]["containers"]:
            resources = container["resources"]
            for bound in ("requests", "limits"):
                assert {"cpu", "memory"} <= resources[bound].keys(), container["name"]


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_replicas_autoscaling_disruption_budget_and_exposure(overlay: str) -> None:
    replicas, hpa_min, hpa_max, pdb_min, service_type = SHAPE[overlay]
    deployment = _one(overlay, "Deployment", PROCESSOR)
    assert deployment["spec"]["replicas"] == replicas
    hpa = _one(overlay, "HorizontalPodAutoscaler", PROCESSOR)
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": deployment["metadata"]["name"],
    }
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (hpa_min, hpa_max)
    [metric] = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert metric["resource"]["target"] == {"type": "Utilization", "averageUtilization": 60}
    budgets = [doc for doc in _rendered(overlay) if doc["kind"] == "PodDisruptionBudget"]
    assert [b["spec"]["minAvailable"] for b in budgets] == ([pdb_min] if pdb_min else [])
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    for budget in budgets:
        assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert _one(overlay, "Service", "vsr-envoy")["spec"]["type"] == service_type


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_envoy_pod_serves_the_ports_of_its_bootstrap(overlay: str) -> None:
    deployment = _one(overlay, "Deployment", "vsr-envoy")
    container = _container(deployment, "envoy")
    assert container["image"] == "envoyproxy/envoy:v1.40-latest"
    assert "--disable-hot-restart" in container["args"]
    config, _ = read_config(ROOT / ROUTER_OF[overlay])
    assert config.envoy is not None
    assert _port(container, "http") == config.envoy.listen.port
    assert _port(container, "admin") == config.envoy.admin.port
    assert container["readinessProbe"]["httpGet"] == {"path": "/ready", "port": "admin"}
    service = _one(overlay, "Service", "vsr-envoy")
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http"], "admin stays private"
    admin = _one(overlay, "Service", "vsr-extproc-admin")
    annotations = admin["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == str(config.admin.listen).rsplit(":", 1)[1]


def _env(container: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(e for e in container["env"] if e["name"] == name)
    return found


def _postgres_url(router_config: str) -> SplitResult:
    config, _ = read_config(ROOT / router_config)
    assert config.replay.url is not None, f"{router_config} records per replica"
    return urlsplit(config.replay.url.get_secret_value())


def test_dev_processors_share_the_in_cluster_postgres() -> None:
    url = _postgres_url(DEV_ROUTER)
    service = _one("dev", "Service", url.hostname or "")
    database = _one("dev", "StatefulSet", "vsr-postgres")
    assert database["spec"]["serviceName"] == service["metadata"]["name"]
    labels = database["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    postgres = _container(database, "postgres")
    [port] = service["spec"]["ports"]
    assert port["port"] == url.port == _port(postgres, port["targetPort"])
    assert _env(postgres, "POSTGRES_USER")["value"] == url.username
    assert _env(postgres, "POSTGRES_DB")["value"] == url.path.lstrip("/")
    # the processors' PGPASSWORD and the server's password are one generated Secret's key
    processor = _container(_one("dev", "Deployment", PROCESSOR), "processor")
    secret = _env(processor, "PGPASSWORD")["valueFrom"]["secretKeyRef"]
    assert _env(postgres, "POSTGRES_PASSWORD")["valueFrom"]["secretKeyRef"] == secret
    [generated] = [doc for doc in _rendered("dev") if doc["kind"] == "Secret"]
    assert re.fullmatch(r"vsr-postgres-[a-z0-9]{10}", secret["name"])  # rolls on a change
    assert generated["metadata"]["name"] == secret["name"]
    assert secret["key"] in generated["data"]
    # the records outlive the pod, and the pod runs like every other here
    [claim] = database["spec"]["volumeClaimTemplates"]
    mounts = {m["name"]: m["mountPath"] for m in postgres["volumeMounts"]}
    assert mounts[claim["metadata"]["name"]] == "/var/lib/postgresql/data"
    assert _env(postgres, "PGDATA")["value"].startswith("/var/lib/postgresql/data/")
    spec = database["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert postgres["securityContext"]["readOnlyRootFilesystem"] is True
    assert postgres["readinessProbe"]["exec"]["command"][0] == "pg_isready"


def test_prod_reads_the_replay_database_password_from_a_secret() -> None:
    url = _postgres_url(PROD_ROUTER)
    assert dict(parse_qsl(url.query))["sslmode"] == "verify-full"
    processor = _container(_one("prod", "Deployment", PROCESSOR), "processor")
    secret = _env(processor, "PGPASSWORD")["valueFrom"]["secretKeyRef"]
    assert secret == {"name": "vsr-replay-db", "key": "password"}
    # the operator creates it (the overlay's header says how): no password in the repository
    assert not [doc for doc in _rendered("prod") if doc["kind"] == "Secret"]


def test_dev_stand_ins_answer_for_every_model_cluster() -> None:
    config, _ = read_config(ROOT / DEV_ROUTER)
    standin_config, _ = read_config(ROOT / DEV_STANDINS)
    assert config.envoy is not None
    assert standin_config.envoy is not None
    listening = {c.name: c.endpoints[0].port for c in standin_config.envoy.clusters}
    standins = _one("dev", "Deployment", "vsr-standins")
    container = _container(standins, "standins")
    assert container["args"][:2] == ["standin", "--config"]
    mounted = _mounted_config("dev", standins, container["args"][2])
    assert mounted == (ROOT / DEV_STANDINS).read_text()
    exposed = {port["containerPort"] for port in container["ports"]}
    for cluster in config.envoy.clusters:
        [endpoint] = cluster.endpoints
        service = _one("dev", "Service", endpoint.address)
        assert service["metadata"]["labels"]["app.kubernetes.io/component"] == "stand-in"
        [port] = [p for p in service["spec"]["ports"] if p["port"] == endpoint.port]
        assert port["targetPort"] == listening[cluster.name], cluster.name
        assert port["targetPort"] in exposed


def test_prod_reaches_every_model_server_over_tls() -> None:
    envoy = _one("prod", "Deployment", "vsr-envoy")
    args = _container(envoy, "envoy")["args"]
    bootstrap = yaml.safe_load(_mounted_config("prod", envoy, args[args.index("-c") + 1]))
    config, _ = read_config(ROOT / PROD_ROUTER)
    models = {model.cluster for model in config.models}
    clusters = [c for c in bootstrap["static_resources"]["clusters"] if c["name"] in models]
    assert len(clusters) == len(models)
    for cluster in clusters:
        assert cluster["transport_socket"]["name"] == "envoy.transport_sockets.tls"


# --- compose -------------------------------------------------------------------------------------

COMPOSE = DEPLOY / "compose.yaml"


@functools.cache
def _compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return document


def _services() -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = _compose()["services"]
    return services


def _binds(service: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(source, target) of each volume entry, in compose's short syntax."""
    for volume in service.get("volumes", ()):
        source, target = volume.split(":")[:2]
        yield source, target


def _option(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_compose_services_have_an_image_and_known_dependencies() -> None:
    services = _services()
    assert set(services) == {"envoy", "processor", "standins", "postgres", "prometheus"}
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        assert set(service.get("depends_on", ())) <= set(services), name
    build = services["processor"]["build"]
    assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == (
        DEPLOY / "Dockerfile"
    )


def test_compose_mounts_only_files_that_exist() -> None:
    declared = set(_compose().get("volumes", {}))
    for name, service in _services().items():
        for source, _ in _binds(service):
            if source.startswith((".", "/")):
                assert (COMPOSE.parent / source).exists(), f"{name}: {source} does not exist"
            else:
                assert source in declared, f"{name}: volume {source} is not declared"


def test_compose_publishes_unique_ports_on_loopback_only() -> None:
    published = [port for service in _services().values() for port in service.get("ports", ())]
    assert all(port.startswith("127.0.0.1:") for port in published), published
    host_ports = [port.split(":")[1] for port in published]
    assert len(host_ports) == len(set(host_ports))
    assert sorted(host_ports) == ["8080", "9090", "9901"]


def test_compose_processor_reads_the_mounted_compose_config() -> None:
    services = _services()
    for name in ("processor", "standins"):
        command = services[name]["command"]
        path = PurePosixPath(_option(command, "--config"))
        sources = [
            s for s, target in _binds(services[name]) if PurePosixPath(target) == path.parent
        ]
        assert sources, f"{name}: nothing is mounted at {path.parent}"
        assert (COMPOSE.parent / sources[0] / path.name).resolve() == ROOT / COMPOSE_ROUTER
    assert services["processor"]["command"][0] == "serve"
    assert services["standins"]["command"][0] == "standin"


def test_compose_envoy_runs_the_generated_config_against_the_service_names() -> None:
    services = _services()
    envoy = services["envoy"]
    path = _option(envoy["command"], "-c")
    [source] = [s for s, target in _binds(envoy) if target == path]
    assert (COMPOSE.parent / source).resolve() == ROOT / "deploy/compose/envoy.yaml"
    config, _ = read_config(ROOT / COMPOSE_ROUTER)
    assert config.envoy is not None
    assert {e.address for e in config.envoy.processor + config.envoy.router_api} == {"processor"}
    upstreams = {e.address for c in config.envoy.clusters for e in c.endpoints}
    assert upstreams == {"standins"}
    assert services["standins"]["hostname"] == "standins"
    assert f"127.0.0.1:{config.envoy.listen.port}:{config.envoy.listen.port}" in envoy["ports"]


def test_compose_processors_record_into_the_postgres_service() -> None:
    services = _services()
    processor, postgres = services["processor"], services["postgres"]
    url = _postgres_url(COMPOSE_ROUTER)
    assert url.hostname in services
    assert (url.hostname, url.port) == ("postgres", 5432)
    assert postgres["environment"]["POSTGRES_USER"] == url.username
    assert postgres["environment"]["POSTGRES_DB"] == url.path.lstrip("/")
    assert processor["environment"]["PGPASSWORD"] == postgres["environment"]["POSTGRES_PASSWORD"]
    assert processor["depends_on"]["postgres"] == {"condition": "service_healthy"}
    assert "pg_isready" in postgres["healthcheck"]["test"]
    assert "ports" not in postgres, "the database is for the processors only"
    data = [source for source, target in _binds(postgres) if target == "/var/lib/postgresql/data"]
    assert data == ["postgres"], "the records survive `docker compose down`"


def test_prometheus_scrapes_the_processor_admin_port() -> None:
    prometheus = _services()["prometheus"]
    [path] = [arg.split("=", 1)[1] for arg in prometheus["command"] if "--config.file=" in arg]
    [source] = [s for s, target in _binds(prometheus) if target == path]
    scrape = yaml.safe_load((COMPOSE.parent / source).read_text())
    config, _ = read_config(ROOT / COMPOSE_ROUTER)
    admin_port = str(config.admin.listen).rsplit(":", 1)[1]
    jobs = {job["job_name"]: job for job in scrape["scrape_configs"]}
    processor = jobs["vsr-extproc"]
    assert processor["metrics_path"] == "/metrics"
    assert processor["static_configs"][0]["targets"] == [f"processor:{admin_port}"]


def test_docker_compose_accepts_the_file() -> None:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("docker is not installed")
    version = subprocess.run(
        [docker, "compose", "version"], capture_output=True, text=True, check=False, timeout=30
    )
    if version.returncode != 0:
        pytest.skip("docker compose plugin not installed")
    result = subprocess.run(
        [docker, "compose", "-f", str(COMPOSE), "config", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


# --- the image -----------------------------------------------------------------------------------

DOCKERFILE = DEPLOY / "Dockerfile"


@functools.cache
def _stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's instructions, (KEYWORD, arguments), grouped by stage."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    stages: list[list[tuple[str, str]]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, arguments = line.partition(" ")
        if keyword.upper() == "FROM":
            stages.append([])
        elif not stages:
            continue  # ARG before the first FROM
        stages[-1].append((keyword.upper(), arguments.strip()))
    return stages


def _final(keyword: str) -> list[str]:
    return [arguments for name, arguments in _stages()[-1] if name == keyword]


def test_dockerfile_builds_in_stages_and_runs_as_a_non_root_user() -> None:
    assert len(_stages()) >= 2
    [user] = _final("USER")
    assert user.split(":")[0] not in {"root", "0"}
    assert [args for name, args in _stages()[-1] if name == "COPY" and "--from=builder" in args]


def test_dockerfile_pins_cpu_torch_and_installs_the_project() -> None:
    runs = " ".join(args for stage in _stages() for name, args in stage if name == "RUN")
    assert "--index-url https://download.pytorch.org/whl/cpu torch==2.13.0" in runs
    assert "pip install ." in runs


def test_dockerfile_copies_only_what_the_image_needs() -> None:
    allowed = {
        "pyproject.toml",
        "README.md",
        "proto/",
        "requirements/",
        "vsr_extproc/",
        COMPOSE_ROUTER,
    }
    for stage in _stages():
        for name, arguments in stage:
            if name != "COPY" or arguments.startswith("--from="):
                continue
            *sources, _ = shlex.split(arguments)
            assert set(sources) <= allowed, sources
            assert all((ROOT / source).exists() for source in sources)


def test_dockerfile_runtime_contract() -> None:
    assert _final("STOPSIGNAL") == ["SIGTERM"]
    assert set(" ".join(_final("EXPOSE")).split()) == {"50051", "9190"}
    assert _final("ENTRYPOINT") == ['["vsr-extproc"]']
    assert _final("CMD") == ['["serve", "--config", "/etc/vsr/router.yaml", "--log-json"]']
    env = " ".join(_final("ENV"))
    assert "HF_HOME=/var/cache/vsr/hf" in env
    assert any(args.startswith("vsr-extproc validate") for args in _final("RUN")), "pre-warm"
    # what the pre-warm kept is in the image, and no volume compose or an overlay mounts
    # hides it from the processor
    (cache,) = re.findall(r"VSR_CACHE_DIR=(\S+)", env)
    mounts = {"compose": [target for _, target in _binds(_services()["processor"])]}
    for overlay in OVERLAYS:
        container = _container(_one(overlay, "Deployment", PROCESSOR), "processor")
        mounts[overlay] = [mount["mountPath"] for mount in container["volumeMounts"]]
    for where, paths in mounts.items():
        assert paths, where
        assert not any(f"{cache}/".startswith(f"{path}/") for path in paths), where


def _healthcheck_code() -> str:
    [healthcheck] = _final("HEALTHCHECK")
    command = json.loads(healthcheck[healthcheck.index("CMD") + 3 :])
    assert command[:2] == ["python", "-c"]
    code: str = command[2]
    return code


@pytest.fixture
def health_server() -> Iterator[tuple[str, health.HealthServicer]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}", servicer
    server.stop(None).wait()


def test_healthcheck_passes_only_while_the_processor_is_serving(
    health_server: tuple[str, health.HealthServicer],
) -> None:
    target, servicer = health_server

    def check() -> int:
        return subprocess.run(
            [sys.executable, "-c", _healthcheck_code()],
            env={**os.environ, "VSR_HEALTH_TARGET": target},
            capture_output=True,
            timeout=30,
            check=False,
        ).returncode

    servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    assert check() != 0, "warming up or draining"
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    assert check() == 0
    servicer.enter_graceful_shutdown()
    assert check() != 0


def test_docker_build_check() -> None:
    docker = shutil.which("docker")
    engine = docker and subprocess.run(
        [docker, "info"], capture_output=True, check=False, timeout=30
    )
    if not engine or engine.returncode != 0:
        pytest.skip("no Docker engine here: `docker build --check` needs one")
    result = subprocess.run(
        [docker, "build", "--check", "-f", str(DOCKERFILE), str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
