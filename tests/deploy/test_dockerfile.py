"""Structure of the Dockerfile (hadolint, pinned, runs in scripts/validate-deploy.sh too)."""

from __future__ import annotations

import json
import re
import tomllib

from tests.deploy.deploy_helpers import DOCKERFILE, ROOT


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = DOCKERFILE.read_text()
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = "\n".join(lines).replace("\\\n", " ")
    result = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, rest = line.strip().partition(" ")
            result.append((keyword.upper(), rest.strip()))
    return result


def args_defaults() -> dict[str, str]:
    found = {}
    for keyword, rest in instructions():
        if keyword == "ARG" and "=" in rest:
            name, _, value = rest.partition("=")
            found[name] = value
    return found


def test_base_image_is_pinned_slim_bookworm() -> None:
    froms = [rest for keyword, rest in instructions() if keyword == "FROM"]
    assert len(froms) >= 2, "multi-stage build expected"
    base = args_defaults().get("PYTHON_IMAGE", "")
    for line in froms:
        image = line.split()[0].replace("${PYTHON_IMAGE}", base)
        assert re.fullmatch(r"python:3\.11-slim-bookworm(@sha256:[0-9a-f]{64})?", image), image


def test_multi_stage_copies_the_venv_only() -> None:
    steps = instructions()
    stages = [rest.split()[-1] for keyword, rest in steps if keyword == "FROM"]
    assert stages[0] == "builder"
    final_start = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    final = steps[final_start:]
    copies = [rest for keyword, rest in final if keyword == "COPY"]
    assert any("--from=builder" in rest for rest in copies)
    builder = steps[:final_start]
    syncs = [rest for keyword, rest in builder if keyword == "RUN" and "uv sync" in rest]
    assert syncs
    assert all("--frozen" in s and "--no-dev" in s for s in syncs)
    # no package managers, compilers or caches installed in the final stage
    for keyword, rest in final:
        if keyword == "RUN":
            assert not re.search(r"\b(apt-get|apt|pip|uv|gcc|build-essential)\b", rest), rest


def test_runs_as_non_root() -> None:
    users = [rest for keyword, rest in instructions() if keyword == "USER"]
    assert users, "no USER"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}
    assert user.isdigit(), "numeric USER lets Kubernetes verify runAsNonRoot"


def test_entrypoint_and_healthcheck() -> None:
    steps = dict(instructions())
    assert json.loads(steps["ENTRYPOINT"]) == ["referee"]
    assert json.loads(steps["CMD"]) == ["serve"]
    health = steps["HEALTHCHECK"]
    # /livez fails when the consumer loop or the relay is stuck; /healthz never does
    assert "/livez" in health
    assert "/healthz" not in health
    assert "urllib" in health
    assert "curl" not in health


def labels() -> dict[str, str]:
    """The final stage's LABELs, with ${ARG} references left as written."""
    found: dict[str, str] = {}
    for keyword, rest in instructions():
        if keyword == "LABEL":
            found.update(re.findall(r'([\w.-]+)="([^"]*)"', rest))
    return found


def test_oci_labels_come_from_build_args() -> None:
    found = labels()
    for key, value in {
        "org.opencontainers.image.version": "${VERSION}",
        "org.opencontainers.image.revision": "${REVISION}",
        "org.opencontainers.image.source": "${SOURCE}",
        "org.opencontainers.image.created": "${CREATED}",
        "org.opencontainers.image.licenses": "MIT",
    }.items():
        assert found.get(key) == value, (key, found.get(key))
    for key in ("title", "description", "url", "vendor", "authors", "base.name"):
        assert found.get(f"org.opencontainers.image.{key}"), key
    defaults = args_defaults()
    assert {"VERSION", "REVISION", "SOURCE", "CREATED"} <= set(defaults)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert defaults["VERSION"] == project["version"], "ARG VERSION default != pyproject version"
    assert project["license"] == found["org.opencontainers.image.licenses"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "LICENSE" in project["license-files"]


def test_the_rules_revision_labels_are_the_codes() -> None:
    """The image says which rules revision new games get and which it can judge."""
    from referee.domain.revisions import NEWEST, REVISIONS

    found = labels()
    assert found.get("dev.referee.rules-revision") == str(NEWEST)
    assert found.get("dev.referee.rules-revisions") == ",".join(str(n) for n in sorted(REVISIONS))


def test_the_image_leaves_the_embedded_extra_out() -> None:
    """pgserver (34 MB of PostgreSQL binaries) is the `embedded` extra; no uv sync installs it."""
    syncs = [rest for keyword, rest in instructions() if keyword == "RUN" and "uv sync" in rest]
    assert syncs
    for sync in syncs:
        assert "--extra" not in sync, sync
        assert "--all-extras" not in sync, sync
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(dep.startswith("pgserver") for dep in project["dependencies"])


def test_dockerignore_keeps_the_context_small() -> None:
    ignored = (ROOT / ".dockerignore").read_text().split()
    for entry in (".git", ".venv", ".cache", "tests", "helm"):
        assert entry in ignored, entry


def test_the_chart_deploys_this_version() -> None:
    """The chart's appVersion is the package's version (CHANGELOG.md, docs/releases.md)."""
    import yaml

    chart = yaml.safe_load((ROOT / "helm" / "referee" / "Chart.yaml").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert chart["appVersion"] == project["version"]
