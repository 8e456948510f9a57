"""Every REFEREE_* variable the deployment sets is a real field of Settings.

The names come from what the deployment actually hands to the process:
the Helm chart *rendered* (ConfigMap keys consumed with envFrom, container
``env`` of the Deployment and the migration Job), docker-compose.yml's
environment of the referee services, and the Dockerfile's ENV. A typo such as
REFEREE_KAFKA_BOOTSTRAP_SERVER would be silently ignored by pydantic-settings
(``extra="ignore"``), so it has to fail here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.deploy_helpers import (
    CI_VALUES,
    COMPOSE,
    DOCKERFILE,
    containers,
    render_chart,
    settings_env_names,
)

PREFIX = "REFEREE_"
SERVE_ONLY = frozenset({"REFEREE_KAFKA_GROUP_INSTANCE_ID"})
"""Settings of a group member alone: the Deployment's pods have them, the migration Job not."""
ARCHIVE_S3 = frozenset(
    {
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_ENDPOINT_URL_S3",
    }
)
"""What the archive reads as the AWS tools do (docs/archive.md): the archive CronJob's alone."""


def test_settings_are_importable_and_prefixed() -> None:
    names = settings_env_names()
    assert "REFEREE_DATABASE_URL" in names
    assert "REFEREE_KAFKA_BOOTSTRAP_SERVERS" in names
    assert all(name.startswith(PREFIX) and name.isupper() for name in names)


def operator_extras(values: Path) -> tuple[set[str], list[dict[str, Any]]]:
    """Names of ``extraEnv`` and the ``extraEnvFrom`` sources a values file adds.

    They are the operator's, not the chart's: a non-REFEREE_ name there (TZ, a
    proxy) is allowed, and an envFrom of the operator's own ConfigMap hides
    names the chart cannot know. A REFEREE_* name in extraEnv must still be a setting.
    """
    values_doc = yaml.safe_load(values.read_text()) or {}
    names = {e["name"] for e in values_doc.get("extraEnv", [])}
    return names, list(values_doc.get("extraEnvFrom", []))


def chart_env_names(
    docs: list[dict[str, Any]], extra_env_from: list[dict[str, Any]] | None = None
) -> dict[str, set[str]]:
    """Env names per source (resource/container) in rendered manifests."""
    found: dict[str, set[str]] = {}
    configmaps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    for doc in docs:
        if doc["kind"] not in {"Deployment", "Job", "StatefulSet", "CronJob"}:
            continue
        for container in containers(doc):
            where = f"{doc['kind']}/{doc['metadata']['name']}/{container['name']}"
            names = {env["name"] for env in container.get("env", [])}
            for source in container.get("envFrom", []):
                if source in (extra_env_from or []):
                    continue  # the operator's extraEnvFrom: its names are not the chart's
                assert "prefix" not in source, f"{where}: envFrom prefix would rename settings"
                ref = source.get("configMapRef")
                if ref is not None:
                    assert ref["name"] in configmaps, f"{where}: envFrom unknown ConfigMap"
                    data = set(configmaps[ref["name"]].get("data", {}))
                    found[f"ConfigMap/{ref['name']}"] = data
                    names |= data
                else:
                    pytest.fail(f"{where}: envFrom a Secret hides its names; use env valueFrom")
            found[where] = names
    return found


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda p: p.name)
def test_chart_sets_only_real_settings(helm: Path, values: Path) -> None:
    settings = settings_env_names()
    extra_env, extra_env_from = operator_extras(values)
    docs = render_chart(helm, values)
    found = chart_env_names(docs, extra_env_from)
    assert any(k.startswith("Deployment/") for k in found), "no Deployment rendered"
    assert any(k.startswith("Job/") for k in found), "no migration Job rendered"
    for where, names in found.items():
        assert names, f"{where} sets no variable"
        allowed = extra_env | (ARCHIVE_S3 if where.endswith("-archive/archive") else set())
        unknown = sorted(n for n in names - settings if n.startswith(PREFIX) or n not in allowed)
        assert not unknown, f"{where} sets names that are no Settings field: {unknown}"
    # Deployment and migration Job must agree on the configuration, but for the pod's
    # own name in the consumer group (static membership): migrate joins no group.
    deploy = next(v for k, v in found.items() if k.startswith("Deployment/"))
    job = next(v for k, v in found.items() if k.startswith("Job/"))
    assert deploy - SERVE_ONLY == job, f"serve and migrate see different settings: {deploy ^ job}"
    # so do the CronJobs (maintain, archive): the settings are checked at their start too
    for where, names in found.items():
        if where.startswith("CronJob/"):
            assert names - ARCHIVE_S3 == job, f"{where} and migrate differ: {names ^ job}"


def test_operator_env_is_allowed_but_not_a_misspelt_setting(helm: Path, tmp_path: Path) -> None:
    """extraEnv may add TZ, never a REFEREE_ name that is no setting."""
    values = tmp_path / "typo-values.yaml"
    values.write_text(
        "database: {url: 'postgresql://u:p@db:5432/r'}\n"
        "extraEnv: [{name: TZ, value: UTC}, {name: REFEREE_BATCH_SIZ, value: '9'}]\n"
    )
    extra_env, extra_env_from = operator_extras(values)
    found = chart_env_names(render_chart(helm, values), extra_env_from)
    deploy = next(v for k, v in found.items() if k.startswith("Deployment/"))
    unknown = {
        n for n in deploy - settings_env_names() if n.startswith(PREFIX) or n not in extra_env
    }
    assert unknown == {"REFEREE_BATCH_SIZ"}


def test_chart_covers_every_setting(helm: Path) -> None:
    """Across the CI value sets, every Settings field is settable through the chart."""
    seen: set[str] = set()
    for values in CI_VALUES:
        docs = render_chart(helm, values)
        for names in chart_env_names(docs, operator_extras(values)[1]).values():
            seen |= names
    missing = sorted(settings_env_names() - seen)
    assert not missing, f"settings the chart can never set (add them to the chart): {missing}"


def compose_referee_services() -> dict[str, dict[str, Any]]:
    compose = yaml.safe_load(COMPOSE.read_text())
    return {
        name: service
        for name, service in compose["services"].items()
        if str(service.get("image", "")).startswith("referee") or "build" in service
    }


def test_compose_sets_only_real_settings() -> None:
    settings = settings_env_names()
    services = compose_referee_services()
    assert {"migrate", "referee"} <= set(services)
    for name, service in services.items():
        env = service.get("environment", {})
        if isinstance(env, list):  # KEY=VALUE form
            env = dict(item.split("=", 1) for item in env)
        not_ours = sorted(k for k in env if not k.startswith(PREFIX))
        assert not not_ours, f"compose service {name}: non-REFEREE_ variables {not_ours}"
        unknown = sorted(set(env) - settings)
        assert not unknown, f"compose service {name}: no such Settings field {unknown}"
        assert "env_file" not in service, f"compose service {name}: env_file hides names"
    for name in ("migrate", "referee"):
        env = services[name]["environment"]
        assert "REFEREE_DATABASE_URL" in env, name
        assert "REFEREE_KAFKA_BOOTSTRAP_SERVERS" in env, name


def test_dockerfile_sets_only_real_settings() -> None:
    settings = settings_env_names()
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    names = set(re.findall(r"\b(REFEREE_[A-Z0-9_]+)\b", text))
    assert names, "the Dockerfile is expected to set a few REFEREE_* defaults"
    unknown = sorted(names - settings)
    assert not unknown, f"Dockerfile ENV: no such Settings field {unknown}"


def test_a_typo_is_caught() -> None:
    """The check itself: a misspelt name is not a setting."""
    settings = settings_env_names()
    assert "REFEREE_KAFKA_BOOTSTRAP_SERVER" not in settings
    assert "REFEREE_DATABASE_URI" not in settings
