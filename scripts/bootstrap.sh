#!/usr/bin/env bash
# Sourced by scripts/demo and scripts/test: makes sure uv and the locked environment exist.
# Both get the `embedded` extra (pgserver): `referee demo` runs on the embedded PostgreSQL,
# and a suite run must leave the README's first command working. The service image does
# not install it (Dockerfile: `uv sync --no-dev`, no extras).
set -euo pipefail
export PATH="$HOME/.local/bin:$PATH"
if ! command -v uv >/dev/null 2>&1; then
    echo "==> installing uv from PyPI" >&2
    python3 -m pip install --quiet --user "uv==0.13.9" 2>/dev/null \
        || python3 -m pip install --quiet "uv==0.13.9"
fi
echo "==> uv sync --frozen --extra embedded --compile-bytecode ($*)" >&2
# Bytecode compiled once, as the image compiles it (Dockerfile: UV_COMPILE_BYTECODE=1): a
# machine with PYTHONDONTWRITEBYTECODE=1 would otherwise compile ~2,100 modules at every
# start of a referee process (1.1 s here), never keeping the result.
uv sync --frozen --quiet --extra embedded --compile-bytecode "$@"
uv run --frozen --no-sync python -m compileall -q -j 0 referee migrations >/dev/null
