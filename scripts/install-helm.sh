#!/usr/bin/env bash
# Build the pinned Helm v3 binary from source through the Go module proxy
# (no prebuilt binary downloads: the only network this project may use is
# the package registries). Idempotent: does nothing when the pinned version
# is already in the cache directory.
#
#   scripts/install-helm.sh            # -> .cache/helm/helm
#   HELM_CACHE_DIR=/somewhere scripts/install-helm.sh
#
# Prints the path of the binary as its last line.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
# Kubernetes minor version Helm reports by default (.Capabilities.KubeVersion,
# lint's deprecation checks). Helm's Makefile derives it from the client-go it
# is built with (v3.22.0 -> k8s.io/client-go v0.37.0 -> 1.37); a plain
# `go install` would leave Helm's fallback of 1.20.
HELM_K8S_MINOR="${HELM_K8S_MINOR:-37}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_DIR="${HELM_CACHE_DIR:-$ROOT/.cache/helm}"
HELM="$CACHE_DIR/helm"
STAMP="$CACHE_DIR/.version"

WANT="$HELM_VERSION k8s=1.$HELM_K8S_MINOR"
if [[ -x "$HELM" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    echo "helm $HELM_VERSION already built: $HELM" >&2
    echo "$HELM"
    exit 0
fi

if ! command -v go >/dev/null 2>&1; then
    if [[ -x /usr/local/go/bin/go ]]; then
        export PATH="/usr/local/go/bin:$PATH"
    else
        echo "install-helm: the Go toolchain is required (go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION)" >&2
        exit 1
    fi
fi

mkdir -p "$CACHE_DIR"
echo "building helm $HELM_VERSION with $(go version) into $CACHE_DIR ..." >&2
start=$(date +%s)
# CGO off: a static binary, no C toolchain needed. The version strings are
# injected the same way Helm's own Makefile does.
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$HELM_K8S_MINOR"
done
CGO_ENABLED=0 GOBIN="$CACHE_DIR" \
    go install -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
end=$(date +%s)
echo "$WANT" > "$STAMP"
echo "helm $HELM_VERSION built in $((end - start))s: $("$HELM" version --short)" >&2
echo "$HELM"
