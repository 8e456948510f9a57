"""The metric names the alerts and the dashboard may use, and a PromQL name checker.

The list is the service's contract with its operators (docs/runbook.md): the
PrometheusRule and the Grafana dashboard may reference these series only, and
tests/deploy/test_metrics_contract.py holds every entry to a metric the service
really exports (``referee.service.metrics.Metrics``), with its kind and labels. The
Prometheus client appends ``_total`` to counters; histograms expose ``_bucket``,
``_sum`` and ``_count``.

``referenced_names`` reads the identifiers of a PromQL expression that are not
functions, keywords or label names: every one of them is a metric name. It is a
tokenizer, not a parser (no PromQL parser is on PyPI); whether an expression
parses is checked by promtool, the real parser (tests/deploy/test_prometheus_rules.py).
"""

from __future__ import annotations

import re

# name -> (kind, labels)
METRICS: dict[str, tuple[str, frozenset[str]]] = {
    "referee_consumer_lag": ("gauge", frozenset({"topic", "partition"})),
    "referee_relay_unpublished_rows": ("gauge", frozenset({"outbox"})),
    "referee_relay_oldest_unpublished_seconds": ("gauge", frozenset({"outbox"})),
    "referee_rejections_total": ("counter", frozenset({"reason"})),
    "referee_batch_errors_total": ("counter", frozenset()),
    "referee_quarantined_total": ("counter", frozenset()),
    "referee_verdicts_total": ("counter", frozenset({"type"})),
    "referee_events_consumed_total": ("counter", frozenset({"type"})),
    "referee_duplicates_total": ("counter", frozenset()),
    "referee_relay_partitions": ("gauge", frozenset()),
    "referee_published_total": ("counter", frozenset({"topic"})),
    "referee_relay_transactions_total": ("counter", frozenset({"outcome"})),
    "referee_assigned_partitions": ("gauge", frozenset()),
    "referee_rebalances_total": ("counter", frozenset()),
    "referee_last_batch_timestamp_seconds": ("gauge", frozenset()),
    "referee_batch_seconds": ("histogram", frozenset()),
    "referee_event_to_verdict_seconds": ("histogram", frozenset()),
    "referee_build_info": ("gauge", frozenset({"version", "revision", "rules_revision"})),
    "referee_partitions_ahead_seconds": ("gauge", frozenset({"table"})),
    "referee_oldest_partition_age_seconds": ("gauge", frozenset({"table"})),
    "referee_live_partitions": ("gauge", frozenset({"table"})),
    "referee_partition_check_errors_total": ("counter", frozenset()),
    "referee_ops_rejected_total": ("counter", frozenset({"reason"})),
    "referee_ops_connections": ("gauge", frozenset()),
    "referee_partition_refused": ("gauge", frozenset({"partition", "reason"})),
    "referee_store_behind_total": ("counter", frozenset()),
    "referee_already_published_rows_total": ("counter", frozenset({"outbox"})),
    "referee_withheld_rows_total": ("counter", frozenset({"outbox"})),
    "referee_partitions_lost_total": ("counter", frozenset()),
    "referee_publishers_failing": ("gauge", frozenset()),
    "referee_partition_making_total": ("counter", frozenset({"outcome"})),
}

# Labels Prometheus adds to every scraped series (ServiceMonitor targets).
TARGET_LABELS = frozenset({"namespace", "job", "pod", "instance", "service", "container"})

FUNCTIONS = frozenset(
    {
        "abs",
        "absent",
        "absent_over_time",
        "avg_over_time",
        "ceil",
        "changes",
        "clamp",
        "clamp_max",
        "clamp_min",
        "count_over_time",
        "day_of_month",
        "day_of_week",
        "delta",
        "deriv",
        "exp",
        "floor",
        "histogram_avg",
        "histogram_count",
        "histogram_fraction",
        "histogram_quantile",
        "histogram_sum",
        "holt_winters",
        "idelta",
        "increase",
        "irate",
        "label_join",
        "label_replace",
        "last_over_time",
        "ln",
        "log2",
        "log10",
        "max_over_time",
        "min_over_time",
        "predict_linear",
        "present_over_time",
        "quantile_over_time",
        "rate",
        "resets",
        "round",
        "scalar",
        "sgn",
        "sort",
        "sort_desc",
        "sqrt",
        "stddev_over_time",
        "stdvar_over_time",
        "sum_over_time",
        "time",
        "timestamp",
        "vector",
    }
)
AGGREGATIONS = frozenset(
    {
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
    }
)
KEYWORDS = frozenset(
    {
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "and",
        "or",
        "unless",
        "bool",
        "offset",
        "inf",
        "nan",
    }
)


def allowed_series() -> dict[str, frozenset[str]]:
    """Every series name a query may select, with the labels it carries."""
    series: dict[str, frozenset[str]] = {}
    for name, (kind, labels) in METRICS.items():
        if kind == "histogram":
            series[f"{name}_bucket"] = labels | {"le"}
            series[f"{name}_sum"] = labels
            series[f"{name}_count"] = labels
        else:
            series[name] = labels
    return series


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_RANGE = re.compile(r"\[[^\]]*\]")
_MATCHERS = re.compile(r"\{([^}]*)\}")
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_OFFSET = re.compile(r"\boffset\s+-?\w+")
_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def _strip(expr: str) -> tuple[str, set[str]]:
    """The expression without strings, ranges, numbers; and the label names it uses."""
    labels: set[str] = set()
    text = _STRING.sub('""', expr)
    text = _RANGE.sub("", text)
    text = _OFFSET.sub("", text)
    for matchers in _MATCHERS.findall(text):
        labels |= set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)", matchers))
    text = _MATCHERS.sub("", text)
    for _, names in _GROUPING.findall(text):
        labels |= {n.strip() for n in names.split(",") if n.strip()}
    text = _GROUPING.sub(r"\1", text)
    return _NUMBER.sub("", text), labels


def referenced_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects."""
    text, _ = _strip(expr)
    return {t for t in _IDENT.findall(text) if t not in FUNCTIONS | AGGREGATIONS | KEYWORDS}


def referenced_labels(expr: str) -> set[str]:
    """The label names a PromQL expression matches or groups on."""
    return _strip(expr)[1]


def unknown_names(expr: str) -> list[str]:
    """Metric names in ``expr`` that the service does not export (empty: all known)."""
    return sorted(referenced_names(expr) - set(allowed_series()))


def unknown_labels(expr: str) -> list[str]:
    """Label names in ``expr`` that no selected series carries."""
    series = allowed_series()
    known = set(TARGET_LABELS)
    for name in referenced_names(expr):
        known |= series.get(name, frozenset())
    return sorted(referenced_labels(expr) - known)
