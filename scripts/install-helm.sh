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
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_DIR="${HELM_CACHE_DIR:-$ROOT/.cache/helm}"
HELM="$CACHE_DIR/helm"
STAMP="$CACHE_DIR/.version"

if [[ -x "$HELM" && -f "$STAMP" && "$(cat "$STAMP")" == "$HELM_VERSION" ]]; then
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
# CGO off: a static binary, no C toolchain needed. The version string is
# injected the same way Helm's own Makefile does, so `helm version` is honest.
CGO_ENABLED=0 GOBIN="$CACHE_DIR" GOFLAGS="${GOFLAGS:-} -mod=mod" \
    go install \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
end=$(date +%s)
echo "$HELM_VERSION" > "$STAMP"
echo "helm $HELM_VERSION built in $((end - start))s: $("$HELM" version --short)" >&2
echo "$HELM"
