#!/usr/bin/env bash
# Idle and peak RSS of one gateway under a fixed load (docs/perf/scale.md, "Memory").
#
#   bench/rss_load.sh BIN THREADS [serve args...]
#   e.g.  bench/rss_load.sh target/release/s3hpc 16          (16 workers: what 16 cores give)
#         MALLOC_ARENA_MAX=16 bench/rss_load.sh target/release/s3hpc 16 --max-uploads 128
#                                                              (the settings before issue 39)
#
# One `s3hpc serve --threads THREADS` on a fresh /dev/shm root; its VmRSS once started; then 64
# concurrent 1 MiB PUTs for 3 s (`bench mixed --mix put=100 --overwrite`) and a 4 KiB
# GET/HEAD/PUT mix at 64 connections for 2 s; VmHWM and VmRSS after each, and its thread count.
set -euo pipefail
export RUST_BACKTRACE=0
B=$1 T=$2
shift 2
R=$(mktemp -d /dev/shm/s3hpc-rss.XXXXXX)
export AWS_ACCESS_KEY_ID=rssLoadKey AWS_SECRET_ACCESS_KEY=rss-load-secret-0123456789
"$B" serve "$R/root" --listen 127.0.0.1:0 --backend posix --threads "$T" \
    --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" "$@" >"$R/log" 2>&1 &
P=$!
trap 'kill $P 2>/dev/null; wait $P 2>/dev/null; rm -rf "$R"' EXIT
for _ in $(seq 100); do grep -q 'listening on' "$R/log" && break; sleep 0.1; done
EP=$(grep -o 'http://127.0.0.1:[0-9]*' "$R/log" | head -1)
sleep 0.5
kb() { awk -v f="$1:" '$1 == f {print $2}' /proc/$P/status; }
idle=$(kb VmRSS)
"$B" bench mixed -t "$EP" --mix put=100 --overwrite --objects 64 --size 1MiB -c 64 --duration 3s \
    --bucket rss-load --keep -q --json "$R/put.json" >/dev/null
hwm1=$(kb VmHWM) rss1=$(kb VmRSS)
"$B" bench mixed -t "$EP" --mix get=40,head=40,put=20 --overwrite --objects 256 --size 4KiB -c 64 \
    --duration 2s --bucket rss-load --keep -q --json "$R/small.json" >/dev/null
hwm2=$(kb VmHWM) rss2=$(kb VmRSS)
puts=$(python3 -c "import json; print(sum(p['ops'] for p in json.load(open('$R/put.json'))['results'][0]['phases'] if p['name'].startswith('mixed')))")
echo "threads=$T $* idle=${idle}kB after-put: hwm=${hwm1} rss=${rss1} after-mix: hwm=${hwm2} rss=${rss2}" \
    "tasks=$(ls /proc/$P/task | wc -l) puts=$puts"
