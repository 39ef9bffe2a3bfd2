#!/usr/bin/env bash
# Two builds of the gateway side by side in one run: each serves its own /dev/shm root, and one
# `s3hpc bench sweep` per round measures both (the order is swapped in the second round).
#
#   bench/compare_builds.sh OLD_BIN NEW_BIN [DURATION]      (default 3s per size and phase)
#
# For example, the build before a change against the build after it:
#   git worktree add /tmp/old REV && (cd /tmp/old && CARGO_TARGET_DIR=/tmp/old-target cargo build --release -p s3hpc)
#   bench/compare_builds.sh /tmp/old-target/release/s3hpc target/release/s3hpc
# Env: SIZES (default 4KiB,1MiB), CONC (default 8), SERVE_ARGS (extra `serve` arguments of both,
# e.g. "--threads 16": the worker count of a 16-core host).
set -euo pipefail
OLD=$1 NEW=$2 DUR=${3:-3s}
SIZES=${SIZES:-4KiB,1MiB}
CONC=${CONC:-8}
read -r -a SA <<<"${SERVE_ARGS:-}"
R=$(mktemp -d /dev/shm/s3hpc-compare.XXXXXX)
mkdir -p "$R/old" "$R/new"
. "$(dirname "$0")/lib.sh"
trap 'bench_stop; rm -rf "$R"' EXIT
gw_start "$R/old.log" "$OLD" "$R/old" --durability none --access-key AK --secret-key SKsecret ${SA[@]+"${SA[@]}"}
A=$GW_URL
gw_start "$R/new.log" "$NEW" "$R/new" --durability none --access-key AK --secret-key SKsecret ${SA[@]+"${SA[@]}"}
B=$GW_URL
echo "old: $A   new: $B"
"$NEW" bench sweep -t "$A" -t "$B" --access-key AK --secret-key SKsecret --sizes "$SIZES" --duration "$DUR" \
  -c "$CONC" --bucket compare-one -q
"$NEW" bench sweep -t "$B" -t "$A" --access-key AK --secret-key SKsecret --sizes "$SIZES" --duration "$DUR" \
  -c "$CONC" --bucket compare-two -q
