"""The metric names the alerts and the dashboard may use are the service's own.

tests/deploy/metrics_contract.py lists them by hand; here each entry is looked up in
the registry of ``referee.service.metrics.Metrics``, so a metric renamed or removed in
the service (``referee_relay_leader`` went with the global relay) fails here rather than
in an alert that never fires.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.metrics import MetricWrapperBase

from tests.deploy.metrics_contract import METRICS

KINDS = {Counter: "counter", Gauge: "gauge", Histogram: "histogram"}


def exported() -> dict[str, tuple[str, frozenset[str]]]:
    """name -> (kind, labels) of every metric the service registers, counters with the
    ``_total`` Prometheus appends."""
    from referee.service.metrics import Metrics

    found: dict[str, tuple[str, frozenset[str]]] = {}
    for metric in vars(Metrics()).values():
        if not isinstance(metric, MetricWrapperBase):
            continue
        kind = KINDS[type(metric)]
        name = metric._name + ("_total" if kind == "counter" else "")
        found[name] = (kind, frozenset(metric._labelnames))
    return found


def test_every_metric_of_the_contract_is_exported_as_listed() -> None:
    service = exported()
    for name, (kind, labels) in METRICS.items():
        assert name in service, f"{name} is in the contract but the service does not export it"
        assert service[name] == (kind, labels), (name, service[name])


def test_the_global_relay_metrics_are_gone() -> None:
    service = exported()
    assert "referee_relay_leader" not in service
    assert "referee_relay_leader" not in METRICS
    assert "referee_relay_restarts_total" not in service
    assert service["referee_relay_partitions"] == ("gauge", frozenset())
