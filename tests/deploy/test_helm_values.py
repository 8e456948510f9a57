"""The chart's values: their schema, and what each new value does to the render.

Selectors (component labels), values.schema.json, readiness strategy, rollout
strategy, anti-affinity, rolling on Secret changes, the operator's extras, the
NetworkPolicy and the dashboard ConfigMap.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.deploy.deploy_helpers import (
    CHART,
    CI_VALUES,
    HelmError,
    Renderer,
    containers,
    pod_labels,
    settings_configmap,
)

DEFAULT = CHART / "ci" / "default-values.yaml"
ALL = CHART / "ci" / "all-features-values.yaml"
HPA = CHART / "ci" / "hpa-values.yaml"
SCHEMA = json.loads((CHART / "values.schema.json").read_text())


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def pod_spec(docs: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = one(docs, "Deployment")["spec"]["template"]["spec"]
    return spec


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


# --------------------------------------------------------------- selectors --


def selectors(docs: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Every label selector of the render that picks pods, by where it is."""
    found: dict[str, dict[str, str]] = {}
    deployment = one(docs, "Deployment")
    found["Deployment.spec.selector"] = deployment["spec"]["selector"]["matchLabels"]
    found["Service.spec.selector"] = one(docs, "Service")["spec"]["selector"]
    for doc in docs:
        if doc["kind"] == "PodDisruptionBudget":
            found["PodDisruptionBudget"] = doc["spec"]["selector"]["matchLabels"]
        if doc["kind"] == "NetworkPolicy":
            found["NetworkPolicy.podSelector"] = doc["spec"]["podSelector"]["matchLabels"]
    affinity = pod_spec(docs).get("affinity", {}).get("podAntiAffinity", {})
    for kind, terms in affinity.items():
        for n, entry in enumerate(terms):
            term = entry.get("podAffinityTerm", entry)  # preferred terms wrap it
            found[f"podAntiAffinity.{kind}[{n}]"] = term["labelSelector"]["matchLabels"]
    for n, spread in enumerate(pod_spec(docs).get("topologySpreadConstraints", [])):
        found[f"topologySpreadConstraints[{n}]"] = spread["labelSelector"]["matchLabels"]
    return found


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda p: p.name)
def test_selectors_pick_the_consumer_pods_and_never_the_migration_pod(
    render: Renderer, values: Path
) -> None:
    docs = render(values)
    consumer = pod_labels(docs, "Deployment")
    migrate = pod_labels(docs, "Job")
    assert consumer["app.kubernetes.io/component"] == "referee"
    assert migrate["app.kubernetes.io/component"] == "migrate"
    for where, selector in selectors(docs).items():
        assert selector.get("app.kubernetes.io/component") == "referee", where
        assert matches(selector, consumer), where
        assert not matches(selector, migrate), where


def test_the_service_monitor_selects_the_service(render: Renderer) -> None:
    docs = render(ALL)
    monitor = one(docs, "ServiceMonitor")["spec"]["selector"]["matchLabels"]
    service = one(docs, "Service")["metadata"]["labels"]
    assert monitor["app.kubernetes.io/component"] == "referee"
    assert matches(monitor, service)


def test_pod_labels_never_override_the_chart_labels(render: Renderer) -> None:
    labels = pod_labels(render(ALL), "Deployment")
    assert labels["tier"] == "backend"  # added
    assert labels["app.kubernetes.io/component"] == "referee"  # podLabels said not-this


# ----------------------------------------------------------- values schema --


def schema_node(path: list[str]) -> dict[str, Any] | None:
    node: dict[str, Any] = SCHEMA
    for key in path:
        props = node.get("properties", {})
        if key not in props:
            return None
        node = props[key]
    return node


def leaf_paths(node: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(node, dict) and node:
        paths: list[tuple[str, ...]] = []
        for key, value in node.items():
            paths += leaf_paths(value, (*prefix, str(key)))
        return paths
    return [prefix]


def test_the_schema_is_a_valid_draft7_schema() -> None:
    jsonschema.Draft7Validator.check_schema(SCHEMA)


def test_the_schema_types_every_value() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    untyped = []
    for path in leaf_paths(values):
        # pass-through Kubernetes objects (resources, affinity, ...) are typed as a whole
        for depth in range(len(path), 0, -1):
            node = schema_node(list(path[:depth]))
            if node is not None:
                break
        if node is None or not ({"type", "enum", "anyOf", "oneOf"} & set(node)):
            untyped.append(".".join(path))
    assert not untyped, f"values without a type in values.schema.json: {untyped}"
    for key in values:
        assert key in SCHEMA["properties"], key


@pytest.mark.parametrize("values", [CHART / "values.yaml", *CI_VALUES], ids=lambda p: p.name)
def test_the_shipped_values_meet_the_schema(values: Path) -> None:
    merged = yaml.safe_load((CHART / "values.yaml").read_text())

    def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> None:
        for key, value in over.items():
            if isinstance(value, dict) and isinstance(base.get(key), dict):
                deep_merge(base[key], value)
            else:
                base[key] = value

    deep_merge(merged, yaml.safe_load(values.read_text()) or {})
    jsonschema.validate(merged, SCHEMA, cls=jsonschema.Draft7Validator)


@pytest.mark.parametrize(
    ("key", "value", "where"),
    [
        ("replicaCount", "abc", "/replicaCount"),
        ("replicaCount", "-1", "/replicaCount"),
        ("replicaCnt", "3", "replicaCnt"),  # a typo is not silently ignored
        ("strategy.type", "BlueGreen", "/strategy/type"),
        ("strategy.rollingUpdate.maxSurge", "lots", "/strategy/rollingUpdate/maxSurge"),
        ("readiness.requirePartition", "maybe", "/readiness/requirePartition"),
        ("kafka.partitions", "0", "/kafka/partitions"),
        ("kafka.bootstrapServers", "kafka", "/kafka/bootstrapServers"),
        ("config.logLevel", "TRACE", "/config/logLevel"),
        ("config.httpPort", "70000", "/config/httpPort"),
        ("image.digest", "sha256:xyz", "/image/digest"),
        ("image.pullPolicy", "Sometimes", "/image/pullPolicy"),
        ("database.url", "mysql://x", "/database/url"),
        ("serviceMonitor.interval", "30", "/serviceMonitor/interval"),
        ("metrics.prometheusRule.rejectionRateHigh.threshold", "2", "rejectionRateHigh"),
        ("metrics.prometheusRule.relayStale.severity", "page", "relayStale"),
        ("metrics.prometheusRule.batchErrors.for", "5 minutes", "batchErrors"),
        ("podAntiAffinity", "sometimes", "/podAntiAffinity"),
        ("networkPolicy.egress.kafka.ports[0]", "0", "/networkPolicy/egress/kafka/ports"),
        ("keda.offsetResetPolicy", "newest", "/keda/offsetResetPolicy"),
        ("kafka.heartbeatIntervalMs", "5", "/kafka/heartbeatIntervalMs"),
        ("kafka.staticMembership", "sometimes", "/kafka/staticMembership"),
        ("config.relayProcess", "true", "relayProcess"),  # removed with the relay process
        ("config.consumerProcesses", "2", "consumerProcesses"),  # one process per pod
        ("metrics.prometheusRule.noRelayLeader.enabled", "true", "noRelayLeader"),
        ("autoscaling.targetCPUUtilizationPercentage", "150", "targetCPUUtilizationPercentage"),
    ],
)
def test_the_values_schema_refuses(render: Renderer, key: str, value: str, where: str) -> None:
    with pytest.raises(HelmError, match="values don't meet the specifications of the schema") as e:
        render(DEFAULT, **{key: value})
    assert where in str(e.value)


# ---------------------------------------------------------------- readiness --


@pytest.mark.parametrize(
    ("values", "overrides", "expected"),
    [
        (DEFAULT, {}, "true"),  # 2 pods, 8 partitions: every pod gets one
        (DEFAULT, {"replicaCount": "7"}, "true"),
        (DEFAULT, {"replicaCount": "8"}, "false"),  # a surge pod would have none
        (DEFAULT, {"replicaCount": "4", "kafka.partitions": "4"}, "false"),
        (HPA, {}, "false"),  # an autoscaler can reach the partition count
        (ALL, {"readiness.requirePartition": "auto"}, "false"),  # KEDA
        (ALL, {}, "true"),  # explicit
        (DEFAULT, {"readiness.requirePartition": "false"}, "false"),
        (DEFAULT, {"replicaCount": "8", "readiness.requirePartition": "true"}, "true"),
    ],
)
def test_readiness_requires_a_partition_unless_pods_can_outnumber_them(
    render: Renderer, values: Path, overrides: dict[str, str], expected: str
) -> None:
    docs = render(values, **overrides)
    assert settings_configmap(docs)["data"]["REFEREE_READY_REQUIRES_PARTITION"] == expected
    job_env = {e["name"]: e.get("value") for e in containers(one(docs, "Job"))[0]["env"]}
    assert job_env["REFEREE_READY_REQUIRES_PARTITION"] == expected


# --------------------------------------------------------- consumer group --


def deployment_env(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    container = containers(one(docs, "Deployment"))[0]
    return {e["name"]: e for e in container["env"]}


def test_one_container_one_process_per_pod(render: Renderer) -> None:
    """A pod is one member of the group: no setting forks consumer or relay processes."""
    for values in (DEFAULT, ALL, HPA):
        docs = render(values)
        assert len(containers(one(docs, "Deployment"))) == 1
        config = settings_configmap(docs)["data"]
        assert "REFEREE_CONSUMER_PROCESSES" not in config
        assert "REFEREE_RELAY_PROCESS" not in config


def test_heartbeat_and_session_timeout_reach_the_pods(render: Renderer) -> None:
    default = settings_configmap(render(DEFAULT))["data"]
    assert default["REFEREE_KAFKA_HEARTBEAT_INTERVAL_MS"] == "250"
    assert default["REFEREE_KAFKA_SESSION_TIMEOUT_MS"] == "10000"
    tuned = settings_configmap(render(ALL))["data"]
    assert tuned["REFEREE_KAFKA_HEARTBEAT_INTERVAL_MS"] == "1000"
    assert tuned["REFEREE_KAFKA_SESSION_TIMEOUT_MS"] == "30000"
    edge = settings_configmap(render(DEFAULT, **{"kafka.heartbeatIntervalMs": "3333"}))
    assert edge["data"]["REFEREE_KAFKA_HEARTBEAT_INTERVAL_MS"] == "3333"  # exactly a third


def test_static_membership_names_each_member_after_its_pod(render: Renderer) -> None:
    env = deployment_env(render(ALL))
    assert env["REFEREE_KAFKA_GROUP_INSTANCE_ID"] == {
        "name": "REFEREE_KAFKA_GROUP_INSTANCE_ID",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
    }
    docs = render(ALL)
    assert "REFEREE_KAFKA_GROUP_INSTANCE_ID" not in settings_configmap(docs)["data"]
    job_env = {e["name"] for e in containers(one(docs, "Job"))[0]["env"]}
    assert "REFEREE_KAFKA_GROUP_INSTANCE_ID" not in job_env  # migrate joins no group


def test_dynamic_membership_by_default(render: Renderer) -> None:
    for values in (DEFAULT, HPA):
        docs = render(values)
        assert "REFEREE_KAFKA_GROUP_INSTANCE_ID" not in deployment_env(docs)
        assert "REFEREE_KAFKA_GROUP_INSTANCE_ID" not in settings_configmap(docs)["data"]
    off = render(ALL, **{"kafka.staticMembership": "false"})
    assert "REFEREE_KAFKA_GROUP_INSTANCE_ID" not in deployment_env(off)


# ----------------------------------------------------------------- strategy --


def test_the_rollout_strategy_is_configurable(render: Renderer) -> None:
    default = one(render(DEFAULT), "Deployment")["spec"]["strategy"]
    assert default["type"] == "RollingUpdate"
    assert default["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    tuned = one(render(ALL), "Deployment")["spec"]["strategy"]
    assert tuned["type"] == "RollingUpdate"
    assert tuned["rollingUpdate"] == {"maxSurge": "25%", "maxUnavailable": 1}
    # Recreate: rollingUpdate must go (the API server refuses it with Recreate)
    assert one(render(HPA), "Deployment")["spec"]["strategy"] == {"type": "Recreate"}


# ----------------------------------------------------------------- affinity --


def test_default_soft_anti_affinity_by_hostname(render: Renderer) -> None:
    docs = render(DEFAULT)
    anti = pod_spec(docs)["affinity"]["podAntiAffinity"]
    assert set(anti) == {"preferredDuringSchedulingIgnoredDuringExecution"}
    (term,) = anti["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    selector = term["podAffinityTerm"]["labelSelector"]["matchLabels"]
    assert matches(selector, pod_labels(docs, "Deployment"))


def test_anti_affinity_can_be_hard_none_or_replaced(render: Renderer) -> None:
    hard = pod_spec(render(ALL))["affinity"]["podAntiAffinity"]
    assert set(hard) == {"requiredDuringSchedulingIgnoredDuringExecution"}
    assert "affinity" not in pod_spec(render(DEFAULT, podAntiAffinity="none"))
    replaced = pod_spec(render(HPA))["affinity"]
    assert set(replaced) == {"nodeAffinity"}  # the operator's affinity, no preset added
    zone = pod_spec(render(DEFAULT, podAntiAffinityTopologyKey="topology.kubernetes.io/zone"))
    term = zone["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term[0]["podAffinityTerm"]["topologyKey"] == "topology.kubernetes.io/zone"


# ------------------------------------------------------- rolling on changes --


def pod_annotations(docs: list[dict[str, Any]]) -> dict[str, str]:
    annotations: dict[str, str] = one(docs, "Deployment")["spec"]["template"]["metadata"][
        "annotations"
    ]
    return annotations


def test_a_changed_chart_secret_rolls_the_pods(render: Renderer) -> None:
    before = pod_annotations(render(DEFAULT))
    after = pod_annotations(render(DEFAULT, **{"database.url": "postgresql://u:new@db:5432/r"}))
    assert before["checksum/secret"] != after["checksum/secret"]
    assert before["checksum/config"] == after["checksum/config"]


def test_an_existing_secret_rolls_through_lookup_or_the_rollout_token(render: Renderer) -> None:
    # `helm template` cannot look the Secret up: no checksum/secret, the token is the fallback
    plain = pod_annotations(render(ALL, rolloutToken=""))
    assert "checksum/secret" not in plain
    assert "checksum/rollout-token" not in plain
    one_token = pod_annotations(render(ALL))
    other_token = pod_annotations(render(ALL, rolloutToken="8"))
    assert one_token["checksum/rollout-token"] != other_token["checksum/rollout-token"]
    assert one_token["example.com/team"] == "games"  # podAnnotations
    template = (CHART / "templates" / "_helpers.tpl").read_text()
    assert 'lookup "v1" "Secret" .Release.Namespace .Values.existingSecret.name' in template


# ------------------------------------------------------------------- extras --


def test_extra_env_volumes_and_mounts_reach_both_workloads(render: Renderer) -> None:
    docs = render(ALL)
    for kind in ("Deployment", "Job"):
        doc = one(docs, kind)
        container = containers(doc)[0]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["TZ"] == "UTC", kind
        assert env["REFEREE_BATCH_LINGER_MS"] == "20", kind
        assert {"configMapRef": {"name": "referee-proxy-settings"}} in container["envFrom"], kind
        volumes = {v["name"]: v for v in doc["spec"]["template"]["spec"]["volumes"]}
        assert volumes["extra-ca"] == {"name": "extra-ca", "configMap": {"name": "corporate-ca"}}
        assert "tmp" in volumes, kind
        mounts = {m["name"]: m for m in container["volumeMounts"]}
        assert mounts["extra-ca"]["mountPath"] == "/etc/ssl/corporate", kind
        assert mounts["tmp"]["mountPath"] == "/tmp", kind


# ------------------------------------------------------------ NetworkPolicy --


def test_no_network_policy_unless_enabled(render: Renderer) -> None:
    assert not [d for d in render(DEFAULT) if d["kind"] == "NetworkPolicy"]


def test_network_policy_admits_the_peers_to_http_and_lets_out_kafka_postgres_dns(
    render: Renderer,
) -> None:
    docs = render(ALL)
    spec = one(docs, "NetworkPolicy")["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    (ingress,) = spec["ingress"]
    assert ingress["ports"] == [{"port": "http", "protocol": "TCP"}]
    assert ingress["from"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "monitoring"
    }
    port_names = {p["name"] for p in pod_spec(docs)["containers"][0]["ports"]}
    assert "http" in port_names
    egress = {
        tuple((p["port"], p["protocol"]) for p in rule["ports"]): rule for rule in spec["egress"]
    }
    assert set(egress) == {
        ((9093, "TCP"),),
        ((5432, "TCP"),),
        ((53, "UDP"), (53, "TCP")),
        ((4317, "TCP"),),
    }
    assert egress[((5432, "TCP"),)]["to"] == [{"ipBlock": {"cidr": "10.20.0.0/16"}}]
    dns = egress[((53, "UDP"), (53, "TCP"))]["to"][0]
    assert dns["podSelector"]["matchLabels"] == {"k8s-app": "kube-dns"}


def test_network_policy_without_peers_denies_ingress_rather_than_allowing_all(
    render: Renderer,
) -> None:
    """An ingress rule with no `from` admits everyone: no peers must render no rule."""
    spec = one(render(HPA), "NetworkPolicy")["spec"]
    assert spec["ingress"] == []
    assert spec["policyTypes"] == ["Ingress"]  # egress.enabled: false
    assert "egress" not in spec


def test_network_policy_egress_without_peers_is_by_port(render: Renderer) -> None:
    spec = one(render(DEFAULT, **{"networkPolicy.enabled": "true"}), "NetworkPolicy")["spec"]
    kafka, postgres, dns = spec["egress"]
    assert kafka == {"ports": [{"port": 9092, "protocol": "TCP"}]}
    assert postgres == {"ports": [{"port": 5432, "protocol": "TCP"}]}
    assert {p["port"] for p in dns["ports"]} == {53}


# ---------------------------------------------------------------- dashboard --


def test_the_dashboard_configmap_carries_the_committed_dashboard(render: Renderer) -> None:
    docs = render(ALL)
    (dashboard,) = [
        d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard")
    ]
    assert dashboard["metadata"]["namespace"] == "monitoring"
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["metadata"]["annotations"] == {"grafana_folder": "Games"}
    shipped = json.loads((CHART / "dashboards" / "referee.json").read_text())
    assert json.loads(dashboard["data"]["referee.json"]) == shipped
    assert not [d for d in render(DEFAULT) if d["metadata"]["name"].endswith("-dashboard")], (
        "the dashboard is optional"
    )
