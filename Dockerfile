# syntax=docker/dockerfile:1
#
# referee: event-sourced dominoes referee.
#
#   docker build -t referee:dev .
#   docker run --rm referee:dev --help
#
# A release build fills in the OCI labels (docs/deploy.md):
#
#   docker build \
#     --build-arg VERSION="$(uv version --short)" \
#     --build-arg REVISION="$(git rev-parse HEAD)" \
#     --build-arg SOURCE=https://git.example.com/games/referee \
#     --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
#     -t registry.example.com/referee:0.5.0 .
#
# Two stages: `builder` resolves the dependencies from uv.lock (frozen, no dev
# group, no extras: the `embedded` extra's PostgreSQL binaries stay out) into
# /app/.venv; the final stage copies only that venv and the sources, runs as an
# unprivileged user and has no compiler, pip cache or uv.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---------------------------------------------------------------- builder ---
FROM ${PYTHON_IMAGE} AS builder

# uv comes from PyPI (pinned), so the build needs only the package registry.
ARG UV_VERSION=0.13.9
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_NO_CACHE=1 \
    UV_PYTHON_DOWNLOADS=never \
    UV_PYTHON=/usr/local/bin/python3.11 \
    UV_PROJECT_ENVIRONMENT=/app/.venv

RUN pip install --no-cache-dir "uv==${UV_VERSION}"

WORKDIR /app

# 1) third-party dependencies only: this layer is reused while the lock is unchanged
# (LICENSE: pyproject's license-files, the wheel carries it)
COPY pyproject.toml uv.lock README.md LICENSE ./
RUN uv sync --frozen --no-dev --no-install-project

# 2) the project itself (installed into the same venv, same path as at run time)
COPY referee ./referee
COPY migrations ./migrations
COPY schemas ./schemas
COPY tools/__init__.py tools/native.py ./tools/

# 3) the compiled build (tools/native.py, docs/design.md "The compiled build"): the hot
# modules compiled by mypyc with the `native` group (mypy, setuptools) and gcc, then the
# venv synced again without that group; neither gcc nor mypy reaches the final stage.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
RUN uv sync --frozen --no-dev --group native \
 && uv run --frozen --no-dev --group native --no-sync python -m tools.native build /app \
 && uv sync --frozen --no-dev \
 && rm -rf tools

# ------------------------------------------------------------------ final ---
FROM ${PYTHON_IMAGE} AS runtime

# OCI annotations (https://github.com/opencontainers/image-spec/blob/main/annotations.md).
# VERSION matches pyproject's version (tests/deploy/test_dockerfile.py); REVISION is
# the commit, SOURCE the repository URL, CREATED the build time (RFC 3339). The rules
# labels are the code's, not a build argument's: the newest rules revision (what new games
# get by default) and every revision the image judges (referee.domain.revisions, checked
# by tests/deploy/test_dockerfile.py; CHANGELOG.md, docs/releases.md).
ARG PYTHON_IMAGE
ARG VERSION=0.5.0
ARG REVISION=unknown
ARG SOURCE=unknown
ARG CREATED=1970-01-01T00:00:00Z
LABEL org.opencontainers.image.title="referee" \
      org.opencontainers.image.description="Event-sourced dominoes referee (Kafka consumer)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.url="${SOURCE}" \
      org.opencontainers.image.documentation="${SOURCE}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.vendor="the referee authors" \
      org.opencontainers.image.authors="the referee authors" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}" \
      dev.referee.rules-revision="1" \
      dev.referee.rules-revisions="1"

# Unprivileged user with a fixed numeric id (the Helm chart's securityContext
# uses the same ids: runAsUser/runAsGroup/fsGroup 10001).
# /data belongs to that user so a named volume mounted there (compose's demo
# profile) is writable by it.
RUN groupadd --system --gid 10001 referee \
 && useradd --system --uid 10001 --gid referee --home-dir /app --no-create-home \
        --shell /usr/sbin/nologin referee \
 && install -d -o 10001 -g 10001 -m 0755 /data

ENV PATH="/app/.venv/bin:${PATH}" \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    REFEREE_HTTP_HOST=0.0.0.0 \
    REFEREE_HTTP_PORT=8080 \
    REFEREE_DATA_DIR=/tmp/referee \
    REFEREE_BUILD_REVISION=${REVISION}

WORKDIR /app
COPY --from=builder --chown=root:root /app /app

USER 10001:10001
EXPOSE 8080

# No curl in slim: a stdlib one-liner. Honours REFEREE_HTTP_PORT. /livez fails when the
# consumer loop or a partition's publisher is stuck (/healthz only says the process answers).
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os,urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:%s/livez' % os.environ.get('REFEREE_HTTP_PORT', '8080'), timeout=2); sys.exit(0)"]

ENTRYPOINT ["referee"]
CMD ["serve"]
