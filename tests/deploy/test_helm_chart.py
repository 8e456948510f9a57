"""The Helm chart: schema-valid manifests, restricted pods, guard rails.

Built-in kinds are validated with kubernetes-validate (strict) against
Kubernetes KUBE_VERSION; the custom resources (ServiceMonitor, ScaledObject,
TriggerAuthentication, PrometheusRule) against the partial schemas in
tests/deploy/schemas.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import kubernetes_validate.utils
import pytest
import yaml

from tests.deploy.deploy_helpers import (
    CHART,
    CI_VALUES,
    KUBE_VERSION,
    SCHEMAS,
    HelmError,
    Renderer,
    containers,
    pod_spec,
    render_chart,
    settings_configmap,
)

DEFAULT = CHART / "ci" / "default-values.yaml"
ALL = CHART / "ci" / "all-features-values.yaml"
HPA = CHART / "ci" / "hpa-values.yaml"

CRD_SCHEMAS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "servicemonitor.schema.json",
    ("keda.sh/v1alpha1", "ScaledObject"): "scaledobject.schema.json",
    ("keda.sh/v1alpha1", "TriggerAuthentication"): "triggerauthentication.schema.json",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "prometheusrule.schema.json",
}


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = by_kind(docs, kind)
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def validate_doc(doc: dict[str, Any]) -> None:
    key = (doc["apiVersion"], doc["kind"])
    if key in CRD_SCHEMAS:
        schema = json.loads((SCHEMAS / CRD_SCHEMAS[key]).read_text())
        jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    else:
        kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)


# ------------------------------------------------------------------ schemas --


def test_kube_version_is_bundled() -> None:
    utils = kubernetes_validate.utils
    assert utils.major_minor(KUBE_VERSION) in {utils.major_minor(v) for v in utils.all_versions()}


def test_every_manifest_is_schema_valid(ci_render: list[dict[str, Any]]) -> None:
    assert ci_render
    for doc in ci_render:
        validate_doc(doc)


def test_crd_schemas_catch_typos(render: Renderer) -> None:
    docs = render(ALL)
    scaled = one(docs, "ScaledObject")
    scaled["spec"]["triggers"][0]["metadata"]["lagTreshold"] = "5"
    with pytest.raises(jsonschema.ValidationError):
        validate_doc(scaled)
    monitor = one(docs, "ServiceMonitor")
    monitor["spec"]["endpoint"] = monitor["spec"].pop("endpoints")
    with pytest.raises(jsonschema.ValidationError):
        validate_doc(monitor)


def test_strict_validation_catches_typos(render: Renderer) -> None:
    deployment = one(render(DEFAULT), "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_doc(deployment)


def test_default_render_has_the_core_objects(render: Renderer) -> None:
    kinds = sorted(d["kind"] for d in render(DEFAULT))
    assert kinds == sorted(
        [
            "ConfigMap",
            "CronJob",  # referee maintain
            "Deployment",
            "Job",
            "PodDisruptionBudget",
            "Secret",
            "Secret",
            "Service",
            "ServiceAccount",
        ]
    )


def test_all_features_render_has_the_optional_objects(render: Renderer) -> None:
    docs = render(ALL)
    kinds = {d["kind"] for d in docs}
    assert {
        "ScaledObject",
        "TriggerAuthentication",
        "ServiceMonitor",
        "PodDisruptionBudget",
        "NetworkPolicy",
        "PrometheusRule",
    } <= kinds
    assert len(by_kind(docs, "ConfigMap")) == 2  # settings + dashboard
    assert "Secret" not in kinds  # existingSecret
    assert "HorizontalPodAutoscaler" in {d["kind"] for d in render(HPA)}


# --------------------------------------------------------------- security --


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda p: p.name)
def test_pods_are_restricted(render: Renderer, values: Path) -> None:
    workloads = [d for d in render(values) if d["kind"] in {"Deployment", "Job", "CronJob"}]
    assert {d["kind"] for d in workloads} == {"Deployment", "Job", "CronJob"}
    for doc in workloads:
        pod = pod_spec(doc)
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
        assert pod["automountServiceAccountToken"] is False
        tmp = [v for v in pod["volumes"] if v["name"] == "tmp"]
        assert tmp
        assert "emptyDir" in tmp[0]
        for container in containers(doc):
            sc = container["securityContext"]
            assert sc["runAsNonRoot"] is True
            assert sc["readOnlyRootFilesystem"] is True
            assert sc["allowPrivilegeEscalation"] is False
            assert sc["capabilities"]["drop"] == ["ALL"]
            assert "add" not in sc["capabilities"]
            assert sc["seccompProfile"]["type"] == "RuntimeDefault"
            assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
            assert container["resources"].get("requests"), "no resource requests"


def test_probes_and_metrics_port(render: Renderer) -> None:
    docs = render(DEFAULT)
    container = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["serve"]
    # /livez fails when the consumer loop or a publisher is stuck; /healthz never does,
    # so it only gates the start (startupProbe)
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    port = next(p for p in container["ports"] if p["name"] == "http")
    config = settings_configmap(docs)["data"]
    assert str(port["containerPort"]) == config["REFEREE_HTTP_PORT"]
    service = one(docs, "Service")
    assert service["spec"]["ports"][0]["targetPort"] == "http"


def test_secrets_stay_out_of_the_configmap(render: Renderer) -> None:
    docs = render(HPA)
    config = settings_configmap(docs)["data"]
    for secret_name in ("REFEREE_DATABASE_URL", "REFEREE_KAFKA_SASL_PASSWORD"):
        assert secret_name not in config
    assert "s3cret" not in yaml.safe_dump(settings_configmap(docs))
    env = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["env"]
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"]["name"] for e in env}
    assert refs == {
        "REFEREE_DATABASE_URL": "rel-referee",
        "REFEREE_KAFKA_SASL_USERNAME": "rel-referee",
        "REFEREE_KAFKA_SASL_PASSWORD": "rel-referee",
    }


def test_existing_secret_is_used_and_not_created(render: Renderer) -> None:
    docs = render(ALL)
    assert not by_kind(docs, "Secret")
    for doc in by_kind(docs, "Deployment") + by_kind(docs, "Job"):
        env = containers(doc)[0]["env"]
        refs = {
            e["name"]: e["valueFrom"]["secretKeyRef"]
            for e in env
            if "secretKeyRef" in e.get("valueFrom", {})
        }
        assert refs["REFEREE_DATABASE_URL"] == {"name": "referee-credentials", "key": "url"}
        assert refs["REFEREE_KAFKA_SASL_USERNAME"] == {"name": "referee-credentials", "key": "user"}


# ---------------------------------------------------------------- migration --


def test_migration_job_is_a_pre_install_hook(render: Renderer) -> None:
    docs = render(DEFAULT)
    job = one(docs, "Job")
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert containers(job)[0]["args"] == ["migrate"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    # Its Secret must exist before it: a hook Secret with a lower weight.
    secret_ref = next(
        e["valueFrom"]["secretKeyRef"]["name"]
        for e in containers(job)[0]["env"]
        if e["name"] == "REFEREE_DATABASE_URL"
    )
    hook_secret = next(d for d in by_kind(docs, "Secret") if d["metadata"]["name"] == secret_ref)
    secret_ann = hook_secret["metadata"]["annotations"]
    assert secret_ann["helm.sh/hook"] == annotations["helm.sh/hook"]
    assert int(secret_ann["helm.sh/hook-weight"]) < int(annotations["helm.sh/hook-weight"])
    assert "hook-succeeded" in secret_ann["helm.sh/hook-delete-policy"]
    # The Job must not depend on non-hook resources (they don't exist yet on install).
    assert "envFrom" not in containers(job)[0]


def test_migration_can_be_disabled(render: Renderer) -> None:
    docs = render(DEFAULT, **{"migration.enabled": "false"})
    assert not by_kind(docs, "Job")
    assert len(by_kind(docs, "Secret")) == 1


# ------------------------------------------------------------------ scaling --


def test_replicas_by_value_and_omitted_under_autoscaling(render: Renderer) -> None:
    assert one(render(DEFAULT), "Deployment")["spec"]["replicas"] == 2
    assert one(render(DEFAULT, replicaCount="8"), "Deployment")["spec"]["replicas"] == 8
    assert "replicas" not in one(render(ALL), "Deployment")["spec"]
    assert "replicas" not in one(render(HPA), "Deployment")["spec"]


def test_keda_scales_on_the_input_topic_lag(render: Renderer) -> None:
    docs = render(ALL)
    scaled = one(docs, "ScaledObject")
    assert scaled["spec"]["maxReplicaCount"] <= 8
    assert scaled["spec"]["scaleTargetRef"]["name"] == one(docs, "Deployment")["metadata"]["name"]
    trigger = scaled["spec"]["triggers"][0]
    assert trigger["type"] == "kafka"
    config = settings_configmap(docs)["data"]
    assert trigger["metadata"]["consumerGroup"] == config["REFEREE_GROUP_ID"]
    assert trigger["metadata"]["topic"] == config["REFEREE_INPUT_TOPIC"]
    assert trigger["metadata"]["bootstrapServers"] == config["REFEREE_KAFKA_BOOTSTRAP_SERVERS"]
    assert trigger["metadata"]["sasl"] == "scram_sha512"
    assert trigger["metadata"]["tls"] == "enable"
    auth = one(docs, "TriggerAuthentication")
    assert trigger["authenticationRef"]["name"] == auth["metadata"]["name"]


@pytest.mark.parametrize(
    ("values", "overrides", "message"),
    [
        (DEFAULT, {"replicaCount": "9"}, "replicaCount (9) exceeds kafka.partitions (8)"),
        (DEFAULT, {"kafka.partitions": "1"}, "replicaCount (2) exceeds kafka.partitions (1)"),
        (HPA, {"autoscaling.maxReplicas": "13"}, "autoscaling.maxReplicas (13) exceeds"),
        (ALL, {"keda.maxReplicaCount": "9"}, "keda.maxReplicaCount (9) exceeds"),
        (ALL, {"autoscaling.enabled": "true"}, "mutually exclusive"),
        (DEFAULT, {"database.url": ""}, "set database.url"),
        (DEFAULT, {"kafka.securityProtocol": "SASL"}, "at '/kafka/securityProtocol'"),
        (DEFAULT, {"kafka.securityProtocol": "SASL_SSL"}, "needs kafka.sasl.mechanism"),
        (DEFAULT, {"kafka.ssl.caSecret": "ca"}, "not SSL or SASL_SSL"),
        (DEFAULT, {"kafka.ssl.clientSecret": "user"}, "clientSecret is set but"),
        (DEFAULT, {"kafka.ssl.keyPasswordKey": "pw"}, "keyPasswordKey is set but"),
        (
            DEFAULT,
            {"kafka.heartbeatIntervalMs": "3334"},
            "kafka.heartbeatIntervalMs (3334) must be at most a third of kafka.sessionTimeoutMs",
        ),
    ],
)
def test_bad_values_fail_the_render(
    render: Renderer, values: Path, overrides: dict[str, str], message: str
) -> None:
    with pytest.raises(HelmError, match=re.escape(message)):
        render(values, **overrides)


def test_the_template_guards_hold_without_the_values_schema(helm: Path) -> None:
    """`helm template --skip-schema-validation` still meets the chart's own checks."""
    proc = subprocess.run(
        [
            str(helm),
            "template",
            "rel",
            str(CHART),
            "--skip-schema-validation",
            "--values",
            str(DEFAULT),
            "--set",
            "kafka.securityProtocol=SASL",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode != 0
    assert "kafka.securityProtocol must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL" in (
        proc.stderr
    )


def test_replicas_equal_to_partitions_are_fine(render: Renderer) -> None:
    render(DEFAULT, replicaCount="8")
    render(ALL, **{"keda.maxReplicaCount": "8"})
    render(HPA, **{"autoscaling.maxReplicas": "12"})


# ------------------------------------------------------------ documentation --


def leaf_paths(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, dict) and node:
        paths: list[str] = []
        for key, value in node.items():
            paths += leaf_paths(value, f"{prefix}.{key}" if prefix else str(key))
        return paths
    return [prefix]


def test_readme_lists_every_value() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    readme = (CHART / "README.md").read_text()
    documented = set(re.findall(r"^\|\s*`([^`]+)`\s*\|", readme, flags=re.MULTILINE))
    missing = sorted(p for p in leaf_paths(values) if p not in documented)
    assert not missing, f"values not in helm/referee/README.md: {missing}"
    stale = sorted(p for p in documented if p not in set(leaf_paths(values)))
    assert not stale, f"README.md documents values that do not exist: {stale}"


def test_values_yaml_is_commented() -> None:
    """Every top-level value has a comment right above it (or as its first line)."""
    lines = (CHART / "values.yaml").read_text().splitlines()
    for index, line in enumerate(lines):
        match = re.match(r"^([A-Za-z][A-Za-z0-9]*):", line)
        if not match:
            continue
        above = [x for x in lines[:index] if x.strip()][-1:]
        below = lines[index + 1 : index + 2]
        commented = [x for x in above + below if x.lstrip().startswith("#")]
        assert commented, f"values.yaml: {match.group(1)} has no comment"


def test_a_client_certificate_is_mounted_and_named_for_mutual_tls(helm: Path) -> None:
    """A Strimzi TLS user: its Secret mounted, the files named in the settings, the key's
    password taken from the same Secret, in the Deployment and the migration Job alike."""
    docs = render_chart(helm, ALL)
    config = settings_configmap(docs)["data"]
    assert config["REFEREE_KAFKA_SSL_CERTFILE"] == "/etc/referee/kafka-client/user.crt"
    assert config["REFEREE_KAFKA_SSL_KEYFILE"] == "/etc/referee/kafka-client/user.key"
    workloads = [d for d in docs if d["kind"] in ("Deployment", "Job")]
    assert {d["kind"] for d in workloads} == {"Deployment", "Job"}
    for doc in workloads:
        spec = doc["spec"]["template"]["spec"]
        (volume,) = [v for v in spec["volumes"] if v["name"] == "kafka-client"]
        assert volume["secret"]["secretName"] == "referee-kafka-user"
        assert [i["key"] for i in volume["secret"]["items"]] == ["user.crt", "user.key"]
        (container,) = [c for c in containers(doc) if c["name"] in ("referee", "migrate")]
        (mount,) = [m for m in container["volumeMounts"] if m["name"] == "kafka-client"]
        assert mount == {
            "name": "kafka-client",
            "mountPath": "/etc/referee/kafka-client",
            "readOnly": True,
        }
        env = {e["name"]: e for e in container.get("env", [])}
        password = env["REFEREE_KAFKA_SSL_KEY_PASSWORD"]["valueFrom"]["secretKeyRef"]
        assert password == {"name": "referee-kafka-user", "key": "user.key.password"}


# ------------------------------------------------------------- CronJobs --


def cronjob(docs: list[dict[str, Any]], component: str) -> dict[str, Any]:
    (found,) = (
        d
        for d in docs
        if d["kind"] == "CronJob"
        and d["metadata"]["labels"]["app.kubernetes.io/component"] == component
    )
    return found


def test_maintain_runs_hourly_by_default_with_the_migration_jobs_database_url(
    render: Renderer,
) -> None:
    docs = render(DEFAULT)
    maintain = cronjob(docs, "maintain")
    assert maintain["spec"]["schedule"] == "17 * * * *"
    assert maintain["spec"]["concurrencyPolicy"] == "Forbid"
    assert maintain["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"] == 300
    pod = pod_spec(maintain)
    assert pod["restartPolicy"] == "Never"
    assert pod["automountServiceAccountToken"] is False
    assert pod_labels_of(maintain)["app.kubernetes.io/component"] == "maintain"
    (container,) = containers(maintain)
    assert container["args"] == ["maintain"]
    settings = settings_configmap(docs)
    assert container["envFrom"] == [{"configMapRef": {"name": settings["metadata"]["name"]}}]
    assert settings["data"]["REFEREE_PARTITION_INTERVAL"] == "1 day"
    assert settings["data"]["REFEREE_PARTITIONS_AHEAD"] == "3"
    # the release's Secret (the migration Job's hook Secret is gone once the hooks succeed),
    # under the key the migration Job reads
    url = next(e for e in container["env"] if e["name"] == "REFEREE_DATABASE_URL")
    (job,) = (d for d in docs if d["kind"] == "Job")
    job_url = next(e for e in containers(job)[0]["env"] if e["name"] == "REFEREE_DATABASE_URL")
    assert url["valueFrom"]["secretKeyRef"] == {"name": "rel-referee", "key": "database-url"}
    assert url["valueFrom"]["secretKeyRef"]["key"] == job_url["valueFrom"]["secretKeyRef"]["key"]
    assert not [d for d in docs if d["kind"] == "CronJob" and "archive" in d["metadata"]["name"]]


def pod_labels_of(doc: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = doc["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    return labels


def test_the_archive_runs_daily_with_s3_credentials_from_the_operators_secret(
    render: Renderer,
) -> None:
    docs = render(ALL)
    archive = cronjob(docs, "archive")
    assert archive["spec"]["schedule"] == "15 2 * * *"
    assert archive["spec"]["concurrencyPolicy"] == "Forbid"
    (container,) = containers(archive)
    assert container["args"] == ["archive"]
    env = {e["name"]: e for e in container["env"]}
    assert env["REFEREE_DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {
        "name": "referee-credentials",
        "key": "url",
    }
    assert env["AWS_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"] == {
        "name": "referee-archive-s3",
        "key": "access-key",
    }
    assert env["AWS_SECRET_ACCESS_KEY"]["valueFrom"]["secretKeyRef"]["key"] == "secret-key"
    assert env["AWS_SESSION_TOKEN"]["valueFrom"]["secretKeyRef"]["key"] == "session-token"
    assert env["AWS_REGION"]["value"] == "eu-west-1"
    assert env["AWS_ENDPOINT_URL_S3"]["value"] == "http://minio.storage:9000"
    data = settings_configmap(docs)["data"]
    assert data["REFEREE_ARCHIVE_URL"] == "s3://referee-archive/prod"
    assert data["REFEREE_ARCHIVE_RETENTION"] == "90 days"
    assert data["REFEREE_ARCHIVE_KEEP_PRINTS"] == "14 days"
    # no secret in the ConfigMap, no S3 credential in the other pods
    assert not [k for k in data if k.startswith("AWS_")]
    maintain = {e["name"] for e in containers(cronjob(docs, "maintain"))[0]["env"]}
    assert not {n for n in maintain if n.startswith("AWS_")}
    assert cronjob(docs, "maintain")["spec"]["timeZone"] == "Etc/UTC"


def test_a_directory_archive_mounts_its_volume_and_no_s3_secret(render: Renderer) -> None:
    docs = render(HPA)
    assert not [d for d in docs if d["kind"] == "CronJob" and "maintain" in d["metadata"]["name"]]
    archive = cronjob(docs, "archive")
    (container,) = containers(archive)
    assert not [e for e in container["env"] if e["name"].startswith("AWS_")]
    assert {"name": "archive", "mountPath": "/archive"} in container["volumeMounts"]
    claims = [v for v in pod_spec(archive)["volumes"] if "persistentVolumeClaim" in v]
    claim = {"claimName": "referee-archive"}
    assert claims == [{"name": "archive", "persistentVolumeClaim": claim}]


def test_cronjob_names_fit_the_52_characters_kubernetes_allows(render: Renderer) -> None:
    docs = render(ALL, fullnameOverride="r" * 63)
    names = [d["metadata"]["name"] for d in docs if d["kind"] == "CronJob"]
    assert len(names) == 2
    assert all(len(n) <= 52 for n in names), names


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("archive.enabled", "true", "archive.enabled needs archive.url"),
        ("config.partitionInterval", "32 days", "must be from a minute to 31 days"),
        ("archive.retention", "4000 days", "must be from a minute to 3650 days"),
    ],
)
def test_bad_season_values_fail_the_render(
    render: Renderer, key: str, value: str, message: str
) -> None:
    with pytest.raises(HelmError, match=message):
        render(DEFAULT, **{key: value})
