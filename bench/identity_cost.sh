#!/usr/bin/env bash
# What `--identity posix` costs: two gateways on one root, one acting as itself (--identity
# gateway), one acting as each request's POSIX user (--identity posix, the same access key
# mapped to a local test user), measured in one run by `s3hpc bench sweep` with the same
# client, sizes and concurrency. Needs root (useradd, CAP_SETUID/CAP_SETGID).
#
#   bench/identity_cost.sh [DURATION]      (default 3s per size and phase)
#
# Env: S3HPC_BIN (default target/release/s3hpc, built if missing), ROOT (default
# /dev/shm/s3hpc-identity, removed at the end), CONC (default 8), SIZES (default 4KiB,1MiB),
# ROUNDS (default 2: the pair is measured this many times, alternating which goes first).
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-3s}
ROOT=${ROOT:-/dev/shm/s3hpc-identity}
CONC=${CONC:-8}
SIZES=${SIZES:-4KiB,1MiB}
ROUNDS=${ROUNDS:-2}
S3HPC_BIN=${S3HPC_BIN:-target/release/s3hpc}
[ -x "$S3HPC_BIN" ] || cargo build --release -p s3hpc
USER_NAME=s3hpc-benchid
id -u "$USER_NAME" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin "$USER_NAME"

rm -rf "$ROOT"
mkdir -p "$ROOT/served"
chmod 1777 "$ROOT/served"
AK=identityBenchKey0001
SK=identityBenchSecret0001
cat >"$ROOT/users.toml" <<TOML
[[users]]
access_key = "$AK"
secret_key = "$SK"
user = "$USER_NAME"
TOML
start() { # mode logfile -> prints the endpoint
  local log=$2
  if [ "$1" = posix ]; then
    "$S3HPC_BIN" serve "$ROOT/served" --listen 127.0.0.1:0 --durability none --identity posix \
      --config "$ROOT/users.toml" >"$log" 2>&1 &
  else
    "$S3HPC_BIN" serve "$ROOT/served" --listen 127.0.0.1:0 --durability none \
      --access-key "$AK" --secret-key "$SK" >"$log" 2>&1 &
  fi
  echo $! >"$log.pid"
  for _ in $(seq 100); do
    grep -q "listening on" "$log" && break
    sleep 0.1
  done
  grep -o "http://127.0.0.1:[0-9]*" "$log" | head -1
}
GW=$(start gateway "$ROOT/gateway.log")
PX=$(start posix "$ROOT/posix.log")
cleanup() {
  kill "$(cat "$ROOT/gateway.log.pid")" "$(cat "$ROOT/posix.log.pid")" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$ROOT"
}
trap cleanup EXIT
echo "gateway mode: $GW   posix mode: $PX   (same root, same key)"
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then order=("$GW" "$PX"); else order=("$PX" "$GW"); fi
  echo "== round $r: ${order[0]} first"
  "$S3HPC_BIN" bench sweep -t "${order[0]}" -t "${order[1]}" --access-key "$AK" --secret-key "$SK" \
    --sizes "$SIZES" --duration "$DUR" -c "$CONC" --bucket "idcost$r"
done
