"""The PrometheusRule: promtool parses it, its unit tests pass, it uses known metrics only.

The rendered rule's ``spec`` is a Prometheus rule file. ``promtool check rules``
parses every expression with Prometheus' own parser; ``promtool test rules``
runs tests/deploy/promtool/referee-rules.test.yaml (series in, alerts out) on it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.deploy_helpers import CHART, ROOT, Renderer
from tests.deploy.metrics_contract import unknown_labels, unknown_names

ALL = CHART / "ci" / "all-features-values.yaml"
HPA = CHART / "ci" / "hpa-values.yaml"
DEFAULT = CHART / "ci" / "default-values.yaml"
UNIT_TESTS = Path(__file__).resolve().parent / "promtool" / "referee-rules.test.yaml"
RUNBOOK = ROOT / "docs" / "runbook.md"
ALERTS = {
    "RefereeConsumerLagGrowing",
    "RefereeRejectionRateHigh",
    "RefereeBatchErrors",
    "RefereeRecordsQuarantined",
    "RefereePartitionsUnowned",
    "RefereeUnpublishedPartitions",
    "RefereeRelayBacklog",
    "RefereeRelayStale",
    "RefereePartitionRefused",
    "RefereeStoreWentBack",
    "RefereeRowsWithheld",
    "RefereePublisherFailing",
    "RefereeTimePartitionsNotAhead",
    "RefereeArchiveBehind",
}


def rule_spec(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (rule,) = [d for d in docs if d["kind"] == "PrometheusRule"]
    spec: dict[str, Any] = rule["spec"]
    return spec


def alerts(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for g in spec["groups"] for r in g["rules"] if "alert" in r}


def run_promtool(promtool: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(promtool), *args], capture_output=True, text=True, check=False, timeout=120, cwd=cwd
    )


def write_rules(spec: dict[str, Any], where: Path) -> Path:
    path = where / "referee-rules.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def test_no_rule_unless_enabled(render: Renderer) -> None:
    assert not [d for d in render(DEFAULT) if d["kind"] == "PrometheusRule"]


def test_every_alert_is_there(render: Renderer) -> None:
    spec = rule_spec(render(ALL))
    assert set(alerts(spec)) == ALERTS
    one = next(d for d in render(ALL) if d["kind"] == "PrometheusRule")
    assert one["metadata"]["labels"]["release"] == "kube-prometheus-stack"


@pytest.mark.parametrize("values", [ALL, HPA], ids=lambda p: p.name)
def test_promtool_check_rules(
    render: Renderer, promtool: Path, tmp_path: Path, values: Path
) -> None:
    path = write_rules(rule_spec(render(values)), tmp_path)
    proc = run_promtool(promtool, "check", "rules", path.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_promtool_check_rules_catches_a_broken_expression(
    render: Renderer, promtool: Path, tmp_path: Path
) -> None:
    spec = rule_spec(render(ALL))
    spec["groups"][0]["rules"][0]["expr"] = "sum(referee_consumer_lag"
    path = write_rules(spec, tmp_path)
    proc = run_promtool(promtool, "check", "rules", path.name, cwd=tmp_path)
    assert proc.returncode != 0


def unit_test(render: Renderer, promtool: Path, where: Path, **overrides: str) -> str:
    write_rules(rule_spec(render(ALL, **overrides)), where)
    shutil.copy(UNIT_TESTS, where / UNIT_TESTS.name)
    proc = run_promtool(promtool, "test", "rules", UNIT_TESTS.name, cwd=where)
    return ("PASS\n" if proc.returncode == 0 else "FAIL\n") + proc.stdout + proc.stderr


def test_promtool_unit_tests_of_the_rules(render: Renderer, promtool: Path, tmp_path: Path) -> None:
    output = unit_test(render, promtool, tmp_path)
    assert output.startswith("PASS"), output
    tests = yaml.safe_load(UNIT_TESTS.read_text())["tests"]
    tested = {case["alertname"] for t in tests for case in t.get("alert_rule_test", [])}
    assert tested == ALERTS, f"alerts without a promtool unit test: {ALERTS - tested}"
    firing = {
        case["alertname"]
        for t in tests
        for case in t.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert firing == ALERTS, f"alerts never shown to fire: {ALERTS - firing}"
    quiet = {
        case["alertname"]
        for t in tests
        for case in t.get("alert_rule_test", [])
        if not case.get("exp_alerts")
    }
    assert quiet == ALERTS, f"alerts never shown to stay quiet: {ALERTS - quiet}"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("metrics.prometheusRule.consumerLagGrowing.threshold", "50000"),
        ("metrics.prometheusRule.relayStale.for", "30m"),
        ("kafka.partitions", "10"),
        ("metrics.prometheusRule.unpublishedPartitions.for", "30m"),
    ],
)
def test_the_unit_tests_notice_a_changed_rule(
    render: Renderer, promtool: Path, tmp_path: Path, key: str, value: str
) -> None:
    assert unit_test(render, promtool, tmp_path, **{key: value}).startswith("FAIL")


def test_alerts_use_only_the_service_metrics(render: Renderer) -> None:
    for values in (ALL, HPA):
        for name, rule in alerts(rule_spec(render(values))).items():
            assert not unknown_names(rule["expr"]), (name, unknown_names(rule["expr"]))
            assert not unknown_labels(rule["expr"]), (name, unknown_labels(rule["expr"]))


def test_alerts_are_scoped_to_the_release(render: Renderer) -> None:
    for rule in alerts(rule_spec(render(ALL))).values():
        assert 'namespace="games",job="rel-referee"' in rule["expr"]
    for rule in alerts(rule_spec(render(HPA))).values():
        assert 'namespace="games",service="referee"' in rule["expr"]


@pytest.mark.parametrize(
    ("alert", "metric"),
    [
        ("RefereePartitionsUnowned", "referee_assigned_partitions"),
        ("RefereeUnpublishedPartitions", "referee_relay_partitions"),
    ],
)
def test_partitions_owned_and_published_compare_with_kafka_partitions(
    render: Renderer, alert: str, metric: str
) -> None:
    """Both sum a per-instance count of partitions over the release and compare it with
    the input topic's partition count; no instance reporting counts as 0."""
    rule = alerts(rule_spec(render(HPA)))[alert]
    expr = rule["expr"].strip()
    assert expr == (
        f'(sum by (namespace, job) ({metric}{{namespace="games",service="referee"}}) '
        "or on () vector(0)) < 12"
    )
    assert "12 input partitions" in rule["annotations"]["description"]


def test_the_publishers_alerts_name_the_instance(render: Renderer) -> None:
    """A partition's publisher runs on the instance that owns it: the backlog and the
    staleness are that instance's, and the alert says which pod."""
    rules = alerts(rule_spec(render(ALL)))
    for name in ("RefereeRelayBacklog", "RefereeRelayStale"):
        assert rules[name]["expr"].startswith("max by (namespace, job, pod, outbox) ("), name
        assert "$labels.pod" in rules[name]["annotations"]["description"], name


def test_no_alert_on_the_global_relay(render: Renderer) -> None:
    text = yaml.safe_dump(rule_spec(render(ALL)))
    assert "referee_relay_leader" not in text
    assert "RefereeNoRelayLeader" not in text


def test_alerts_can_be_switched_off_one_by_one(render: Renderer) -> None:
    names = set(alerts(rule_spec(render(HPA))))
    assert "RefereeConsumerLagGrowing" not in names  # disabled in hpa-values.yaml
    assert names == ALERTS - {"RefereeConsumerLagGrowing"}
    quarantined = alerts(rule_spec(render(HPA)))["RefereeRecordsQuarantined"]
    assert quarantined["for"] == "5m"
    assert "for" not in alerts(rule_spec(render(ALL)))["RefereeRecordsQuarantined"]  # 0m


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def test_every_alert_links_its_runbook_section(render: Renderer) -> None:
    runbook = RUNBOOK.read_text()
    anchors = {github_anchor(h) for h in re.findall(r"^##+ (.+)$", runbook, flags=re.MULTILINE)}
    sections = set(re.findall(r"^## (Referee\w+)$", runbook, flags=re.MULTILINE))
    assert sections == ALERTS, f"runbook sections and alerts differ: {sections ^ ALERTS}"
    for name, rule in alerts(rule_spec(render(ALL))).items():
        url = rule["annotations"]["runbook_url"]
        base, _, anchor = url.partition("#")
        assert base == "https://git.example.com/games/referee/blob/main/docs/runbook.md", name
        assert anchor in anchors, (name, anchor)
        assert rule["labels"]["severity"] in {"warning", "critical"}
        assert rule["labels"]["team"] == "games"
        assert rule["annotations"]["summary"]
        assert rule["annotations"]["description"]
    default_url = alerts(rule_spec(render(DEFAULT, **{"metrics.prometheusRule.enabled": "true"})))[
        "RefereeUnpublishedPartitions"
    ]["annotations"]["runbook_url"]
    assert default_url == "docs/runbook.md#refereeunpublishedpartitions"
    assert (ROOT / default_url.partition("#")[0]).is_file()


def test_links_into_the_runbook_land_on_a_section() -> None:
    """Every `runbook.md#anchor` of the docs and the chart names a heading of the runbook."""
    runbook = RUNBOOK.read_text()
    anchors = {github_anchor(h) for h in re.findall(r"^##+ (.+)$", runbook, flags=re.MULTILINE)}
    sources = [ROOT / "README.md", CHART / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    linked = {}
    for source in sources:
        text = source.read_text()
        for anchor in re.findall(r"runbook\.md#([\w-]+)", text):
            linked[anchor] = source.name
        if source == RUNBOOK:
            for anchor in re.findall(r"\]\(#([\w-]+)\)", text):
                linked[anchor] = source.name
    assert {"adding-input-partitions", "upgrading-from-01-the-global-relay"} <= set(linked)
    missing = {a: where for a, where in linked.items() if a not in anchors}
    assert not missing, f"links to no section of docs/runbook.md: {missing}"
