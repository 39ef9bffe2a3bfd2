#!/usr/bin/env bash
# s3hpc's S3 gateway vs versitygw (posix backend) on the same kind of root, driven by the same
# load client (bench/s3load: aws-sdk-go-v2, UNSIGNED-PAYLOAD, keep-alive).
#
#   bench/gateway_vs_versitygw.sh [SECONDS]      (default 8 s per measurement)
#
# Measures: PUT/GET 1 MiB throughput (16 clients), 4 KiB PUT/GET/HEAD ops/s (32 clients), idle RSS,
# and peak RSS under 256 concurrent 1 MiB PUTs. Prints a table and writes it to
# ${OUT:-/tmp/gateway_vs_versitygw.txt}. Everything runs on 127.0.0.1 and is stopped at the end.
# Env: S3HPC_BIN (default target/release/s3hpc, built if missing), S3HPC_FLAGS (extra serve flags,
# default "--durability none": versitygw does not fsync either), ROOT_BASE (default /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-8}
OUT=${OUT:-/tmp/gateway_vs_versitygw.txt}
ROOT_BASE=${ROOT_BASE:-/tmp}
S3HPC_FLAGS=${S3HPC_FLAGS:---durability none}
AK=benchAccessKey01
SK=benchSecretKey01benchSecretKey01
GOBIN=$(go env GOPATH)/bin

# Go clients must not see AWS_CA_BUNDLE (the Go SDK rejects it on a custom transport).
unset AWS_CA_BUNDLE || true

if ! command -v versitygw >/dev/null && [ ! -x "$GOBIN/versitygw" ]; then
  echo "installing versitygw"
  go install github.com/versity/versitygw/cmd/versitygw@latest
fi
VGW=$(command -v versitygw || echo "$GOBIN/versitygw")
LOAD=/tmp/s3load.$$
(cd bench/s3load && go build -o "$LOAD" .)
S3HPC_BIN=${S3HPC_BIN:-target/release/s3hpc}
if [ ! -x "$S3HPC_BIN" ]; then
  cargo build --release -p s3hpc
fi

PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$ROOT_BASE"/gwbench.$$.* "$LOAD"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
hwm_kib() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }
wait_port() { for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

declare -A R
run_load() { # name op size conc secs
  local name=$1 op=$2 size=$3 conc=$4 secs=$5 port=$6
  local j
  j=$("$LOAD" -endpoint "http://127.0.0.1:$port" -ak $AK -sk $SK -bucket bench -op "$op" -size "$size" -c "$conc" -d "${secs}s")
  echo "  $name $op size=$size c=$conc: $j" >&2
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["mib_per_s"] if int(sys.argv[2])>=1048576 else d["ops_per_s"], d["errors"])' "$j" "$size"
}

measure() { # name port pid
  local name=$1 port=$2 pid=$3 v e
  sleep 1
  R[$name,idle_rss]=$(rss_kib "$pid")
  read -r v e < <(run_load "$name" put 1048576 16 "$SECS" "$port"); R[$name,put1m]=$v; R[$name,err]=$e
  read -r v e < <(run_load "$name" get 1048576 16 "$SECS" "$port"); R[$name,get1m]=$v
  read -r v e < <(run_load "$name" put 4096 32 "$SECS" "$port"); R[$name,put4k]=$v
  read -r v e < <(run_load "$name" get 4096 32 "$SECS" "$port"); R[$name,get4k]=$v
  read -r v e < <(run_load "$name" head 4096 32 "$SECS" "$port"); R[$name,head4k]=$v
  local before
  before=$(rss_kib "$pid")
  # Peak RSS while 256 clients PUT 1 MiB objects: sample VmRSS every 50 ms.
  ( peak=0; while kill -0 "$pid" 2>/dev/null; do r=$(rss_kib "$pid"); [ "$r" -gt "$peak" ] && peak=$r && echo "$peak" > "$ROOT_BASE/gwbench.$$.peak.$name"; sleep 0.05; done ) &
  local sampler=$!
  read -r v e < <(run_load "$name" put 1048576 256 "$SECS" "$port"); R[$name,put1m_256]=$v
  kill $sampler 2>/dev/null || true; wait $sampler 2>/dev/null || true
  R[$name,loaded_rss]=$(cat "$ROOT_BASE/gwbench.$$.peak.$name")
  echo "  $name rss before 256-PUT phase: ${before} KiB" >&2
}

echo "== versitygw ($("$VGW" --version 2>/dev/null | head -1 || echo '?'))"
VROOT="$ROOT_BASE/gwbench.$$.vgw"; mkdir -p "$VROOT"
VPORT=$(free_port)
ROOT_ACCESS_KEY=$AK ROOT_SECRET_KEY=$SK "$VGW" --access $AK --secret $SK --port ":$VPORT" --keep-alive posix "$VROOT" \
  >"$ROOT_BASE/gwbench.$$.vgw.log" 2>&1 &
VPID=$!; PIDS+=("$VPID")
wait_port "$VPORT"
measure versitygw "$VPORT" "$VPID"
kill "$VPID"; wait "$VPID" 2>/dev/null || true

echo "== s3hpc ($S3HPC_BIN serve $S3HPC_FLAGS)"
SROOT="$ROOT_BASE/gwbench.$$.s3hpc"; mkdir -p "$SROOT"
SPORT=$(free_port)
# shellcheck disable=SC2086
"$S3HPC_BIN" serve "$SROOT" --listen "127.0.0.1:$SPORT" --access-key $AK --secret-key $SK $S3HPC_FLAGS \
  >"$ROOT_BASE/gwbench.$$.s3hpc.log" 2>&1 &
SPID=$!; PIDS+=("$SPID")
wait_port "$SPORT"
measure s3hpc "$SPORT" "$SPID"
kill "$SPID"; wait "$SPID" 2>/dev/null || true

{
  echo "gateway_vs_versitygw: ${SECS}s per measurement, $(nproc) cores, $(date -u +%FT%TZ)"
  printf '%-28s %14s %14s %8s %s\n' metric versitygw s3hpc ratio target
  row() { # label key target better(hi|lo)
    local a=${R[versitygw,$2]} b=${R[s3hpc,$2]}
    python3 -c 'import sys; a,b=float(sys.argv[2]),float(sys.argv[3]); r=(b/a if sys.argv[5]=="hi" else a/b) if a and b else 0; print("%-28s %14.1f %14.1f %7.2fx %s" % (sys.argv[1], a, b, r, sys.argv[4]))' "$1" "$a" "$b" "$3" "$4"
  }
  row "PUT 1 MiB MiB/s (c=16)" put1m ">=1.5x" hi
  row "GET 1 MiB MiB/s (c=16)" get1m ">=1.5x" hi
  row "PUT 4 KiB ops/s (c=32)" put4k ">=2x" hi
  row "GET 4 KiB ops/s (c=32)" get4k ">=2x" hi
  row "HEAD 4 KiB ops/s (c=32)" head4k ">=2x" hi
  row "PUT 1 MiB MiB/s (c=256)" put1m_256 "-" hi
  row "idle RSS KiB (lower=better)" idle_rss "<=1/4 (ratio>=4x)" lo
  row "peak RSS KiB, 256 PUTs" loaded_rss "<=1/2 (ratio>=2x)" lo
  echo "(ratio: s3hpc/versitygw for throughput, versitygw/s3hpc for RSS; errors: vgw=${R[versitygw,err]} s3hpc=${R[s3hpc,err]})"
} | tee "$OUT"
