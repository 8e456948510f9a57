#!/usr/bin/env bash
# Sourced by scripts/demo and scripts/test: makes sure uv and the locked environment exist.
set -euo pipefail
export PATH="$HOME/.local/bin:$PATH"
if ! command -v uv >/dev/null 2>&1; then
    echo "==> installing uv from PyPI" >&2
    python3 -m pip install --quiet --user "uv==0.13.9" 2>/dev/null \
        || python3 -m pip install --quiet "uv==0.13.9"
fi
echo "==> uv sync --frozen ($*)" >&2
uv sync --frozen --quiet "$@"
