"""Fixtures of the deployment tests: a Helm renderer and promtool.

The Helm binary is ``$HELM_BIN`` or ``.cache/helm/helm`` (built by
``scripts/install-helm.sh``), promtool ``$PROMTOOL_BIN`` or
``.cache/promtool/promtool`` (``scripts/install-promtool.sh``). Without them
their tests are skipped on a developer's machine and *fail* when ``CI`` is
set, so CI can never go green without rendering the chart and checking its
rules.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.deploy_helpers import (
    CI_VALUES,
    Renderer,
    helm_binary,
    promtool_binary,
    render_chart,
)


@pytest.fixture(scope="session")
def helm() -> Path:
    path = helm_binary()
    if path is None:
        message = (
            "no Helm binary: set HELM_BIN or run scripts/install-helm.sh "
            "(builds .cache/helm/helm with `go install`)"
        )
        if os.environ.get("CI"):
            pytest.fail(message + " -- CI is set, so this is an error, not a skip")
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def promtool() -> Path:
    path = promtool_binary()
    if path is None:
        message = (
            "no promtool: set PROMTOOL_BIN or run scripts/install-promtool.sh "
            "(builds .cache/promtool/promtool with `go install`)"
        )
        if os.environ.get("CI"):
            pytest.fail(message + " -- CI is set, so this is an error, not a skip")
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def render(helm: Path) -> Renderer:
    """render(values_file, ..., **{"dotted.key": "value"}) -> documents."""

    def _render(*values_files: Path, **set_values: str) -> list[dict[str, Any]]:
        return render_chart(helm, *values_files, set_values=set_values)

    return _render


@pytest.fixture(scope="session", params=CI_VALUES, ids=lambda p: p.name)
def ci_render(request: pytest.FixtureRequest, helm: Path) -> list[dict[str, Any]]:
    """The chart rendered with each helm/referee/ci/*-values.yaml."""
    return render_chart(helm, request.param)
