"""The Grafana dashboard: its JSON model, its panels, and the PromQL of every query.

Every panel's query must parse (promtool's parser: the queries are written as
recording rules and checked with ``promtool check rules``) and must use only the
metric names the service exports (tests/deploy/metrics_contract.py).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.deploy.deploy_helpers import CHART, SCHEMAS
from tests.deploy.metrics_contract import METRICS, referenced_names, unknown_labels, unknown_names

DASHBOARD = CHART / "dashboards" / "referee.json"


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def panels() -> list[dict[str, Any]]:
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def queries() -> list[tuple[str, str]]:
    """(panel title, expr) of every target."""
    return [(p["title"], t["expr"]) for p in panels() for t in p["targets"]]


def as_promql(expr: str) -> str:
    """Grafana's variables replaced by what Grafana sends for them."""
    return expr.replace("$__rate_interval", "5m").replace("${datasource}", "")


def test_the_dashboard_meets_its_json_schema() -> None:
    schema = json.loads((SCHEMAS / "grafana-dashboard.schema.json").read_text())
    jsonschema.validate(dashboard(), schema, cls=jsonschema.Draft202012Validator)


def test_the_schema_catches_a_typo() -> None:
    schema = json.loads((SCHEMAS / "grafana-dashboard.schema.json").read_text())
    broken = dashboard()
    broken["panels"][1]["targets"][0]["exp"] = broken["panels"][1]["targets"][0].pop("expr")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema, cls=jsonschema.Draft202012Validator)


def test_panel_ids_are_unique_and_panels_fit_the_grid() -> None:
    ids = [p["id"] for p in dashboard()["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard()["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
    cells: set[tuple[int, int]] = set()
    for panel in dashboard()["panels"]:
        g = panel["gridPos"]
        xs = range(g["x"], g["x"] + g["w"])
        mine = {(x, y) for x in xs for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, f"{panel['title']} overlaps another panel"
        cells |= mine


def test_every_query_uses_only_the_service_metrics() -> None:
    for title, expr in queries():
        assert referenced_names(expr), (title, "selects no metric")
        assert not unknown_names(expr), (title, unknown_names(expr))
        assert not unknown_labels(expr), (title, unknown_labels(expr))
        assert 'namespace="$namespace"' in expr, title
        assert 'job=~"$job"' in expr, title


def test_the_name_check_itself_catches_an_unknown_metric() -> None:
    assert unknown_names('sum(rate(referee_verdict_total{job="x"}[5m]))') == [
        "referee_verdict_total"
    ]
    assert unknown_names("up == 0") == ["up"]
    quantile = "histogram_quantile(0.99, sum by (le) (rate(referee_batch_seconds_bucket[5m])))"
    assert unknown_names(quantile) == []
    assert unknown_labels("sum by (shard) (referee_consumer_lag)") == ["shard"]


def test_the_dashboard_shows_what_the_operators_need() -> None:
    used = set().union(*(referenced_names(expr) for _, expr in queries()))
    wanted = {
        "referee_events_consumed_total",  # throughput
        "referee_verdicts_total",
        "referee_rejections_total",
        "referee_duplicates_total",
        "referee_consumer_lag",
        "referee_relay_unpublished_rows",
        "referee_relay_oldest_unpublished_seconds",
        "referee_relay_partitions",
        "referee_assigned_partitions",
        "referee_rebalances_total",
        "referee_batch_errors_total",
        "referee_quarantined_total",
        "referee_batch_seconds_bucket",
        "referee_event_to_verdict_seconds_bucket",
        "referee_last_batch_timestamp_seconds",
        "referee_build_info",
    }
    assert wanted <= used, f"no panel for {sorted(wanted - used)}"
    rejections = [p for p in panels() if "referee_rejections_total" in json.dumps(p["targets"])]
    assert any("by (reason)" in t["expr"] for p in rejections for t in p["targets"])


def test_the_publishers_are_shown_per_instance() -> None:
    """Each instance publishes the partitions it owns: the panels of the publishers say
    which instance, as the alerts on them do."""
    by_title = {p["title"]: p for p in panels()}
    published = by_title["Published partitions"]["targets"][0]["expr"]
    assert published.startswith("max by (pod) (referee_relay_partitions{")
    for title in (
        "Publishers: unpublished outbox rows",
        "Publishers: age of the oldest unpublished row",
    ):
        assert by_title[title]["targets"][0]["expr"].startswith("max by (pod, outbox) (")
    assert not [t for t in by_title if "leader" in t.lower()]


def test_template_variables_query_known_metrics() -> None:
    variables = {v["name"]: v for v in dashboard()["templating"]["list"]}
    assert set(variables) == {"datasource", "namespace", "job"}
    for name in ("namespace", "job"):
        match = re.fullmatch(r"label_values\((.+), (\w+)\)", variables[name]["query"]["query"])
        assert match, name
        assert match.group(2) == name
        assert not unknown_names(match.group(1)), name
    assert set(METRICS) >= {"referee_build_info"}


def test_every_query_parses(promtool: Path, tmp_path: Path) -> None:
    rules = [
        {"record": f"dashboard:query_{n}", "expr": as_promql(expr)}
        for n, (_, expr) in enumerate(queries())
    ]
    (tmp_path / "dashboard-queries.yaml").write_text(
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]})
    )
    proc = subprocess.run(
        [str(promtool), "check", "rules", "dashboard-queries.yaml"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(rules)} rules found" in proc.stdout
