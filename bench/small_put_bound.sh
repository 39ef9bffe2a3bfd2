#!/usr/bin/env bash
# Where a 4 KiB PUT's time goes on each access path, in one run: the gateway process serving
# HTTP and the binary protocol (Unix socket) on one root, and in the load process the embedded
# store called inline (no thread hand-off: the store's own cost) and raw POSIX (write + rename,
# no S3 semantics). With CPUS=0 everything runs on CPU 0, so no hand-off has to wake an idle
# CPU and the per-operation CPU time of each path is its time per operation at -c 8.
#
#   bench/small_put_bound.sh [SECONDS]      (default 3 s per target and phase)
#
# Env: S3HPC_BIN (default target/release/s3hpc, built if missing), CPUS (a taskset CPU list for
# both processes, e.g. 0; default: unpinned), ROOT (default /dev/shm/s3hpc-putbound, removed at
# the end), CONC (default "1 8"), ETAG (md5 or fast, default md5; the server's and the embedded
# target's). Everything runs on 127.0.0.1 and is stopped at the end. PERFORMANCE.md "Fourteenth
# round" reads its output.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-3}
ROOT=${ROOT:-/dev/shm/s3hpc-putbound}
CONC=${CONC:-1 8}
ETAG=${ETAG:-md5}
S3HPC_BIN=${S3HPC_BIN:-target/release/s3hpc}
if [ ! -x "$S3HPC_BIN" ]; then
  cargo build --release -p s3hpc
fi
pin=()
if [ -n "${CPUS:-}" ]; then pin=(taskset -c "$CPUS"); fi

rm -rf "$ROOT"
mkdir -p "$ROOT/served"
SOCK="$ROOT/s3hpc.sock"
AK=putboundAccessKey
SK=putboundSecretKey
LOG="$ROOT/serve.log"
. bench/lib.sh
trap 'bench_stop; rm -rf "$ROOT"' EXIT
GW_WRAP=(${pin[@]+"${pin[@]}"})
gw_start "$LOG" "$S3HPC_BIN" "$ROOT/served" --durability none --etag "$ETAG" \
  --binary "unix://$SOCK" --access-key "$AK" --secret-key "$SK"
ADDR=$GW_URL

echo "4 KiB PUT, etag $ETAG, CPUs ${CPUS:-unpinned}, ${SECS}s per target"
for c in $CONC; do
  "${pin[@]}" "$S3HPC_BIN" bench sweep -q --access-key "$AK" --secret-key "$SK" --sizes 4KiB \
    --duration "${SECS}s" -c "$c" --durability none --etag "$ETAG" --io inline --no-head \
    --target "$ADDR" --target "unix://$SOCK" --target "file://$ROOT/embedded" --target "posix://$ROOT/raw" \
    | grep -E '^(phase|put) '
done
