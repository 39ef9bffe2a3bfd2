#!/usr/bin/env bash
# Idle and peak RSS of s3hpc (and optionally versitygw, in the same run) under one fixed load,
# with the worker count of a bigger host (docs/perf/scale.md, "Memory").
#
#   bench/rss_load.sh [--peer VERSITYGW] [--conns C] [--secs S] [--settle S] [--rounds R]
#                     BIN WORKERS [serve args...]
#   e.g.  bench/rss_load.sh target/release/s3hpc 16               (16 workers: what 16 cores give)
#         bench/rss_load.sh --peer ~/go/bin/versitygw target/release/s3hpc 16
#         MALLOC_ARENA_MAX=16 bench/rss_load.sh target/release/s3hpc 16 --max-uploads 128
#                                                                  (the settings before issue 39)
#
# WORKERS is what the host's core count would set: `s3hpc serve --threads WORKERS`, and
# GOMAXPROCS=WORKERS for versitygw (v1.8, `--keep-alive`, posix backend). Each gateway gets a
# fresh /dev/shm root and the same client (`s3hpc bench mixed --overwrite`, C connections, default
# 64, S seconds per phase, default 3): 1 MiB PUT, 1 MiB GET/PUT 50/50, 4 KiB GET/PUT 50/50 (64
# objects of 1 MiB, 256 of 4 KiB). Per gateway: VmRSS once started (idle), VmHWM after each phase
# (the peak so far), VmRSS at the end and again after --settle seconds without requests (default
# 5), its thread count, and ops/s per phase. With --rounds R (default 1) the gateways take turns
# R times (s3hpc, peer, s3hpc, peer, ...). Prints one table (markdown) on stdout.
set -euo pipefail
export RUST_BACKTRACE=0
PEER='' CONNS=64 SECS=3 SETTLE=5 ROUNDS=1
while [ $# -gt 0 ]; do
  case $1 in
    --peer) PEER=$2; shift 2 ;;
    --conns) CONNS=$2; shift 2 ;;
    --secs) SECS=$2; shift 2 ;;
    --settle) SETTLE=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
B=$1 T=$2
shift 2
W=$(mktemp -d /dev/shm/s3hpc-rss.XXXXXX)
export AWS_ACCESS_KEY_ID=rssLoadKey AWS_SECRET_ACCESS_KEY=rss-load-secret-0123456789
P=''
stop() { if [ -n "$P" ]; then kill "$P" 2>/dev/null || true; wait "$P" 2>/dev/null || true; fi; P=''; }
trap 'stop; rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"   # wait_port
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
kb() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$P/status"; }

# One phase: bench ... > $W/NAME.json; echo the ops/s of its mixed phases together.
phase() { # name endpoint bench-args...
  local name=$1 ep=$2
  shift 2
  "$B" bench mixed -t "$ep" "$@" --overwrite -c "$CONNS" --duration "${SECS}s" --bucket rss-load \
    --keep -q --json "$W/$name.json" >/dev/null
  python3 -c "
import json,sys
r = json.load(open('$W/$name.json'))['results'][0]
assert r['errors'] == 0, r['error_samples']
print(round(sum(p['ops_per_sec'] for p in r['phases'] if p['name'].startswith('mixed'))))"
}

# One gateway under the load: one table row.
measure() { # label
  local label=$1 ep port
  shift
  port=$(free_port)
  ep=http://127.0.0.1:$port
  rm -rf "$W/root" && mkdir -p "$W/root"
  case $label in
    s3hpc) "$B" serve "$W/root" --listen "127.0.0.1:$port" --backend posix --threads "$T" \
             --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" "$@" >"$W/log" 2>&1 & ;;
    versitygw) env -u AWS_CA_BUNDLE GOMAXPROCS="$T" ROOT_ACCESS_KEY=$AWS_ACCESS_KEY_ID ROOT_SECRET_KEY=$AWS_SECRET_ACCESS_KEY \
             "$PEER" --access "$AWS_ACCESS_KEY_ID" --secret "$AWS_SECRET_ACCESS_KEY" --port "127.0.0.1:$port" \
             --keep-alive posix "$W/root" >"$W/log" 2>&1 & ;;
  esac
  P=$!
  wait_port "$port"
  sleep 1
  local idle put mix small hwm1 hwm2 hwm3 rss settled tasks
  idle=$(kb VmRSS)
  put=$(phase put1m "$ep" --mix put=100 --objects 64 --size 1MiB); hwm1=$(kb VmHWM)
  mix=$(phase mix1m "$ep" --mix get=50,put=50 --objects 64 --size 1MiB); hwm2=$(kb VmHWM)
  small=$(phase mix4k "$ep" --mix get=50,put=50 --objects 256 --size 4KiB); hwm3=$(kb VmHWM)
  rss=$(kb VmRSS) tasks=$(ls "/proc/$P/task" | wc -l)
  sleep "$SETTLE"
  settled=$(kb VmRSS)
  stop
  rm -rf "$W/root"
  awk -v l="$label" -v i="$idle" -v h1="$hwm1" -v h2="$hwm2" -v h3="$hwm3" -v r="$rss" -v s="$settled" \
      -v t="$tasks" -v a="$put" -v b="$mix" -v c="$small" 'BEGIN {
    printf "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %d | %d | %d | %d |\n",
      l, i / 1024, h1 / 1024, h2 / 1024, h3 / 1024, r / 1024, s / 1024, t, a, b, c }'
}

echo "workers=$T conns=$CONNS secs=$SECS settle=${SETTLE}s s3hpc args: ${*:-(none)}" \
  "MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-unset} load avg $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| gateway | idle MB | peak after 1 MiB PUT | peak after 1 MiB mix | peak after 4 KiB mix | RSS end | RSS after ${SETTLE}s | threads | PUT 1 MiB ops/s | 1 MiB mix ops/s | 4 KiB mix ops/s |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for _ in $(seq "$ROUNDS"); do
  measure s3hpc "$@"
  if [ -n "$PEER" ]; then measure versitygw; fi
done
