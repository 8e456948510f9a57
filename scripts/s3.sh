#!/usr/bin/env bash
# A real S3 API for the test suite: SeaweedFS in one process (`weed server -s3`: master,
# volume server, filer and S3 gateway), built from the Go module proxy.
#
#   scripts/s3.sh start     # idempotent; prints S3_ENDPOINT=http://127.0.0.1:<port>
#   scripts/s3.sh stop      # clean shutdown (SIGTERM, SIGKILL after S3_STOP_TIMEOUT)
#   scripts/s3.sh restart   # stop + start on the same data dir (buckets and objects kept)
#   scripts/s3.sh kill      # SIGKILL, no clean shutdown (crash injection); then `start`
#   scripts/s3.sh status    # exit 0 and print S3_ENDPOINT=... if up, exit 3 if not
#   scripts/s3.sh wipe      # stop and delete this port's data dir (built binary kept)
#   scripts/s3.sh binary    # build weed if needed; print its path
#
# Credentials (static, one admin identity): access key `referee`, secret key
# `referee-secret`; clients sign for region us-east-1. `start` returns once a signed write
# and read go through (bucket `referee-ready`, kept): about 11 s on an empty data dir, about
# 18 s on one with volumes (the master refuses new writes for 15 s after it starts, until
# the volume server has reported them). `stop` takes 2 s, up to 17 s after writes (the filer
# then waits 15 s to flush its metadata log to the volume server, which stopped first). The
# first start builds weed: about 5 minutes on 2 cores.
#
# Environment:
#   S3_PORT            S3 API port (default 18333). The other listeners, all on 127.0.0.1,
#                      are derived from it: master, volume server and filer HTTP on
#                      S3_PORT+1, +2, +3; their gRPC on +4, +5, +6; the S3 gateway's gRPC +7
#   REFEREE_STATE_DIR  cache/state root (default /tmp/referee-services)
#   SEAWEEDFS_VERSION  version of the Go module github.com/seaweedfs/seaweedfs to build
#   S3_START_TIMEOUT   seconds to wait for the S3 API to answer (default 120)
#   S3_STOP_TIMEOUT    seconds to wait for a clean shutdown (default 30)
#
# Layout under $REFEREE_STATE_DIR:
#   seaweedfs-<version>/weed   built once (CGO off) from the module's own source
#   s3-<port>/                 s3.json (identities), data/, weed.log, weed.pid, *.sock
# (weed also puts the Unix sockets of its gRPC services in /tmp, named by their ports.)
set -euo pipefail

# The module's go.mod has a replace directive, so `go install .../weed@version` refuses it:
# the binary is built inside the module's source as the Go module proxy serves it
# (checksums verified against the checksum database by `go mod download`).
VERSION="${SEAWEEDFS_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"
MODULE=github.com/seaweedfs/seaweedfs

STATE="${REFEREE_STATE_DIR:-/tmp/referee-services}"
PORT="${S3_PORT:-18333}"
START_TIMEOUT="${S3_START_TIMEOUT:-120}"
STOP_TIMEOUT="${S3_STOP_TIMEOUT:-30}"
ACCESS_KEY=referee
SECRET_KEY=referee-secret

MASTER_PORT=$((PORT + 1))
VOLUME_PORT=$((PORT + 2))
FILER_PORT=$((PORT + 3))
PORTS=("$PORT" "$MASTER_PORT" "$VOLUME_PORT" "$FILER_PORT" \
    $((PORT + 4)) $((PORT + 5)) $((PORT + 6)) $((PORT + 7)))

BIN_DIR="$STATE/seaweedfs-$VERSION"
WEED="$BIN_DIR/weed"
DIR="$STATE/s3-$PORT"
PIDFILE="$DIR/weed.pid"
CONFIG="$DIR/s3.json"
LOG="$DIR/weed.log"
ENDPOINT="http://127.0.0.1:$PORT"

die() { echo "s3.sh: $*" >&2; exit 1; }

ensure_go() {
    if ! command -v go >/dev/null 2>&1; then
        [ -x /usr/local/go/bin/go ] || die "the Go toolchain is required to build SeaweedFS ($MODULE@$VERSION)"
        export PATH="/usr/local/go/bin:$PATH"
    fi
}

ensure_binary() {
    local src tmp start
    if [ -x "$WEED" ] && [ -f "$BIN_DIR/.complete" ]; then
        return
    fi
    ensure_go
    mkdir -p "$STATE"
    echo "s3.sh: building SeaweedFS $VERSION with $(go version) (once; minutes on 2 cores) ..." >&2
    start=$SECONDS
    src="$(go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    [ -n "$src" ] && [ -d "$src/weed" ] || die "go mod download $MODULE@$VERSION gave no source"
    tmp="$BIN_DIR.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    if ! (cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/weed" ./weed) \
        >"$STATE/seaweedfs-build.log" 2>&1; then
        rm -rf "$tmp"
        tail -n 40 "$STATE/seaweedfs-build.log" >&2
        die "building weed failed (log: $STATE/seaweedfs-build.log)"
    fi
    touch "$tmp/.complete"
    rm -rf "$BIN_DIR"
    mv "$tmp" "$BIN_DIR"
    echo "s3.sh: weed built in $((SECONDS - start))s: $WEED" >&2
}

# pid of our server if it is running, else nothing (and a stale pid file is removed)
running_pid() {
    local pid
    [ -f "$PIDFILE" ] || return 0
    pid="$(cat "$PIDFILE" 2>/dev/null || true)"
    if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] \
        && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "server -dir=$DIR/data "; then
        echo "$pid"
    else
        rm -f "$PIDFILE"
    fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

any_port_open() {
    local p
    for p in "${PORTS[@]}"; do
        port_open "$p" && return 0
    done
    return 1
}

write_config() {
    mkdir -p "$DIR/data"
    cat >"$CONFIG" <<EOF
{
  "identities": [
    {
      "name": "referee",
      "credentials": [{"accessKey": "$ACCESS_KEY", "secretKey": "$SECRET_KEY"}],
      "actions": ["Admin", "Read", "List", "Tagging", "Write"]
    }
  ]
}
EOF
}

s3_curl() {
    curl -sf --max-time 10 --aws-sigv4 "aws:amz:us-east-1:s3" \
        --user "$ACCESS_KEY:$SECRET_KEY" "$@"
}

# Ready when the whole data path answers signed requests: an object written through the
# volume server into the bucket `referee-ready` (made once, kept: a bucket deleted and made
# again leaves an empty volume behind each time), read back and deleted. A signed
# ListBuckets alone answers before the volume server has registered its volumes with the
# master: reading an object then fails with "volume not found" (seen after `kill`, `start`).
s3_ready() {
    local bucket=referee-ready body sum
    body="ready $$ $SECONDS"
    sum="$(printf '%s' "$body" | sha256sum | cut -d' ' -f1)"
    s3_curl -o /dev/null "$ENDPOINT/" || return 1
    s3_curl -o /dev/null -I "$ENDPOINT/$bucket" \
        || s3_curl -o /dev/null -X PUT "$ENDPOINT/$bucket" || return 1
    s3_curl -o /dev/null -X PUT -H "x-amz-content-sha256: $sum" --data-binary "$body" \
        "$ENDPOINT/$bucket/probe" || return 1
    [ "$(s3_curl "$ENDPOINT/$bucket/probe")" = "$body" ] || return 1
    s3_curl -o /dev/null -X DELETE "$ENDPOINT/$bucket/probe" || true
}

cmd_start() {
    local pid deadline
    pid="$(running_pid)"
    if [ -n "$pid" ]; then
        echo "S3_ENDPOINT=$ENDPOINT"
        return 0
    fi
    any_port_open && die "one of ports ${PORTS[*]} is already in use by another process"
    ensure_binary
    write_config
    # One new volume per new collection (each bucket is one), not 7: the per-test buckets
    # would otherwise claim every volume slot. No telemetry, no Iceberg or Lance listeners,
    # sockets in the data dir, no 10 s pause of the volume server on stop.
    (cd "$DIR" && WEED_MASTER_VOLUME_GROWTH_COPY_1=1 exec setsid nohup "$WEED" \
        server -dir="$DIR/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
        -master.port="$MASTER_PORT" -master.port.grpc=$((PORT + 4)) \
        -master.telemetry=false -master.volumeSizeLimitMB=64 -master.electionTimeout=2s \
        -volume.port="$VOLUME_PORT" -volume.port.grpc=$((PORT + 5)) \
        -volume.max=0 -volume.preStopSeconds=0 \
        -filer.port="$FILER_PORT" -filer.port.grpc=$((PORT + 6)) \
        -filer.localSocket="$DIR/filer.sock" \
        -s3 -s3.port="$PORT" -s3.port.grpc=$((PORT + 7)) -s3.port.iceberg=0 -s3.port.lance=0 \
        -s3.config="$CONFIG" -s3.localSocket="$DIR/s3.sock" \
        >>"$LOG" 2>&1 </dev/null) &
    pid=$!
    echo "$pid" >"$PIDFILE"

    deadline=$((SECONDS + START_TIMEOUT))
    until s3_ready; do
        kill -0 "$pid" 2>/dev/null || {
            rm -f "$PIDFILE"
            tail -n 40 "$LOG" >&2 2>/dev/null || true
            die "weed exited during startup (see $LOG)"
        }
        [ "$SECONDS" -lt "$deadline" ] || die "S3 API not answering after ${START_TIMEOUT}s (see $LOG)"
        sleep 0.2
    done
    echo "S3_ENDPOINT=$ENDPOINT"
}

cmd_stop() {
    local pid sig="${1:-TERM}" deadline
    pid="$(running_pid)"
    [ -n "$pid" ] || return 0
    kill "-$sig" "$pid" 2>/dev/null || true
    deadline=$((SECONDS + STOP_TIMEOUT))
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "s3.sh: weed $pid did not stop in ${STOP_TIMEOUT}s, sending SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
        sleep 0.2
    done
    rm -f "$PIDFILE"
    # the listeners must be free before a restart
    while any_port_open; do sleep 0.1; done
}

cmd_status() {
    local pid
    pid="$(running_pid)"
    if [ -n "$pid" ] && port_open "$PORT"; then
        echo "S3_ENDPOINT=$ENDPOINT"
        return 0
    fi
    echo "s3: not running (port $PORT)" >&2
    return 3
}

case "${1:-}" in
    start) cmd_start ;;
    stop) cmd_stop TERM ;;
    kill) cmd_stop KILL ;;
    restart)
        cmd_stop TERM
        # A freed port can be taken for a moment by a client socket: try a few times.
        for attempt in 1 2 3; do
            (cmd_start) && exit 0
            echo "s3.sh: start attempt $attempt failed; retrying" >&2
            sleep 2
        done
        exit 1 ;;
    status) cmd_status ;;
    wipe) cmd_stop TERM; rm -rf "$DIR" ;;
    binary) ensure_binary; echo "$WEED" ;;
    *) echo "usage: $0 start|stop|restart|kill|status|wipe|binary" >&2; exit 2 ;;
esac
