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
. bench/lib.sh
trap 'bench_stop; rm -rf "$ROOT"' EXIT
gw_start "$ROOT/gateway.log" "$S3HPC_BIN" "$ROOT/served" --durability none --access-key "$AK" --secret-key "$SK"
GW=$GW_URL
gw_start "$ROOT/posix.log" "$S3HPC_BIN" "$ROOT/served" --durability none --identity posix --config "$ROOT/users.toml"
PX=$GW_URL
echo "gateway mode: $GW   posix mode: $PX   (same root, same key)"
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then order=("$GW" "$PX"); else order=("$PX" "$GW"); fi
  echo "== round $r: ${order[0]} first"
  "$S3HPC_BIN" bench sweep -t "${order[0]}" -t "${order[1]}" --access-key "$AK" --secret-key "$SK" \
    --sizes "$SIZES" --duration "$DUR" -c "$CONC" --bucket "idcost$r"
done
