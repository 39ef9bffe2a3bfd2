#!/bin/sh
# IOR's S3 delete phase (delete each key, then list the bucket with the key as prefix) on one
# flat directory, against the raw floor (unlink alone): ops/s, then getdents64 and unlink counts
# under `strace -c -f` (whole run; the create phase reads no directory).
# Usage: bench/prefix_delete.sh [DIR]   (default $TMPDIR or /tmp)
set -eu
cd "$(dirname "$0")/.."
dir=${1:-${TMPDIR:-/tmp}}
cargo build -q --release -p s3hpc-posix --example prefix_delete
bin=${CARGO_TARGET_DIR:-target}/release/examples/prefix_delete
out=$(mktemp)
for n in 1000 10000; do
    for mode in store raw; do
        flag=; [ "$mode" = raw ] && flag=--raw
        "$bin" --dir "$dir" --n "$n" $flag
        strace -f -c -o "$out" "$bin" --dir "$dir" --n "$n" $flag >/dev/null
        awk -v n="$n" -v m="$mode" '$NF ~ /^(getdents64|unlink|unlinkat)$/ { s = s " " $NF "=" $4 }
            END { print "  strace n=" n " " m ":" s }' "$out"
    done
done
rm -f "$out"
