"""Shared helpers of tests/deploy (imported by conftest.py and the tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "referee"
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
SCHEMAS = Path(__file__).resolve().parent / "schemas"

# The Kubernetes version the manifests are validated against (a version whose
# schemas kubernetes-validate bundles). Keep in step with scripts/validate-deploy.sh.
KUBE_VERSION = "1.31.0"

# render(values_file, ..., **{"dotted.key": "value"}) -> documents
Renderer = Callable[..., list[dict[str, Any]]]

if str(ROOT) not in sys.path:  # the settings module, even before `uv sync` installed the project
    sys.path.insert(0, str(ROOT))


def helm_binary() -> Path | None:
    candidate = os.environ.get("HELM_BIN") or str(ROOT / ".cache" / "helm" / "helm")
    path = Path(candidate)
    return path if path.is_file() and os.access(path, os.X_OK) else None


def promtool_binary() -> Path | None:
    """``$PROMTOOL_BIN`` or ``.cache/promtool/promtool`` (scripts/install-promtool.sh)."""
    candidate = os.environ.get("PROMTOOL_BIN") or str(ROOT / ".cache" / "promtool" / "promtool")
    path = Path(candidate)
    return path if path.is_file() and os.access(path, os.X_OK) else None


class HelmError(RuntimeError):
    """``helm template`` exited non-zero; the message is its stderr."""


def render_chart(
    helm: Path, *values_files: Path, set_values: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """``helm template`` the chart; returns the non-empty documents.

    ``set_values`` go in as ``--set`` (typed: "8" is a number, "true" a boolean).
    """
    cmd = [
        str(helm),
        "template",
        "rel",
        str(CHART),
        "--namespace",
        "games",
        "--kube-version",
        KUBE_VERSION,
    ]
    for values in values_files:
        cmd += ["--values", str(values)]
    for key, value in (set_values or {}).items():
        cmd += ["--set", f"{key}={value}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
    if proc.returncode != 0:
        raise HelmError(proc.stderr.strip())
    return [doc for doc in yaml.safe_load_all(proc.stdout) if doc]


def pod_labels(docs: list[dict[str, Any]], kind: str) -> dict[str, str]:
    """Labels of the pod template of the one ``kind`` (Deployment or Job) in ``docs``."""
    (doc,) = (d for d in docs if d["kind"] == kind)
    labels: dict[str, str] = doc["spec"]["template"]["metadata"]["labels"]
    return labels


def settings_configmap(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The ConfigMap the consumer pods read with envFrom (not the dashboard's)."""
    (deployment,) = (d for d in docs if d["kind"] == "Deployment")
    name = deployment["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["configMapRef"]
    (found,) = (
        d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == name["name"]
    )
    return found


def pod_spec(doc: dict[str, Any]) -> dict[str, Any]:
    """The pod spec of a Deployment, Job or CronJob (empty for other kinds)."""
    spec = doc.get("spec", {})
    if doc.get("kind") == "CronJob":
        spec = spec.get("jobTemplate", {}).get("spec", {})
    found: dict[str, Any] = spec.get("template", {}).get("spec", {})
    return found


def containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Containers (and init containers) of a Deployment, Job or CronJob."""
    spec = pod_spec(doc)
    return [*spec.get("initContainers", []), *spec.get("containers", [])]


def settings_env_names() -> set[str]:
    """REFEREE_<FIELD> for every field of the application's Settings."""
    from referee.service.settings import Settings

    prefix = Settings.model_config.get("env_prefix", "")
    assert prefix == "REFEREE_"
    return {f"{prefix}{name}".upper() for name in Settings.model_fields}
