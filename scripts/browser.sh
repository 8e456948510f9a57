#!/usr/bin/env bash
# The browser of the page tests (tests/browser, tests/integration/desk): Debian's headless
# Chromium and its driver, installed with apt when either is missing. Quiet when both are
# there; run by scripts/test.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
die() { echo "browser.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "chromium or chromedriver is missing and we are not root to apt-get them"
echo "browser.sh: installing chromium and chromium-driver via apt" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null || die "apt-get update failed"
apt-get install -y -qq chromium chromium-driver >/dev/null || die "apt-get install failed"
command -v chromedriver >/dev/null 2>&1 || die "chromium-driver installed no chromedriver"
