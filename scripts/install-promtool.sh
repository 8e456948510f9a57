#!/usr/bin/env bash
# Build the pinned promtool (Prometheus' rule checker and rule unit-test runner)
# from source through the Go module proxy, like scripts/install-helm.sh builds
# Helm: no prebuilt binary downloads. Idempotent: does nothing when the pinned
# version is already in the cache directory.
#
#   scripts/install-promtool.sh            # -> .cache/promtool/promtool
#   PROMTOOL_CACHE_DIR=/somewhere scripts/install-promtool.sh
#
# Prints the path of the binary as its last line.
#
# Prometheus publishes its Go module as v0.<minor*100+...>: module v0.316.0 is
# Prometheus 3.16.0. The build tag `remove_all_sd` leaves out the cloud
# service-discovery plugins (AWS, Azure, GCE, ...), which promtool's rule
# commands never use and which would triple the download and the compile time.
set -euo pipefail

PROMETHEUS_MODULE_VERSION="${PROMETHEUS_MODULE_VERSION:-v0.316.0}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_DIR="${PROMTOOL_CACHE_DIR:-$ROOT/.cache/promtool}"
PROMTOOL="$CACHE_DIR/promtool"
STAMP="$CACHE_DIR/.version"

WANT="$PROMETHEUS_MODULE_VERSION tags=remove_all_sd ldflags=version"
if [[ -x "$PROMTOOL" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    echo "promtool $PROMETHEUS_MODULE_VERSION already built: $PROMTOOL" >&2
    echo "$PROMTOOL"
    exit 0
fi

if ! command -v go >/dev/null 2>&1; then
    if [[ -x /usr/local/go/bin/go ]]; then
        export PATH="/usr/local/go/bin:$PATH"
    else
        echo "install-promtool: the Go toolchain is required (go install github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_MODULE_VERSION)" >&2
        exit 1
    fi
fi

mkdir -p "$CACHE_DIR"
echo "building promtool $PROMETHEUS_MODULE_VERSION with $(go version) into $CACHE_DIR ..." >&2
start=$(date +%s)
# CGO off: a static binary, no C toolchain needed. The version string is injected
# the way Prometheus' own build does (promu): v0.316.0 -> 3.16.0.
module_minor="${PROMETHEUS_MODULE_VERSION#v0.}"
module_minor="${module_minor%%.*}"
patch="${PROMETHEUS_MODULE_VERSION##*.}"
version="${module_minor:0:1}.$((10#${module_minor:1})).$patch"
ldflags="-s -w -X github.com/prometheus/common/version.Version=$version"
ldflags+=" -X github.com/prometheus/common/version.Revision=module-$PROMETHEUS_MODULE_VERSION"
CGO_ENABLED=0 GOBIN="$CACHE_DIR" \
    go install -tags remove_all_sd -ldflags "$ldflags" \
    "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_MODULE_VERSION"
end=$(date +%s)
echo "$WANT" > "$STAMP"
echo "promtool $PROMETHEUS_MODULE_VERSION built in $((end - start))s" >&2
echo "$PROMTOOL"
