#!/usr/bin/env bash
# s3hpc's S3 gateway vs versitygw (posix backend) on the same kind of root, driven by the same
# load client (bench/s3load: aws-sdk-go-v2, UNSIGNED-PAYLOAD, keep-alive).
#
#   bench/gateway_vs_versitygw.sh [SECONDS]      (default 8 s per measurement)
#
# Measures: PUT/GET 1 MiB throughput (16 clients), 4 KiB PUT/GET/HEAD ops/s (32 clients), each with
# the server's CPU time per operation (utime+stime over the phase: a client-independent figure),
# with two load clients (CLIENTS="s3load bench": the Go SDK and `s3hpc bench`); idle RSS, and peak
# RSS under 256 concurrent 1 MiB PUTs (s3load). Prints a table and writes it to
# ${OUT:-/tmp/gateway_vs_versitygw.txt}. Everything runs on 127.0.0.1 and is stopped at the end.
# Env: S3HPC_BIN (default target/release/s3hpc, built if missing), S3HPC_FLAGS (extra serve flags,
# default "--durability none": versitygw does not fsync either), ROOT_BASE (default /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-8}
OUT=${OUT:-/tmp/gateway_vs_versitygw.txt}
ROOT_BASE=${ROOT_BASE:-/tmp}
S3HPC_FLAGS=${S3HPC_FLAGS:---durability none}
# Load clients, each measured on both servers: s3load (Go, aws-sdk-go-v2) and bench (s3hpc bench).
CLIENTS=${CLIENTS:-s3load bench}
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
. bench/lib.sh   # wait_port

declare -A R
# One measured phase: prints "RATE ERRORS CPU_US_PER_OP" (RATE = MiB/s for 1 MiB, ops/s otherwise).
# Server CPU per op comes from utime+stime of the server process over the phase (bench/cpu_window.py).
run_load() { # client op size conc secs port pid
  local client=$1 op=$2 size=$3 conc=$4 secs=$5 port=$6 pid=$7 j
  case $client in
    s3load)
      j=$(python3 bench/cpu_window.py "$pid" s3load -- "$LOAD" -endpoint "http://127.0.0.1:$port" -ak $AK -sk $SK \
        -bucket bench -op "$op" -size "$size" -c "$conc" -d "${secs}s") ;;
    bench)
      # `s3hpc bench mixed` with a single-operation mix: a lean Rust SigV4 client (hyper,
      # UNSIGNED-PAYLOAD like s3load). GET/HEAD read 64 objects put first.
      local objs=64
      [ "$op" = put ] && objs=1
      j=$(python3 bench/cpu_window.py "$pid" "bench:$ROOT_BASE/gwbench.$$.json" -- "$S3HPC_BIN" bench mixed \
        -t "http://127.0.0.1:$port" --access-key $AK --secret-key $SK --bucket benchrs --keep -q -c "$conc" \
        --mix "$op=100" --objects $objs --size "$size" --duration "${secs}s" --json "$ROOT_BASE/gwbench.$$.json" 2>/dev/null) ;;
  esac
  echo "  $client $op size=$size c=$conc: $j" >&2
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["mib_per_s"] if int(sys.argv[2])>=1048576 else d["ops_per_s"], d["errors"], d["cpu_us_per_op"])' "$j" "$size"
}

measure() { # name port pid
  local name=$1 port=$2 pid=$3 v e c client
  sleep 1
  R[$name,idle_rss]=$(rss_kib "$pid")
  R[$name,err]=0
  for client in $CLIENTS; do
    for spec in "put1m put 1048576 16" "get1m get 1048576 16" "put4k put 4096 32" "get4k get 4096 32" "head4k head 4096 32"; do
      set -- $spec
      read -r v e c < <(run_load "$client" "$2" "$3" "$4" "$SECS" "$port" "$pid")
      R[$name,$client,$1]=$v; R[$name,$client,$1,cpu]=$c; R[$name,err]=$((R[$name,err] + e))
    done
  done
  local before
  before=$(rss_kib "$pid")
  # Peak RSS while 256 clients PUT 1 MiB objects: sample VmRSS every 50 ms.
  ( peak=0; while kill -0 "$pid" 2>/dev/null; do r=$(rss_kib "$pid"); [ "$r" -gt "$peak" ] && peak=$r && echo "$peak" > "$ROOT_BASE/gwbench.$$.peak.$name"; sleep 0.05; done ) &
  local sampler=$!
  read -r v e c < <(run_load s3load put 1048576 256 "$SECS" "$port" "$pid"); R[$name,put1m_256]=$v
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
# Free what versitygw wrote before s3hpc starts: on tmpfs (or any root whose data stays in
# memory) gigabytes left behind slow the next server's page allocations (measured: s3hpc's
# 1 MiB PUT 1115 -> 754 MiB/s with 5 GiB of other files in /dev/shm).
rm -rf "$VROOT"

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
  for client in $CLIENTS; do
    echo "-- client: $client"
    for spec in "put1m:PUT 1 MiB MiB/s (c=16):>=1.5x" "get1m:GET 1 MiB MiB/s (c=16):>=1.5x" \
      "put4k:PUT 4 KiB ops/s (c=32):>=2x" "get4k:GET 4 KiB ops/s (c=32):>=2x" "head4k:HEAD 4 KiB ops/s (c=32):>=2x"; do
      IFS=: read -r key label target <<<"$spec"
      R[versitygw,$key]=${R[versitygw,$client,$key]}; R[s3hpc,$key]=${R[s3hpc,$client,$key]}
      row "$label" "$key" "$target" hi
      R[versitygw,$key]=${R[versitygw,$client,$key,cpu]}; R[s3hpc,$key]=${R[s3hpc,$client,$key,cpu]}
      row "  server CPU us/op" "$key" "(lower=better)" lo
    done
  done
  echo "-- client: s3load"
  row "PUT 1 MiB MiB/s (c=256)" put1m_256 "-" hi
  row "idle RSS KiB (lower=better)" idle_rss "<=1/4 (ratio>=4x)" lo
  row "peak RSS KiB, 256 PUTs" loaded_rss "<=1/2 (ratio>=2x)" lo
  echo "(ratio: s3hpc/versitygw for throughput, versitygw/s3hpc for RSS and CPU/op; load avg $(cut -d' ' -f1-3 /proc/loadavg); errors: vgw=${R[versitygw,err]} s3hpc=${R[s3hpc,err]})"
} | tee "$OUT"
